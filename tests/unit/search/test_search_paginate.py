"""$search searchAfter / searchBefore with searchSequenceToken, against Atlas's documented paging.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/paginate-results/ - a token marks a
document's place in the order (score, or ``sort``); ``searchAfter`` returns what follows it,
``searchBefore`` what precedes it in reverse order. Expected orders are computed here in
plain Python (BM25 from tests/unit/search/text_reference.py, ties in insertion order).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import float32, score_terms

WORDS = ["fox", "dog", "cat", "owl"]


def _collection(db: Any, n: int = 23, seed: int = 7) -> tuple[Any, dict[int, dict[str, Any]]]:
    rng = random.Random(seed)
    docs = {
        i: {
            "_id": i,
            "t": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))),
            "g": rng.choice(["a", "b", "c"]),
            "n": rng.randint(0, 4),
        }
        for i in range(n)
    }
    for doc in docs.values():
        if doc["_id"] % 5 == 0:
            del doc["n"]  # no value: noData lowest
    db.p.insert_many(list(docs.values()))
    db.p.create_search_index(
        SearchIndexModel(definition={"mappings": {"dynamic": True, "fields": {"g": {"type": "token"}}}})
    )
    wait_ready(db.p, "default")
    return db.p, docs


def _score_order(docs: dict[int, dict[str, Any]], term: str) -> list[int]:
    scores = score_terms({k: d["t"] for k, d in docs.items()}, [term])
    return sorted(scores, key=lambda k: (-float32(scores[k]), k))


def _page(coll: Any, stage: dict[str, Any], size: int) -> list[tuple[int, str]]:
    pipeline = [{"$search": stage}, {"$limit": size}, {"$project": {"tok": {"$meta": "searchSequenceToken"}}}]
    return [(d["_id"], d["tok"]) for d in coll.aggregate(pipeline)]


def _walk_forward(coll: Any, stage: dict[str, Any], size: int) -> list[int]:
    seen: list[int] = []
    page = _page(coll, stage, size)
    while page:
        seen += [i for i, _ in page]
        page = _page(coll, {**stage, "searchAfter": page[-1][1]}, size)
    return seen


def _walk_backward(coll: Any, stage: dict[str, Any], last_token: str, size: int) -> list[int]:
    seen: list[int] = []
    page = _page(coll, {**stage, "searchBefore": last_token}, size)
    while page:
        seen = [i for i, _ in reversed(page)] + seen  # searchBefore pages come closest first
        page = _page(coll, {**stage, "searchBefore": page[-1][1]}, size)
    return seen


def test_score_order_pages_forward_and_back(db: Any) -> None:
    coll, docs = _collection(db)
    stage = {"text": {"query": "fox", "path": "t"}}
    expected = _score_order(docs, "fox")
    assert len(expected) > 8
    assert _walk_forward(coll, stage, 3) == expected
    everything = _page(coll, stage, 100)
    assert [i for i, _ in everything] == expected
    assert _walk_backward(coll, stage, everything[-1][1], 3) == expected[:-1]
    # searchBefore the second page's first document: the first page, in reverse.
    assert [i for i, _ in _page(coll, {**stage, "searchBefore": everything[3][1]}, 3)] == expected[2::-1]


def _sorted_order(docs: dict[int, dict[str, Any]], term: str) -> list[int]:
    """sort {g: -1, n: 1}: g descending, n ascending with missing lowest, then score, then _id."""
    scores = score_terms({k: d["t"] for k, d in docs.items()}, [term])
    matched = sorted(scores, key=lambda k: (-float32(scores[k]), k))
    by_n = sorted(matched, key=lambda k: (0, 0) if "n" not in docs[k] else (1, docs[k]["n"]))
    return sorted(by_n, key=lambda k: docs[k]["g"], reverse=True)


def test_sorted_pages_forward_and_back(db: Any) -> None:
    coll, docs = _collection(db)
    stage = {"text": {"query": "dog", "path": "t"}, "sort": {"g": -1, "n": 1}}
    expected = _sorted_order(docs, "dog")
    assert _walk_forward(coll, stage, 4) == expected
    everything = _page(coll, stage, 100)
    assert [i for i, _ in everything] == expected
    assert _walk_backward(coll, stage, everything[-1][1], 4) == expected[:-1]


def test_token_marks_a_position_as_the_collection_changes(db: Any) -> None:
    coll, docs = _collection(db)
    stage = {"text": {"query": "dog", "path": "t"}, "sort": {"g": -1, "n": 1}}
    everything = _page(coll, stage, 100)
    i, token = everything[5]
    coll.delete_one({"_id": i})  # the token's own document gone
    coll.insert_one({"_id": 100, "t": "dog", "g": "a", "n": 9})  # sorts last
    coll.insert_one({"_id": 101, "t": "dog", "g": "c", "n": 0})  # sorts before the token
    del docs[i]
    docs[100] = {"_id": 100, "t": "dog", "g": "a", "n": 9}
    docs[101] = {"_id": 101, "t": "dog", "g": "c", "n": 0}
    expected = _sorted_order(docs, "dog")
    after = [j for j, _ in _page(coll, {**stage, "searchAfter": token}, 100)]
    assert after == [j for j, _ in everything[6:]] + [100]
    assert after == expected[len(expected) - len(after) :]


def test_pagination_keeps_the_count_of_every_match(db: Any) -> None:
    coll, docs = _collection(db)
    stage = {"text": {"query": "fox", "path": "t"}, "count": {"type": "total"}}
    token = _page(coll, stage, 1)[0][1]
    (meta,) = coll.aggregate([{"$searchMeta": {**stage, "searchAfter": token}}])
    assert meta["count"]["total"] == len(_score_order(docs, "fox"))


@pytest.mark.parametrize(
    "options",
    [
        {"searchAfter": "not base64!"},
        {"searchAfter": "AAAA"},
        {"searchBefore": 5},
        {"searchAfter": "x", "searchBefore": "x"},
    ],
)
def test_bad_tokens_fail(db: Any, options: dict[str, Any]) -> None:
    coll, _ = _collection(db)
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": {"text": {"query": "fox", "path": "t"}, **options}}]))
    assert failure.value.code == 8


def test_token_of_another_sort_fails(db: Any) -> None:
    coll, _ = _collection(db)
    token = _page(coll, {"text": {"query": "fox", "path": "t"}, "sort": {"n": 1}}, 1)[0][1]
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": {"text": {"query": "fox", "path": "t"}, "searchAfter": token}}]))
    assert failure.value.code == 8


def test_pages_past_the_first_sorted_hits(db: Any) -> None:
    """More matches than the search orders at once (256): tokens of the later ones work too."""
    coll, docs = _collection(db, n=500)
    stage = {"text": {"query": "owl", "path": "t"}}
    expected = _score_order(docs, "owl")
    assert len(expected) > 256
    assert [i for i, _ in _page(coll, stage, 1000)] == expected
    assert _walk_forward(coll, stage, 90) == expected
