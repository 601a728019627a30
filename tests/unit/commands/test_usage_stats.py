"""Usage statistics FolioDB keeps as mongod does: $indexStats accesses
(operations whose plan read the index, since the index was created or the
engine opened), $collStats latencyStats (per-namespace reads, writes and
commands with mongod's histogram) and queryExecStats; and the storage
statistics of dbStats, collStats, $collStats and listDatabases.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/ (latencyStats
document and histogram, queryExecStats, storageStats), https://www.mongodb.com/docs/manual/reference/command/dbStats/,
https://www.mongodb.com/docs/manual/reference/command/collStats/,
https://www.mongodb.com/docs/manual/reference/command/listDatabases/
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pymongo.errors import OperationFailure

from foliodb.engine.usage import bucket_lower_bound, histogram_bucket


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def index_ops(coll: Any) -> dict[str, int]:
    return {s["name"]: s["accesses"]["ops"] for s in coll.aggregate([{"$indexStats": {}}])}


@pytest.fixture
def db(client: Any) -> Any:
    db = client.usage
    db.c.insert_many([{"_id": i, "a": i % 3} for i in range(9)])
    return db


def test_index_accesses_count_operations_that_use_the_index(db: Any) -> None:
    before = _utcnow().replace(microsecond=0)
    db.c.create_index("a")
    assert index_ops(db.c) == {"_id_": 0, "a_1": 0}
    for value in range(3):
        list(db.c.find({"a": value}))
    db.c.find_one({"_id": 4})  # IDHACK reads the _id index
    db.c.find({"a": 1}).explain()  # explain runs no operation: not counted
    db.c.update_one({"a": 2}, {"$set": {"b": 1}})
    db.c.delete_one({"_id": 8})
    list(db.c.aggregate([{"$match": {"a": 0}}]))
    db.c.count_documents({"a": 1})
    list(db.c.find({"b": 1}))  # a collection scan reads no index
    assert index_ops(db.c) == {"_id_": 2, "a_1": 6}
    since = {s["name"]: s["accesses"]["since"] for s in db.c.aggregate([{"$indexStats": {}}])}
    assert before <= since["a_1"] <= _utcnow()


def test_counters_start_again_with_a_new_index(db: Any) -> None:
    db.c.create_index("a")
    list(db.c.find({"a": 1}))
    first = next(s for s in db.c.aggregate([{"$indexStats": {}}]) if s["name"] == "a_1")
    db.c.drop_index("a_1")
    db.c.create_index("a")
    again = next(s for s in db.c.aggregate([{"$indexStats": {}}]) if s["name"] == "a_1")
    assert (first["accesses"]["ops"], again["accesses"]["ops"]) == (1, 0)
    assert again["accesses"]["since"] >= first["accesses"]["since"]


def test_indexes_that_existed_count_from_the_engine_opening(tmp_path: Any) -> None:
    import foliodb

    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as client:
        client.usage.c.insert_one({"a": 1})
        client.usage.c.create_index("a")
    opened = _utcnow().replace(microsecond=0)
    with foliodb.MongoClient(path) as client:
        list(client.usage.c.find({"a": 1}))
        stats = {s["name"]: s["accesses"] for s in client.usage.c.aggregate([{"$indexStats": {}}])}
    assert stats["a_1"]["ops"] == 1 and stats["_id_"]["ops"] == 0
    assert opened <= stats["a_1"]["since"] <= _utcnow()


# Latency (µs) -> the lower bound of its mongod histogram bucket: powers of two up to 1024 µs, each power
# from 2048 to 2^20 split at its midpoint (2048, 3072, 4096, 6144, ...), then powers of two.
BUCKETS = [
    (0, 0),
    (1, 0),
    (2, 2),
    (3, 2),
    (1023, 512),
    (1024, 1024),
    (2047, 1024),
    (2048, 2048),
    (3071, 2048),
    (3072, 3072),
    (4095, 3072),
    (4096, 4096),
    (6144, 6144),
    (1_048_575, 786_432),
    (1_048_576, 1_048_576),
    (1_572_864, 1_572_864),
    (2_097_152, 2_097_152),
    (3_000_000, 2_097_152),
    (2**40, 2**40),
    (2**50, 2**40),  # the last bucket is open-ended
]


@pytest.mark.parametrize(("micros", "lower"), BUCKETS)
def test_histogram_buckets(micros: int, lower: int) -> None:
    assert bucket_lower_bound(histogram_bucket(micros)) == lower


def latency(coll: Any, histograms: bool = False) -> dict[str, Any]:
    stage = {"$collStats": {"latencyStats": {"histograms": histograms}}}
    stats: dict[str, Any] = next(coll.aggregate([stage]))["latencyStats"]
    return stats


def test_latency_stats_count_reads_writes_and_commands(db: Any) -> None:
    start = latency(db.c)
    assert start["writes"]["ops"] == 1  # the fixture's insert_many
    for _ in range(3):
        db.c.find_one({"a": 1})
    db.c.insert_one({"_id": 100})
    db.c.update_one({"_id": 100}, {"$set": {"x": 1}})
    db.c.create_index("a")
    stats = latency(db.c, histograms=True)
    assert (stats["reads"]["ops"], stats["writes"]["ops"], stats["commands"]["ops"]) == (
        start["reads"]["ops"] + 4,  # three finds and the $collStats aggregate before
        3,
        1,
    )
    assert stats["transactions"] == {"latency": 0, "ops": 0, "histogram": []}
    for kind in ("reads", "writes", "commands"):
        assert stats[kind]["latency"] > 0
        assert sum(bucket["count"] for bucket in stats[kind]["histogram"]) == stats[kind]["ops"]
        assert all(bucket_lower_bound(histogram_bucket(b["micros"])) == b["micros"] for b in stats[kind]["histogram"])
    assert "histogram" not in latency(db.c)["reads"]


def test_latency_of_a_view_is_its_own_and_drop_clears_it(db: Any) -> None:
    db.create_collection("v", viewOn="c", pipeline=[{"$match": {"a": 1}}])
    list(db.v.find())
    view = next(db.v.aggregate([{"$collStats": {"latencyStats": {}}}]))
    assert view["ns"] == "usage.v" and view["latencyStats"]["reads"]["ops"] == 1
    db.c.drop()
    assert latency(db.c)["writes"]["ops"] == 0


def test_query_exec_stats_count_collection_scans(db: Any) -> None:
    db.c.create_index("a")
    list(db.c.find({"b": 1}))
    list(db.c.find({"b": 2}))
    list(db.c.find({"a": 1}))
    stats = next(db.c.aggregate([{"$collStats": {"queryExecStats": {}}}]))["queryExecStats"]
    assert stats == {"collectionScans": {"total": 2, "nonTailable": 2}}


def test_storage_stats_fields(db: Any) -> None:
    db.create_collection("capped", capped=True, size=10_000, max=5)
    db.capped.insert_one({"x": 1})
    for name, capped in (("c", {"capped": False}), ("capped", {"capped": True, "max": 5, "maxSize": 10_240})):
        coll = db.command("collStats", name)
        stage = next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
        for stats in (coll, stage):
            assert {k: stats[k] for k in capped} == capped
            assert stats["totalSize"] == stats["storageSize"] + stats["totalIndexSize"]
            assert (stats["numOrphanDocs"], stats["indexBuilds"], stats["scaleFactor"]) == (0, [], 1)
            assert stats["nindexes"] == len(stats["indexSizes"]) == 1


def test_scale(db: Any) -> None:
    whole = db.command("collStats", "c")
    kilo = db.command("collStats", "c", scale=1024)
    assert kilo["storageSize"] == whole["storageSize"] // 1024 and kilo["scaleFactor"] == 1024
    assert kilo["avgObjSize"] == whole["avgObjSize"]  # not scaled
    with pytest.raises(OperationFailure) as err:
        db.command("collStats", "c", scale=0)
    assert err.value.code == 2


def test_db_stats_with_a_view(db: Any) -> None:
    # mongosh's db.stats() on a database holding a view.
    db.create_collection("v", viewOn="c")
    stats = db.command("dbStats")
    coll = db.command("collStats", "c")
    assert (stats["collections"], stats["views"], stats["objects"]) == (1, 1, 9)
    assert (stats["dataSize"], stats["storageSize"], stats["indexSize"]) == (
        coll["size"],
        coll["storageSize"],
        coll["totalIndexSize"],
    )
    assert stats["scaleFactor"] == 1


COLL_STATS_REFUSED = [
    # (collection, stage spec, code, errmsg)
    ("v", {"storageStats": {}}, 166, "Namespace usage.v is a view, not a collection"),
    ("v", {"count": {}}, 166, "Namespace usage.v is a view, not a collection"),
    (
        "missing",
        {"storageStats": {}},
        26,
        "Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [usage.missing] not found.",
    ),
    (
        "missing",
        {"count": {}},
        26,
        "Unable to retrieve count in $collStats stage :: caused by :: Collection [usage.missing] not found.",
    ),
]


@pytest.mark.parametrize(("name", "spec", "code", "message"), COLL_STATS_REFUSED)
def test_coll_stats_refused(db: Any, name: str, spec: dict[str, Any], code: int, message: str) -> None:
    db.create_collection("v", viewOn="c", pipeline=[{"$match": {"a": 1}}])
    with pytest.raises(OperationFailure) as err:
        list(db[name].aggregate([{"$collStats": spec}]))
    assert (err.value.code, err.value.details["errmsg"]) == (code, message)


def test_list_databases_sizes(client: Any, db: Any) -> None:
    db.c.create_index("a")
    client.other.d.insert_one({"x": 1})
    reply = client.admin.command("listDatabases")
    listed = {entry["name"]: entry for entry in reply["databases"]}
    assert sorted(listed) == ["admin", "config", "local", "other", "usage"]
    coll = db.command("collStats", "c")
    assert listed["usage"]["sizeOnDisk"] == coll["storageSize"] + coll["totalIndexSize"]
    assert listed["usage"]["sizeOnDisk"] > coll["size"]  # pages, not just documents
    assert (listed["usage"]["empty"], listed["local"]["empty"]) == (False, True)
    assert reply["totalSize"] == sum(entry["sizeOnDisk"] for entry in listed.values())


def test_top_counts_operations_per_namespace(db: Any) -> None:
    """The top command (mongotop's source): per namespace, total, readLock, writeLock and one
    counter per logical op, each {time (µs), count}; admin only.
    https://www.mongodb.com/docs/manual/reference/command/top/"""

    def counts() -> dict[str, int]:
        entry = db.client.admin.command("top")["totals"]["usage.c"]
        return {name: value["count"] for name, value in entry.items()}

    before = counts()  # the fixture's insert_many
    assert before == {
        "total": 1,
        "readLock": 0,
        "writeLock": 1,
        "queries": 0,
        "getmore": 0,
        "insert": 1,
        "update": 0,
        "remove": 0,
        "commands": 0,
    }
    list(db.c.find({"a": 1}, batch_size=1))  # a find and its getMores
    db.c.insert_one({"_id": 50})
    db.c.update_one({"_id": 50}, {"$set": {"x": 1}})
    db.c.delete_one({"_id": 50})
    db.c.count_documents({})  # an aggregate: a command under a read lock
    db.c.create_index("a")  # a command under a write lock
    after = counts()
    getmores = after["getmore"]
    assert getmores >= 2
    assert {k: after[k] - before[k] for k in after} == {
        "total": 6 + getmores,
        "readLock": 2 + getmores,
        "writeLock": 4,
        "queries": 1,
        "getmore": getmores,
        "insert": 1,
        "update": 1,
        "remove": 1,
        "commands": 2,
    }
    totals = db.client.admin.command("top")["totals"]
    assert totals["note"] == "all times in microseconds"
    entry = totals["usage.c"]
    assert entry["total"]["time"] >= entry["readLock"]["time"] + entry["writeLock"]["time"] - 1
    assert entry["total"]["time"] == sum(
        entry[k]["time"] for k in ("queries", "getmore", "insert", "update", "remove", "commands")
    )
    with pytest.raises(OperationFailure) as info:
        db.command("top")
    assert info.value.code == 13
    db.c.drop()
    assert "usage.c" not in db.client.admin.command("top")["totals"]
