"""$vectorSearch, embedded and over the wire: answers against an independent numpy computation.

Manual: https://www.mongodb.com/docs/atlas/atlas-vector-search/vector-search-stage/
(fields, pre-filter operators, scores: "cosine and dotProduct: score = (1 + s) / 2;
euclidean: score = 1 / (1 + distance)").
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from bson.binary import Binary, BinaryVectorDtype
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import vector_index, wait_ready


def _expected_score(q: list[float], v: list[float], similarity: str) -> float:
    """MongoDB's normalised score, from float32 vectors (what the index stores), in plain Python."""
    q32 = [float(np.float32(x)) for x in q]
    v32 = [float(np.float32(x)) for x in v]
    if similarity == "euclidean":
        return 1 / (1 + math.sqrt(sum((a - b) ** 2 for a, b in zip(q32, v32, strict=True))))
    dot = sum(a * b for a, b in zip(q32, v32, strict=True))
    if similarity == "cosine":
        dot /= math.sqrt(sum(a * a for a in q32)) * math.sqrt(sum(b * b for b in v32))
    return (1 + dot) / 2


def _search(coll: Any, query: list[float] | Binary, limit: int, **options: Any) -> list[dict[str, Any]]:
    stage = {"index": "vec", "path": "v", "queryVector": query, "limit": limit, **options}
    if "exact" not in options and "numCandidates" not in options:
        stage["numCandidates"] = max(limit, 100)
    return list(coll.aggregate([{"$vectorSearch": stage}, {"$set": {"score": {"$meta": "vectorSearchScore"}}}]))


def _make(db: Any, docs: list[dict[str, Any]], **index: Any) -> Any:
    coll = db.docs
    if docs:
        coll.insert_many(docs)
    else:
        db.create_collection("docs")
    coll.create_search_index(SearchIndexModel(definition=vector_index(**index), name="vec", type="vectorSearch"))
    wait_ready(coll, "vec")
    return coll


@pytest.mark.parametrize("similarity", ["euclidean", "cosine", "dotProduct"])
def test_exact_equals_brute_force(db: Any, similarity: str) -> None:
    rng = random.Random(7)
    docs = [{"_id": i, "v": [rng.randint(-3, 3) for _ in range(4)]} for i in range(60)]
    docs = [d for d in docs if any(d["v"])]  # cosine leaves zero vectors out
    coll = _make(db, docs, dims=4, similarity=similarity)
    query = [1.0, -2.0, 0.5, 3.0]
    expected = sorted(docs, key=lambda d: (-_expected_score(query, d["v"], similarity), d["_id"]))[:10]
    got = _search(coll, query, 10, exact=True)
    assert [d["_id"] for d in got] == [d["_id"] for d in expected]
    for doc, want in zip(got, expected, strict=True):
        assert doc["score"] == pytest.approx(_expected_score(query, want["v"], similarity), rel=1e-6)


def test_ties_are_ordered_by_id(db: Any) -> None:
    docs = [{"_id": key, "v": [1, 0, 0]} for key in ("b", "c", "a")] + [{"_id": "d", "v": [0, 1, 0]}]
    coll = _make(db, docs)
    assert [d["_id"] for d in _search(coll, [1, 0, 0], 3, exact=True)] == ["a", "b", "c"]
    assert [d["_id"] for d in _search(coll, [1, 0, 0], 2, numCandidates=4)] == ["a", "b"]


def test_documents_without_a_valid_vector_are_not_indexed(db: Any) -> None:
    docs = [
        {"_id": 1, "v": [1, 2, 3]},
        {"_id": 2, "v": [1, 2]},  # wrong length
        {"_id": 3, "v": "text"},
        {"_id": 4},
        {"_id": 5, "v": [1, "a", 3]},
        {"_id": 6, "v": {"x": 1}},
        {"_id": 7, "v": Binary.from_vector([1.0, 2.0, 4.0], BinaryVectorDtype.FLOAT32)},
        {"_id": 8, "v": Binary.from_vector([1, 2, 5], BinaryVectorDtype.INT8)},
    ]
    coll = _make(db, docs)
    assert sorted(d["_id"] for d in _search(coll, [1, 2, 3], 10, exact=True)) == [1, 7, 8]


def test_query_vector_as_bson_vector(db: Any) -> None:
    coll = _make(db, [{"_id": i, "v": [i, 0, 0]} for i in range(5)])
    query = Binary.from_vector([3.0, 0.0, 0.0], BinaryVectorDtype.FLOAT32)
    got = _search(coll, query, 2, exact=True)
    assert [d["_id"] for d in got] == [3, 2]
    assert got[0]["score"] == 1.0 and got[1]["score"] == 0.5


def test_nested_path(db: Any) -> None:
    coll = db.docs
    coll.insert_many([{"_id": 1, "m": {"e": [0, 1]}}, {"_id": 2, "m": {"e": [1, 0]}}, {"_id": 3, "m": [{"e": [1, 0]}]}])
    coll.create_search_index(
        SearchIndexModel(
            definition=vector_index(path="m.e", dims=2, similarity="cosine"), name="vec", type="vectorSearch"
        )
    )
    wait_ready(coll, "vec")
    got = list(
        coll.aggregate(
            [{"$vectorSearch": {"index": "vec", "path": "m.e", "queryVector": [1, 0], "exact": True, "limit": 5}}]
        )
    )
    assert [d["_id"] for d in got] == [2, 1]  # a vector inside an array of documents is not indexed


FILTER_DOCS = [
    {"_id": i, "v": [i % 7, i % 5, 1], "n": i % 4, "s": "abc"[i % 3], "b": i % 2 == 0, "tags": ["x", "y"][: i % 3]}
    for i in range(40)
] + [{"_id": 100, "v": [1, 1, 1]}, {"_id": 101, "v": [2, 2, 1], "n": None}]


def _python_filter(doc: dict[str, Any], name: str) -> bool:
    n, s, b = doc.get("n"), doc.get("s"), doc.get("b")
    return {
        "eq": n == 2,
        "ne": n != 2,  # missing and null are not 2
        "gt": isinstance(n, int) and n > 1,
        "lte": isinstance(n, int) and n <= 1,
        "in": s in ("a", "c"),
        "nin": s not in ("a", "c"),
        "exists": "n" in doc,
        "not_exists": "n" not in doc,
        "and": n == 1 and b is True,
        "or": n == 3 or s == "b",
        "not": not (isinstance(n, int) and n > 1),
        "null": "n" not in doc or n is None,
        "array": "x" in doc.get("tags", []),
    }[name]


FILTERS = {
    "eq": {"n": 2},
    "ne": {"n": {"$ne": 2}},
    "gt": {"n": {"$gt": 1}},
    "lte": {"n": {"$lte": 1}},
    "in": {"s": {"$in": ["a", "c"]}},
    "nin": {"s": {"$nin": ["a", "c"]}},
    "exists": {"n": {"$exists": True}},
    "not_exists": {"n": {"$exists": False}},
    "and": {"$and": [{"n": {"$eq": 1}}, {"b": True}]},
    "or": {"$or": [{"n": 3}, {"s": "b"}]},
    "not": {"n": {"$not": {"$gt": 1}}},
    "null": {"n": None},
    "array": {"tags": "x"},
}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filters_match_as_find(db: Any, name: str) -> None:
    coll = _make(db, FILTER_DOCS, filters=("n", "s", "b", "tags"))
    query = [3.0, 2.0, 1.0]
    passing = [d for d in FILTER_DOCS if _python_filter(d, name)]
    expected = sorted(passing, key=lambda d: (-_expected_score(query, d["v"], "euclidean"), d["_id"]))[:15]
    for options in ({"exact": True}, {"numCandidates": 20}):
        got = _search(coll, query, 15, filter=FILTERS[name], **options)
        assert [d["_id"] for d in got] == [d["_id"] for d in expected], options


def test_filter_rules(db: Any) -> None:
    coll = _make(db, FILTER_DOCS, filters=("n",))
    cases = [
        ({"s": "a"}, "Path 's' needs to be indexed as filter"),
        ({"n": {"$regex": "x"}}, "$regex"),
        ({"$nor": [{"n": 1}]}, "$nor"),
        ({"n": {"$elemMatch": {"$gt": 1}}}, "$elemMatch"),
        ({"n": {"a": 1}}, "not supported"),
    ]
    for spec, message in cases:
        with pytest.raises(OperationFailure) as info:
            _search(coll, [1, 1, 1], 3, filter=spec)
        assert message in info.value.details["errmsg"], spec
        assert info.value.code == 8


@pytest.mark.parametrize(
    ("stage", "code"),
    [
        ({"path": "v", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 2}, 40414),
        ({"index": "vec", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 2}, 40414),
        ({"index": "vec", "path": "v", "numCandidates": 5, "limit": 2}, 40414),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 5}, 40414),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "limit": 2}, 2),  # numCandidates needed
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 1, "limit": 2}, 2),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 10001, "limit": 2}, 2),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 0}, 2),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 2, "exact": True}, 2),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "limit": 2, "exact": 1}, 14),
        ({"index": "vec", "path": "v", "queryVector": "x", "numCandidates": 5, "limit": 2}, 14),
        ({"index": "vec", "path": "v", "queryVector": [1, 2], "numCandidates": 5, "limit": 2}, 2),  # dimensions
        ({"index": "vec", "path": "v", "queryVector": [1, float("nan"), 3], "numCandidates": 5, "limit": 2}, 2),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 2, "bogus": 1}, 40415),
        ({"index": "vec", "path": "w", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 2}, 8),
        ({"index": "vec", "path": "v", "queryVector": [1, 2, 3], "numCandidates": 5, "limit": 2, "filter": 3}, 14),
    ],
)
def test_stage_errors(db: Any, stage: dict[str, Any], code: int) -> None:
    coll = _make(db, [{"v": [1, 2, 3]}])
    with pytest.raises(OperationFailure) as info:
        list(coll.aggregate([{"$vectorSearch": stage}]))
    assert info.value.code == code


def test_placement(db: Any) -> None:
    coll = _make(db, [{"v": [1, 2, 3]}])
    stage = {"$vectorSearch": {"index": "vec", "path": "v", "queryVector": [1, 2, 3], "exact": True, "limit": 1}}
    for pipeline, code in (([{"$match": {}}, stage], 40602), ([{"$facet": {"a": [stage]}}], 40600)):
        with pytest.raises(OperationFailure) as info:
            list(coll.aggregate(pipeline))
        assert info.value.code == code


def test_missing_index_or_collection_gives_nothing(db: Any) -> None:
    coll = _make(db, [{"v": [1, 2, 3]}])
    stage = {"index": "other", "path": "v", "queryVector": [1, 2, 3], "exact": True, "limit": 1}
    assert list(coll.aggregate([{"$vectorSearch": stage}])) == []
    assert list(db.absent.aggregate([{"$vectorSearch": {**stage, "index": "vec"}}])) == []


def test_later_stages_and_score_meta(db: Any) -> None:
    coll = _make(db, [{"_id": i, "v": [i, 0, 0], "t": f"doc{i}"} for i in range(6)])
    got = list(
        coll.aggregate(
            [
                {
                    "$vectorSearch": {
                        "index": "vec",
                        "path": "v",
                        "queryVector": [4, 0, 0],
                        "numCandidates": 6,
                        "limit": 3,
                    }
                },
                {"$project": {"_id": 0, "t": 1, "score": {"$meta": "vectorSearchScore"}}},
            ]
        )
    )
    assert got == [{"t": "doc4", "score": 1.0}, {"t": "doc3", "score": 0.5}, {"t": "doc5", "score": 0.5}]


def test_a_write_is_seen_by_the_next_search(db: Any) -> None:
    coll = _make(db, [{"_id": i, "v": [i, 0, 0]} for i in range(50)])
    for i in range(5):
        coll.insert_one({"_id": f"new{i}", "v": [1000 + i, 0, 0]})
        assert _search(coll, [1000 + i, 0, 0], 1)[0]["_id"] == f"new{i}"
    coll.update_one({"_id": 3}, {"$set": {"v": [5000, 0, 0]}})
    assert _search(coll, [5000, 0, 0], 1)[0]["_id"] == 3
    coll.delete_one({"_id": 3})
    assert _search(coll, [5000, 0, 0], 1)[0]["_id"] == "new4"


def test_transaction_sees_its_own_writes(client: Any, db: Any) -> None:
    coll = _make(db, [{"_id": i, "v": [i, 0, 0]} for i in range(20)])
    with client.start_session() as session, session.start_transaction():
        coll.insert_one({"_id": "mine", "v": [100, 0, 0]}, session=session)
        coll.delete_one({"_id": 19}, session=session)
        stage = {"index": "vec", "path": "v", "queryVector": [100, 0, 0], "numCandidates": 20, "limit": 2}
        inside = [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}], session=session)]
        outside = [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}])]
        assert inside == ["mine", 18]
        assert outside == [19, 18]
        session.abort_transaction()
    assert [d["_id"] for d in _search(coll, [100, 0, 0], 1)] == [19]


def test_approximate_search_passes_filter_and_fills_limit(db: Any) -> None:
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((3000, 16)).astype(np.float32)
    docs = [{"_id": i, "v": rows[i].tolist(), "g": i % 10} for i in range(len(rows))]
    coll = _make(db, docs, dims=16, similarity="cosine", filters=("g",))
    query = rng.standard_normal(16).astype(np.float32)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    q = query / np.linalg.norm(query)
    for flt, passing in (
        ({"g": {"$in": [1, 2, 3]}}, [i for i in range(3000) if i % 10 in (1, 2, 3)]),
        (None, list(range(3000))),
    ):
        options: dict[str, Any] = {"numCandidates": 200}
        if flt is not None:
            options["filter"] = flt
        got = _search(coll, query.tolist(), 10, **options)
        assert len(got) == 10
        if flt is not None:
            assert all(d["g"] in (1, 2, 3) for d in got)
        best = set(np.asarray(passing)[np.argsort(-(unit[passing] @ q))[:10]].tolist())
        assert len(best & {d["_id"] for d in got}) >= 8  # recall@10 of an HNSW search at numCandidates 200


def test_explain(db: Any) -> None:
    _make(db, [{"_id": i, "v": [i, 0, 0]} for i in range(5)])
    stage = {"index": "vec", "path": "v", "queryVector": [1, 0, 0], "exact": True, "limit": 2}
    explained = db.command(
        "explain", {"aggregate": "docs", "pipeline": [{"$vectorSearch": stage}, {"$limit": 1}], "cursor": {}}
    )
    first, second = explained["stages"]
    details = first["$vectorSearch"]["explain"]
    assert (details["index"], details["status"], details["method"], details["nReturned"]) == (
        "vec",
        "READY",
        "exact",
        2,
    )
    assert second == {"$limit": 1}


def test_equal_cosine_similarities_tie_by_id(db: Any) -> None:
    # 1/sqrt(34) both (found by the property test: float64 differed in the last bit).
    coll = _make(db, [{"_id": 0, "v": [1, 0, 1]}, {"_id": 1, "v": [4, 1, -1]}], similarity="cosine")
    got = _search(coll, [0, 4, 1], 2, exact=True)
    assert [d["_id"] for d in got] == [0, 1]
    assert got[0]["score"] == got[1]["score"] == float(np.float32((1 + 1 / math.sqrt(34)) / 2))
