"""Issue 13 ("what real drivers, ODMs and tools send"), command items, through
pymongo over the wire and embedded: the same calls, the same answers.

Manual pages (what each case follows):
* DBRef paths: https://www.mongodb.com/docs/manual/reference/database-references/,
  https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
* profiler: https://www.mongodb.com/docs/manual/reference/database-profiler/
* getParameter: https://www.mongodb.com/docs/manual/reference/command/getParameter/
* stats: https://www.mongodb.com/docs/manual/reference/command/dbStats/,
  https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/,
  https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/
* aggregate cursor batchSize 0: https://www.mongodb.com/docs/manual/reference/command/aggregate/
* _id index: https://www.mongodb.com/docs/manual/reference/command/createIndexes/
* Stable API: https://www.mongodb.com/docs/manual/reference/stable-api/
* validation: https://www.mongodb.com/docs/manual/reference/read-concern-snapshot/,
  https://www.mongodb.com/docs/manual/reference/limits/
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import bson
import pymongo
import pytest
from bson import DBRef, ObjectId
from bson.son import SON
from pymongo.errors import OperationFailure
from pymongo.server_api import ServerApi

import foliodb
from tests.clients.conftest import RunningServer


@pytest.fixture(params=["embedded", "wire"])
def mode(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """A factory of clients of one fresh deployment, embedded or over the wire."""
    if request.param == "embedded":
        engine_client = foliodb.MongoClient(str(tmp_path / "data"))
        clients = [engine_client]

        def embedded(**options: Any) -> Any:
            if not options:
                return engine_client
            client = foliodb.MongoClient(str(tmp_path / "data"), **options)
            clients.append(client)
            return client

        yield embedded
        for client in clients:
            client.close()
        return
    server = RunningServer(tmp_path / "data")
    wire_clients: list[pymongo.MongoClient[dict[str, Any]]] = []

    def wire(**options: Any) -> Any:
        client = server.client(**options)
        wire_clients.append(client)
        return client

    yield wire
    for client in wire_clients:
        client.close()
    server.stop()


def test_beanie_fetch_links(mode: Any) -> None:
    db = mode().t
    door = ObjectId()
    db.doors.insert_one({"_id": door, "height": 2})
    db.houses.insert_one({"_id": 1, "door": DBRef("doors", door), "windows": [DBRef("windows", 7)]})
    fetched = list(
        db.houses.aggregate(
            [
                {"$lookup": {"from": "doors", "localField": "door.$id", "foreignField": "_id", "as": "_link_door"}},
                {"$unwind": {"path": "$_link_door", "preserveNullAndEmptyArrays": True}},
                {"$project": {"height": "$_link_door.height", "ref": "$door.$ref"}},
            ]
        )
    )
    assert fetched == [{"_id": 1, "height": 2, "ref": "doors"}]
    # {$ref, $id} arrives at the server as a DBRef: $elemMatch must still read it as an object.
    assert db.houses.count_documents({"windows": {"$elemMatch": {"$ref": "windows", "$id": 7}}}) == 1


def test_profiler(mode: Any) -> None:
    db = mode().prof
    db.c.insert_many([{"_id": i, "k": i % 2} for i in range(4)])
    db.command("profile", 2)
    db.c.update_many({"k": 1}, {"$set": {"x": 1}})
    db.command("createUser", "u", pwd="pa55word", roles=[])
    counts = [db["system.profile"].count_documents({}) for _ in range(3)]
    assert counts == [2, 3, 4]
    db.command("profile", 0)
    update = db["system.profile"].find_one({"op": "update"})
    assert update["command"] == {"q": {"k": 1}, "u": {"$set": {"x": 1}}, "multi": True, "upsert": False}
    assert (update["nMatched"], update["nModified"], update["docsExamined"]) == (2, 2, 4)
    assert db["system.profile"].find_one({"command.createUser": "u"})["command"]["pwd"] == "xxx"


def test_get_parameter_star(mode: Any) -> None:
    reply = mode().admin.command("getParameter", "*")
    for name in (
        "enableTestCommands",
        "requireApiVersion",
        "featureCompatibilityVersion",
        "authenticationMechanisms",
        "cursorTimeoutMillis",
        "internalQueryMaxBlockingSortMemoryUsageBytes",
        "notablescan",
        "ttlMonitorEnabled",
        "ttlMonitorSleepSecs",
    ):
        assert name in reply
    assert reply["featureCompatibilityVersion"] == {"version": "8.0"}


def test_stats(mode: Any) -> None:
    db = mode().stats
    db.c.insert_many([{"a": i} for i in range(5)])
    db.c.create_index("a")
    db.create_collection("v", viewOn="c")
    assert db.command("dbStats")["views"] == 1  # mongosh's db.stats()
    list(db.c.find({"a": 3}))
    ops = {s["name"]: s["accesses"]["ops"] for s in db.c.aggregate([{"$indexStats": {}}])}
    assert ops == {"_id_": 0, "a_1": 1}
    latency = next(db.c.aggregate([{"$collStats": {"latencyStats": {}}}]))["latencyStats"]
    assert (latency["reads"]["ops"], latency["writes"]["ops"]) == (2, 1)  # find and $indexStats; insert_many
    with pytest.raises(OperationFailure) as err:
        list(db.v.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert err.value.code == 166
    assert {"admin", "config", "local", "stats"} <= set(mode().list_database_names())


def test_aggregate_raw_batches(mode: Any) -> None:
    db = mode().t
    db.c.insert_many([{"_id": i} for i in range(5)])
    batches = list(db.c.aggregate_raw_batches([{"$match": {"_id": {"$gte": 2}}}]))
    assert [doc for batch in batches for doc in bson.decode_all(batch)] == [{"_id": 2}, {"_id": 3}, {"_id": 4}]
    reply = db.command("aggregate", "c", pipeline=[], cursor={"batchSize": 0})
    assert reply["cursor"]["firstBatch"] == [] and reply["cursor"]["id"] != 0
    # $out still runs to completion in the command.
    db.command("aggregate", "c", pipeline=[{"$out": "copy"}], cursor={"batchSize": 0})
    assert db.copy.count_documents({}) == 5


def test_id_index(mode: Any) -> None:
    db = mode().t
    db.c.insert_one({})
    assert db.c.create_index([("_id", 1)]) == "_id_1"
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]
    with pytest.raises(OperationFailure) as err:
        db.c.create_index([("_id", 1)], unique=True)
    assert (err.value.code, err.value.details["codeName"]) == (197, "InvalidIndexSpecificationOption")


def test_server_api(mode: Any) -> None:
    client = mode(server_api=ServerApi("1"))
    db = client.t
    db.create_collection("c")
    db.command("collMod", "c", validator={"x": {"$exists": True}})
    assert db.command(SON([("ping", 1), ("apiVersion", "1"), ("apiStrict", True)]))["ok"] == 1.0
    with pytest.raises(OperationFailure) as err:
        db.command(SON([("distinct", "c"), ("key", "x"), ("apiVersion", "1"), ("apiStrict", True)]))
    assert (err.value.code, err.value.details["codeName"]) == (323, "APIStrictError")
    with pytest.raises(OperationFailure) as err:
        mode().t.command(SON([("ping", 1), ("apiVersion", "2")]))
    assert (err.value.code, err.value.details["codeName"]) == (322, "APIVersionError")


def test_server_api_strict_over_the_wire(tmp_path: Any) -> None:
    # The embedded client takes server_api but sends no apiVersion (foliodb/client): over the wire only.
    server = RunningServer(tmp_path / "data")
    try:
        with server.client(server_api=ServerApi("1", strict=True)) as client:
            client.t.c.insert_one({"x": 1})
            assert client.t.c.count_documents({}) == 1
            with pytest.raises(OperationFailure) as err:
                client.t.c.distinct("x")
            assert err.value.code == 323
    finally:
        server.stop()


VALIDATION = [
    (SON([("count", "c"), ("hint", "nope")]), 2),
    (SON([("aggregate", "c"), ("pipeline", []), ("cursor", {}), ("nope", 1)]), 40415),
    (SON([("find", "c"), ("readConcern", {"level": "snapshot", "atClusterTime": "later"})]), 14),
    (SON([("find", "c"), ("readConcern", {"level": "fast"})]), 9),
    (SON([("count", "c"), ("skip", -1)]), 51024),
    (SON([("insert", "c"), ("documents", [{"_id": n} for n in range(100_001)])]), 16),
    (SON([("aggregate", "c"), ("pipeline", [{"$out": "v"}]), ("cursor", {})]), 166),
]


@pytest.mark.parametrize(
    ("command", "code"),
    VALIDATION,
    ids=["count-hint", "aggregate-field", "snapshot", "level", "count-skip", "batch-size", "out-view"],
)
def test_validation(mode: Any, command: SON[str, Any], code: int) -> None:
    db = mode().t
    db.c.insert_one({"_id": "x"})
    db.create_collection("v", viewOn="c")
    with pytest.raises(OperationFailure) as err:
        db.command(command)
    assert err.value.code == code


def test_database_case(mode: Any) -> None:
    client = mode()
    client.shop.c.insert_one({})
    with pytest.raises(OperationFailure) as err:
        client.Shop.c.insert_one({})
    assert (err.value.code, err.value.details["codeName"]) == (13297, "DatabaseDifferCase")
