"""The deprecated ``knnBeta`` operator: the k nearest neighbours of a vector among a search
index's ``knnVector`` fields.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/operators-collectors/knn-beta/

``knnBeta: {vector, path, k, filter?, score?}``: ``path`` (a string or an array of them)
names fields mapped ``{type: "knnVector", dimensions, similarity}``; ``vector`` is an array of
as many numbers; ``k`` at least 1; ``filter`` any operator, run first, the neighbours taken
among the documents it matches. Per path, the ``k`` documents whose vector at that path
scores best (ties in index order), each scored as Lucene's VectorSimilarityFunction:
``euclidean`` 1 / (1 + squared distance), ``cosine`` (1 + cos) / 2, ``dotProduct``
max((1 + dot) / 2, 0), in float32; a document found through several paths sums its scores
(mongot's SHOULD of one kNN query per path). A document's vector is an array of exactly
``dimensions`` numbers (a cosine field's zero vector has none).

As mongot's, knnBeta must be the query's only operator: nested (in compound,
embeddedDocument, ...) it fails with "knnBeta is not allowed to be nested", as it does as a
facet collector's operator or beside ``sort`` (:func:`check_query`); other errors are
mongot's too (UnknownError, 8). FolioDB finds the neighbours exactly (every document's vector
is read from the search's snapshot), where mongot's HNSW graph finds them approximately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Decimal128, Int64

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import (
    OPERATORS,
    Query,
    Run,
    check_fields,
    clause,
    search_error,
    strings,
)
from foliodb.engine.search.text.scoring import Hits, empty, union
from foliodb.engine.search.vectors import at_path, numbers, prepared
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.search_query import SearchQuery

NESTED = "knnBeta is not allowed to be nested"


def check_query(query: SearchQuery) -> None:
    """knnBeta's restrictions on the rest of the ``$search`` stage."""
    if query.operator is None or query.operator[0] != "knnBeta":
        return
    if query.facets is not None:
        raise search_error(NESTED)
    if query.sort is not None:
        raise search_error("knnBeta is not allowed to be used with the sort option")


def similarity_scores(rows: Any, vector: Any, similarity: str) -> Any:
    """Lucene's score of each float32 row against the float32 query ``vector``."""
    if similarity == "euclidean":
        diff = rows - vector
        out = 1.0 / (1.0 + np.einsum("ij,ij->i", diff, diff))
    elif similarity == "cosine":
        norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(vector)
        out = (1.0 + (rows @ vector) / norms) / 2.0
    else:
        out = np.maximum((1.0 + rows @ vector) / 2.0, 0.0)
    return np.asarray(out, dtype=np.float32).astype(np.float64)


class KnnQuery(Query):
    def __init__(self, fields: list[tuple[str, int, str]], vector: list[float], k: int, filter: Query | None) -> None:
        self.fields, self.vector, self.k, self.filter = fields, vector, k, filter

    def _nearest(self, run: Run, candidates: Any, path: str, dimensions: int, similarity: str) -> Hits:
        assert run.fetch is not None
        parts = tuple(path.split("."))
        kept, rows = [], []
        for ord_, rid in zip(candidates.tolist(), run.reader.rid_at[candidates].tolist(), strict=True):
            doc = run.fetch(rid)
            value = at_path(doc, parts) if doc is not None else None
            row = prepared(numbers(value) if isinstance(value, list) else None, dimensions, similarity)
            if row is not None:
                kept.append(ord_)
                rows.append(row)
        if not kept:
            return empty()
        matrix = np.asarray(rows, dtype=np.float32).astype(np.float64)
        query = np.asarray(self.vector, dtype=np.float32).astype(np.float64)
        scores = similarity_scores(matrix, query, similarity)
        ords = np.asarray(kept, dtype=np.int64)
        best = np.lexsort((ords, -scores))[: self.k]  # best first, ties in index order
        order = np.argsort(ords[best])
        return ords[best][order], scores[best][order]

    def match(self, run: Run) -> Hits:
        if run.scope is not None:
            raise CommandError(
                ErrorCode.NotImplemented, "knnBeta over embedded documents is not implemented in FolioDB yet"
            )
        candidates = run.reader.roots()
        if self.filter is not None:
            candidates = np.intersect1d(candidates, self.filter.hits(run)[0])
        parts = [self._nearest(run, candidates, *field) for field in self.fields]
        return union(parts, run.reader.size)[0]


def _vector(value: Any, place: str) -> list[float]:
    if not isinstance(value, list):
        raise search_error(f'"{place}" must be an array')
    if not value:
        raise search_error(f'"{place}" cannot be empty')
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float | Int64 | Decimal128):
            raise search_error(f'"{place}[{i}]" must be a number')
    found = numbers(value)
    assert found is not None
    return found


@OPERATORS.register("knnBeta")
def op_knnBeta(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    if place != "knnBeta":
        raise search_error(NESTED)
    check_fields(body, place, ("vector", "path", "k", "filter"), ("vector", "path", "k"))
    vector = _vector(body["vector"], f"{place}.vector")
    k = body["k"]
    if isinstance(k, bool) or not isinstance(k, int | Int64) or not 1 <= k <= 2**31 - 1:
        raise search_error(f'"{place}.k" must be an integer within bounds [1, {2**31 - 1}]')
    fields = []
    for path in strings(body["path"], f"{place}.path"):
        specs, _ = definition.specs_at(path)
        vectors = [s.vector for s in specs if s.vector is not None]
        if not vectors:
            raise search_error(f"{path} is not indexed as knnVector")
        dimensions, similarity = vectors[0]
        if dimensions != len(vector):
            raise search_error(
                f"knnVector field is indexed with {dimensions} dimensions but queried with {len(vector)}"
            )
        if similarity == "cosine" and not any(vector):
            raise search_error("Cosine similarity cannot be calculated against a zero knnVector.")
        fields.append((path, dimensions, similarity))
    filter_ = clause(body["filter"], f"{place}.filter", definition) if "filter" in body else None
    return KnnQuery(fields, vector, int(k), filter_)
