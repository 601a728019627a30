"""Change streams through pymongo against ``foliodb serve`` (a one-member replica set),
and the same cases through the embedded client.

Expected events are written from MongoDB 8's change events reference:
https://www.mongodb.com/docs/manual/reference/change-events/ ; resume:
https://www.mongodb.com/docs/manual/changeStreams/#resume-a-change-stream
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

import foliodb
from foliodb.server import Server
from tests.clients.conftest import RunningServer

Client = pymongo.MongoClient[dict[str, Any]]


@pytest.fixture(params=["wire", "embedded"])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """pymongo against ``foliodb serve``, or the embedded client: the same streams from both."""
    if request.param == "wire":
        yield request.getfixturevalue("wire_client")
        return
    embedded = foliodb.MongoClient(str(tmp_path / "embedded"))
    yield embedded
    embedded.close()


def _take(stream: Any, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    events = []
    deadline = time.monotonic() + timeout
    while len(events) < n and time.monotonic() < deadline:
        event = stream.try_next()
        if event is not None:
            events.append(event)
    assert len(events) == n, events
    return events


def test_document_events(client: Client) -> None:
    coll = client.shop.items
    coll.insert_one({"_id": 0, "tags": ["a", "b", "c", "d"], "sub": {"x": 1, "y": 2}})
    with coll.watch() as stream:
        coll.insert_one({"_id": 1, "n": 1})
        coll.update_one({"_id": 1}, {"$set": {"n": 2, "m": {"k": 1}}})
        coll.update_one({"_id": 0}, {"$set": {"sub.x": 5, "tags.1": "B"}, "$unset": {"sub.y": ""}})
        coll.update_one({"_id": 0}, [{"$set": {"tags": ["a", "B"]}}])
        coll.replace_one({"_id": 1}, {"r": True})
        coll.delete_one({"_id": 1})
        insert, update, nested, truncation, replace, delete = _take(stream, 6)
    assert insert["operationType"] == "insert" and insert["fullDocument"] == {"_id": 1, "n": 1}
    assert insert["ns"] == {"db": "shop", "coll": "items"} and insert["documentKey"] == {"_id": 1}
    assert set(insert) >= {"_id", "clusterTime", "wallTime"}
    assert update["updateDescription"] == {
        "updatedFields": {"n": 2, "m": {"k": 1}},
        "removedFields": [],
        "truncatedArrays": [],
    }
    assert "fullDocument" not in update
    assert nested["updateDescription"]["updatedFields"] == {"sub.x": 5, "tags.1": "B"}
    assert nested["updateDescription"]["removedFields"] == ["sub.y"]
    assert truncation["updateDescription"] == {
        "updatedFields": {},
        "removedFields": [],
        "truncatedArrays": [{"field": "tags", "newSize": 2}],
    }
    assert replace["operationType"] == "replace" and replace["fullDocument"] == {"_id": 1, "r": True}
    assert delete["operationType"] == "delete" and delete["documentKey"] == {"_id": 1}
    tokens = [e["_id"]["_data"] for e in (insert, update, nested, truncation, replace, delete)]
    assert tokens == sorted(tokens) and len(set(tokens)) == 6  # resume tokens are ordered


def test_database_and_cluster_streams(client: Client) -> None:
    with client.shop.watch() as db_stream, client.watch() as cluster_stream:
        client.shop.a.insert_one({"_id": "a"})
        client.other.b.insert_one({"_id": "b"})
        client.admin.c.insert_one({"_id": "admin"})  # not in a cluster stream, as mongod
        client.shop.b.insert_one({"_id": "c"})
        assert [e["documentKey"]["_id"] for e in _take(db_stream, 2)] == ["a", "c"]
        assert [e["documentKey"]["_id"] for e in _take(cluster_stream, 3)] == ["a", "b", "c"]


def test_drop_rename_and_invalidate(client: Client) -> None:
    db = client.shop
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 1})
    with db.a.watch() as on_a, db.b.watch() as on_b, db.watch() as on_db:
        db.a.rename("renamed")
        db.b.drop()
        rename, invalidate_a = _take(on_a, 2)
        drop, invalidate_b = _take(on_b, 2)
        assert (rename["operationType"], rename["to"]) == ("rename", {"db": "shop", "coll": "renamed"})
        assert drop == {**drop, "operationType": "drop", "ns": {"db": "shop", "coll": "b"}}
        assert invalidate_a["operationType"] == invalidate_b["operationType"] == "invalidate"
        assert not on_a.alive or on_a.try_next() is None
        assert [e["operationType"] for e in _take(on_db, 2)] == ["rename", "drop"]  # a database stream goes on
        db.renamed.drop()
        client.drop_database("shop")
        assert [e["operationType"] for e in _take(on_db, 3)] == ["drop", "dropDatabase", "invalidate"]
    # startAfter an invalidate opens a new stream after it (resumeAfter may not).
    with pytest.raises(OperationFailure), db.b.watch(resume_after=invalidate_b["_id"]) as again:
        again.try_next()
    with db.b.watch(start_after=invalidate_b["_id"]) as again:
        db.b.insert_one({"_id": "new"})
        assert _take(again, 1)[0]["documentKey"] == {"_id": "new"}


def test_resume_after_a_token_and_from_a_time(client: Client) -> None:
    coll = client.shop.items
    with client.start_session() as session:
        client.admin.command("ping", session=session)
        start = session.operation_time
    with coll.watch() as stream:
        for i in range(5):
            coll.insert_one({"_id": i})
        events = _take(stream, 5)
    with coll.watch(resume_after=events[1]["_id"]) as resumed:
        assert [e["documentKey"]["_id"] for e in _take(resumed, 3)] == [2, 3, 4]
    with coll.watch(start_at_operation_time=start) as from_time:
        assert [e["documentKey"]["_id"] for e in _take(from_time, 5)] == [0, 1, 2, 3, 4]


def test_a_batch_full_at_16_mb_ends_its_resume_token_at_its_last_event(wire_client: Client) -> None:
    # A reply holds at most 16 MiB of events; the event that did not fit comes in the next
    # batch, so the batch's postBatchResumeToken is its own last event's (resuming from it, as
    # pymongo does after that event, must give the one held back).
    coll = wire_client.shop.items
    big = "x" * (7 * 1024 * 1024)
    with coll.watch() as stream:
        coll.insert_many([{"_id": i, "big": big} for i in range(3)])
        first, second = _take(stream, 2)
        assert stream.resume_token == second["_id"]  # the batch's postBatchResumeToken
        token = stream.resume_token
    with coll.watch(resume_after=token) as resumed:
        assert [e["documentKey"]["_id"] for e in _take(resumed, 1)] == [2]
    assert [first["documentKey"]["_id"], second["documentKey"]["_id"]] == [0, 1]
    # The aggregate's first batch too.
    stage = {"$changeStream": {"startAtOperationTime": first["clusterTime"]}}
    reply = coll.database.command("aggregate", "items", pipeline=[stage], cursor={})["cursor"]
    assert [e["documentKey"]["_id"] for e in reply["firstBatch"]] == [0, 1]
    assert reply["postBatchResumeToken"] == second["_id"] and reply["id"] != 0


def test_transaction_events_come_at_commit_in_order(client: Client) -> None:
    coll = client.shop.items
    with coll.watch() as stream, client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": "t1"}, session=session)
        coll.insert_one({"_id": "t2"}, session=session)
        assert stream.try_next() is None  # nothing before the commit
        session.commit_transaction()
        session.start_transaction()
        coll.insert_one({"_id": "aborted"}, session=session)
        session.abort_transaction()
        coll.insert_one({"_id": "after"})
        first, second, after = _take(stream, 3)
    assert [first["documentKey"]["_id"], second["documentKey"]["_id"]] == ["t1", "t2"]
    assert first["lsid"] == second["lsid"] and first["txnNumber"] == second["txnNumber"]
    assert first["clusterTime"] == second["clusterTime"] and first["_id"] != second["_id"]
    assert after["documentKey"] == {"_id": "after"} and "txnNumber" not in after


def test_each_write_of_a_transaction_is_its_own_event(client: Client) -> None:
    # A transaction's events are its writes as they ran, not their net effect.
    coll = client.shop.items
    coll.insert_one({"_id": "old", "v": 0})
    with coll.watch(full_document="updateLookup") as stream, client.start_session() as session:
        with session.start_transaction():
            coll.insert_one({"_id": "new", "v": 1}, session=session)
            coll.update_one({"_id": "new"}, {"$inc": {"v": 1}}, session=session)
            coll.delete_one({"_id": "old"}, session=session)
            coll.replace_one({"_id": "new"}, {"v": 10}, session=session)
        events = _take(stream, 4)
    assert [(e["operationType"], e["documentKey"]["_id"]) for e in events] == [
        ("insert", "new"),
        ("update", "new"),
        ("delete", "old"),
        ("replace", "new"),
    ]
    assert events[0]["fullDocument"] == {"_id": "new", "v": 1}  # as inserted, not as committed
    assert events[1]["updateDescription"]["updatedFields"] == {"v": 2}
    assert events[3]["fullDocument"] == {"_id": "new", "v": 10}
    assert len({e["txnNumber"] for e in events}) == 1


def test_a_killed_cursor_resumes_without_losing_events(client: Client) -> None:
    # CursorNotFound is resumable: the driver reopens the stream after its cached token.
    coll = client.shop.items
    with coll.watch(batch_size=2) as stream:
        coll.insert_many([{"_id": i} for i in range(3)])
        first = _take(stream, 1)
        client.shop.command("killCursors", "items", cursors=[stream._cursor.cursor_id])
        coll.insert_one({"_id": 3})
        rest = _take(stream, 3)
    assert [e["documentKey"]["_id"] for e in first + rest] == [0, 1, 2, 3]


def test_full_documents_and_images(client: Client) -> None:
    db = client.shop
    db.create_collection("imaged", changeStreamPreAndPostImages={"enabled": True})
    db.imaged.insert_one({"_id": 1, "v": 1})
    db.plain.insert_one({"_id": 1, "v": 1})
    options = {"full_document": "whenAvailable", "full_document_before_change": "whenAvailable"}
    with (
        db.imaged.watch(**options) as imaged,
        db.plain.watch(**options) as plain,
        db.plain.watch(full_document="updateLookup") as lookup,
    ):
        db.imaged.update_one({"_id": 1}, {"$inc": {"v": 1}})
        db.plain.update_one({"_id": 1}, {"$inc": {"v": 1}})
        db.plain.update_one({"_id": 1}, {"$inc": {"v": 10}})
        event = _take(imaged, 1)[0]
        assert (event["fullDocument"], event["fullDocumentBeforeChange"]) == ({"_id": 1, "v": 2}, {"_id": 1, "v": 1})
        event = _take(plain, 1)[0]
        assert (event["fullDocument"], event["fullDocumentBeforeChange"]) == (None, None)
        # updateLookup reads the document as it is now (both updates done).
        assert [e["fullDocument"] for e in _take(lookup, 2)] == [{"_id": 1, "v": 12}, {"_id": 1, "v": 12}]
    with pytest.raises(OperationFailure), db.plain.watch(full_document_before_change="required") as required:
        db.plain.delete_one({"_id": 1})
        _take(required, 1)


def test_pipeline_stages_after_the_change_stream(client: Client) -> None:
    coll = client.shop.items
    pipeline = [{"$match": {"operationType": "insert", "fullDocument.keep": True}}, {"$project": {"fullDocument": 1}}]
    with coll.watch(pipeline) as stream:
        coll.insert_many([{"_id": 1, "keep": False}, {"_id": 2, "keep": True}])
        coll.delete_one({"_id": 2})
        (event,) = _take(stream, 1)
    assert set(event) == {"_id", "fullDocument"} and event["fullDocument"] == {"_id": 2, "keep": True}
    with pytest.raises(OperationFailure) as info:
        coll.watch([{"$group": {"_id": None}}])
    assert info.value.code == 20
    with pytest.raises(OperationFailure) as info, coll.watch([{"$project": {"_id": 0}}]) as no_id:
        coll.insert_one({"_id": 3})
        _take(no_id, 1)
    assert info.value.code == 280


def test_a_waiting_getmore_wakes_at_the_commit(wire_client: Client, server: RunningServer) -> None:
    coll = wire_client.shop.items
    # Bounds are halves of the awaits (30 s): woken by the commit, not the await's end, whatever the load.
    with coll.watch(max_await_time_ms=30_000) as stream:  # the aggregate opened the (empty) cursor
        written: list[float] = []

        def write() -> None:
            with server.client() as other:
                other.admin.command("ping")
                time.sleep(0.3)
                written.append(time.monotonic())
                other.shop.items.insert_one({"_id": "late"})

        writer = threading.Thread(target=write)
        writer.start()
        started = time.monotonic()
        event = stream.next()  # blocks in a getMore that waits on the server
        arrived = time.monotonic()
        writer.join()
    assert event["documentKey"] == {"_id": "late"}
    assert arrived - started > 0.25 and arrived - written[0] < 15
    with coll.watch(max_await_time_ms=300) as idle:
        started = time.monotonic()
        assert idle.try_next() is None
        assert time.monotonic() - started < 15  # the await ends at its 300 ms (a generous bound: a loaded machine)


def test_a_tailable_await_data_cursor_waits_for_inserts(client: Client) -> None:
    db = client.shop
    db.create_collection("log", capped=True, size=100_000)
    db.log.insert_one({"n": 0})
    cursor = db.log.find(cursor_type=pymongo.CursorType.TAILABLE_AWAIT).max_await_time_ms(30_000)
    assert next(cursor)["n"] == 0

    def write() -> None:
        time.sleep(0.3)
        db.log.insert_one({"n": 1})

    threading.Thread(target=write).start()
    started = time.monotonic()
    assert next(cursor)["n"] == 1
    assert 0.2 < time.monotonic() - started < 15  # woken by the insert, not the end of its 30 s await
    cursor.close()


def test_a_stream_resumes_across_a_restart(tmp_path: Path) -> None:
    # The oplog is durable: a token taken before a restart resumes after it, embedded and served.
    dbpath = str(tmp_path / "data")
    with foliodb.MongoClient(dbpath) as embedded, embedded.shop.items.watch() as stream:
        embedded.shop.items.insert_many([{"_id": 1}, {"_id": 2}])
        token = _take(stream, 1)[0]["_id"]
    server = RunningServer(Path(dbpath))
    try:
        with server.client() as wire, wire.shop.items.watch(resume_after=token) as resumed:
            wire.shop.items.insert_one({"_id": 3})
            assert [e["documentKey"]["_id"] for e in _take(resumed, 2)] == [2, 3]
            token = resumed.resume_token
    finally:
        server.stop()
    with foliodb.MongoClient(dbpath) as embedded:
        embedded.shop.items.insert_one({"_id": 4})
        with embedded.shop.items.watch(resume_after=token) as again:
            assert [e["documentKey"]["_id"] for e in _take(again, 1)] == [4]


def test_a_standalone_refuses_change_streams(tmp_path: Path) -> None:
    standalone = Server(str(tmp_path / "data"), "127.0.0.1", 0, replica_set=None)
    host, port = standalone.start()
    try:
        with pymongo.MongoClient(host, port) as client, pytest.raises(OperationFailure) as info:
            client.db.c.watch()
        assert info.value.code == 40573
    finally:
        standalone.shutdown()
