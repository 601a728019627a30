"""fsyncLock holds writes back and lets reads go on, as mongod's fsync with ``lock: true``.

Manual: https://www.mongodb.com/docs/manual/reference/command/fsync/ and fsyncUnlock;
mongod's src/mongo/db/commands/fsync.cpp (replies, IllegalOperation when not locked).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

import foliodb
from tests.concurrency.background import Background, wait_for
from tests.concurrency.conftest import Deployment


def test_fsync_lock_holds_writes_until_unlocked(deployment: Deployment) -> None:
    locker, writer, reader = deployment.connect(), deployment.connect(), deployment.connect()
    writer.test.c.insert_one({"_id": 1})
    assert (locker.admin.command("fsync")["numFiles"], locker.admin.command("fsync")["ok"]) == (1, 1.0)
    with pytest.raises(OperationFailure) as info:
        locker.admin.command("fsyncUnlock")
    assert (info.value.code, info.value.details["errmsg"]) == (20, "fsyncUnlock called when not locked")
    with pytest.raises(OperationFailure) as info:
        locker.test.command("fsync", lock=True)
    assert info.value.code == 13  # admin only
    reply = locker.admin.command("fsync", lock=True)
    assert (reply["lockCount"], reply["info"]) == (1, "now locked against writes, use db.fsyncUnlock() to unlock")
    assert locker.admin.command("fsync", lock=True)["lockCount"] == 2  # locks nest
    assert reader.test.c.find_one({"_id": 1}) == {"_id": 1}  # reads go on: the lock is held until unlocked below
    with pytest.raises(ExecutionTimeout):
        writer.test.command("insert", "c", documents=[{"_id": 2}], maxTimeMS=100)
    blocked = Background(lambda: writer.test.c.insert_one({"_id": 3}))
    wait_for(
        lambda: [
            op
            for op in reader.admin.aggregate([{"$currentOp": {}}])
            if op.get("op") == "insert" and op.get("ns") == "test.c" and op["waitingForLock"]
        ]
    )
    current = reader.admin.command("currentOp")
    assert current["fsyncLock"] is True
    queue = reader.admin.command("serverStatus")["globalLock"]["currentQueue"]
    assert queue["writers"] >= 1 and queue["readers"] == 0  # the insert waits for the writer
    assert locker.admin.command("fsyncUnlock")["lockCount"] == 1
    time.sleep(0.1)
    assert blocked.running  # one lock is still held
    reply = locker.admin.command("fsyncUnlock")
    assert (reply["info"], reply["lockCount"]) == ("fsyncUnlock completed", 0)
    blocked.join()
    assert blocked.error is None
    assert sorted(d["_id"] for d in reader.test.c.find()) == [1, 3]  # the timed-out insert wrote nothing
    assert "fsyncLock" not in reader.admin.command("currentOp")
    assert reader.admin.command("serverStatus")["globalLock"]["currentQueue"]["writers"] == 0


def test_closing_lets_an_fsync_lock_go(tmp_path: Path) -> None:
    """As mongod at shutdown: a lock still held does not keep the engine from closing."""
    path = str(tmp_path / "data")
    client = foliodb.MongoClient(path)
    client.test.c.insert_one({"_id": 1})
    client.admin.command("fsync", lock=True)
    closing = Background(client.close)
    closing.join(10)
    assert closing.error is None
    again = foliodb.MongoClient(path)
    try:
        again.test.c.insert_one({"_id": 2})
        assert again.test.c.count_documents({}) == 2
    finally:
        again.close()


def test_a_write_blocked_by_fsync_lock_shows_its_lock_as_mongod(deployment: Deployment) -> None:
    """MongoDB's jstests/core/currentop.js: during fsyncLock an insert is found by
    ``{"locks.Global": "w", waitingForLock: true}``; once it ran, its lockStats count the wait."""
    locker, writer, reader = deployment.connect(), deployment.connect(), deployment.connect()
    locker.admin.command("fsync", lock=True)
    blocked = Background(lambda: writer.test.jstests_currentop.insert_one({}))
    try:
        ops = wait_for(
            lambda: reader.admin.command(
                {
                    "currentOp": 1,
                    "locks.Global": "w",
                    "waitingForLock": True,
                    "type": "op",
                    "ns": "test.jstests_currentop",
                }
            )["inprog"]
        )
        assert len(ops) == 1, [op["command"] for op in ops]
        assert ops[0]["locks"] == {"FeatureCompatibilityVersion": "w", "ReplicationStateTransition": "w", "Global": "w"}
        assert ops[0]["lockStats"]["Global"]["acquireCount"] == {"w": 1}
    finally:
        locker.admin.command("fsyncUnlock")
    blocked.join()
    assert blocked.error is None
    # Reads take no lock a write waits for: they show none.
    assert not reader.admin.command({"currentOp": 1, "locks.Global": "w"})["inprog"]
