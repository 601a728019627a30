"""The Node.js ``mongodb`` driver (pinned in node/package.json) against ``foliodb serve``.

Each test runs one script from node/ (one node process: startup costs ~100 ms),
which prints one line of canonical Extended JSON; the test compares it with
values worked out here and checks the data again through pymongo.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.binary import UUID_SUBTYPE

from tests.clients.conftest import NODE, NODE_DIR, RunningServer, needs_node_clients

pytestmark = [pytest.mark.clients, needs_node_clients]


def run_node(script: str, server: RunningServer, db: str) -> dict[str, Any]:
    """Run node/<script> URI DB and return its one line of canonical EJSON, decoded."""
    assert NODE is not None
    proc = subprocess.run(
        [NODE, str(NODE_DIR / script), server.uri, db],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        pytest.fail(f"node {script} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    result: dict[str, Any] = json_util.loads(lines[-1])
    return result


def make_items() -> list[dict[str, Any]]:
    """The documents crud.js inserts, in insertion order."""
    docs: list[dict[str, Any]] = [{"_id": 0, "name": "zero", "group": "a", "qty": 5, "tags": ["x"]}]
    for i in range(1, 25):
        docs.append(
            {
                "_id": i,
                "name": f"item{i}",
                "group": "abc"[i % 3],
                "qty": i * 2,
                "tags": ["odd"] if i % 2 else ["even"],
            }
        )
    return docs


@pytest.mark.clients
def test_crud_cursors_and_aggregate(server: RunningServer) -> None:
    out = run_node("crud.js", server, "nodecrud")
    items = make_items()

    assert out["insertOne"] == {"acknowledged": True, "insertedId": 0}
    assert out["insertMany"] == {"acknowledged": True, "insertedCount": 24}

    # find: filter, sort, limit, projection (_id kept, fields in stored order).
    matches = [d for d in items if d["qty"] >= 20 and d["group"] in ("a", "b")]
    matches.sort(key=lambda d: -d["qty"])
    expected_find = [{"_id": d["_id"], "name": d["name"], "qty": d["qty"]} for d in matches[:7]]
    assert out["find"] == expected_find
    assert [list(d) for d in out["find"]] == [["_id", "name", "qty"]] * 7
    # batchSize 3 for 7 documents: the driver had to send getMore, and each worked.
    find_commands = out["findCommands"]
    assert [c["name"] for c in find_commands[:3]] == ["find", "getMore", "getMore"]
    assert all(c["ok"] for c in find_commands)
    limited_cursor = find_commands[0]["cursorId"]
    assert limited_cursor != 0
    assert all(c["getMoreOf"] == limited_cursor for c in find_commands if c["name"] == "getMore")

    # updateOne with $inc and $set (a dotted path creates the subdocument), then an upsert.
    assert out["updateOne"] == {"matchedCount": 1, "modifiedCount": 1, "upsertedCount": 0}
    assert out["afterUpdate"] == {
        "_id": 3,
        "name": "three",
        "group": "a",
        "qty": 106,
        "tags": ["odd"],
        "meta": {"touched": True},
    }
    assert out["upsert"] == {"matchedCount": 0, "upsertedCount": 1, "upsertedId": 100}

    # deleteMany on an array field; then counts and the aggregation over what is left.
    remaining = [d for d in items if "odd" not in d["tags"]] + [{"_id": 100, "name": "upserted"}]
    assert out["deleteMany"] == {"acknowledged": True, "deletedCount": len(items) + 1 - len(remaining)}
    assert out["countAll"] == out["estimated"] == len(remaining) == 14
    assert out["countGroupA"] == sum(1 for d in remaining if d.get("group") == "a")

    totals: dict[str, list[int]] = {}
    for d in remaining:
        if "group" in d:
            total = totals.setdefault(d["group"], [0, 0])
            total[0] += d["qty"]
            total[1] += 1
    by_total = sorted(totals.items(), key=lambda item: -item[1][0])
    expected_groups = [{"_id": g, "total": t, "n": n} for g, (t, n) in by_total]
    assert out["aggregate"] == expected_groups

    # A cursor closed after its first document: the driver kills it on the server.
    assert out["firstOfEarlyClosed"] == items[0]
    early = out["earlyCloseCommands"]
    assert [c["name"] for c in early] == ["find", "killCursors"]
    early_cursor = early[0]["cursorId"]
    assert early_cursor != 0
    assert early[1]["requested"] == [early_cursor]
    assert early[1]["cursorsKilled"] == [early_cursor]
    assert early[1]["cursorsNotFound"] == []
    assert out["failedCommands"] == []

    # The same state through pymongo; the killed cursor is gone on the server.
    with server.client() as client:
        coll = client.nodecrud["items"]
        assert list(coll.find({}, sort=[("_id", 1)])) == sorted(remaining, key=lambda d: d["_id"])
        assert coll.find_one({"_id": 3}) is None  # updated, then deleted as "odd"
        reply = client.nodecrud.command({"killCursors": "items", "cursors": [Int64(early_cursor)]})
        assert reply["cursorsNotFound"] == [early_cursor]

    # mongod returns cursor id 0 once a find's limit is reached (the limit stage is at EOF),
    # so a driver that reads to the limit has nothing to kill.
    last_batch = [c for c in find_commands if c["name"] in ("find", "getMore")][-1]
    assert last_batch["cursorId"] == 0
    assert not any(c["name"] == "killCursors" for c in find_commands)


@pytest.mark.clients
def test_indexes_duplicate_key_and_bulk_write(server: RunningServer) -> None:
    out = run_node("errors.js", server, "nodeerrors")

    assert out["createIndex"] == "email_unique"
    assert out["createCompound"] == "last_1_first_-1"
    assert out["listIndexes"] == [
        {"name": "_id_", "key": {"_id": 1}, "unique": None},
        {"name": "email_unique", "key": {"email": 1}, "unique": True},
        {"name": "last_1_first_-1", "key": {"last": 1, "first": -1}, "unique": None},
    ]

    # insertOne onto a unique index: the driver throws a MongoServerError with code 11000.
    dup = out["duplicateKey"]
    assert dup["name"] == "MongoServerError" and dup["isServerError"] and not dup["isBulkWriteError"]
    assert dup["code"] == 11000
    assert "E11000 duplicate key error" in dup["message"]
    assert "email_unique" in dup["message"]
    assert dup["keyPattern"] == {"email": 1}
    assert dup["keyValue"] == {"email": "a@example.com"}
    dup_id = out["duplicateId"]
    assert dup_id["code"] == 11000
    assert dup_id["keyPattern"] == {"_id": 1} and dup_id["keyValue"] == {"_id": 1}

    # Ordered bulkWrite: two inserts land, the third fails, the fourth never runs.
    bulk = out["bulk"]
    assert bulk["name"] == "MongoBulkWriteError" and bulk["isBulkWriteError"]
    assert bulk["code"] == 11000
    assert bulk["insertedCount"] == bulk["resultInsertedCount"] == 2
    assert bulk["insertedIds"] == {"0": 10, "1": 11}
    assert bulk["writeErrors"] == [{"index": 2, "code": 11000}]

    # Unordered: the failure is reported and the rest still runs.
    assert out["unordered"] == {
        "name": "MongoBulkWriteError",
        "insertedCount": 1,
        "modifiedCount": 1,
        "writeErrors": [{"index": 0, "code": 11000}],
    }
    assert out["ids"] == [1, 10, 11, 21]

    with server.client() as client:
        coll = client.nodeerrors["users"]
        info = coll.index_information()
        assert set(info) == {"_id_", "email_unique", "last_1_first_-1"}
        assert info["email_unique"]["unique"] is True
        assert info["last_1_first_-1"]["key"] == [("last", 1), ("first", -1)]
        assert [d["_id"] for d in coll.find({}, {"_id": 1}).sort("_id", 1)] == [1, 10, 11, 21]
        assert coll.find_one({"_id": 10}) == {"_id": 10, "email": "b@example.com", "vip": True}
        assert coll.count_documents({"email": "a@example.com"}) == 1


@pytest.mark.clients
def test_bson_types_both_ways(server: RunningServer) -> None:
    uuid_value = Binary(bytes.fromhex("0f8fad5bd9cb469fa16570867728950e"), UUID_SUBTYPE)
    from_python = {
        "_id": "from-python",
        "oid": ObjectId("65a1b2c3d4e5f60718293a4b"),
        "int32": -7,
        "long": Int64(9007199254740993),
        "double": 2.5,
        "decimal": Decimal128("1234.5678901234567890"),
        "bin": b"\x00\x01\x02\xff",
        "uuid": uuid_value,
        "regex": Regex("^ab+c$", "i"),
        "ts": Timestamp(1700000000, 3),
        "min": MinKey(),
        "max": MaxKey(),
        "yes": True,
        "none": None,
        "text": "héllo, wörld ✓",
        "nested": {"arr": [1, "two", {"three": [3]}], "empty": {}},
    }
    with server.client() as client:
        client.nodetypes["types"].insert_one(dict(from_python))

    out = run_node("types.js", server, "nodetypes")

    # Python -> server -> node: same values, and the integer widths survive.
    [seen_by_node] = out["fromPython"]
    assert seen_by_node == from_python
    assert type(seen_by_node["long"]) is Int64
    assert type(seen_by_node["int32"]) is int
    assert type(seen_by_node["double"]) is float

    # node -> server -> node and -> pymongo.
    from_node = out["fromNodeReadBack"]
    assert from_node == from_python | {"_id": "from-node", "date": from_node["date"]}
    assert from_node["date"].isoformat() == "2024-02-29T12:34:56.789000"
    assert type(from_node["long"]) is Int64
    assert out["typeMatches"] == 1
    with server.client() as client:
        coll = client.nodetypes["types"]
        stored = coll.find_one({"_id": "from-node"})
        assert stored is not None
        assert stored == from_node
        for field, bson_type in {
            "oid": "objectId",
            "int32": "int",
            "long": "long",
            "double": "double",
            "decimal": "decimal",
            "date": "date",
            "bin": "binData",
            "regex": "regex",
            "ts": "timestamp",
            "min": "minKey",
            "max": "maxKey",
            "none": "null",
        }.items():
            assert coll.count_documents({"_id": "from-node", field: {"$type": bson_type}}) == 1, field


@pytest.mark.clients
def test_change_streams_emitter_iteration_and_resume(server: RunningServer) -> None:
    """collection.watch() with fullDocument 'updateLookup', read as an event emitter, by
    tryNext() and by async iteration, then resumed with resumeAfter from a saved token. Event
    shapes: https://www.mongodb.com/docs/manual/reference/change-events/ (insert, update, delete);
    updateLookup: https://www.mongodb.com/docs/manual/changeStreams/#lookup-full-document-for-update-operations ;
    resuming: https://www.mongodb.com/docs/manual/changeStreams/#resume-a-change-stream"""
    out = run_node("change_streams.js", server, "nodestreams")
    ns = {"db": "nodestreams", "coll": "orders"}

    assert out["firstTryNext"] is None  # the cursor opened before any write
    insert_pen, update_pen, insert_ink, delete_ink = out["emitted"]
    assert [(e["operationType"], e["documentKey"]) for e in out["emitted"]] == [
        ("insert", {"_id": 1}),
        ("update", {"_id": 1}),
        ("insert", {"_id": 2}),
        ("delete", {"_id": 2}),
    ]
    assert all(e["ns"] == ns for e in out["emitted"])
    assert insert_pen["fullDocument"] == {"_id": 1, "item": "pen", "qty": 2}
    assert insert_ink["fullDocument"] == {"_id": 2, "item": "ink", "qty": 1}
    assert update_pen["updateDescription"] == {
        "updatedFields": {"qty": 5, "sold": 1},
        "removedFields": [],
        "truncatedArrays": [],
    }
    # updateLookup: the document as it is when the event is read (no later write touched it).
    assert update_pen["fullDocument"] == {"_id": 1, "item": "pen", "qty": 5, "sold": 1}
    assert "fullDocument" not in delete_ink and "updateDescription" not in delete_ink
    for event in out["emitted"]:
        assert isinstance(event["clusterTime"], Timestamp) and set(event["_id"]) == {"_data"}
        assert "txnNumber" not in event and "lsid" not in event  # no transaction
    tokens = [e["_id"]["_data"] for e in out["emitted"]]
    assert tokens == sorted(tokens) and len(set(tokens)) == 4
    assert out["emitterErrors"] == []

    # A second stream sees the same events, with the same resume tokens.
    assert out["iterated"] == out["emitted"]
    assert out["iteratedResumeToken"]["_data"] >= tokens[-1]

    # resumeAfter the update's token: the two events after it, then a write made after resuming.
    assert out["resumed"] == [insert_ink, delete_ink]
    (later,) = out["resumedLater"]
    assert (later["operationType"], later["documentKey"], later["fullDocument"]) == (
        "insert",
        {"_id": 3},
        {"_id": 3, "item": "cap", "qty": 7},
    )
    assert later["_id"]["_data"] > tokens[-1]
    assert out["resumedExtra"] is None  # nothing repeated
    # Closing a stream whose awaitData getMore is waiting sends killCursors, which stops that
    # getMore with CursorKilled, as mongod's CursorManager::killCursor kills the operation using
    # the cursor; nothing else fails.
    failed = out["failedCommands"]
    assert len(failed) <= 3 and all((c["name"], c["code"]) == ("getMore", 237) for c in failed), failed

    with server.client() as client:
        assert list(client.nodestreams["orders"].find().sort("_id", 1)) == [
            {"_id": 1, "item": "pen", "qty": 5, "sold": 1},
            {"_id": 3, "item": "cap", "qty": 7},
        ]
