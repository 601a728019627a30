"""Approximate $vectorSearch: recall on realistic data, and the rescoring that keeps it exact.

Manual: https://www.mongodb.com/docs/atlas/atlas-vector-search/vector-search-stage/ ("numCandidates:
number of nearest neighbors to use during the search"; results ranked by
``{$meta: "vectorSearchScore"}``). Recall is counted against numpy's exact ranking of the same
float32 vectors, on the embedded engine (whose state tells a graph search from an exact scan).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search.columns import VectorColumn
from foliodb.engine.search.definition import VectorField
from tests.unit.search.conftest import READY_SECONDS, vector_index


def _clustered(rng: np.random.Generator, n: int, dims: int, centres: np.ndarray) -> np.ndarray:
    """Rows near random centres (a spread of 0.3 to 0.9 of a centre's length), as embeddings of
    topical text cluster, each scaled by a random magnitude (cosine ignores it)."""
    which = rng.integers(0, len(centres), n)
    spread = rng.uniform(0.3, 0.9, n)[:, None] / np.sqrt(dims)
    rows = centres[which] + spread * rng.standard_normal((n, dims))
    return (rows * rng.uniform(1e-3, 1e4, n)[:, None]).astype(np.float32)


def _recall(coll: Any, rows: np.ndarray, queries: np.ndarray, num_candidates: int) -> float:
    unit = rows / np.linalg.norm(rows.astype(np.float64), axis=1, keepdims=True)
    hits = 0
    for q in queries:
        stage = {"index": "vec", "path": "v", "queryVector": q.tolist(), "numCandidates": num_candidates, "limit": 10}
        got = {d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}])}
        truth = np.argsort(-(unit @ (q / np.linalg.norm(q))))[:10]
        hits += len(got & set(truth.tolist()))
    return hits / (10 * len(queries))


def test_recall_at_100_candidates_on_clustered_vectors() -> None:
    rng = np.random.default_rng(11)
    dims = 48
    centres = rng.standard_normal((100, dims))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rows = _clustered(rng, 4000, dims, centres)
    queries = _clustered(rng, 40, dims, centres)
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "v": rows[i].tolist()} for i in range(len(rows))])
        definition = vector_index(dims=dims, similarity="cosine")
        coll.create_search_index(SearchIndexModel(definition=definition, name="vec", type="vectorSearch"))
        assert client._executor.engine.search.wait_idle(READY_SECONDS)
        stage = {"index": "vec", "path": "v", "queryVector": queries[0].tolist(), "numCandidates": 100, "limit": 10}
        explained = client.test.command(
            "explain", {"aggregate": "docs", "pipeline": [{"$vectorSearch": stage}], "cursor": {}}
        )
        assert explained["stages"][0]["$vectorSearch"]["explain"]["method"] == "ann"  # the graph, not a scan
        assert _recall(coll, rows, queries, 100) >= 0.95


def _column(similarity: str, rows: np.ndarray) -> VectorColumn:
    column = VectorColumn(VectorField("v", rows.shape[1], similarity, "none", 16, 100))
    for rid, row in enumerate(rows):
        column.put(rid, row)
    return column


def _exact_scores(rows: np.ndarray, query: np.ndarray, similarity: str) -> np.ndarray:
    """MongoDB's normalised scores in float64 from the float32 values, rounded to float32."""
    m, q = rows.astype(np.float64), query.astype(np.float64)
    if similarity == "euclidean":
        score = 1 / (1 + np.sqrt(((m - q) ** 2).sum(axis=1)))
    elif similarity == "cosine":
        score = (1 + (m @ q) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))) / 2
    else:
        score = (1 + m @ q) / 2
    return score.astype(np.float32).astype(np.float64)


ROWS = st.lists(st.lists(st.integers(-4, 4), min_size=4, max_size=4).filter(any), min_size=1, max_size=40).map(
    lambda rows: rows + rows[: len(rows) // 2]
)  # repeated rows: exact ties


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["cosine", "dotProduct", "euclidean"]),
    ROWS,
    st.lists(st.integers(-4, 4), min_size=4, max_size=4).filter(any),
    st.integers(1, 12),
    st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_rescoring_the_best_candidates_keeps_every_one_that_ranks(
    similarity: str, rows: list[list[int]], query: list[int], limit: int, scale: float
) -> None:
    """The rescoring fast path (a float32 ranking first, exact scores for those near the
    limit-th) keeps every candidate whose exact score reaches the limit-th best, with the scores
    of scoring them all, and exact: true's pass over the matrix agrees."""
    matrix = np.asarray(rows, dtype=np.float32) * np.float32(scale)
    q = np.asarray(query, dtype=np.float32) * np.float32(scale)
    column = _column(similarity, matrix)
    expected = _exact_scores(matrix, q, similarity)
    kth = np.sort(expected)[::-1][min(limit, len(expected)) - 1]
    must = {rid for rid in range(len(matrix)) if expected[rid] >= kth}
    subset = list(range(0, len(matrix), 2)) if len(matrix) > 2 else list(range(len(matrix)))
    sub_kth = np.sort(expected[subset])[::-1][min(limit, len(subset)) - 1]
    for rids, values, wanted in (
        (*column.exact(q, subset, limit), {r for r in subset if expected[r] >= sub_kth}),
        (*column.best(q, limit, None, ()), must),
    ):
        assert wanted <= set(rids)
        assert values.tolist() == pytest.approx([expected[r] for r in rids], rel=1e-6)
