"""$search beside the background thread's work on the same index: a search never waits for it.

The background thread merges a full-text index's segments (engine/search/text/index.py,
``TextState.absorb``). Here one merge is held in flight (the real merge, run only once the test
lets it) and a search must answer meanwhile, with the documents a fresh index gives.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search.text import index as text_index
from tests.unit.search.conftest import wait_ready

# Far longer than a search of a few documents takes: a search that waits for the merge never
# returns before the merge is let go, so this only bounds how long a failing run hangs.
ANSWER_SECONDS = 30.0


@pytest.fixture
def tiny_segments() -> Any:
    """Segments of 2 entries merged 2 at a time, so a few inserts give a merge to do."""
    saved = text_index.FREEZE_AT, text_index.MERGE_FACTOR
    text_index.FREEZE_AT, text_index.MERGE_FACTOR = 2, 2
    yield
    text_index.FREEZE_AT, text_index.MERGE_FACTOR = saved


def test_a_search_answers_while_a_merge_is_in_flight(tiny_segments: Any, monkeypatch: Any) -> None:
    merging, release = threading.Event(), threading.Event()
    real_merge = text_index.merge

    def held_merge(*args: Any) -> Any:
        merging.set()
        release.wait(ANSWER_SECONDS * 2)
        return real_merge(*args)

    monkeypatch.setattr(text_index, "merge", held_merge)
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "body": "red fox" if i % 2 else "blue whale"} for i in range(8)])
        coll.create_search_index(SearchIndexModel(name="default", definition={"mappings": {"dynamic": True}}))
        try:
            wait_ready(coll, "default")
            client._executor.engine.search.wake()
            assert merging.wait(ANSWER_SECONDS), "the background thread never merged"
            answer: list[Any] = []
            pipeline = [{"$search": {"text": {"query": "fox", "path": "body"}}}, {"$project": {"_id": 1}}]
            searcher = threading.Thread(target=lambda: answer.append(list(coll.aggregate(pipeline))))
            searcher.start()
            searcher.join(ANSWER_SECONDS)
            assert not searcher.is_alive(), "the search waited for the merge"
            assert sorted(d["_id"] for d in answer[0]) == [1, 3, 5, 7]
        finally:
            release.set()


def _rids_holding(state: Any, word: str) -> list[int]:
    from foliodb.engine.search.text.reader import Reader

    ords, _ = Reader(state).postings("body", word)
    return sorted(int(state.rid_at[o]) for o in ords)


@pytest.mark.parametrize("reader_first", [True, False])
def test_catching_up_from_two_snapshots_applies_each_change_once(reader_first: bool) -> None:
    """The background thread reads the log and analyzes the changed documents before it takes
    the index's lock; a search may catch the index up meanwhile, from an older or a newer
    snapshot. Log: seq 1 writes record 1 ("red"), seq 2 record 2 ("blue"), seq 3 record 1
    again ("green"). One catch-up reads seqs 1-2 (record 1 still "red"), the other 1-3; in
    either order the index ends at seq 3 with record 1 "green", record 2 "blue"."""
    import bson

    from foliodb.engine.search.text.index import TextState
    from foliodb.engine.search.text.mapping import compile_definition

    state = TextState(1, 1, compile_definition({"mappings": {"dynamic": True}}))
    red, blue, green = (bson.encode({"body": word}) for word in ("red", "blue", "green"))
    older = ([(1, 1), (2, 2)], state.prepare({1: red, 2: blue}), 2)  # read in the snapshot of seq 2
    newer = ([(1, 1), (2, 2), (3, 1)], state.prepare({1: green, 2: blue}), 3)  # of seq 3
    for entries, prepared, newest in (older, newer) if reader_first else (newer, older):
        state.catch_up(entries, prepared, newest)
    assert state.watermark == 3
    assert _rids_holding(state, "green") == [1]
    assert _rids_holding(state, "red") == []
    assert _rids_holding(state, "blue") == [2]
    assert sorted(state.history) == [(1, 1), (2, 2), (3, 1)]
    assert state.changed_since(2) == {1}
