"""Many processes, one dbpath (foliodb.server.share, foliodb.client.remote):
a second process's client works through the owner's engine, with the owner's
answers and errors; a fork child's client too; and when the owner dies, the
others carry on, one of them becoming the owner, losing no acknowledged write.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

import foliodb

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _worker(path: str, who: int) -> tuple[int, int]:
    client = foliodb.MongoClient(path)
    try:
        for i in range(50):
            client.db.log.insert_one({"who": who, "i": i})
        return client.db.log.count_documents({"who": who}), client.db.log.count_documents({"who": "owner"})
    finally:
        client.close()


@pytest.mark.parametrize("start", ["spawn", "fork"])
def test_worker_processes_write_through_the_owner(tmp_path: Path, start: str) -> None:
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as owner:
        owner.db.log.insert_one({"who": "owner"})
        with multiprocessing.get_context(start).Pool(3) as pool:
            counts = pool.starmap(_worker, [(path, n) for n in range(3)])
        assert counts == [(50, 1)] * 3  # each worker saw its writes and the owner's
        assert owner.db.log.count_documents({}) == 151


def test_a_client_used_across_fork_keeps_working_in_the_child(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as client:
        client.db.items.insert_one({"_id": "parent"})
        pid = os.fork()
        if pid == 0:  # the child: the parent's client, now through the parent's socket
            code = 1
            try:
                client.db.items.insert_one({"_id": "child"})
                code = 0 if client.db.items.count_documents({}) == 2 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert sorted(d["_id"] for d in client.db.items.find()) == ["child", "parent"]


OWNER = """
import sys, time
import foliodb
client = foliodb.MongoClient(sys.argv[1])
client.db.items.insert_one({"_id": "owner", "n": 1})
print("ready", flush=True)
sys.stdin.read()
"""


def _owner(path: str) -> subprocess.Popen[bytes]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, path], env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert owner.stdout is not None and owner.stdout.readline() == b"ready\n"
    return owner


def test_answers_and_errors_are_the_owners(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    owner = _owner(path)
    try:
        with foliodb.MongoClient(path) as client:
            assert client._executor.remote is not None  # reached through the owner
            with pytest.raises(DuplicateKeyError) as duplicate:
                client.db.items.insert_one({"_id": "owner"})
            assert duplicate.value.code == 11000 and 'dup key: { _id: "owner" }' in str(duplicate.value)
            with pytest.raises(OperationFailure) as bad:
                client.db.command("find", "items", filter={"$bogus": 1})
            assert bad.value.code == 2
            client.db.items.insert_many([{"_id": n} for n in range(10)])
            assert [
                d["_id"] for d in client.db.items.find({"_id": {"$type": "int"}}).sort("_id").batch_size(3)
            ] == list(range(10))  # getMore through the owner's cursors
            assert client.db.command("ping") == {"ok": 1.0}  # no cluster times outside a session, as locally
            with client.start_session() as session, session.start_transaction():
                client.db.items.update_one({"_id": "owner"}, {"$inc": {"n": 1}}, session=session)
            assert client.db.items.find_one({"_id": "owner"})["n"] == 2
    finally:
        owner.communicate(b"", timeout=30)


def test_when_the_owner_dies_a_client_becomes_the_owner_and_loses_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    owner = _owner(path)
    acknowledged = []
    with foliodb.MongoClient(path) as client:
        for i in range(300):
            if i == 100:
                owner.send_signal(signal.SIGKILL)
            client.db.items.insert_one({"_id": i})  # no error for the application to handle
            acknowledged.append(i)
        assert client._executor.local is not None  # this process took the dbpath over
        ids = {d["_id"] for d in client.db.items.find({"_id": {"$type": "int"}})}
    owner.wait(timeout=30)
    assert ids == set(acknowledged)
    with foliodb.MongoClient(path) as reopened:  # and it is all on disk
        assert reopened.db.items.count_documents({"_id": {"$type": "int"}}) == 300


def test_a_second_client_beside_foliodb_serve(tmp_path: Path) -> None:
    path = tmp_path / "data"
    server = subprocess.Popen(
        [sys.executable, "-m", "foliodb", "serve", "--dbpath", str(path), "--port", "0"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None and b"waiting for connections" in server.stdout.readline()
        with foliodb.MongoClient(str(path)) as client:  # a notebook beside a running server
            client.db.items.insert_one({"_id": 1})
            assert client.db.items.count_documents({}) == 1
    finally:
        server.terminate()
        server.communicate(timeout=30)
    with foliodb.MongoClient(str(path)) as client:
        assert client.db.items.find_one() == {"_id": 1}


def test_memory_databases_are_not_shared(client: Any) -> None:
    assert type(client._executor).__name__ == "Executor"
