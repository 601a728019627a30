"""pymongo, unchanged, against ``foliodb serve``: the handshake, CRUD and
cursors over the wire, errors as pymongo raises them for a server, a
standalone's refusals, compression, concurrency, durability across restarts,
and a server that survives bad peers.

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson import ObjectId, Timestamp
from bson.raw_bson import RawBSONDocument
from pymongo.errors import (
    BulkWriteError,
    CursorNotFound,
    DuplicateKeyError,
    OperationFailure,
    WriteError,
)

from foliodb.server import Server, wire
from tests.bson_values import EDGE_VALUES
from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients

HELLO = "https://www.mongodb.com/docs/manual/reference/command/hello/"
GET_MORE = "https://www.mongodb.com/docs/manual/reference/command/getMore/"
TRANSACTIONS = "https://www.mongodb.com/docs/manual/core/transactions/"  # replica sets and sharded clusters only
COMPRESSION = "https://www.mongodb.com/docs/manual/reference/command/hello/#mongodb-data-hello.compression"
SHUTDOWN = "https://www.mongodb.com/docs/manual/reference/command/shutdown/"

Client = pymongo.MongoClient[dict[str, Any]]


def test_hello_describes_the_primary_of_a_one_member_replica_set(wire_client: Client, server: RunningServer) -> None:
    # HELLO: the fields drivers read to pick wire versions, limits and the topology
    # (https://www.mongodb.com/docs/manual/reference/command/hello/#replica-sets).
    reply = wire_client.admin.command("hello")
    assert reply["isWritablePrimary"] is True and reply["secondary"] is False
    assert (reply["minWireVersion"], reply["maxWireVersion"]) == (0, 25)
    assert reply["maxBsonObjectSize"] == 16 * 1024 * 1024
    assert reply["maxMessageSizeBytes"] == 48_000_000
    assert reply["maxWriteBatchSize"] == 100_000
    assert reply["logicalSessionTimeoutMinutes"] == 30
    me = f"{server.host}:{server.port}"
    assert (reply["setName"], reply["hosts"], reply["me"], reply["primary"]) == ("rs0", [me], me, me)
    assert reply["lastWrite"]["opTime"]["ts"] == reply["operationTime"]
    assert wire_client.server_info()["version"] == "8.0.0"
    assert wire_client.is_primary and not wire_client.is_mongos
    assert wire_client.topology_description.topology_type_name == "ReplicaSetWithPrimary"
    with server.client(replicaSet="rs0") as named:  # the set's name in the URI works too
        assert named.admin.command("ping")["ok"] == 1.0
    status = wire_client.admin.command("replSetGetStatus")
    assert (status["set"], status["myState"], status["members"][0]["stateStr"]) == ("rs0", 1, "PRIMARY")
    config = wire_client.admin.command("replSetGetConfig")["config"]
    assert (config["_id"], [m["host"] for m in config["members"]]) == ("rs0", [me])


def test_hello_describes_a_standalone_when_asked(tmp_path: Path) -> None:
    # --standalone: a standalone mongod 8.0's hello, and its refusal of transaction numbers.
    standalone = Server(str(tmp_path / "data"), "127.0.0.1", 0, replica_set=None)
    host, port = standalone.start()
    try:
        with pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000) as client:
            reply = client.admin.command("hello")
            assert "setName" not in reply and "msg" not in reply and "operationTime" not in reply
            assert client.topology_description.topology_type_name == "Single"
            with client.start_session() as session, pytest.raises(OperationFailure) as info:
                session.with_transaction(lambda s: client.db.t.insert_one({"x": 1}, session=s))
            assert info.value.code == 20
            assert client.db.t.count_documents({}) == 0
            with pytest.raises(OperationFailure) as info:
                client.admin.command("replSetGetStatus")
            assert info.value.code == 76  # NoReplicationEnabled
    finally:
        standalone.shutdown()


def test_crud_round_trip(wire_client: Client) -> None:
    items = wire_client.shop.items
    assert items.insert_many([{"_id": i, "k": i % 4, "s": f"v{i}"} for i in range(100)]).inserted_ids[-1] == 99
    assert items.count_documents({"k": 1}) == 25
    assert items.find_one({"_id": 42}) == {"_id": 42, "k": 2, "s": "v42"}
    assert [d["_id"] for d in items.find({"k": 3}, {"_id": 1}).sort("_id", -1).skip(1).limit(3)] == [95, 91, 87]
    assert items.update_many({"k": 0}, {"$inc": {"k": 10}}).modified_count == 25
    assert items.replace_one({"_id": 500}, {"s": "new"}, upsert=True).upserted_id == 500
    after = items.find_one_and_update({"_id": 1}, {"$set": {"s": "x"}}, return_document=pymongo.ReturnDocument.AFTER)
    assert after == {"_id": 1, "k": 1, "s": "x"}
    assert items.delete_many({"k": 10}).deleted_count == 25
    assert items.distinct("k") == [1, 2, 3]
    groups = list(items.aggregate([{"$match": {"k": {"$lt": 5}}}, {"$group": {"_id": "$k", "n": {"$sum": 1}}}]))
    assert sorted((g["_id"], g["n"]) for g in groups) == [(1, 25), (2, 25), (3, 25)]
    assert items.estimated_document_count() == 76


def test_every_bson_type_round_trips_over_the_wire(wire_client: Client) -> None:
    coll = wire_client.db.types
    # Top-level empty timestamps are filled in on insert (as by mongod), so they go one level down only.
    docs = [
        {"_id": n, "v": value, "nested": {"list": [value, {"v": value}]}}
        if value != Timestamp(0, 0)
        else {"_id": n, "nested": {"v": value}}
        for n, value in enumerate(EDGE_VALUES)
    ]
    coll.insert_many(docs)
    raw = coll.with_options(codec_options=bson.CodecOptions(document_class=RawBSONDocument))
    for doc in docs:
        assert raw.find_one({"_id": doc["_id"]}).raw == bson.encode(doc)  # byte for byte


def test_large_results_come_in_batches_through_get_more(wire_client: Client) -> None:
    # GET_MORE: the first batch is 101 documents by default, then batchSize per getMore.
    coll = wire_client.db.many
    coll.insert_many([{"_id": i, "pad": "x" * 100} for i in range(1000)])
    cursor = coll.find({}, batch_size=64)
    first = next(cursor)
    assert first["_id"] == 0 and cursor.cursor_id  # a live server cursor
    assert sum(1 for _ in cursor) == 999
    assert cursor.cursor_id == 0 or not cursor.alive


def test_closed_cursor_is_killed_on_the_server(wire_client: Client) -> None:
    coll = wire_client.db.many
    coll.insert_many([{"_id": i} for i in range(50)])
    cursor = coll.find({}, batch_size=5)
    next(cursor)
    cursor_id = cursor.cursor_id
    cursor.close()  # sends killCursors
    with pytest.raises(CursorNotFound) as info:
        wire_client.db.command("getMore", cursor_id, collection="many")
    assert info.value.code == 43


def test_write_errors_are_pymongos(wire_client: Client) -> None:
    coll = wire_client.db.errs
    coll.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError) as dup:
        coll.insert_one({"_id": 1})
    assert dup.value.code == 11000 and dup.value.details is not None
    assert dup.value.details["keyValue"] == {"_id": 1}
    with pytest.raises(BulkWriteError) as bulk:
        coll.insert_many([{"_id": 2}, {"_id": 1}, {"_id": 3}])
    details = bulk.value.details
    assert details["nInserted"] == 1 and [e["index"] for e in details["writeErrors"]] == [1]
    wire_client.db.create_collection("valid", validator={"$jsonSchema": {"required": ["name"]}})
    with pytest.raises(WriteError) as invalid:
        wire_client.db.valid.insert_one({"x": 1})
    assert invalid.value.code == 121 and "errInfo" in (invalid.value.details or {})
    with pytest.raises(WriteError) as immutable:
        coll.update_one({"_id": 1}, {"$set": {"_id": 9}})
    assert immutable.value.code == 66


def test_command_errors_keep_code_and_code_name(wire_client: Client) -> None:
    with pytest.raises(OperationFailure) as unknown:
        wire_client.db.command("noSuchCommand")
    assert (unknown.value.code, unknown.value.details["codeName"]) == (59, "CommandNotFound")  # type: ignore[index]
    with pytest.raises(OperationFailure) as bad:
        list(wire_client.db.c.find({"a": {"$bogus": 1}}))
    assert bad.value.code == 2


def test_unacknowledged_writes_get_no_reply_but_land(wire_client: Client) -> None:
    fire = wire_client.db.get_collection("w0", write_concern=pymongo.WriteConcern(w=0))
    assert fire.insert_one({"_id": 1}).acknowledged is False
    deadline = time.monotonic() + 5
    while wire_client.db.w0.count_documents({}) != 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_an_order_and_its_stock_commit_together_or_not_at_all(wire_client: Client) -> None:
    # TRANSACTIONS (https://www.mongodb.com/docs/manual/core/transactions/): the schema-design
    # examples' order plus inventory decrement, through pymongo's with_transaction.
    db = wire_client.shop
    db.inventory.insert_one({"_id": "sku1", "qty": 3})

    def order(session: Any) -> None:
        db.orders.insert_one({"_id": 1, "sku": "sku1", "qty": 1}, session=session)
        db.inventory.update_one({"_id": "sku1"}, {"$inc": {"qty": -1}}, session=session)

    with wire_client.start_session() as session:
        session.with_transaction(order)
    assert db.orders.count_documents({}) == 1 and db.inventory.find_one()["qty"] == 2

    def failing(session: Any) -> None:
        db.orders.insert_one({"_id": 2, "sku": "sku1", "qty": 1}, session=session)
        db.inventory.update_one({"_id": "sku1"}, {"$inc": {"qty": -1}}, session=session)
        raise RuntimeError("payment declined")

    with wire_client.start_session() as session, pytest.raises(RuntimeError):
        session.with_transaction(failing)
    assert db.orders.count_documents({}) == 1 and db.inventory.find_one()["qty"] == 2


@pytest.mark.parametrize("compressor", ["zlib", "snappy"])
def test_compression_is_negotiated(server: RunningServer, compressor: str) -> None:
    # COMPRESSION: the server answers with the compressors it shares with the client's list.
    with server.client(compressors=compressor) as client:
        shared = client.admin.command("hello", compression=["snappy", "zlib", "zstd", "lz4"])["compression"]
        assert shared == ["snappy", "zlib", "zstd"]
        client.db.z.insert_many([{"_id": i, "text": "compress me " * 50} for i in range(200)])
        assert [d["_id"] for d in client.db.z.find({"_id": {"$gte": 195}})] == [195, 196, 197, 198, 199]


def test_concurrent_clients_share_one_engine(server: RunningServer) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with server.client() as client:
                client.db.conc.insert_many([{"w": n, "i": i} for i in range(100)])
                for i in range(20):
                    client.db.conc.update_one({"w": n, "i": i}, {"$set": {"done": True}})
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    with server.client() as client:
        assert client.db.conc.count_documents({}) == 800
        assert client.db.conc.count_documents({"done": True}) == 160


def test_acknowledged_writes_survive_a_restart(server: RunningServer) -> None:
    with server.client() as client:
        client.db.keep.insert_many([{"_id": i} for i in range(10)])
        client.db.keep.create_index("x")
    server.stop()
    again = RunningServer(Path(server.dbpath))
    try:
        with again.client() as client:
            assert client.db.keep.count_documents({}) == 10
            assert "x_1" in client.db.keep.index_information()
    finally:
        again.stop()


def raw_roundtrip(server: RunningServer, data: bytes) -> bytes:
    """Send ``data`` on a fresh socket; the one reply message, or b"" when the server closes it."""
    with socket.create_connection((server.host, server.port), timeout=5) as sock:
        sock.sendall(data)
        received = b""
        while len(received) < 16 or len(received) < struct.unpack_from("<i", received)[0]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # a browser pointed at the port
        struct.pack("<iiii", 2**31 - 1, 1, 0, wire.OP_MSG),  # a length past the 48 MB limit
        struct.pack("<iiii", 26, 1, 0, 9999) + b"\x00" * 10,  # an opcode that does not exist
        struct.pack("<iiii", 21, 1, 0, wire.OP_MSG) + b"\x00\x00\x00\x00\x07",  # an unknown section kind
    ],
    ids=["http", "huge-length", "bad-opcode", "bad-section"],
)
def test_garbage_closes_that_connection_and_the_server_lives(server: RunningServer, garbage: bytes) -> None:
    assert raw_roundtrip(server, garbage) == b""
    with server.client() as client:
        assert client.admin.command("ping")["ok"] == 1.0


def test_bad_bson_gets_an_error_reply(server: RunningServer) -> None:
    bad = bytearray(bson.encode({"ping": 1, "$db": "admin"}))
    bad[4] = 0x7F  # no such element type
    payload = b"\x00\x00\x00\x00\x00" + bytes(bad)
    frame = struct.pack("<iiii", 16 + len(payload), 5, 0, wire.OP_MSG) + payload
    reply = raw_roundtrip(server, frame)
    assert struct.unpack_from("<iiii", reply)[2] == 5  # responseTo
    assert bson.decode(reply[21:])["code"] == 22


def test_legacy_op_query_find_is_refused(server: RunningServer) -> None:
    query = struct.pack("<i", 0) + b"db.items\x00" + struct.pack("<ii", 0, 1) + bson.encode({})
    frame = struct.pack("<iiii", 16 + len(query), 8, 0, wire.OP_QUERY) + query
    reply = raw_roundtrip(server, frame)
    assert struct.unpack_from("<i", reply, 12)[0] == wire.OP_REPLY
    assert bson.decode(reply[36:])["code"] == 352


def test_awaitable_hello_waits_for_max_await_time(server: RunningServer, wire_client: Client) -> None:
    # The server monitoring spec: hello with topologyVersion + maxAwaitTimeMS answers
    # when the topology changes or the time is up; a standalone's does not change.
    version = wire_client.admin.command("hello")["topologyVersion"]
    started = time.monotonic()
    wire_client.admin.command("hello", topologyVersion=version, maxAwaitTimeMS=300)
    assert time.monotonic() - started >= 0.25


def test_shutdown_command_stops_the_server(server: RunningServer) -> None:
    # SHUTDOWN: the server cleans up and exits.
    with server.client(serverSelectionTimeoutMS=200) as client:
        client.db.last.insert_one({"_id": ObjectId()})
        with contextlib.suppress(pymongo.errors.AutoReconnect):
            client.admin.command("shutdown")
        assert server.server.stopped.wait(10)


def test_tailable_cursor_over_the_wire(wire_client: Client) -> None:
    wire_client.db.create_collection("events", capped=True, size=8192)
    events = wire_client.db.events
    events.insert_many([{"n": n} for n in range(3)])
    cursor = events.find(cursor_type=pymongo.CursorType.TAILABLE_AWAIT).max_await_time_ms(50)
    assert [d["n"] for d in cursor] == [0, 1, 2] and cursor.alive
    events.insert_one({"n": 3})
    assert [d["n"] for d in cursor] == [3]
    cursor.close()


def test_server_status_counts_operations_and_connections(server: RunningServer) -> None:
    # https://www.mongodb.com/docs/manual/reference/command/serverStatus/#opcounters : inserts count
    # documents, updates and deletes count statements, queries count finds.
    with server.client() as client:
        before = client.admin.command("serverStatus")["opcounters"]
        client.db.c.insert_many([{"a": i} for i in range(5)])
        client.db.c.update_many({}, {"$set": {"b": 1}})
        client.db.c.find_one()
        client.db.c.delete_one({})
        status = client.admin.command("serverStatus")
        after = status["opcounters"]
        assert {k: after[k] - before[k] for k in ("insert", "update", "query", "delete")} == {
            "insert": 5,
            "update": 1,
            "query": 1,
            "delete": 1,
        }
        connections = status["connections"]
        assert connections["current"] >= 1 and connections["totalCreated"] >= connections["current"]


def test_batches_stop_at_16_mib(wire_client: Client) -> None:
    # GET_MORE: a batch holds at most 16 MiB of documents, whatever batchSize asks, so a reply
    # stays under the 48 MB message limit (pymongo refuses larger ones).
    coll = wire_client.db.big
    coll.insert_many([{"_id": i, "blob": "y" * (5 * 1024 * 1024)} for i in range(10)])
    assert [d["_id"] for d in coll.find({}, batch_size=100)] == list(range(10))
    assert [d["_id"] for d in coll.aggregate([{"$sort": {"_id": -1}}], batchSize=100)] == list(range(9, -1, -1))


def test_current_op_lists_operations_and_idle_connections(server: RunningServer) -> None:
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/currentOp/
    with server.client() as client, server.client() as other:
        other.admin.command("ping")  # a second application connection, idle now
        active = list(client.admin.aggregate([{"$currentOp": {}}]))
        assert all(op["active"] for op in active)
        # Only this aggregate runs; a driver monitor's hello may be finishing at the same moment.
        (mine,) = [op for op in active if "aggregate" in op["command"]]
        assert (mine["op"], mine["waitingForLock"], mine["ns"]) == ("command", False, "admin.$cmd")
        everything = list(client.admin.aggregate([{"$currentOp": {"idleConnections": True}}]))
        idle = [op for op in everything if not op["active"]]
        assert len(idle) >= 1 and all(op["desc"].startswith("conn") for op in everything)
        # The command form filters with the fields it is given.
        assert client.admin.command("currentOp", active=False)["inprog"] == []
        idle_again = client.admin.command({"currentOp": 1, "$all": True, "active": False})["inprog"]
        assert idle_again and all(not op["active"] for op in idle_again)
        with pytest.raises(OperationFailure) as wrong_place:
            list(client.shop.orders.aggregate([{"$currentOp": {}}]))
        assert wrong_place.value.code == 73
