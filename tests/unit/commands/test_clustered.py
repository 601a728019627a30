"""Clustered collections.

Manual: https://www.mongodb.com/docs/manual/core/clustered-collections/ (CC) and
the create command's ``clusteredIndex`` field
(https://www.mongodb.com/docs/manual/reference/command/create/). Explain: CC says a
query on the clustered index "performs a bounded collection scan"; mongod shows it
as ``CLUSTERED_IXSCAN`` with inclusive ``minRecord``/``maxRecord`` (type-bracketed:
a number range runs from NaN to Infinity), a scan bounded by nothing as ``COLLSCAN``
(mongod's jstests/libs/clustered_collections/clustered_collection_bounded_scan_common.js).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

SPEC = {"key": {"_id": 1}, "unique": True}


def test_listed_as_mongod_lists_them(db: Any) -> None:
    """CC "Behavior": the clustered index shows in listIndexes with clustered: true;
    listCollections shows the option and no idIndex."""
    db.create_collection("c", clusteredIndex={**SPEC, "name": "by_id"})
    assert list(db.c.list_indexes()) == [
        {"v": 2, "key": {"_id": 1}, "name": "by_id", "unique": True, "clustered": True}
    ]
    (entry,) = list(db.list_collections(filter={"name": "c"}))
    assert entry["options"] == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "by_id", "unique": True}}
    assert "idIndex" not in entry
    db.create_collection("d", clusteredIndex=SPEC)
    assert next(iter(db.d.list_indexes()))["name"] == "_id_"


@pytest.mark.parametrize(
    "spec, code",
    [
        ({"key": {"_id": 1}}, 40414),  # unique is required
        ({"key": {"_id": 1}, "unique": False}, 5979700),
        ({"key": {"a": 1}, "unique": True}, 197),
        ({"key": {"_id": -1}, "unique": True}, 197),
        ({**SPEC, "other": 1}, 40415),
        ("yes", 14),
    ],
)
def test_bad_specs(db: Any, spec: Any, code: int) -> None:
    """CC "Limitations": the key is {_id: 1} and unique is true."""
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", clusteredIndex=spec)
    assert info.value.code == code
    assert db.list_collection_names() == []


def test_ordered_and_unique_by_id(db: Any) -> None:
    """CC: documents are stored (and read by _id) in _id order; _id stays unique."""
    db.create_collection("c", clusteredIndex=SPEC)
    ids = [5, 1, 9, 3, 7]
    db.c.insert_many([{"_id": i, "x": i * 10} for i in ids])
    assert [d["_id"] for d in db.c.find().sort("_id", 1)] == sorted(ids)
    # A collection scan (natural order) walks the clustered index.
    assert [d["_id"] for d in db.c.find()] == sorted(ids)
    assert [d["_id"] for d in db.c.find().sort("$natural", -1)] == sorted(ids, reverse=True)
    assert [d["_id"] for d in db.c.find({"x": {"$gte": 30}})] == [3, 5, 7, 9]
    assert [d["_id"] for d in db.c.find({"_id": {"$gt": 2, "$lte": 7}}).sort("_id", -1)] == [7, 5, 3]
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 5})


def test_ttl_on_the_clustered_id(client: Any, db: Any) -> None:
    """CC "Set Up a TTL": expireAfterSeconds removes documents whose _id date is
    older than that many seconds; other _id types never expire."""
    db.create_collection("c", clusteredIndex=SPEC, expireAfterSeconds=60)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    old = now - dt.timedelta(minutes=5)
    db.c.insert_many([{"_id": old}, {"_id": now}, {"_id": 7}])
    client.admin.command("setParameter", 1, ttlMonitorSleepSecs=1)
    deadline = time.monotonic() + 10
    while db.c.count_documents({"_id": old}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sorted(db.c.distinct("_id"), key=str) == sorted([now, 7], key=str)
    db.command("collMod", "c", expireAfterSeconds="off")
    (entry,) = list(db.list_collections(filter={"name": "c"}))
    assert "expireAfterSeconds" not in entry["options"]


def test_natural_order_across_scan_batches(db: Any) -> None:
    """CC: the natural order is _id order over any number of documents and _id types
    (numbers before strings, in BSON order)."""
    db.create_collection("c", clusteredIndex=SPEC)
    ids: list[Any] = [(i * 7919) % 2503 for i in range(2503)] + [f"s{i:03d}" for i in range(50)]
    db.c.insert_many([{"_id": i, "tag": "odd" if str(i)[-1] in "13579" else "even"} for i in ids])
    numbers = sorted(i for i in ids if isinstance(i, int))
    strings = sorted(i for i in ids if isinstance(i, str))
    assert [d["_id"] for d in db.c.find()] == numbers + strings
    assert [d["_id"] for d in db.c.find({"tag": "odd"})] == [i for i in numbers + strings if str(i)[-1] in "13579"]
    assert [d["_id"] for d in db.c.find().sort("$natural", -1).limit(3)] == strings[::-1][:3]


def test_over_the_wire(wire: Any) -> None:
    """CC through pymongo against ``foliodb serve``."""
    db = wire.clw
    db.drop_collection("c")
    db.create_collection("c", clusteredIndex=SPEC)
    db.c.insert_many([{"_id": 3}, {"_id": 1}, {"_id": 2}])
    assert [d["_id"] for d in db.c.find()] == [1, 2, 3]
    assert next(iter(db.c.list_indexes()))["clustered"] is True
    with pytest.raises(OperationFailure) as info:
        db.create_collection("d", clusteredIndex={"key": {"_id": 1}, "unique": False})
    assert info.value.code == 5979700


def _plan(db: Any, filter_spec: Any, **find: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    out = db.command("explain", {"find": "c", "filter": filter_spec, **find}, verbosity="executionStats")
    return out["queryPlanner"]["winningPlan"], out["executionStats"]


@pytest.fixture
def numbered(db: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """_ids null, 0..99 and "foo", as in mongod's bounded-scan test."""
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)  # it asserts on the plan
    db.create_collection("c", clusteredIndex=SPEC)
    db.c.insert_many([{"_id": i, "a": -i} for i in range(100)] + [{"_id": None}, {"_id": "foo"}])
    return db


@pytest.mark.parametrize(
    "filter_spec, low, high, returned",
    [
        ({"_id": 5}, 5, 5, 1),
        ({"_id": {"$lt": 10}}, math.nan, 10, 10),
        ({"_id": {"$lte": 10}}, math.nan, 10, 11),
        ({"_id": {"$gt": 89}}, 89, math.inf, 10),
        ({"_id": {"$gte": 20, "$lt": 40}}, 20, 40, 20),
        ({"_id": {"$in": [10, 20, 30]}}, 10, 30, 3),
    ],
)
def test_id_bounds_explain_as_a_clustered_scan(
    numbered: Any, filter_spec: Any, low: float, high: float, returned: int
) -> None:
    plan, stats = _plan(numbered, filter_spec)
    assert plan["stage"] == "CLUSTERED_IXSCAN" and plan["direction"] == "forward"
    assert plan["filter"] == filter_spec
    for got, wanted in ((plan["minRecord"], low), (plan["maxRecord"], high)):
        assert got == wanted or (math.isnan(wanted) and math.isnan(got))
    assert stats["nReturned"] == returned
    assert stats["totalKeysExamined"] == 0  # records are read, no index keys


def test_other_scans_explain_as_collection_scans(numbered: Any) -> None:
    plan, _ = _plan(numbered, {"a": {"$gt": -10}})
    assert plan == {"stage": "COLLSCAN", "direction": "forward", "filter": {"a": {"$gt": -10}}}
    plan, _ = _plan(numbered, {"a": -2}, hint={"_id": 1})  # the cluster key hinted, no _id bounds
    assert plan["stage"] == "COLLSCAN" and "minRecord" not in plan
    plan, stats = _plan(numbered, {"_id": {"$gt": 95}}, sort={"_id": -1})
    assert (plan["stage"], plan["direction"], plan["minRecord"]) == ("CLUSTERED_IXSCAN", "backward", 95)
    assert stats["nReturned"] == 4
    assert numbered.c.find({"_id": 7}).explain()["queryPlanner"]["winningPlan"]["stage"] == "CLUSTERED_IXSCAN"
    # No index keys to cover a projection: the records are read.
    plan, _ = _plan(numbered, {"_id": {"$gt": 95}}, projection={"_id": 1})
    assert [plan["stage"], plan["inputStage"]["stage"]] == ["PROJECTION_SIMPLE", "CLUSTERED_IXSCAN"]


def test_a_default_collation_is_the_clustered_index_s(db: Any) -> None:
    """CC and listIndexes: the clustered index is listed with the collection's default
    collation, and _id is unique under it."""
    strength2 = {"locale": "en", "strength": 2}
    db.create_collection("c", clusteredIndex=SPEC, collation=strength2)
    (listed,) = db.c.list_indexes()
    assert listed["clustered"] is True and listed["collation"]["strength"] == 2
    db.c.insert_one({"_id": "a"})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": "A"})
    assert db.c.find_one({"_id": "A"}) == {"_id": "a"}
