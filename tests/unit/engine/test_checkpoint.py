"""The write-ahead log's checkpoints run on their own thread (:mod:`foliodb.engine.checkpoint`).

SQLite's documented behaviour is the reference (https://www.sqlite.org/wal.html):
a checkpoint copies the log's frames into the database file; the log starts
over from its beginning at the first write after a checkpoint that copied
every frame, and otherwise only grows; ``wal_autocheckpoint=0`` turns the
automatic checkpoint off.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import foliodb
from foliodb.engine import checkpoint
from foliodb.engine.dbpath import DATA_FILE
from foliodb.engine.storage import Storage


def _storage(client: foliodb.MongoClient) -> Storage:
    storage: Storage = client._executor.engine.storage  # type: ignore[attr-defined]
    return storage


def _wait_for(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def test_the_writer_leaves_checkpoints_to_the_checkpointer(tmp_path: Path) -> None:
    with foliodb.MongoClient(str(tmp_path)) as client:
        client.db.c.insert_one({"_id": 0})
        storage = _storage(client)
        assert storage.writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        assert storage.checkpointer is not None
        before = storage.checkpointer.checkpoints
        for i in range(1, checkpoint.ROWS_PER_CHECKPOINT):  # three rows a write: past the threshold
            client.db.c.insert_one({"_id": i})
        assert _wait_for(lambda: storage.checkpointer is not None and storage.checkpointer.checkpoints > before)
        # What the log held reached the file: a reader of the file alone (no log) sees the documents.
        client.db.c.insert_one({"_id": "last"})
    probe = sqlite3.connect(f"file:{tmp_path / DATA_FILE}?mode=ro", uri=True)
    try:
        assert not os.path.exists(tmp_path / (DATA_FILE + "-wal"))  # the last close checkpointed and removed it
        (table,) = probe.execute("SELECT 'c' || id FROM catalog_collections WHERE name = 'c'").fetchone()
        assert probe.execute(f"SELECT count(*) FROM {table}").fetchone() == (checkpoint.ROWS_PER_CHECKPOINT + 1,)
    finally:
        probe.close()


def test_steady_writes_do_not_grow_the_log_without_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small thresholds: the log would pass 6,000 frames (about 24 MB) in this loop if it never
    # started over; with a catch-up checkpoint every 64 frames it stays far below that.
    monkeypatch.setattr(checkpoint, "ROWS_PER_CHECKPOINT", 30)
    monkeypatch.setattr(checkpoint, "CATCH_UP_FRAMES", 64)
    with foliodb.MongoClient(str(tmp_path)) as client:
        for i in range(2000):
            client.db.c.insert_one({"_id": i, "pad": "x" * 200})
        wal = os.path.getsize(tmp_path / (DATA_FILE + "-wal"))
        assert wal < 8 * 1024 * 1024, wal
        assert client.db.c.count_documents({}) == 2000


def test_a_reader_keeps_its_snapshot_while_checkpoints_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkpoint never copies frames a reader's snapshot still needs over the pages it reads.
    monkeypatch.setattr(checkpoint, "ROWS_PER_CHECKPOINT", 30)
    monkeypatch.setattr(checkpoint, "CATCH_UP_FRAMES", 64)
    with foliodb.MongoClient(str(tmp_path)) as client:
        coll = client.db.c
        coll.insert_many([{"_id": i, "v": 0} for i in range(200)])
        cursor = coll.find({}, batch_size=2)
        first = [next(cursor) for _ in range(2)]
        session = client.start_session(snapshot=True)
        snapshot = list(coll.find({}, session=session))
        for round_ in range(1, 40):
            coll.update_many({}, {"$set": {"v": round_}})
        assert list(coll.find({}, session=session)) == snapshot  # the snapshot read, unchanged
        session.end_session()
        assert len(first) + len(list(cursor)) == 200
        assert {doc["v"] for doc in coll.find()} == {39}
        assert client.db.command("validate", "c")["valid"]


def test_closing_ends_the_thread(tmp_path: Path) -> None:
    # This client's own thread: another test's engine still open in the process has one too.
    before = {t for t in threading.enumerate() if t.name == "foliodb-checkpoint"}
    client = foliodb.MongoClient(str(tmp_path))
    client.db.c.insert_one({"_id": 1})
    (mine,) = {t for t in threading.enumerate() if t.name == "foliodb-checkpoint"} - before
    client.close()
    mine.join(60.0)  # a bound for a loaded machine, not a measure: close ends it at once
    assert not mine.is_alive()


def test_a_read_only_open_has_no_checkpointer(tmp_path: Path) -> None:
    with foliodb.MongoClient(str(tmp_path)) as client:
        client.db.c.insert_one({"_id": 1})
    with foliodb.MongoClient(str(tmp_path), read_only=True) as reader:
        assert reader.db.c.find_one() == {"_id": 1}
        assert _storage(reader).checkpointer is None


def test_a_snapshot_holding_the_log_back_does_not_make_every_checkpoint_a_catch_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: while a reader's snapshot keeps frames from being copied, the log cannot
    # start over, and every checkpoint held the writer lock for a catch-up (readers running back
    # to back stopped every writer every few hundred writes). A catch-up that left frames behind
    # waits for the log to grow by CATCH_UP_FRAMES again.
    monkeypatch.setattr(checkpoint, "ROWS_PER_CHECKPOINT", 6)
    monkeypatch.setattr(checkpoint, "CATCH_UP_FRAMES", 64)
    with foliodb.MongoClient(str(tmp_path)) as client:
        coll = client.db.c
        coll.insert_many([{"_id": i} for i in range(10)])
        reader = sqlite3.connect(str(tmp_path / DATA_FILE), isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM catalog_collections").fetchone()  # its snapshot stays open
        checkpointer = _storage(client).checkpointer
        assert checkpointer is not None
        before, catch_ups = checkpointer.checkpoints, checkpointer.catch_ups
        for i in range(400):
            coll.insert_one({"_id": f"w{i}", "pad": "x" * 200})
            if not i % 4:  # the checkpointer keeps up: one checkpoint every couple of writes
                _wait_for(lambda: checkpointer.checkpoints > before)
                before = checkpointer.checkpoints
        assert _wait_for(lambda: checkpointer.checkpoints > before)
        (_, frames, _) = client._executor.engine.storage.writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()  # type: ignore[attr-defined]
        assert frames >= 400  # the snapshot kept the log from starting over
        assert checkpointer.catch_ups - catch_ups <= frames // 64 + 1
        reader.close()
