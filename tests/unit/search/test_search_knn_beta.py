"""The deprecated knnBeta operator against a numpy brute force.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/operators-collectors/knn-beta/
(``vector``, ``path`` of a ``knnVector`` field, ``k``, ``filter``, ``score``; scores in [0, 1],
cosine and dotProduct as (1 + similarity) / 2; knnBeta must be the top-level operator: not in
embeddedDocument, compound or a facet collector, and not with ``sort``). mongot
(KnnBetaOperator, KnnQueryFactory, SearchQueryTimeMappingChecks) gives the errors and builds
one Lucene KnnFloatVectorQuery per path (a SHOULD of them), scored by Lucene's
VectorSimilarityFunction: euclidean 1 / (1 + squared distance). The expected neighbours here
are exact, computed with numpy in float32.
"""

from __future__ import annotations

from typing import Any

import numpy
import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready

DIMS = 4


def _setup(db: Any, similarity: str) -> tuple[Any, dict[int, dict[str, Any]]]:
    rng = numpy.random.default_rng(28)
    docs = {}
    for i in range(60):
        doc: dict[str, Any] = {"_id": i, "tag": "odd" if i % 2 else "even"}
        doc["v"] = [float(x) for x in rng.normal(size=DIMS)]
        if i % 3:
            doc["w"] = [float(x) for x in rng.normal(size=DIMS)]
        docs[i] = doc
    docs[60] = {"_id": 60, "tag": "odd", "v": [1.0, 2.0]}  # wrong length: not indexed
    docs[61] = {"_id": 61, "tag": "odd", "v": ["a", 1.0, 2.0, 3.0]}  # not numbers
    docs[62] = {"_id": 62, "tag": "odd"}
    db.k.insert_many(list(docs.values()))
    field = {"type": "knnVector", "dimensions": DIMS, "similarity": similarity}
    definition = {"mappings": {"dynamic": True, "fields": {"v": field, "w": field}}}
    db.k.create_search_index(SearchIndexModel(definition=definition))
    wait_ready(db.k, "default")
    return db.k, docs


def _lucene(vectors: Any, query: Any, similarity: str) -> Any:
    rows = numpy.asarray(vectors, dtype=numpy.float32)
    q = numpy.asarray(query, dtype=numpy.float32)
    if similarity == "euclidean":
        return 1 / (1 + ((rows - q) ** 2).sum(axis=1))
    if similarity == "cosine":
        return (1 + rows @ q / (numpy.linalg.norm(rows, axis=1) * numpy.linalg.norm(q))) / 2
    return numpy.maximum((1 + rows @ q) / 2, 0)


def _nearest(
    docs: dict[int, dict[str, Any]], path: str, query: list[float], k: int, similarity: str, keep: Any
) -> dict[int, float]:
    ids = [
        i
        for i, d in docs.items()
        if keep(d)
        and isinstance(d.get(path), list)
        and len(d[path]) == DIMS
        and all(isinstance(x, float) for x in d[path])
    ]
    scores = _lucene([docs[i][path] for i in ids], query, similarity)
    ranked = sorted(zip(ids, scores.tolist(), strict=True), key=lambda p: -p[1])[:k]
    return dict(ranked)


def _search(coll: Any, operator: dict[str, Any]) -> dict[Any, float]:
    pipeline = [{"$search": {"knnBeta": operator}}, {"$project": {"s": {"$meta": "searchScore"}}}]
    return {d["_id"]: d["s"] for d in coll.aggregate(pipeline)}


def _same(got: dict[Any, float], expected: dict[int, float]) -> None:
    assert set(got) == set(expected)
    for i, score in got.items():
        assert score == pytest.approx(expected[i], rel=1e-5)


QUERY = [0.3, -1.2, 0.8, 0.1]


@pytest.mark.parametrize("similarity", ["euclidean", "cosine", "dotProduct"])
@pytest.mark.parametrize("k", [1, 7, 100])
def test_the_k_nearest_with_lucene_scores(db: Any, similarity: str, k: int) -> None:
    coll, docs = _setup(db, similarity)
    expected = _nearest(docs, "v", QUERY, k, similarity, lambda d: True)
    _same(_search(coll, {"vector": QUERY, "path": "v", "k": k}), expected)


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
def test_filter_narrows_before_the_neighbours_are_taken(db: Any, similarity: str) -> None:
    coll, docs = _setup(db, similarity)
    expected = _nearest(docs, "v", QUERY, 5, similarity, lambda d: d["tag"] == "odd")
    got = _search(coll, {"vector": QUERY, "path": "v", "k": 5, "filter": {"text": {"query": "odd", "path": "tag"}}})
    _same(got, expected)


def test_several_paths_sum_their_scores(db: Any) -> None:
    coll, docs = _setup(db, "dotProduct")
    expected: dict[int, float] = {}
    for path in ("v", "w"):
        for i, score in _nearest(docs, path, QUERY, 6, "dotProduct", lambda d: True).items():
            expected[i] = expected.get(i, 0.0) + score
    _same(_search(coll, {"vector": QUERY, "path": ["v", "w"], "k": 6}), expected)


def test_score_options_apply(db: Any) -> None:
    coll, docs = _setup(db, "euclidean")
    expected = {i: 3 * s for i, s in _nearest(docs, "v", QUERY, 4, "euclidean", lambda d: True).items()}
    _same(_search(coll, {"vector": QUERY, "path": "v", "k": 4, "score": {"boost": {"value": 3}}}), expected)


def test_a_document_written_just_now_is_a_neighbour(db: Any) -> None:
    coll, _ = _setup(db, "euclidean")
    coll.insert_one({"_id": "new", "v": QUERY})
    got = _search(coll, {"vector": QUERY, "path": "v", "k": 1})
    assert got == {"new": 1.0}


KNN = {"vector": QUERY, "path": "v", "k": 3}


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ({"compound": {"must": [{"knnBeta": KNN}]}}, "knnBeta is not allowed to be nested"),
        ({"embeddedDocument": {"path": "e", "operator": {"knnBeta": KNN}}}, "knnBeta is not allowed to be nested"),
        ({"knnBeta": KNN, "sort": {"tag": 1}}, "knnBeta is not allowed to be used with the sort option"),
        ({"knnBeta": {**KNN, "vector": [1.0, 2.0]}}, "knnVector field is indexed with 4 dimensions but queried with 2"),
        ({"knnBeta": {**KNN, "path": "tag"}}, "tag is not indexed as knnVector"),
        ({"knnBeta": {**KNN, "k": 0}}, '"knnBeta.k" must be an integer'),
        ({"knnBeta": {**KNN, "k": 2.5}}, '"knnBeta.k" must be an integer'),
        ({"knnBeta": {**KNN, "vector": []}}, '"knnBeta.vector" cannot be empty'),
        ({"knnBeta": {**KNN, "vector": [1.0, "x", 2.0, 3.0]}}, '"knnBeta.vector[1]" must be a number'),
        ({"knnBeta": {"path": "v", "k": 3}}, '"knnBeta.vector" is required'),
        ({"knnBeta": {"vector": QUERY, "k": 3}}, '"knnBeta.path" is required'),
        ({"knnBeta": {"vector": QUERY, "path": "v"}}, '"knnBeta.k" is required'),
        ({"knnBeta": {**KNN, "limit": 3}}, '"knnBeta.limit" is not a valid field'),
    ],
)
def test_bad_knn_beta_fails_as_mongot(db: Any, stage: dict[str, Any], message: str) -> None:
    coll, _ = _setup(db, "euclidean")
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": stage}]))
    assert failure.value.code == 8
    assert message in str(failure.value)


def test_not_in_a_facet_collector(db: Any) -> None:
    coll, _ = _setup(db, "euclidean")
    facet = {"operator": {"knnBeta": KNN}, "facets": {"t": {"type": "string", "path": "tag"}}}
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$searchMeta": {"facet": facet}}]))
    assert failure.value.code == 8 and "knnBeta is not allowed to be nested" in str(failure.value)


def test_cosine_refuses_a_zero_query_vector(db: Any) -> None:
    coll, _ = _setup(db, "cosine")
    with pytest.raises(OperationFailure) as failure:
        _search(coll, {**KNN, "vector": [0, 0, 0.0, 0]})
    assert "Cosine similarity cannot be calculated against a zero knnVector." in str(failure.value)


@pytest.mark.parametrize(
    "field",
    [
        {"type": "knnVector", "similarity": "cosine"},
        {"type": "knnVector", "dimensions": 0, "similarity": "cosine"},
        {"type": "knnVector", "dimensions": 8193, "similarity": "cosine"},
        {"type": "knnVector", "dimensions": 3, "similarity": "manhattan"},
        {"type": "knnVector", "dimensions": 3},
    ],
)
def test_bad_knn_vector_fields_fail(db: Any, field: dict[str, Any]) -> None:
    with pytest.raises(OperationFailure) as failure:
        db.x.create_search_index(SearchIndexModel(definition={"mappings": {"fields": {"v": field}}}))
    assert failure.value.code == 2
