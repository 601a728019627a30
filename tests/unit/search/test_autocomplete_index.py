"""An autocomplete index answers alike wherever its grams are: in the mutable segment (read by
scanning, then through its sort once searched often), in frozen segments saved to files and
loaded after a restart, and both at once; the documents matched are those whose edge grams
(computed here in plain Python) hold the query's."""

from __future__ import annotations

from typing import Any

from pymongo.operations import SearchIndexModel

import foliodb
from tests.unit.search.conftest import wait_ready

TITLES: dict[int, Any] = {
    1: "the quick brown fox",
    2: "quiet quiet days",  # a word twice: its grams once
    3: ["brownies a la mode", "quick quiche"],  # an array: "qui" in one value, tf 1
    4: ["quill", "quilt"],  # "qui" in both values: tf 2
    5: "days of brown",
    6: "abc abd",  # two words with one prefix ("ab")
}
QUERIES = ["qui", "brow", "days", "ab", "quick bro", "quilt", "x"]
MAX_GRAMS = 10


def _edge_grams(value: str) -> set[str]:
    """Every prefix (2 to MAX_GRAMS characters) of the title from each word on."""
    words = value.split()
    out = set()
    for i in range(len(words)):
        rest = " ".join(words[i:])
        out |= {rest[:k] for k in range(2, min(MAX_GRAMS, len(rest)) + 1)}
    return out


def _expected(query: str, titles: dict[int, Any]) -> set[int]:
    gram = query[:MAX_GRAMS]
    found = set()
    for key, title in titles.items():
        values = title if isinstance(title, list) else [title]
        if any(gram in _edge_grams(v) for v in values):
            found.add(key)
    return found


def _answers(coll: Any) -> dict[str, list[tuple[int, float]]]:
    out = {}
    for query in QUERIES:
        stage = {"autocomplete": {"query": query, "path": "t", "tokenOrder": "sequential"}}
        pipeline = [{"$search": stage}, {"$project": {"s": {"$meta": "searchScore"}}}]
        out[query] = sorted((d["_id"], d["s"]) for d in coll.aggregate(pipeline))
    return out


def test_autocomplete_answers_alike_from_mutable_and_loaded_segments(tmp_path: Any) -> None:
    path = str(tmp_path / "data")
    definition = {"mappings": {"fields": {"t": {"type": "autocomplete", "maxGrams": MAX_GRAMS}}}}
    with foliodb.MongoClient(path) as client:
        coll = client.test.create_collection("titles")
        coll.create_search_index(SearchIndexModel(name="default", definition=definition))
        wait_ready(coll, "default")
        # Written after the build (whose save freezes what it built): every gram stays in the
        # mutable segment (a save comes after thousands of changes).
        coll.insert_many([{"_id": k, "t": v} for k, v in TITLES.items()])
        first = _answers(coll)
        (state,) = client._executor.engine.search.states.values()
        assert not state.segments and len(state.mutable) == len(TITLES)
        for _ in range(3):  # past the scans the mutable segment makes before sorting its grams
            assert _answers(coll) == first
    for query, hits in first.items():
        assert {i for i, _ in hits} == _expected(query, TITLES), query
    scores = dict(first["qui"])
    assert scores[4] > scores[3]  # tf 2 in a field of 8 grams against tf 1 in a longer one
    with foliodb.MongoClient(path) as client:  # loaded from the saved (frozen) segment
        coll = client.test.titles
        wait_ready(coll, "default")
        (state,) = client._executor.engine.search.states.values()
        assert state.loaded and state.segments
        assert _answers(coll) == first
        coll.insert_one({"_id": 7, "t": "quiz night"})  # in the mutable segment, beside the frozen one
        after = _answers(coll)
    for query, hits in after.items():
        assert {i for i, _ in hits} == _expected(query, {**TITLES, 7: "quiz night"}), query
