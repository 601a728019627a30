"""``local.oplog.rs``: the oplog read as the capped collection tools tail.

Entry fields from https://www.mongodb.com/docs/manual/core/replica-set-oplog/ (op codes i, u,
d, c; a transaction as one ``applyOps`` command with its lsid and txnNumber); tailing from
https://www.mongodb.com/docs/manual/core/tailable-cursors/.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure

import foliodb


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    with foliodb.MongoClient(str(tmp_path / "data")) as client:
        yield client


def test_every_write_is_an_entry_in_mongods_shape(client: Any) -> None:
    shop = client.shop
    shop.c.insert_one({"_id": 1, "a": 1})
    shop.c.update_one({"_id": 1}, {"$set": {"a": 2}})
    shop.c.delete_one({"_id": 1})
    with client.start_session() as session, session.start_transaction():
        shop.c.insert_one({"_id": 2}, session=session)
        shop.c.insert_one({"_id": 3}, session=session)
    entries = list(client.local.oplog.rs.find())
    assert [(e["op"], e["ns"]) for e in entries] == [
        ("c", "shop.$cmd"),  # the implicit create
        ("i", "shop.c"),
        ("u", "shop.c"),
        ("d", "shop.c"),
        ("c", "admin.$cmd"),  # the transaction
    ]
    create, insert, update, delete, txn = entries
    assert create["o"]["create"] == "c"
    assert (insert["o"], insert["o2"], update["o2"], delete["o"]) == (
        {"_id": 1, "a": 1},
        {"_id": 1},
        {"_id": 1},
        {"_id": 1},
    )
    assert update["o"] == {"_id": 1, "a": 2}  # the document after, as a replacement
    assert all(e["v"] == 2 and e["t"] == 1 and "pre" not in e for e in entries)
    assert [op["o"] for op in txn["o"]["applyOps"]] == [{"_id": 2}, {"_id": 3}]
    assert txn["txnNumber"] == 1 and "id" in txn["lsid"]
    assert insert["ui"] == create["ui"]
    times = [e["ts"] for e in entries]
    assert times == sorted(times) and len(set(times)) == len(times)
    (listed,) = client.local.list_collections()
    assert (listed["name"], listed["options"]["capped"]) == ("oplog.rs", True)


def test_filters_order_and_projection(client: Any) -> None:
    client.shop.a.insert_many([{"_id": i} for i in range(5)])
    client.shop.b.insert_one({"_id": "b"})
    oplog = client.local.oplog.rs
    inserts = list(oplog.find({"op": "i", "ns": "shop.a"}, {"_id": 0, "o": 1}))
    assert inserts == [{"o": {"_id": i}} for i in range(5)]
    third = list(oplog.find({"op": "i"}))[2]["ts"]
    after = [(e["op"], e["o"].get("_id")) for e in oplog.find({"ts": {"$gt": third}})]
    assert after == [("i", 3), ("i", 4), ("c", None), ("i", "b")]  # shop.b's create between
    assert [e["o"]["_id"] for e in oplog.find({"ts": {"$gte": third}, "op": "i"})] == [2, 3, 4, "b"]
    newest = oplog.find().sort("$natural", -1).limit(1).next()
    assert newest["o"] == {"_id": "b"}
    assert [e["o"]["_id"] for e in oplog.find({"op": "i"}).sort("$natural", -1).skip(1).limit(2)] == [4, 3]
    assert oplog.count_documents({}) == len(list(oplog.find()))
    # Any other sort is a blocking sort, as on mongod's collection scan.
    by_id = [e["o"]["_id"] for e in oplog.find({"op": "i"}, {"o": 1}).sort([("o._id", -1), ("ts", 1)]).limit(3)]
    assert by_id == ["b", 4, 3]  # strings sort after numbers in BSON order
    assert list(oplog.find().sort("ts", -1)) == list(oplog.find().sort("$natural", -1))
    by_ts = [e["ts"] for e in oplog.find({}, {"ts": 1}).sort("ts", -1).skip(1).limit(3)]
    assert by_ts == sorted((e["ts"] for e in oplog.find()), reverse=True)[1:4]
    with pytest.raises(OperationFailure) as info:
        list(oplog.find().sort("$natural", 2))
    assert info.value.code == 2
    with pytest.raises(OperationFailure) as info:
        list(oplog.find(cursor_type=CursorType.TAILABLE).sort("ts", 1))
    assert info.value.code == 2


def test_a_tailable_cursor_waits_for_the_next_commit(client: Any) -> None:
    client.shop.c.insert_one({"_id": 0})
    newest = client.local.oplog.rs.find().sort("$natural", -1).limit(1).next()["ts"]
    cursor = client.local.oplog.rs.find({"ts": {"$gt": newest}}, cursor_type=CursorType.TAILABLE_AWAIT)
    cursor.max_await_time_ms(30_000)
    threading.Timer(0.2, lambda: client.shop.c.insert_one({"_id": 1})).start()
    started = time.monotonic()
    entry = next(cursor)
    assert entry["o"] == {"_id": 1} and time.monotonic() - started < 15  # woken by the commit, not the 30 s await
    assert cursor.alive


def test_nothing_writes_there(client: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        client.local.oplog.rs.insert_one({})
    assert info.value.code == 73  # InvalidNamespace
    with pytest.raises(OperationFailure) as info:
        client.local.command("create", "oplog.rs")
    assert info.value.code == 73
    client.local.x.insert_one({})
    with pytest.raises(OperationFailure) as info:
        client.admin.command("renameCollection", "local.x", to="local.oplog.rs")
    assert info.value.code == 73


def test_a_tail_whose_position_was_trimmed_is_lost(client: Any) -> None:
    client.shop.c.insert_one({"_id": 0, "pad": "x" * 500})
    cursor = client.local.oplog.rs.find(cursor_type=CursorType.TAILABLE).batch_size(2)
    next(cursor)
    engine = client._executor.engine
    for i in range(1, 20):
        client.shop.c.insert_one({"_id": i, "pad": "x" * 500})
    engine.storage.oplog.size_bytes = 2_000
    engine.housekeeping()
    with pytest.raises(OperationFailure) as info:
        list(cursor)
    assert info.value.code == 136  # CappedPositionLost


def _writes_of_known_count(client: Any) -> int:
    """Writes whose oplog entries are counted by hand: how many entries they make."""
    client.shop.c.insert_one({"_id": 1})  # the implicit create, then the insert: 2
    client.shop.c.insert_many([{"_id": i, "pad": "x" * 100} for i in range(2, 6)])  # 4
    client.shop.c.update_one({"_id": 1}, {"$set": {"a": 1}})  # 1
    client.shop.c.delete_one({"_id": 2})  # 1
    with client.start_session() as session, session.start_transaction():  # one applyOps entry: 1
        client.shop.c.insert_one({"_id": 10}, session=session)
        client.shop.c.insert_one({"_id": 11}, session=session)
    client.local.scratch.insert_one({"_id": 0})  # local is not recorded: 0
    return 9


def test_counts_are_the_number_of_entries(client: Any) -> None:
    # count and estimatedDocumentCount read a collection's count; on the oplog that is its entries
    # (https://www.mongodb.com/docs/manual/reference/command/count/).
    expected = _writes_of_known_count(client)
    oplog = client.local.oplog.rs
    assert client.local.command("count", "oplog.rs")["n"] == expected
    assert oplog.estimated_document_count() == expected
    assert oplog.count_documents({}) == expected
    # The transaction's inserts are inside its applyOps entry: 5 top-level inserts.
    assert client.local.command("count", "oplog.rs", query={"op": "i"})["n"] == 5
    assert oplog.count_documents({"op": "i", "ns": "shop.c"}) == 5
    assert client.local.command("count", "oplog.rs", query={"op": "i"}, skip=2, limit=3)["n"] == 3
    assert client.local.command("count", "oplog.rs", skip=7)["n"] == expected - 7
    assert client.local.command("count", "oplog.rs", skip=expected + 5)["n"] == 0
    assert client.local.command("count", "oplog.rs", limit=-4)["n"] == 4  # a negative limit counts as its size
    with pytest.raises(OperationFailure) as info:
        client.local.command("count", "oplog.rs", skip=-1)
    assert info.value.code == 51024
    client.shop.c.insert_one({"_id": 12})
    assert oplog.estimated_document_count() == expected + 1


def test_collection_statistics_count_the_entries(client: Any) -> None:
    # collStats / $collStats / dbStats: https://www.mongodb.com/docs/manual/reference/command/collStats/,
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
    expected = _writes_of_known_count(client)
    stats = client.local.command("collStats", "oplog.rs")
    assert (stats["ns"], stats["count"], stats["capped"], stats["nindexes"]) == ("local.oplog.rs", expected, True, 0)
    assert stats["size"] > 6 * 100  # the four padded inserts at least
    assert stats["avgObjSize"] == stats["size"] // expected
    assert stats["maxSize"] == client.local.command("listCollections")["cursor"]["firstBatch"][0]["options"]["size"]
    assert client.local.command("collStats", "oplog.rs", scale=1024)["size"] == stats["size"] // 1024
    (doc,) = client.local.oplog.rs.aggregate([{"$collStats": {"count": {}, "storageStats": {}}}])
    assert doc["count"] == expected and doc["storageStats"]["count"] == expected
    db_stats = client.local.command("dbStats")
    assert db_stats["objects"] == expected + 1  # and local.scratch's one document
    assert db_stats["collections"] == 2
