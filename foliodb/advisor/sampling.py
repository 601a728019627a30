"""What a collection's documents look like: sizes, fields, arrays, and the
values that may reference other collections, from a random sample.

Paths follow MongoDB's: arrays are transparent (``items.sku`` is the ``sku`` of
every element of ``items``), so an array's length is recorded at its own path
and its elements' fields under the same prefix.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import bson
from bson import ObjectId
from bson.raw_bson import RawBSONDocument

from foliodb.query.bsontypes import type_name as bson_type_name

MAX_SAMPLED_IDS = 200  # reference candidates kept per path


@dataclass
class FieldStats:
    path: str
    present: int = 0  # sampled documents that have the path
    types: Counter[str] = field(default_factory=Counter)
    array_lengths: list[int] = field(default_factory=list)  # one per array met at this path
    element_types: Counter[str] = field(default_factory=Counter)  # of the arrays' elements
    ids: list[Any] = field(default_factory=list)  # ObjectId values met here (scalars or elements)


@dataclass
class CollectionSample:
    name: str
    count: int
    sizes: list[int]  # BSON sizes of the sampled documents
    max_size: int  # over the whole collection
    avg_size: float
    fields: dict[str, FieldStats]
    documents: list[dict[str, Any]]
    indexes: list[dict[str, Any]]


_NUMBERS = frozenset({"int", "long", "double", "decimal"})


def type_name(value: Any) -> str:
    """BSON's type alias, with the four number types as one ("number"): the rules ask what kind of value."""
    name = bson_type_name(value)
    return "number" if name in _NUMBERS else name


def sample_collection(database: Any, name: str, size: int) -> CollectionSample:
    coll = database[name]
    count = coll.count_documents({})
    raw = coll.with_options(codec_options=bson.CodecOptions(document_class=RawBSONDocument))
    sampled = [doc.raw for doc in raw.aggregate([{"$sample": {"size": size}}])] if count else []
    totals = list(
        coll.aggregate(
            [
                {
                    "$group": {
                        "_id": None,
                        "max": {"$max": {"$bsonSize": "$$ROOT"}},
                        "avg": {"$avg": {"$bsonSize": "$$ROOT"}},
                    }
                }
            ]
        )
    )
    documents = [bson.decode(data) for data in sampled]
    fields: dict[str, FieldStats] = {}
    for doc in documents:
        seen: set[str] = set()
        _walk(doc, "", fields, seen)
        for path in seen:
            fields[path].present += 1
    return CollectionSample(
        name=name,
        count=count,
        sizes=[len(data) for data in sampled],
        max_size=int(totals[0]["max"]) if totals else 0,
        avg_size=float(totals[0]["avg"]) if totals else 0.0,
        fields=fields,
        documents=documents,
        indexes=list(coll.list_indexes()),
    )


def _walk(value: dict[str, Any], prefix: str, fields: dict[str, FieldStats], seen: set[str]) -> None:
    for key, child in value.items():
        path = f"{prefix}{key}"
        stats = fields.setdefault(path, FieldStats(path))
        seen.add(path)
        stats.types[type_name(child)] += 1
        if isinstance(child, dict):
            _walk(child, path + ".", fields, seen)
        elif isinstance(child, list):
            stats.array_lengths.append(len(child))
            for element in child:
                stats.element_types[type_name(element)] += 1
                if isinstance(element, dict):
                    _walk(element, path + ".", fields, seen)
                elif isinstance(element, ObjectId) and len(stats.ids) < MAX_SAMPLED_IDS:
                    stats.ids.append(element)
        elif isinstance(child, ObjectId) and path != "_id" and len(stats.ids) < MAX_SAMPLED_IDS:
            stats.ids.append(child)
