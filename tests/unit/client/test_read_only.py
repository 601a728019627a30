"""``MongoClient(path, read_only=True)``: a dbpath opened for reading only
(read-only media, another user's files, a copy not to be touched). Writes
answer as mongod's read-only mode does: IllegalOperation (20), "Cannot execute
a write operation in read-only mode"; hello says ``readOnly: true``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pymongo.errors import OperationFailure

import foliodb

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def dbpath(tmp_path: Path) -> str:
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as client:
        client.shop.orders.insert_many([{"_id": i, "user_id": i % 3} for i in range(9)])
        client.shop.orders.create_index("user_id")
    return path


def test_reads_work_and_writes_are_refused(dbpath: str) -> None:
    before = set(os.listdir(dbpath))
    data = (Path(dbpath) / "foliodb.sqlite").read_bytes()
    with foliodb.MongoClient(dbpath, read_only=True) as client:
        orders = client.shop.orders
        assert orders.count_documents({"user_id": 1}) == 3
        assert "IXSCAN" in str(orders.find({"user_id": 1}).explain()["queryPlanner"]["winningPlan"])
        assert list(orders.aggregate([{"$group": {"_id": "$user_id", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}])) == [
            {"_id": 0, "n": 3},
            {"_id": 1, "n": 3},
            {"_id": 2, "n": 3},
        ]
        assert client.admin.command("hello")["readOnly"] is True
        for write in (
            lambda: orders.insert_one({"_id": 99}),
            lambda: orders.update_one({"_id": 1}, {"$set": {"x": 1}}),
            lambda: orders.delete_many({}),
            lambda: orders.create_index("x"),
            lambda: client.shop.drop_collection("orders"),
        ):
            with pytest.raises(OperationFailure) as refused:
                write()
            assert refused.value.code == 20
            assert refused.value.details["errmsg"] == "Cannot execute a write operation in read-only mode"
    # Nothing written: the data file as it was; at most SQLite's WAL index beside it (mode=ro makes it).
    assert (Path(dbpath) / "foliodb.sqlite").read_bytes() == data
    assert set(os.listdir(dbpath)) - before <= {"foliodb.sqlite-wal", "foliodb.sqlite-shm"}
    with foliodb.MongoClient(dbpath) as client:
        assert client.shop.orders.count_documents({}) == 9


def test_read_only_beside_a_writing_owner(dbpath: str) -> None:
    """No lock is taken, so a read-only client opens a dbpath another process owns,
    and each read sees what the owner has committed."""
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, foliodb; c = foliodb.MongoClient(sys.argv[1]); c.shop.orders.insert_one({'_id': 'late'});"
            " print('ready', flush=True); sys.stdin.read()",
            dbpath,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline() == b"ready\n"
        with foliodb.MongoClient(dbpath, read_only=True) as client:
            assert client.shop.orders.find_one({"_id": "late"}) == {"_id": "late"}
    finally:
        owner.communicate(b"", timeout=30)


def test_a_missing_dbpath_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(OperationFailure) as missing:
        foliodb.MongoClient(str(tmp_path / "nothing"), read_only=True)
    assert missing.value.code == 20
    assert not (tmp_path / "nothing").exists()
