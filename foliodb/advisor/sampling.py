"""What a collection's documents look like, from a random sample plus cheap
exact statistics: the counts and sizes ``$collStats`` keeps, and the largest
document and longest arrays, found without reading everything when the
collection is large.

Paths follow MongoDB's: arrays are transparent (``items.sku`` is the ``sku``
of every element of ``items``), so an array's length is recorded at its own
path and its elements' fields under the same prefix.

The sample: the whole collection when it is no larger; ``$sample`` up to
:data:`SAMPLE_SCAN_DOCS` documents; beyond, probes along the ``_id`` index
(:mod:`foliodb.advisor.probes`), so a sample never costs a pass over a
large collection.

How the extremes are found (a sample of 1,000 misses one document in 20,000
nineteen times out of twenty):

* a collection of at most :data:`EXACT_SCAN_DOCS` documents gets one exact
  pass (``$bsonSize`` of each document, ``$size`` of each array path the
  sample found);
* a larger one gets the exact values of candidate documents: the sample's
  own largest, and the documents other collections reference most often
  (a celebrity is followed by everyone: see :mod:`foliodb.advisor.relations`);
  then, only when ``$collStats`` says its documents hold more bytes than the
  sample and the candidates explain (an outlier nobody references), a hunt
  for one document that large, which stops at the first it finds and gives
  up after :data:`HUNT_MS`.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import bson
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

from foliodb.advisor.probes import probe_sample
from foliodb.query.bsontypes import type_name as bson_type_name

EXACT_SCAN_DOCS = 20_000  # one pass over this many documents takes a fraction of a second
SAMPLE_SCAN_DOCS = 20_000  # $sample up to here (one pass on some servers); probes of the _id index beyond
HUNT_MS = 5_000  # the longest a hunt for an unexplained outlier may read
MAX_VALUES = 1000  # scalar values kept per path: reference probes, cardinalities, hot ids
EXTREME_VALUES = 50  # values of the longest array read back when the sample has fewer
OUTLIER_BYTES = 1 << 20  # unexplained bytes that are worth a pass to find their document
_NUMBERS = frozenset({"int", "long", "double", "decimal"})


def type_name(value: Any) -> str:
    """BSON's type alias, the four number types as one ("number"): the rules ask what kind of value."""
    name = bson_type_name(value)
    return "number" if name in _NUMBERS else name


@dataclass
class FieldStats:
    path: str
    under_array: bool  # inside the elements of an array: $size cannot reach it
    present: int = 0  # sampled documents that have the path
    types: Counter[str] = field(default_factory=Counter)  # per occurrence; arrays count as "array"
    array_lengths: list[int] = field(default_factory=list)
    element_types: Counter[str] = field(default_factory=Counter)
    values: list[Any] = field(default_factory=list)  # scalar values met, in sample order

    def share(self, type_: str) -> float:
        return self.types[type_] / max(sum(self.types.values()), 1)


@dataclass
class Extreme:
    value: int  # bytes, or elements
    document_id: Any
    head: list[Any] | None = None  # an array's first EXTREME_VALUES values, when read with its length
    parts: dict[str, int] | None = None  # a document's bytes per top-level field, when read with its size


@dataclass
class CollectionProfile:
    name: str
    count: int
    data_bytes: int
    sizes: list[int]  # of the sampled documents
    fields: dict[str, FieldStats]
    documents: list[dict[str, Any]]
    indexes: list[dict[str, Any]]
    index_sizes: dict[str, int]
    options: dict[str, Any]
    largest: Extreme | None = None
    longest: dict[str, Extreme] = field(default_factory=dict)
    exhaustive: bool = False  # largest and longest are exact over the whole collection
    sampled_by: str = "collection"  # "collection" (every document), "$sample", or "_id probes"
    unexplained_bytes: int = 0  # bytes $collStats counts that neither the sample nor the candidates explain

    @property
    def avg_bytes(self) -> float:
        if self.count:
            return self.data_bytes / self.count
        return statistics.fmean(self.sizes) if self.sizes else 0.0

    def array_paths(self) -> list[FieldStats]:
        return [s for s in self.fields.values() if s.array_lengths]

    def longest_length(self, path: str) -> int:
        sampled = max(self.fields[path].array_lengths, default=0) if path in self.fields else 0
        exact = self.longest.get(path)
        return max(sampled, exact.value if exact else 0)

    def max_bytes(self) -> int:
        return max(max(self.sizes, default=0), self.largest.value if self.largest else 0)


def sample_collection(database: Any, name: str, size: int) -> CollectionProfile:
    coll = database[name]
    count, data_bytes, index_sizes = _coll_stats(coll)
    raw = coll.with_options(codec_options=bson.CodecOptions(document_class=RawBSONDocument))
    probed = None
    if count <= size:
        sampled = [doc.raw for doc in raw.find()]  # the whole collection is the sample, exactly
    else:
        if count > SAMPLE_SCAN_DOCS:
            probed = probe_sample(coll, raw, size, random.Random(f"{database.name}.{name}"))
        sampled = probed if probed is not None else [doc.raw for doc in raw.aggregate([{"$sample": {"size": size}}])]
    documents = [bson.decode(data) for data in sampled]
    fields: dict[str, FieldStats] = {}
    for doc in documents:
        seen: set[str] = set()
        _walk(doc, "", False, fields, seen)
        for path in seen:
            fields[path].present += 1
    info: dict[str, Any] = next(iter(database.list_collections(filter={"name": name})), {})
    return CollectionProfile(
        name=name,
        count=count if count else len(documents),
        data_bytes=data_bytes if data_bytes else sum(len(d) for d in sampled),
        sizes=[len(data) for data in sampled],
        fields=fields,
        documents=documents,
        indexes=list(coll.list_indexes()),
        index_sizes=index_sizes,
        options={"type": info.get("type", "collection"), **info.get("options", {})},
        exhaustive=count <= size,
        sampled_by="collection" if count <= size else "$sample" if probed is None else "_id probes",
    )


def _coll_stats(coll: Any) -> tuple[int, int, dict[str, int]]:
    """(documents, data bytes, index sizes) as the storage engine keeps them: no scan."""
    try:
        reply: dict[str, Any] = next(iter(coll.aggregate([{"$collStats": {"storageStats": {}}}])), {})
        stats: dict[str, Any] = reply.get("storageStats", {})
    except OperationFailure:  # not allowed, or not supported (a view): estimate
        return coll.estimated_document_count(), 0, {}
    return int(stats.get("count", 0)), int(stats.get("size", 0)), dict(stats.get("indexSizes", {}))


def _walk(value: dict[str, Any], prefix: str, under: bool, fields: dict[str, FieldStats], seen: set[str]) -> None:
    for key, child in value.items():
        path = f"{prefix}{key}"
        stats = fields.setdefault(path, FieldStats(path, under))
        seen.add(path)
        stats.types[type_name(child)] += 1
        if isinstance(child, dict):
            _walk(child, path + ".", under, fields, seen)
        elif isinstance(child, list):
            stats.array_lengths.append(len(child))
            for element in child:
                stats.element_types[type_name(element)] += 1
                if isinstance(element, dict):
                    _walk(element, path + ".", True, fields, seen)
                elif not isinstance(element, list) and len(stats.values) < MAX_VALUES:
                    stats.values.append(element)
        elif len(stats.values) < MAX_VALUES:
            stats.values.append(child)


def unexplained(profile: CollectionProfile, measured: dict[str, int]) -> int:
    """Bytes ``$collStats`` counts beyond what the sample (and the exactly ``measured`` documents: repr of
    ``_id`` -> bytes) explain, by more than chance would (four standard errors, and at least
    :data:`OUTLIER_BYTES`); 0 when they explain it."""
    sizes = [
        size for doc, size in zip(profile.documents, profile.sizes, strict=True) if repr(doc.get("_id")) not in measured
    ]
    n = len(sizes)
    if profile.exhaustive or n < 2 or not profile.data_bytes:
        return 0
    rest = profile.count - len(measured)
    excess = profile.data_bytes - rest * statistics.fmean(sizes) - sum(measured.values())
    noise = 4 * rest * statistics.stdev(sizes) / math.sqrt(n)
    return int(excess) if excess > max(noise, OUTLIER_BYTES) else 0


def measure_extremes(database: Any, profile: CollectionProfile, candidates: Iterable[Any]) -> None:
    """Fill ``profile.largest`` and ``profile.longest`` (see the module docstring for the method)."""
    whole = profile.exhaustive or profile.count <= EXACT_SCAN_DOCS
    ids = [doc["_id"] for doc in _largest_sampled(profile)] + list(candidates)
    measured = _measure(database, profile, None if whole else list({repr(i): i for i in ids}.values()))
    profile.exhaustive = whole
    if whole:
        return
    profile.unexplained_bytes = unexplained(profile, measured)
    if profile.unexplained_bytes:
        found = _hunt(database, profile, statistics.fmean(profile.sizes) + profile.unexplained_bytes / 2)
        if found is not None:
            _measure(database, profile, [found])


def _measure(database: Any, profile: CollectionProfile, ids: list[Any] | None) -> dict[str, int]:
    """The exact size and array lengths of the documents ``ids`` (all of them when None), kept in the
    profile when they are the largest yet; returns repr(_id) -> bytes of those measured. Measured one
    by one (``ids``), each document also brings its arrays' first values and its fields' sizes, so a
    huge document is read once."""
    paths = [s.path for s in profile.array_paths() if not s.under_array]
    pipeline: list[dict[str, Any]] = [] if ids is None else [{"$match": {"_id": {"$in": ids}}}]
    project: dict[str, Any] = {"_id": 1, "b": {"$bsonSize": "$$ROOT"}}
    for n, path in enumerate(paths):
        project[f"a{n}"] = {"$cond": [{"$isArray": f"${path}"}, {"$size": f"${path}"}, -1]}
    fields = [p for p in profile.fields if "." not in p and not p.startswith("$") and p != "_id"]
    if ids is not None:
        for n, path in enumerate(paths):
            project[f"v{n}"] = {"$cond": [{"$isArray": f"${path}"}, {"$slice": [f"${path}", EXTREME_VALUES]}, []]}
        for n, name in enumerate(fields):
            project[f"f{n}"] = {
                "$bsonSize": {"$cond": [{"$eq": [{"$type": f"${name}"}, "missing"]}, {}, {"v": f"${name}"}]}
            }
    pipeline.append({"$project": project})
    if ids is None:  # one pass, the maxima only
        group: dict[str, Any] = {"_id": None, "b": {"$max": {"v": "$b", "id": "$_id"}}}
        for n in range(len(paths)):
            group[f"a{n}"] = {"$max": {"v": f"$a{n}", "id": "$_id"}}
        rows = [
            {"_id": row["b"].get("id"), "b": row["b"]["v"], **{f"a{n}": row[f"a{n}"] for n in range(len(paths))}}
            for row in database[profile.name].aggregate([*pipeline, {"$group": group}])
        ]
    else:
        rows = [
            {**row, **{f"a{n}": {"v": row[f"a{n}"], "id": row["_id"], "head": row[f"v{n}"]} for n in range(len(paths))}}
            for row in database[profile.name].aggregate(pipeline)
        ]
    for row in rows:
        if profile.largest is None or int(row["b"]) > profile.largest.value:
            parts = {name: int(row[f"f{n}"]) - 5 for n, name in enumerate(fields) if f"f{n}" in row}
            profile.largest = Extreme(int(row["b"]), row.get("_id"), parts=parts if ids is not None else None)
        for n, path in enumerate(paths):
            found = row[f"a{n}"]
            current = profile.longest.get(path)
            if found["v"] >= 0 and (current is None or found["v"] > current.value):
                profile.longest[path] = Extreme(int(found["v"]), found.get("id"), head=found.get("head"))
    return {repr(row.get("_id")): int(row["b"]) for row in rows}


def _hunt(database: Any, profile: CollectionProfile, threshold: float) -> Any:
    """The ``_id`` of a document of at least ``threshold`` bytes, reading until the first (bounded by
    :data:`HUNT_MS`); None when none is found in time."""
    spec = {"$expr": {"$gte": [{"$bsonSize": "$$ROOT"}, int(threshold)]}}
    try:
        found = database[profile.name].find_one(spec, {"_id": 1}, max_time_ms=HUNT_MS)
    except OperationFailure:  # out of time: the evidence says the bytes stay unexplained
        return None
    return None if found is None else found["_id"]


def _largest_sampled(profile: CollectionProfile) -> list[dict[str, Any]]:
    order = sorted(range(len(profile.sizes)), key=profile.sizes.__getitem__, reverse=True)
    return [profile.documents[i] for i in order[:5] if "_id" in profile.documents[i]]


def add_extreme_values(database: Any, profile: CollectionProfile) -> bool:
    """Add to each array path the first values of its longest array, when the sample holds few of
    them (the one document with a huge array is usually not in the sample): the relations can then
    tell what the array references. True when values were added."""
    added = False
    for path, extreme in profile.longest.items():
        stats = profile.fields.get(path)
        if stats is None or extreme.value == 0 or len(stats.values) >= EXTREME_VALUES:
            continue
        value: Any = extreme.head
        if value is None:
            value = database[profile.name].find_one({"_id": extreme.document_id}, {path: {"$slice": EXTREME_VALUES}})
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, list):
            stats.values += [v for v in value if not isinstance(v, (dict, list))]
            added = True
    return added
