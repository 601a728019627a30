"""A retryable write's record survives kill -9 wherever it is kept.

A retryable write is executed at most once per (session, txnNumber): a retry
gets the first reply and applies nothing again, and a txnNumber below the
session's newest is TransactionTooOld (225)
(https://www.mongodb.com/docs/manual/core/retryable-writes/,
https://github.com/mongodb/specifications/blob/master/source/retryable-writes/retryable-writes.md).
The record rides the write's last oplog entry until the engine's housekeeping
copies it into ``retryable_writes``; a write that records no oplog entry (an
update that matched nothing) writes its row itself. Here a child process does
the writes and kills itself with SIGKILL (no close, no housekeeping), and a
new engine on the same files answers the retries.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

from bson import Int64
from bson.binary import Binary, UuidRepresentation

from foliodb.commands import Executor
from foliodb.commands.replication import ReplicaSet
from foliodb.engine.dbpath import DATA_FILE

ROOT = Path(__file__).resolve().parents[3]

_CHILD = textwrap.dedent(
    """
    import os, signal, sys, uuid
    from bson import Int64
    from bson.binary import Binary, UuidRepresentation
    from foliodb.commands import Executor
    from foliodb.commands.replication import ReplicaSet

    path, session, save = sys.argv[1], uuid.UUID(sys.argv[2]), sys.argv[3] == "save"
    executor = Executor.open(path, ReplicaSet())
    executor.engine.ttl.stop()  # no housekeeping: what the writes stored is all there is
    lsid = {"id": Binary.from_uuid(session, UuidRepresentation.STANDARD)}
    def write(cmd, number):
        reply = executor.execute("shop", {**cmd, "lsid": lsid, "txnNumber": Int64(number)})
        assert reply["ok"] == 1.0, reply
    write({"insert": "c", "documents": [{"_id": 1, "n": 0}]}, 1)
    write({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}, 2)
    if save:
        executor.engine.sessions.save(executor.engine.storage)
    write({"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$inc": {"n": 1}}}]}, 3)  # matches nothing
    executor.engine.sessions.save(executor.engine.storage)  # must not put record 2 over record 3
    write({"insert": "c", "documents": [{"_id": 2, "n": 0}]}, 4)
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _killed_after_writes(path: str, session: uuid.UUID, save: bool) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, path, str(session), "save" if save else "no"],
        capture_output=True,
        env=env,
        timeout=120,  # generous: the child's work is a few writes
    )
    assert child.stdout == b"written\n", child.stderr.decode()
    assert child.returncode == -signal.SIGKILL


def _retry(executor: Executor, session: uuid.UUID, cmd: dict[str, Any], number: int) -> dict[str, Any]:
    lsid = {"id": Binary.from_uuid(session, UuidRepresentation.STANDARD)}
    return executor.execute("shop", {**cmd, "lsid": lsid, "txnNumber": Int64(number)})


def _check_after_restart(path: str, session: uuid.UUID) -> None:
    executor = Executor.open(path, ReplicaSet())
    try:
        again = _retry(executor, session, {"insert": "c", "documents": [{"_id": 2, "n": 0}]}, 4)
        assert again["ok"] == 1.0 and again["n"] == 1 and "writeErrors" not in again, again  # the first reply
        too_old = _retry(executor, session, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}, 2)
        assert too_old["code"] == 225 and too_old["codeName"] == "TransactionTooOld"
        docs = executor.execute("shop", {"find": "c", "sort": {"_id": 1}})["cursor"]["firstBatch"]
        assert docs == [{"_id": 1, "n": 1}, {"_id": 2, "n": 0}]  # each write applied once
    finally:
        executor.close()


def test_a_retry_after_kill9_answers_from_the_record_on_the_oplog(tmp_path: Path) -> None:
    path, session = str(tmp_path / "data"), uuid.uuid4()
    _killed_after_writes(path, session, save=False)
    with sqlite3.connect(_data_file(path)) as conn:
        # The records the inserts and the update left rode their oplog entries.
        (riding,) = conn.execute("SELECT count(*) FROM oplog WHERE session IS NOT NULL").fetchone()
    assert riding == 3
    _check_after_restart(path, session)


def test_a_saved_record_and_a_later_one_on_the_oplog(tmp_path: Path) -> None:
    path, session = str(tmp_path / "data"), uuid.uuid4()
    _killed_after_writes(path, session, save=True)
    with sqlite3.connect(_data_file(path)) as conn:
        (row,) = conn.execute("SELECT txn_number FROM retryable_writes").fetchall()
    assert row == (3,)  # the update that matched nothing wrote its own row, and the save kept it
    _check_after_restart(path, session)
    # A clean close saved the last record too: the next open needs no oplog entry for it.
    with sqlite3.connect(_data_file(path)) as conn:
        conn.execute("UPDATE oplog SET session = NULL")
    _check_after_restart(path, session)


def _data_file(path: str) -> str:
    return os.path.join(path, DATA_FILE)


def _as_before_session_records(path: str) -> None:
    """Turn a dbpath's oplog back into the format of FolioDB before records rode it: no
    ``session`` column and no ``sessions_through`` mark."""
    with sqlite3.connect(_data_file(path)) as conn:
        conn.executescript(
            """
            CREATE TABLE oplog_before (ts INTEGER PRIMARY KEY, entry BLOB NOT NULL);
            INSERT INTO oplog_before SELECT ts, entry FROM oplog;
            DROP TABLE oplog;
            ALTER TABLE oplog_before RENAME TO oplog;
            DELETE FROM catalog_meta WHERE key = 'sessions_through';
            """
        )


def _oplog_of(executor: Executor) -> list[Any]:
    reply = executor.execute("local", {"find": "oplog.rs", "filter": {"ns": "shop.c"}, "sort": {"$natural": 1}})
    return [(entry["op"], entry["o"]) for entry in reply["cursor"]["firstBatch"]]


def test_a_dbpath_from_before_session_records_opens_and_keeps_its_retries(tmp_path: Path) -> None:
    path, session = str(tmp_path / "data"), uuid.uuid4()
    insert = {"insert": "c", "documents": [{"_id": 1, "n": 0}]}
    update = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}
    executor = Executor.open(path, ReplicaSet())
    assert _retry(executor, session, insert, 1)["n"] == 1
    executor.close()  # the clean close saved the record in retryable_writes
    _as_before_session_records(path)

    # Read-only (the tools' --readOnly), the old format is read as it is.
    reader = Executor.open(path, ReplicaSet(), read_only=True)
    try:
        assert _oplog_of(reader) == [("i", {"_id": 1, "n": 0})]
    finally:
        reader.close()

    executor = Executor.open(path, ReplicaSet())
    try:
        again = _retry(executor, session, insert, 1)
        assert again["ok"] == 1.0 and again["n"] == 1 and "writeErrors" not in again, again
        assert _retry(executor, session, update, 2)["nModified"] == 1
    finally:
        executor.close()
    with sqlite3.connect(_data_file(path)) as conn:
        columns = [column[1] for column in conn.execute("PRAGMA table_info(oplog)")]
    assert columns == ["ts", "entry", "session"]

    executor = Executor.open(path, ReplicaSet())
    try:
        again = _retry(executor, session, update, 2)
        assert again["ok"] == 1.0 and again["nModified"] == 1, again  # the first reply, not applied again
        assert _retry(executor, session, insert, 1)["code"] == 225
        # The entry before the upgrade and the update's after it (its ``o`` the whole document
        # after: commands/oplog_rs.py's one departure from mongod's shape).
        assert _oplog_of(executor) == [("i", {"_id": 1, "n": 0}), ("u", {"_id": 1, "n": 1})]
        docs = executor.execute("shop", {"find": "c"})["cursor"]["firstBatch"]
        assert docs == [{"_id": 1, "n": 1}]
    finally:
        executor.close()


_RACE_CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, uuid
    from bson import Int64
    from bson.binary import Binary, UuidRepresentation
    from foliodb.commands import Executor
    from foliodb.commands.replication import ReplicaSet

    path, session = sys.argv[1], uuid.UUID(sys.argv[2])
    executor = Executor.open(path, ReplicaSet())
    executor.engine.ttl.stop()  # no housekeeping: the one save below is the only one
    storage = executor.engine.storage
    lsid = {"id": Binary.from_uuid(session, UuidRepresentation.STANDARD)}
    def write(cmd, number):
        reply = executor.execute("shop", {**cmd, "lsid": lsid, "txnNumber": Int64(number)})
        assert reply["ok"] == 1.0 and reply["n"] == 1, reply
    write({"insert": "c", "documents": [{"_id": 1}]}, 1)
    # A write that commits while the save waits for the writer lock: another thread's, run to
    # its end just before the save takes the lock (storage.write looked up on the instance).
    take_lock = storage.write
    def another_write_first():
        storage.write = take_lock
        other = threading.Thread(target=write, args=({"insert": "c", "documents": [{"_id": 2}]}, 2))
        other.start()
        other.join()
        return take_lock()
    storage.write = another_write_first
    executor.engine.sessions.save(storage)
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_write_committed_while_a_save_waits_for_the_lock_keeps_its_record(tmp_path: Path) -> None:
    """Regression: the save took the records to copy before the writer lock, then marked the
    oplog saved up to the cluster time under it; a write committed in between had its record
    left only on an oplog entry the next open no longer reads, and after kill -9 its retry was
    applied again (E11000 here; seen once in tests/crash/test_kill9.py)."""
    path, session = str(tmp_path / "data"), uuid.uuid4()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.run(
        [sys.executable, "-c", _RACE_CHILD, path, str(session)], capture_output=True, env=env, timeout=120
    )
    assert child.stdout == b"written\n", child.stderr.decode()
    executor = Executor.open(path, ReplicaSet())
    try:
        again = _retry(executor, session, {"insert": "c", "documents": [{"_id": 2}]}, 2)
        assert again["ok"] == 1.0 and again["n"] == 1 and "writeErrors" not in again, again  # the first reply
        assert executor.execute("shop", {"count": "c"})["n"] == 2
    finally:
        executor.close()
