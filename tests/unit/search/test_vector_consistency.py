"""A vector index never lags its collection: background builds, snapshots, restarts.

These run on the embedded engine, whose internals (the index's in-memory state) they inspect to
tell a graph search from an exact one and a restored index from a rebuilt one.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np
import pytest
from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search import manager
from tests.unit.search.conftest import READY_SECONDS, vector_index, wait_ready


def _engine(client: Any) -> Any:
    return client._executor.engine


def _search(coll: Any, query: list[float], limit: int, **options: Any) -> list[Any]:
    stage = {"index": "vec", "path": "v", "queryVector": query, "limit": limit, **options}
    return [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}])]


def _brute(docs: dict[Any, list[float]], query: list[float], limit: int) -> list[Any]:
    """Euclidean nearest, ties by _id (ints here)."""
    q = np.asarray(query, dtype=np.float32).astype(np.float64)
    dist = {k: float(np.linalg.norm(np.asarray(v, dtype=np.float32).astype(np.float64) - q)) for k, v in docs.items()}
    return sorted(dist, key=lambda k: (dist[k], k))[:limit]


def test_build_in_background_with_progress_and_writes_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of 100 documents, each chunk slowed by a writer: the build takes a while.
    monkeypatch.setattr(manager, "BUILD_CHUNK", 100)
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(3000)])
        coll.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
        statuses, progress = set(), []
        written = 0
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            (listed,) = coll.list_search_indexes()
            statuses.add(listed["status"])
            ops = client.admin.command("currentOp")["inprog"]
            # As mongod's, an index build shows progress once its scan has counted the documents.
            progress += [
                op["progress"] for op in ops if "createSearchIndexes" in op.get("command", {}) and "progress" in op
            ]
            # Writes go on while it builds (and must all be in the index).
            coll.insert_one({"_id": 10_000 + written, "v": [10_000 + written, 0, 0]})
            written += 1
            if listed["status"] == "READY":
                break
        assert statuses == {"BUILDING", "READY"} or statuses == {"READY"}
        assert all(p["total"] >= 3000 for p in progress)
        docs = {d["_id"]: d["v"] for d in coll.find()}
        for query in ([10_000 + written - 1, 0, 0], [1500.2, 0, 0], [-5, 0, 0]):
            assert _search(coll, query, 5, numCandidates=50) == _brute(docs, query, 5)


def test_killed_build_fails_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager, "BUILD_CHUNK", 10)
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(20_000)])
        coll.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
        deadline = time.monotonic() + READY_SECONDS
        opid = None
        while opid is None and time.monotonic() < deadline:
            ops = client.admin.command("currentOp")["inprog"]
            opid = next((op["opid"] for op in ops if "createSearchIndexes" in op.get("command", {})), None)
        assert opid is not None, "the build never showed in currentOp"
        client.admin.command("killOp", op=opid)
        while (status := next(iter(coll.list_search_indexes()))["status"]) == "BUILDING":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert status == "FAILED"
        # A failed index still answers (from the snapshot, exactly), and a new definition rebuilds it.
        assert _search(coll, [7, 0, 0], 1, exact=True) == [7]
        coll.update_search_index("vec", vector_index(similarity="cosine"))
        wait_ready(coll, "vec")


def test_a_snapshot_older_than_the_index_sees_its_own_state() -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(10)])
        coll.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
        wait_ready(coll, "vec")
        with client.start_session() as session, session.start_transaction():
            assert _search(coll.with_options(), [3, 0, 0], 1, exact=True) == [3]
            coll.find_one({}, session=session)  # the transaction's snapshot starts here
            coll.update_one({"_id": 3}, {"$set": {"v": [100, 0, 0]}})
            coll.insert_one({"_id": 50, "v": [3, 0, 0]})
            coll.delete_one({"_id": 4})
            # Outside, the index has caught up with the three writes...
            assert _search(coll, [3, 0, 0], 3, numCandidates=10) == [50, 2, 1]  # 1 and 5 tie: by _id
            # ...inside, the older snapshot sees none of them.
            stage = {"index": "vec", "path": "v", "queryVector": [3, 0, 0], "numCandidates": 10, "limit": 3}
            inside = [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}], session=session)]
            assert inside == [3, 2, 4]


def test_graph_search_after_absorption() -> None:
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((2000, 8)).astype(np.float32)
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": rows[i].tolist()} for i in range(len(rows))])
        coll.create_search_index(SearchIndexModel(definition=vector_index(dims=8), name="vec", type="vectorSearch"))
        assert _engine(client).search.wait_idle(READY_SECONDS)
        stage = {"index": "vec", "path": "v", "queryVector": rows[0].tolist(), "numCandidates": 100, "limit": 10}
        explained = client.test.command(
            "explain", {"aggregate": "docs", "pipeline": [{"$vectorSearch": stage}], "cursor": {}}
        )
        details = explained["stages"][0]["$vectorSearch"]["explain"]
        assert (details["method"], details["pendingRows"]) == ("ann", 0)
        hits = 0
        for i in range(0, 2000, 100):
            got = set(_search(coll, rows[i].tolist(), 10, numCandidates=100))
            truth = np.argsort(np.linalg.norm(rows - rows[i], axis=1))[:10]
            hits += len(got & set(truth.tolist()))
        assert hits / (20 * 10) >= 0.9


def test_restart_restores_instead_of_rebuilding(tmp_path: Any) -> None:
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(500)])
        coll.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
        wait_ready(coll, "vec")
        coll.insert_one({"_id": 1000, "v": [1000, 0, 0]})  # after the first save: replayed from the log
        assert _search(coll, [999, 0, 0], 1, numCandidates=10) == [1000]
    with foliodb.MongoClient(path) as client:
        coll = client.test.docs
        coll.insert_one({"_id": 2000, "v": [2000, 0, 0]})
        wait_ready(coll, "vec")
        states = list(_engine(client).search.states.values())
        assert [state.loaded for state in states] == [True]
        assert _search(coll, [1999, 0, 0], 2, numCandidates=10) == [2000, 1000]
        assert len(states[0].columns["v"]) == 502


def test_concurrent_writers_and_searchers_agree_with_find() -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(200)])
        coll.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
        wait_ready(coll, "vec")
        stop = threading.Event()
        failures: list[str] = []

        def writer() -> None:
            n = 1000
            while not stop.is_set():
                coll.insert_one({"_id": n, "v": [n, 0, 0]})
                coll.delete_one({"_id": n - 3})
                n += 1

        def searcher() -> None:
            with client.start_session(snapshot=True) as session:
                # One snapshot for both reads: the search must name exactly the nearest documents find sees.
                docs = {d["_id"]: d["v"] for d in coll.find({}, session=session)}
                stage = {"index": "vec", "path": "v", "queryVector": [5000, 0, 0], "numCandidates": 20, "limit": 3}
                got = [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}], session=session)]
                if got != _brute(docs, [5000, 0, 0], 3):
                    failures.append(f"{got} != {_brute(docs, [5000, 0, 0], 3)}")

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            for _ in range(40):
                searcher()
        finally:
            stop.set()
            thread.join()
        assert not failures, failures[:3]


def test_saved_files_go_with_their_index(tmp_path: Any) -> None:
    path = tmp_path / "data"
    with foliodb.MongoClient(str(path)) as client:
        db = client.test
        for name in ("a", "b"):
            db[name].insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(10)])
            db[name].create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
            wait_ready(db[name], "vec")
        assert _engine(client).search.wait_idle(READY_SECONDS)
        saved = path / manager.SEARCH_DIR
        ids = {name.split("-", 1)[0] for name in os.listdir(saved)}
        assert len(ids) == 2  # each index saved its state once built
        db.a.drop_search_index("vec")
        db.b.drop()
        deadline = time.monotonic() + READY_SECONDS
        while os.listdir(saved):
            assert time.monotonic() < deadline, os.listdir(saved)
            _engine(client).search.wake()
            time.sleep(0.02)
