"""The schema-design rules of thumb, each a function from what the sample
shows to recommendations with their evidence.

The rules (from the classic schema-design texts, see EXAMPLES in the docs):

* one-to-few, small children, few per parent -> embed them;
* one-to-many -> an array of references in the parent, fine while it stays
  in the hundreds or low thousands;
* one-to-squillions -> a parent reference in each child, indexed;
* growing arrays -> bucket them, or keep a bounded subset ($push + $slice);
* time series of small readings -> one document per source per time window;
* denormalized copies -> say how many are stale, and what keeping them costs;
* documents approaching 16 MB -> move what grows out;
* an index that is a prefix of another is redundant.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from foliodb.advisor.sampling import CollectionSample, FieldStats

MAX_DOCUMENT_SIZE = 16 * 1024 * 1024
EMBEDDED_ARRAY_LIMIT = 200  # subdocuments per array before it should be bucketed or referenced
REFERENCE_ARRAY_LIMIT = 1000  # ids per array before the reference should move to the child
FEW_CHILDREN = 10  # children per parent that still read well embedded
SMALL_CHILD_BYTES = 1024
TIME_SERIES_MIN_DOCS = 1000
TIME_SERIES_DOC_BYTES = 512
TIME_SERIES_PER_SOURCE = 100
REFERENCE_HIT_RATIO = 0.8


@dataclass
class Recommendation:
    kind: str  # embed, reference, bucket, denormalize, index, drop-index, limit
    collection: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    action: str = ""  # the command or shape change, when there is one

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "collection": self.collection,
            "message": self.message,
            "action": self.action,
            "evidence": self.evidence,
        }


@dataclass
class Reference:
    """``collection.path`` holds ``_id`` values of ``target``."""

    collection: str
    path: str
    target: str
    in_array: bool
    hit_ratio: float


def find_references(database: Any, samples: dict[str, CollectionSample]) -> list[Reference]:
    """Paths whose ObjectIds are mostly ``_id`` values of another collection."""
    found = []
    for sample in samples.values():
        for stats in sample.fields.values():
            if not stats.ids:
                continue
            probe = list(dict.fromkeys(stats.ids))[:50]
            for target in samples:
                if target == sample.name and not stats.path.endswith("parent_id"):
                    continue
                hits = database[target].count_documents({"_id": {"$in": probe}})
                if hits / len(probe) >= REFERENCE_HIT_RATIO:
                    in_array = bool(stats.array_lengths) and stats.element_types["objectId"] > 0
                    found.append(Reference(sample.name, stats.path, target, in_array, hits / len(probe)))
                    break
    return found


def _indexed_prefix(sample: CollectionSample, path: str) -> bool:
    return any(next(iter(index["key"])) == path for index in sample.indexes)


def document_size(sample: CollectionSample) -> Iterator[Recommendation]:
    if sample.max_size > MAX_DOCUMENT_SIZE // 2:
        biggest = max(
            (s for s in sample.fields.values() if s.array_lengths),
            key=lambda s: max(s.array_lengths),
            default=None,
        )
        grows = f" The longest array is {biggest.path} ({max(biggest.array_lengths)} elements)." if biggest else ""
        yield Recommendation(
            "limit",
            sample.name,
            f"The largest document is {sample.max_size / 2**20:.1f} MiB, over half of MongoDB's 16 MiB limit: "
            f"move what grows into its own collection or buckets.{grows}",
            {"max_bytes": sample.max_size, "avg_bytes": round(sample.avg_size)},
        )


def growing_arrays(sample: CollectionSample, references: list[Reference]) -> Iterator[Recommendation]:
    referencing = {r.path for r in references if r.collection == sample.name and r.in_array}
    for stats in sample.fields.values():
        if not stats.array_lengths or ("." in stats.path and _inside_array(sample, stats.path)):
            continue
        longest = max(stats.array_lengths)
        evidence = _length_evidence(stats)
        if stats.path in referencing:
            if longest > REFERENCE_ARRAY_LIMIT:
                yield Recommendation(
                    "reference",
                    sample.name,
                    f"{stats.path} holds up to {longest} references (one-to-squillions): store the parent's id "
                    f"in each child instead, and index it there.",
                    evidence,
                )
        elif stats.element_types["object"] and longest > EMBEDDED_ARRAY_LIMIT:
            yield Recommendation(
                "bucket",
                sample.name,
                f"{stats.path} embeds up to {longest} subdocuments and grows with use: move them to buckets "
                f"of about 100 ({{parent_id, bucket, count, items: [...]}}), or keep only the latest with "
                f'{{"$push": {{"{stats.path}": {{"$each": [...], "$slice": -100}}}}}}.',
                evidence,
            )
        elif longest > REFERENCE_ARRAY_LIMIT:
            yield Recommendation(
                "bucket",
                sample.name,
                f"{stats.path} holds up to {longest} values: an array this long is rewritten on every "
                f"change; bucket it or move its values to their own documents.",
                evidence,
            )


def _inside_array(sample: CollectionSample, path: str) -> bool:
    parts = path.split(".")
    return any(
        sample.fields.get(".".join(parts[:i])) and sample.fields[".".join(parts[:i])].array_lengths
        for i in range(1, len(parts))
    )


def _length_evidence(stats: FieldStats) -> dict[str, Any]:
    lengths = sorted(stats.array_lengths)
    return {
        "path": stats.path,
        "arrays_sampled": len(lengths),
        "max_length": lengths[-1],
        "median_length": statistics.median(lengths),
        "p95_length": lengths[int(0.95 * (len(lengths) - 1))],
    }


def child_references(database: Any, sample: CollectionSample, references: list[Reference]) -> Iterator[Recommendation]:
    """A scalar field holding the parent's ``_id``: index it; embed the children when they are few and small."""
    for ref in references:
        if ref.collection != sample.name or ref.in_array or "." in ref.path:
            continue
        per_parent = list(
            database[sample.name].aggregate(
                [
                    {"$group": {"_id": f"${ref.path}", "n": {"$sum": 1}}},
                    {"$group": {"_id": None, "max": {"$max": "$n"}, "avg": {"$avg": "$n"}, "parents": {"$sum": 1}}},
                ]
            )
        )
        stats = per_parent[0] if per_parent else {"max": 0, "avg": 0, "parents": 0}
        evidence = {
            "path": ref.path,
            "references": ref.target,
            "children_per_parent_max": stats["max"],
            "children_per_parent_avg": round(stats["avg"], 1),
            "avg_child_bytes": round(sample.avg_size),
        }
        if not _indexed_prefix(sample, ref.path):
            yield Recommendation(
                "index",
                sample.name,
                f"{ref.path} references {ref.target}._id but no index starts with it: every lookup of a "
                f"{ref.target} document's {sample.name} scans the collection.",
                evidence,
                action=f'db.{sample.name}.createIndex({{"{ref.path}": 1}})',
            )
        if stats["max"] <= FEW_CHILDREN and sample.avg_size <= SMALL_CHILD_BYTES and sample.count >= FEW_CHILDREN:
            yield Recommendation(
                "embed",
                sample.name,
                f"Each {ref.target} document has at most {stats['max']} {sample.name} (one-to-few) of about "
                f"{round(sample.avg_size)} bytes: if they are read with their {ref.target} and not on their "
                f"own, embed them as an array in {ref.target} and save a query per read.",
                evidence,
            )


def denormalized_copies(
    database: Any, sample: CollectionSample, references: list[Reference], samples: dict[str, CollectionSample]
) -> Iterator[Recommendation]:
    """Fields copied next to a reference (``author: {_id, name}`` or ``author_id`` + ``author_name``)."""
    for ref in references:
        if ref.collection != sample.name:
            continue
        source_fields = samples[ref.target].fields
        copies = {local: src for local, src in _copied_fields(sample, ref).items() if src in source_fields}
        if not copies:
            continue
        compared = stale = 0
        for doc in sample.documents:
            for source_id, copied in _copies_in(doc, ref, copies):
                source = database[ref.target].find_one({"_id": source_id}, dict.fromkeys(copies.values(), 1))
                if source is None:
                    continue
                compared += 1
                if any(source.get(src) != value for src, value in copied.items()):
                    stale += 1
        if not compared:
            continue
        fields = ", ".join(f"{local} <- {ref.target}.{src}" for local, src in copies.items())
        yield Recommendation(
            "denormalize",
            sample.name,
            f"{sample.name} keeps copies of {ref.target} fields ({fields}); {stale} of {compared} sampled "
            f"copies differ from the source. Keep them if they are snapshots (a price at purchase); "
            f"otherwise update them with update_many when the source changes, which is cheap only while "
            f"the source changes rarely.",
            {"copied": copies, "compared": compared, "stale": stale},
        )


def _copied_fields(sample: CollectionSample, ref: Reference) -> dict[str, str]:
    """Local path -> source field, for the fields that sit beside the reference."""
    prefix, _, leaf = ref.path.rpartition(".")
    out = {}
    if leaf == "_id" and prefix:  # author: {_id, name, ...}
        for path in sample.fields:
            if path.startswith(prefix + ".") and path.count(".") == ref.path.count(".") and path != ref.path:
                out[path] = path.rsplit(".", 1)[1]
    elif leaf.endswith("_id"):  # author_id beside author_name
        stem = leaf[: -len("_id")]
        base = f"{prefix}." if prefix else ""
        for path in sample.fields:
            name = path[len(base) :] if path.startswith(base) else ""
            if name.startswith(stem + "_") and name != leaf and "." not in name:
                out[path] = name[len(stem) + 1 :]
    return out


def _copies_in(doc: dict[str, Any], ref: Reference, copies: dict[str, str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(source _id, {source field: copied value}) for each copy in ``doc``."""
    holder_path, _, id_field = ref.path.rpartition(".")
    holders: list[Any] = [doc]
    for part in holder_path.split(".") if holder_path else []:
        nxt: list[Any] = []
        for holder in holders:
            value = holder.get(part) if isinstance(holder, dict) else None
            nxt.extend(value if isinstance(value, list) else [value])
        holders = [h for h in nxt if isinstance(h, dict)]
    for holder in holders:
        if id_field not in holder:
            continue
        copied = {
            src: holder[local.rpartition(".")[2]] for local, src in copies.items() if local.rpartition(".")[2] in holder
        }
        if copied:
            yield holder[id_field], copied


def time_series(database: Any, sample: CollectionSample) -> Iterator[Recommendation]:
    if sample.count < TIME_SERIES_MIN_DOCS or sample.avg_size > TIME_SERIES_DOC_BYTES or not sample.documents:
        return
    n = len(sample.documents)
    dates = [s.path for s in sample.fields.values() if "." not in s.path and s.types["date"] >= 0.95 * n]
    if not dates:
        return
    for stats in sample.fields.values():
        if "." in stats.path or stats.path in ("_id", *dates) or stats.present < 0.95 * n:
            continue
        if not (stats.types["objectId"] or stats.types["string"] or stats.types["number"]):
            continue
        sources = len(database[sample.name].distinct(stats.path))
        if sources and sample.count / sources >= TIME_SERIES_PER_SOURCE:
            yield Recommendation(
                "bucket",
                sample.name,
                f"{sample.count} small documents ({round(sample.avg_size)} bytes) with a time in {dates[0]} "
                f"and {sources} values of {stats.path}: a time series. One document per {stats.path} per "
                f"hour ({{{stats.path}, hour, values: {{'0': ..., '59': ...}}, sum, count}}) cuts documents "
                f"and index entries by up to 60x and pre-computes the aggregates.",
                {
                    "documents": sample.count,
                    "avg_bytes": round(sample.avg_size),
                    "time": dates[0],
                    "source": stats.path,
                    "sources": sources,
                },
            )
            return


def redundant_indexes(sample: CollectionSample) -> Iterator[Recommendation]:
    plain = [
        index
        for index in sample.indexes
        if index["name"] != "_id_"
        and not any(
            option in index
            for option in ("unique", "sparse", "partialFilterExpression", "expireAfterSeconds", "collation", "hidden")
        )
    ]
    for index in plain:
        key = list(index["key"].items())
        for other in sample.indexes:
            other_key = list(other["key"].items())
            if other is not index and len(other_key) > len(key) and other_key[: len(key)] == key:
                yield Recommendation(
                    "drop-index",
                    sample.name,
                    f"Index {index['name']} is a prefix of {other['name']}, which serves the same queries: "
                    f"dropping it saves a write per document change.",
                    {"index": dict(index["key"]), "covered_by": dict(other["key"])},
                    action=f'db.{sample.name}.dropIndex("{index["name"]}")',
                )
                break
