"""kill -9 while vectors are written, searched and their index saved: reopened, nothing
acknowledged is lost and the vector index agrees with its collection - the same vectors, the
same answers as a brute force over the documents - without being rebuilt from scratch when its
saved files are usable (the log replays what they miss)."""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import pytest

import foliodb
from tests.crash.harness import _killed_midway
from tests.crash.vector_writer import DIMS

pytestmark = pytest.mark.crash

READY_SECONDS = 60.0  # a rebuild of at most 400 vectors takes milliseconds; generous for a loaded machine


def _brute(docs: list[dict[str, Any]], query: list[float], limit: int) -> list[Any]:
    q = np.asarray(query, dtype=np.float32).astype(np.float64)
    dist = {d["_id"]: float(np.linalg.norm(np.asarray(d["v"], dtype=np.float32).astype(np.float64) - q)) for d in docs}
    return sorted(dist, key=lambda k: (dist[k], k))[:limit]


def run_vector_trial(path: str, seed: int, max_s: float = 0.8) -> dict[str, int]:
    rng = random.Random(seed)
    _, out = _killed_midway(
        ["tests.crash.vector_writer", path, str(seed)], "vector writer", b"ready\n", rng.uniform(0.02, max_s)
    )
    last: dict[int, str] = {}
    in_flight: set[int] = set()  # the documents of the write a kill may have cut before its line
    for line in out.decode().split("\n")[:-1]:
        kind, *ids = line.split()
        if kind == "try":
            in_flight = {int(i) for i in ids}
        else:
            last[int(ids[0])] = kind
    with foliodb.MongoClient(path) as client:
        coll = client.crash.vectors
        deadline = time.monotonic() + READY_SECONDS
        while next(iter(coll.list_search_indexes()))["status"] != "READY":
            assert time.monotonic() < deadline, "the vector index never became READY"
            time.sleep(0.01)
        docs = list(coll.find({}, show_record_id=True))
        present = {d["_id"] for d in docs}
        lost = [n for n, kind in last.items() if kind == "put" and n not in present and n not in in_flight]
        assert not lost, f"acknowledged vectors lost: {lost[:10]}"
        state = next(iter(client._executor.engine.search.states.values()))
        for q in range(5):
            query = [random.Random(q).uniform(-1, 1) for _ in range(DIMS)]
            for options in ({"exact": True}, {"numCandidates": 1000}):
                stage = {"index": "vec", "path": "v", "queryVector": query, "limit": 10, **options}
                got = [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}])]
                assert got == _brute(docs, query, 10), options
        # The index holds exactly the documents' vectors (searched above: it has caught up).
        column = state.columns["v"]
        by_rid = {d["$recordId"]: d for d in docs}
        assert set(column.row_of) == set(by_rid)
        for rid, row in column.row_of.items():
            assert np.array_equal(column.matrix[row], np.asarray(by_rid[rid]["v"], dtype=np.float32))
        report = client.crash.validate_collection("vectors")
        assert report["valid"], report["errors"]
        return {"writes": len(last), "restored": int(state.loaded)}


def test_kill9_during_vector_writes_and_saves(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "data")
    totals = {"writes": 0, "restored": 0}
    for seed in range(5):  # scripts/crash_soak.py --only vector|text runs many more
        counts = run_vector_trial(path, seed)
        for key in totals:
            totals[key] += counts[key]
    assert totals["writes"] > 0
    assert totals["restored"] > 0  # reopening used the saved files (then replayed the log), not a rebuild
