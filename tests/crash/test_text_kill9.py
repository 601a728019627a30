"""kill -9 while documents are written, searched and their full-text index merged and saved:
reopened, nothing acknowledged is lost and the index agrees with its collection - every query
matches what a plain-Python evaluation of the documents says, and answers (documents, order,
scores) as an index built from scratch on them does - without being rebuilt from scratch when
its saved files are usable (the log replays what they miss)."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from pymongo.operations import SearchIndexModel

import foliodb
from tests.crash.harness import _killed_midway
from tests.crash.text_writer import INDEX, WORDS

pytestmark = pytest.mark.crash

READY_SECONDS = 60.0  # a rebuild of at most 400 short documents takes milliseconds; generous for a loaded machine


def _wait_ready(coll: Any, name: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while next(i for i in coll.list_search_indexes() if i["name"] == name)["status"] != "READY":
        assert time.monotonic() < deadline, f"the index {name} never became READY"
        time.sleep(0.01)


def _searched(coll: Any, index: str, word: str) -> list[tuple[Any, float]]:
    stage = {"$search": {"index": index, "text": {"query": word, "path": "body"}}}
    return [(d["_id"], d["s"]) for d in coll.aggregate([stage, {"$project": {"s": {"$meta": "searchScore"}}}])]


def run_text_trial(path: str, seed: int, max_s: float = 0.8) -> dict[str, int]:
    rng = random.Random(seed)
    _, out = _killed_midway(
        ["tests.crash.text_writer", path, str(seed)], "text writer", b"ready\n", rng.uniform(0.02, max_s)
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
        coll = client.crash.texts
        _wait_ready(coll, "text")
        docs = list(coll.find())
        present = {d["_id"] for d in docs}
        lost = [n for n, kind in last.items() if kind == "put" and n not in present and n not in in_flight]
        assert not lost, f"acknowledged documents lost: {lost[:10]}"
        state = next(s for s in client._executor.engine.search.states.values() if hasattr(s, "segments"))
        restored = int(state.loaded)
        coll.create_search_index(SearchIndexModel(definition=INDEX, name="fresh"))
        _wait_ready(coll, "fresh")
        for word in WORDS:
            got = _searched(coll, "text", word)
            assert {i for i, _ in got} == {d["_id"] for d in docs if word in d["body"].split()}, word
            assert got == _searched(coll, "fresh", word), word
        # The index holds exactly the collection's documents.
        assert len(state) == len(docs)
        coll.drop_search_index("fresh")
        report = client.crash.validate_collection("texts")
        assert report["valid"], report["errors"]
        return {"writes": len(last), "restored": restored}


def test_kill9_during_text_writes_merges_and_saves(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "data")
    totals = {"writes": 0, "restored": 0}
    for seed in range(5):  # scripts/crash_soak.py --only vector|text runs many more
        counts = run_text_trial(path, seed)
        for key in totals:
            totals[key] += counts[key]
    assert totals["writes"] > 0
    assert totals["restored"] > 0  # reopening used the saved files (then replayed the log), not a rebuild
