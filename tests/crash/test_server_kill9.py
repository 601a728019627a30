"""kill -9 of ``foliodb serve`` while pymongo writes through it: every write
the server acknowledged over the wire is in the reopened database, and every
index agrees with its collection. (The reply is sent after the commit, so an
acknowledgement on the wire means what it means embedded.)"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymongo
import pytest
from pymongo.errors import PyMongoError

import foliodb

pytestmark = [pytest.mark.crash, pytest.mark.clients]

ROOT = Path(__file__).resolve().parents[2]


def start_server(dbpath: str) -> tuple[subprocess.Popen[str], int]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    server = subprocess.Popen(
        [sys.executable, "-m", "foliodb", "serve", "--dbpath", dbpath, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert server.stdout is not None
    first = server.stdout.readline()  # "... waiting for connections on HOST:PORT (dbpath ...)"
    assert "waiting for connections" in first, first
    return server, int(first.split(" on ", 1)[1].split(" ", 1)[0].rsplit(":", 1)[1])


@pytest.mark.parametrize("seed", range(5))
def test_acknowledged_wire_writes_survive_kill9(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    dbpath = str(tmp_path / "data")
    server, port = start_server(dbpath)
    inserted: list[int] = []
    batches: list[int] = []
    updated: dict[int, int] = {}
    stop = threading.Event()

    def write() -> None:
        with pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=2000, retryWrites=False) as client:
            coll = client.crash.docs
            coll.create_index("k")
            n = 0
            try:
                while not stop.is_set():
                    n += 1
                    coll.insert_one({"_id": n, "k": n % 7, "v": 0})
                    inserted.append(n)
                    if n % 5 == 0:
                        coll.update_one({"_id": n - 1}, {"$set": {"v": n}})
                        updated[n - 1] = n
                    if n % 11 == 0:
                        coll.insert_many([{"_id": f"m{n}-{i}", "k": i} for i in range(20)])
                        batches.append(n)
            except PyMongoError:
                pass  # the server died under us: what was acknowledged is recorded above

    writer = threading.Thread(target=write)
    writer.start()
    # Kill only once writes are flowing (a slow machine may take a while to connect), then at a random moment.
    deadline = time.monotonic() + 30
    while len(inserted) < 20 and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(rng.uniform(0.05, 0.5))
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=10)
    stop.set()
    writer.join(timeout=30)
    assert inserted, "the writer never got going"
    with foliodb.MongoClient(dbpath) as client:  # the dead server's dbpath lock is taken over
        coll = client.crash.docs
        present = {doc["_id"]: doc for doc in coll.find({"_id": {"$type": "int"}})}
        assert not set(inserted) - present.keys(), "acknowledged inserts lost"
        for _id, value in updated.items():
            assert present[_id]["v"] >= value, f"acknowledged update of {_id} lost"
        for n in batches:
            assert coll.count_documents({"_id": {"$regex": f"^m{n}-"}}) == 20, f"batch {n} incomplete"
        report = client.crash.validate_collection("docs")
        assert report["valid"], report["errors"]
