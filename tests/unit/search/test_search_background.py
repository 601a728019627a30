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
