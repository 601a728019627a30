"""Every document comes back from storage as it went in, type for type.

Random documents (tests/bson_values.py: nested arrays and documents, every
BSON type) and a frozen set of edge values are inserted and read back with
find_one, in memory and on disk (also after closing and reopening the
directory). "As it went in" means as BSON stores it and pymongo decodes it
(https://www.mongodb.com/docs/manual/reference/bson-types/), written out here
by hand: an int outside int32 is an int64 and reads back as ``Int64``;
binData of subtype 0 reads back as ``bytes``; dates keep milliseconds;
everything else keeps its class, its value (NaN and -0.0 included), its
Decimal128 digits and its field order.
"""

from __future__ import annotations

import datetime
import itertools
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bson import Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from hypothesis import given, settings

import foliodb
from tests.bson_values import EDGE_VALUES, bson_values, documents

BSON_TYPES = "https://www.mongodb.com/docs/manual/reference/bson-types/"
INT32 = range(-(2**31), 2**31)


def stored(value: Any) -> Any:
    """What a value reads back as, written from the BSON type rules."""
    cls = value.__class__
    if cls is int:
        return value if value in INT32 else Int64(value)
    if cls is Binary and value.subtype == 0:
        return bytes(value)
    if cls is dict:
        return {k: stored(v) for k, v in value.items()}
    if cls is list:
        return [stored(v) for v in value]
    if cls is datetime.datetime:
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
    return value


def assert_same(actual: Any, expected: Any, where: str = "doc") -> None:
    """Equal in class, value and field order, recursively."""
    assert actual.__class__ is expected.__class__, (where, actual, expected)
    if isinstance(expected, dict):
        assert list(actual) == list(expected), (where, "field order")
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), where
        for n, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, f"{where}.{n}")
    elif isinstance(expected, float):
        # Bit for bit: NaN stays NaN, -0.0 keeps its sign.
        assert struct.pack("<d", actual) == struct.pack("<d", expected) or (
            math.isnan(actual) and math.isnan(expected)
        ), where
    elif isinstance(expected, Regex):
        assert (actual.pattern, actual.flags) == (expected.pattern, expected.flags), where
    elif isinstance(expected, Code):
        assert str(actual) == str(expected), where
        assert actual.scope.__class__ is expected.scope.__class__, where
        if expected.scope is not None:
            assert_same(actual.scope, expected.scope, f"{where}.$scope")
    elif isinstance(expected, DBRef):
        assert (actual.collection, actual.database) == (expected.collection, expected.database), where
        assert_same(actual.id, expected.id, f"{where}.$id")
    elif isinstance(expected, Decimal128):
        assert actual.bid == expected.bid, where  # the same digits and exponent, not just the value
    elif isinstance(expected, datetime.datetime):
        assert actual.tzinfo is None and actual == expected, where
    else:
        assert actual == expected, where


@pytest.fixture(scope="module", params=["memory", "disk"])
def collection(request: Any, tmp_path_factory: Any) -> Iterator[Any]:
    path = ":memory:" if request.param == "memory" else str(tmp_path_factory.mktemp("roundtrip") / "data")
    client = foliodb.MongoClient(path)
    yield client.test.roundtrip
    client.close()


_ids = itertools.count()


def _no_empty_top_level_timestamp(doc: dict[str, Any]) -> bool:
    # The server fills those in on insert (see the test below).
    return not any(v == Timestamp(0, 0) for v in doc.values())


@settings(max_examples=150, deadline=None)
@given(documents(max_leaves=20).filter(_no_empty_top_level_timestamp))
def test_random_documents_round_trip(collection: Any, doc: dict[str, Any]) -> None:
    doc = {"_id": next(_ids), **doc}
    collection.insert_one(doc)
    assert_same(collection.find_one({"_id": doc["_id"]}), stored(doc))


@settings(max_examples=60, deadline=None)
@given(bson_values(max_leaves=6))
def test_random_values_round_trip_as_ids(collection: Any, value: Any) -> None:
    # Any value but an array or a regex can be an _id, and reads back as it went in.
    if isinstance(value, (list, Regex)):
        return
    collection.delete_many({"_id": value})  # 1 and 1.0 are the same _id
    collection.insert_one({"_id": value})
    found = list(collection.find({"_id": value}))
    assert len(found) == 1, (value, found)
    assert_same(found[0]["_id"], stored(value))


EXTRA: list[Any] = [
    2**31,  # int64 by its size
    -(2**63),
    Int64(5),
    5.0,
    Decimal128("1.0"),
    Decimal128("1.00"),
    Decimal128("-0"),
    Decimal128("NaN"),
    Decimal128("-Infinity"),
    datetime.datetime(2024, 2, 29, 23, 59, 59, 999000),
    datetime.datetime(1969, 12, 31, 23, 59, 59, 1000),
    Binary(b"\x00" * 16, 4),
    Binary(b"\x01\x02", 0x80),
    Binary(b"", 5),
    Regex("^a.*b$", "imsux"),
    Timestamp(2**32 - 1, 2**32 - 1),
    Code("function () { return 1; }"),
    Code("f", {"x": [1, {"y": Int64(2)}]}),
    DBRef("users", ObjectId("65f000000000000000000001")),
    DBRef("users", 7, "other"),
    {"z": 1, "a": 2, "m": {"q": 1, "b": 2}},
    [[[]], [[1, [2, [3]]]], {}],
    MinKey(),
    MaxKey(),
]


def _edge_document() -> dict[str, Any]:
    values = [v for v in EDGE_VALUES if v != Timestamp(0, 0)] + EXTRA
    return {"_id": "edges", **{f"f{n}": v for n, v in enumerate(values)}, "nested": {"all": values, "in": [values]}}


def test_edge_values_round_trip_memory_and_disk_after_reopen(tmp_path: Path) -> None:
    doc = _edge_document()
    expected = stored(doc)
    memory = foliodb.MongoClient(":memory:")
    memory.test.c.insert_one(doc)
    assert_same(memory.test.c.find_one({"_id": "edges"}), expected)
    memory.close()
    path = str(tmp_path / "data")
    disk = foliodb.MongoClient(path)
    disk.test.c.insert_one(doc)
    assert_same(disk.test.c.find_one({"_id": "edges"}), expected)
    disk.close()
    reopened = foliodb.MongoClient(path)
    assert_same(reopened.test.c.find_one({"_id": "edges"}), expected)
    reopened.close()


def test_field_order_and_numeric_types_survive_updates(tmp_path: Path) -> None:
    # An update rewrites the stored document; untouched fields keep class and place.
    client = foliodb.MongoClient(str(tmp_path / "data"))
    doc = {"_id": 1, "z": Int64(1), "a": 1.0, "m": Decimal128("2.50"), "d": {"y": 1, "b": [2, Int64(3)]}}
    client.test.c.insert_one(doc)
    client.test.c.update_one({"_id": 1}, {"$set": {"new": 1}})
    assert_same(client.test.c.find_one({"_id": 1}), {**doc, "new": 1})
    client.close()


def test_empty_top_level_timestamp_is_filled_in_on_insert(client: Any) -> None:
    # BSON_TYPES, Timestamps: an empty timestamp in a top-level field (not _id)
    # is replaced by the current timestamp on insert.
    client.test.c.insert_one({"_id": Timestamp(0, 0), "ts": Timestamp(0, 0), "in": {"ts": Timestamp(0, 0)}})
    doc = client.test.c.find_one()
    assert doc["_id"] == Timestamp(0, 0)
    assert doc["in"]["ts"] == Timestamp(0, 0)
    assert doc["ts"].time > 0, BSON_TYPES
