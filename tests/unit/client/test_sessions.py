"""Sessions on the embedded client (issue 10): pymongo's ClientSession and what
it puts on each command, seen through command monitoring.

Expected values are written out from the cited pages and from pymongo 4.20's
client_session.py (``_apply_to``, ``_update_read_concern``); that the whole
command stream equals real pymongo's against ``foliodb serve`` is
tests/clients/test_embedded_session_commands.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gridfs
import pymongo
import pytest
from bson import Binary, Timestamp
from pymongo import InsertOne, UpdateOne
from pymongo.client_session import ClientSession, SessionOptions
from pymongo.errors import ConfigurationError, InvalidOperation, OperationFailure
from pymongo.write_concern import WriteConcern

import foliodb
from tests.sent_commands import SentCommands

SESSIONS = "https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"
CAUSAL = "https://www.mongodb.com/docs/manual/core/read-isolation-consistency-recency/#causal-consistency"
SNAPSHOT = "https://www.mongodb.com/docs/manual/reference/read-concern-snapshot/"
RETRYABLE = "https://www.mongodb.com/docs/manual/core/retryable-writes/"


@pytest.fixture
def commands() -> SentCommands:
    return SentCommands()


@pytest.fixture
def client(commands: SentCommands) -> Iterator[Any]:
    with foliodb.MongoClient(":memory:", event_listeners=[commands]) as client:
        yield client


@pytest.fixture
def retrying(commands: SentCommands) -> Iterator[Any]:
    with foliodb.MongoClient(":memory:", event_listeners=[commands], retryWrites=True) as client:
        yield client


def test_a_session_is_pymongos_class_with_its_properties(client: Any) -> None:
    # SESSIONS: start_session returns a ClientSession; causal consistency is on by default.
    session = client.start_session()
    assert isinstance(session, ClientSession)
    assert session.client is client
    assert isinstance(session.options, SessionOptions)
    assert (session.options.causal_consistency, session.options.snapshot) == (True, False)
    assert not session.has_ended and not session.in_transaction
    assert (session.cluster_time, session.operation_time) == (None, None)
    assert (session._implicit, session._attached_to_cursor, session._txn_read_preference()) == (False, False, None)
    lsid = session.session_id
    assert list(lsid) == ["id"] and isinstance(lsid["id"], Binary) and lsid["id"].subtype == 4
    session.end_session()
    assert session.has_ended
    with pytest.raises(InvalidOperation, match="Cannot use ended session"):
        session.session_id  # noqa: B018
    with pytest.raises(InvalidOperation, match="Cannot use ended session"):
        client.db.c.find_one({}, session=session)


def test_times_advance_from_each_reply(client: Any) -> None:
    # SESSIONS: cluster_time and operation_time are those of the last reply; advance_* only move forward.
    with client.start_session() as session:
        client.db.c.insert_one({"_id": 1}, session=session)
        first = session.operation_time
        assert isinstance(first, Timestamp)
        assert session.cluster_time is not None and session.cluster_time["clusterTime"] == first
        client.db.c.insert_one({"_id": 2}, session=session)
        assert session.operation_time > first  # a later write commits at a later time
        later = Timestamp(first.time + 3600, 1)
        session.advance_operation_time(later)
        session.advance_operation_time(first)
        assert session.operation_time == later
        session.advance_cluster_time({"clusterTime": later, "signature": {}})
        assert session.cluster_time["clusterTime"] == later
        with pytest.raises(TypeError):
            session.advance_operation_time(1)
        with pytest.raises(TypeError):
            session.advance_cluster_time({"clusterTime": 1})


def test_lsid_only_with_an_explicit_session_by_default(client: Any, commands: SentCommands) -> None:
    # The embedded client sends no implicit lsid and no retryable-write txnNumber unless
    # retryWrites=True is given (see foliodb/client/mongo_client.py).
    assert client.options.retry_writes is False
    coll = client.db.c
    coll.insert_one({"_id": 1})
    coll.find_one({"_id": 1})
    with client.start_session() as session:
        coll.insert_one({"_id": 2}, session=session)
        coll.find_one({"_id": 2}, session=session)
        lsid = session.session_id
    inserts, finds = commands.named("insert"), commands.named("find")
    assert "lsid" not in inserts[0] and "lsid" not in finds[0]
    assert inserts[1]["lsid"] == lsid and finds[1]["lsid"] == lsid
    assert "txnNumber" not in inserts[1]


def test_retry_writes_sends_implicit_sessions_and_txn_numbers(retrying: Any, commands: SentCommands) -> None:
    # RETRYABLE: each retryable write command takes the session's next txnNumber; multi-document
    # updates and deletes are not retryable; implicit sessions come back to the pool and are reused.
    assert retrying.options.retry_writes is True
    coll = retrying.db.c
    coll.insert_one({"_id": 1})
    coll.update_one({"_id": 1}, {"$set": {"a": 1}})
    coll.update_many({}, {"$set": {"b": 1}})
    coll.find_one({"_id": 1})
    # An ordered bulk of insert, update, insert is three commands, each its own retryable write.
    coll.bulk_write([InsertOne({"_id": 2}), UpdateOne({"_id": 2}, {"$set": {"a": 2}}), InsertOne({"_id": 3})])
    coll.delete_many({"_id": {"$gt": 2}})
    sent = [(next(iter(cmd)), cmd.get("txnNumber")) for cmd in commands.sent]
    assert sent == [
        ("insert", 1),
        ("update", 2),
        ("update", None),
        ("find", None),
        ("insert", 3),
        ("update", 4),
        ("insert", 5),
        ("delete", None),
    ]
    lsids = {bytes(cmd["lsid"]["id"]) for cmd in commands.sent}
    assert len(lsids) == 1  # one pooled server session, reused operation after operation


def test_an_unacknowledged_write_refuses_an_explicit_session(retrying: Any, commands: SentCommands) -> None:
    # pymongo: explicit sessions are incompatible with w: 0; an implicit one is simply not used.
    unacknowledged = retrying.db.get_collection("c", write_concern=WriteConcern(w=0))
    with retrying.start_session() as session, pytest.raises(ConfigurationError, match="unacknowledged"):
        unacknowledged.insert_one({"_id": 1}, session=session)
    unacknowledged.insert_one({"_id": 2})
    assert "lsid" not in commands.named("insert")[-1]


def test_a_session_of_another_client_or_not_a_session_is_refused(client: Any) -> None:
    refused = pytest.raises(InvalidOperation, match="Can only use session with the MongoClient that started it")
    with foliodb.MongoClient(":memory:") as other, other.start_session() as foreign, refused:
        client.db.c.insert_one({}, session=foreign)
    with pytest.raises(ValueError, match="must be a ClientSession or None"):
        client.db.command("ping", session="not a session")


def test_a_cursor_keeps_its_session_for_get_more_and_kill_cursors(client: Any, commands: SentCommands) -> None:
    # SESSIONS: a cursor's getMore and killCursors run in the session its find ran in.
    coll = client.db.c
    coll.insert_many([{"_id": i} for i in range(5)])
    with client.start_session() as session:
        cursor = coll.find({}, session=session).batch_size(2)
        assert cursor.session is session
        assert [doc["_id"] for doc in cursor] == [0, 1, 2, 3, 4]
        partial = coll.aggregate([], session=session, batchSize=2)
        next(partial)
        partial.close()
        lsid = session.session_id
    assert [cmd["lsid"] for cmd in commands.named("getMore")] == [lsid, lsid]
    assert [cmd["lsid"] for cmd in commands.named("killCursors")] == [lsid]


def test_an_implicit_session_is_held_while_its_cursor_is_open(retrying: Any, commands: SentCommands) -> None:
    # pymongo: the implicit session of a find stays with its cursor (cursor.session shows None)
    # and returns to the pool once the cursor is exhausted, for the next command to reuse.
    coll = retrying.db.c
    coll.insert_many([{"_id": i} for i in range(4)])
    cursor = coll.find().batch_size(3)
    assert cursor.session is None
    next(cursor)
    coll.find_one({"_id": 0})  # the cursor holds the pooled session: this takes a second one
    list(cursor)
    coll.find_one({"_id": 1})
    finds, get_more = commands.named("find"), commands.named("getMore")[0]
    assert get_more["lsid"] == finds[0]["lsid"] != finds[1]["lsid"]
    assert finds[2]["lsid"] in (finds[0]["lsid"], finds[1]["lsid"])  # both are back in the pool


def test_causal_consistency_sends_after_cluster_time(client: Any, commands: SentCommands) -> None:
    # CAUSAL: a causally consistent session's reads (and, in pymongo 4.20, its writes) wait for
    # the operation time of its last operation: readConcern.afterClusterTime.
    coll = client.db.c
    with client.start_session() as session:
        coll.insert_one({"_id": 1}, session=session)
        seen = session.operation_time
        coll.find_one({"_id": 1}, session=session)
        assert coll.count_documents({}, session=session) == 1
        coll.insert_one({"_id": 2}, session=session)
    with client.start_session(causal_consistency=False) as session:
        coll.insert_one({"_id": 3}, session=session)
        coll.find_one({"_id": 3}, session=session)
    first, find, count, second, unordered, plain = [
        cmd for cmd in commands.sent if next(iter(cmd)) in ("insert", "find", "aggregate")
    ]
    assert "readConcern" not in first  # nothing to wait for yet
    assert find["readConcern"] == {"afterClusterTime": seen}
    assert count["readConcern"] == {"afterClusterTime": seen}
    assert "afterClusterTime" in second["readConcern"]
    assert "readConcern" not in unordered and "readConcern" not in plain


def test_causal_reads_keep_the_collections_read_concern(client: Any, commands: SentCommands) -> None:
    majority = client.db.get_collection("c", read_concern=pymongo.read_concern.ReadConcern("majority"))
    with client.start_session() as session:
        majority.insert_one({"_id": 1}, session=session)
        majority.find_one({"_id": 1}, session=session)
        assert commands.named("find")[0]["readConcern"] == {
            "level": "majority",
            "afterClusterTime": session.operation_time,
        }


def test_snapshot_sessions_read_their_pinned_time(client: Any, commands: SentCommands) -> None:
    # SNAPSHOT: a snapshot session's first read picks the time (atClusterTime in its reply); every
    # later read of the session reads at that time, whatever was written since.
    coll = client.db.c
    coll.insert_many([{"_id": 1}, {"_id": 2}])
    with client.start_session(snapshot=True) as session:
        assert session.options.snapshot and not session.options.causal_consistency
        assert [d["_id"] for d in coll.find({}, session=session)] == [1, 2]
        coll.insert_one({"_id": 3})
        coll.delete_one({"_id": 1})
        assert [d["_id"] for d in coll.find({}, session=session)] == [1, 2]
        assert coll.distinct("_id", session=session) == [1, 2]
        assert [d["_id"] for d in coll.aggregate([{"$sort": {"_id": 1}}], session=session)] == [1, 2]
    assert [d["_id"] for d in coll.find()] == [2, 3]
    first, second = commands.named("find")[:2]
    assert first["readConcern"] == {"level": "snapshot"}
    pinned = second["readConcern"]["atClusterTime"]
    assert second["readConcern"] == {"level": "snapshot", "atClusterTime": pinned}
    assert commands.named("distinct")[0]["readConcern"] == {"level": "snapshot", "atClusterTime": pinned}


def test_snapshot_sessions_refuse_causal_consistency_and_transactions(client: Any) -> None:
    # SESSIONS: snapshot reads and causal consistency exclude each other; no transactions either.
    with pytest.raises(ConfigurationError, match="snapshot reads do not support causal_consistency=True"):
        client.start_session(snapshot=True, causal_consistency=True)
    refused = pytest.raises(InvalidOperation, match="Transactions are not supported in snapshot sessions")
    with client.start_session(snapshot=True) as session, refused:
        session.start_transaction()


def test_a_snapshot_sessions_cursor_gets_more(client: Any) -> None:
    coll = client.db.c
    coll.insert_many([{"_id": i} for i in range(4)])
    with client.start_session(snapshot=True) as session:
        cursor = coll.find({}, session=session).batch_size(2)
        first = [next(cursor)["_id"], next(cursor)["_id"]]
        coll.insert_one({"_id": 4})  # after the snapshot: its getMores do not see it
        assert first + [d["_id"] for d in cursor] == [0, 1, 2, 3]
        cursor = coll.find({}, session=session).batch_size(2)  # the session's later reads: the same point
        next(cursor)
        cursor.close()  # killCursors carries the session's readConcern too
        assert coll.count_documents({}, session=session) == 4


def test_session_on_commands_cursor_commands_and_client_bulk_write(client: Any, commands: SentCommands) -> None:
    with client.start_session() as session:
        client.db.command("ping", session=session)
        client.db.c.insert_many([{"_id": i} for i in range(3)], session=session)
        assert [d["_id"] for d in client.db.cursor_command("find", "c", batchSize=1, session=session)] == [0, 1, 2]
        client.bulk_write([InsertOne({"_id": 9}, namespace="db.d")], session=session)
        lsid = session.session_id
    for name in ("ping", "find", "getMore", "bulkWrite"):
        assert [cmd["lsid"] for cmd in commands.named(name)] == [lsid], name


def test_a_bound_session_is_used_without_session_argument(client: Any, commands: SentCommands) -> None:
    # pymongo 4.17+'s ClientSession.bind: operations in the block run in the session.
    session = client.start_session()
    with session.bind():
        client.db.c.insert_one({"_id": 1})
        assert client.db.c.find_one() == {"_id": 1}
    assert session.has_ended
    client.db.c.find_one()
    assert [("lsid" in cmd) for cmd in commands.sent] == [True, True, False]


def test_ended_sessions_are_pooled_and_ended_with_the_client(commands: SentCommands) -> None:
    # pymongo's server session pool: an ended session's lsid serves the next session; close()
    # ends every pooled session with endSessions.
    client = foliodb.MongoClient(":memory:", event_listeners=[commands])
    with client.start_session() as first:
        lsid = first.session_id
    with client.start_session() as second:
        assert second.session_id == lsid
        with client.start_session() as third:
            other = third.session_id
    client.close()
    (end,) = commands.named("endSessions")
    assert sorted(bytes(s["id"]) for s in end["endSessions"]) == sorted([bytes(lsid["id"]), bytes(other["id"])])


def test_gridfs_runs_in_implicit_sessions_when_writes_retry(retrying: Any, commands: SentCommands) -> None:
    # gridfs's GridOutCursor is pymongo's own Cursor: it takes its implicit session from the client.
    fs = gridfs.GridFS(retrying.files)
    file_id = fs.put(b"x" * 300_000, filename="f")
    assert fs.get(file_id).read() == b"x" * 300_000
    assert [f.filename for f in fs.find()] == ["f"]
    assert all("lsid" in cmd for cmd in commands.sent if next(iter(cmd)) != "endSessions")


def test_an_explain_runs_in_the_session(client: Any, commands: SentCommands) -> None:
    with client.start_session() as session:
        client.db.c.insert_one({"_id": 1}, session=session)
        assert client.db.c.find({"_id": 1}, session=session).explain()["ok"] == 1.0
        explain = commands.named("explain")[0]
        assert explain["lsid"] == session.session_id
        assert "readConcern" not in explain  # pymongo adds no afterClusterTime to an explain


def test_server_errors_keep_their_labels(client: Any) -> None:
    # The executor's error labels reach the exception, as pymongo reads them from a reply.
    with client.start_session() as session, pytest.raises(OperationFailure) as info:
        client.admin.command({"commitTransaction": 1, "txnNumber": 7, "autocommit": False}, session=session)
    assert info.value.code == 251  # NoSuchTransaction
    assert info.value.has_error_label("TransientTransactionError")
