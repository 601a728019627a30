"""$vectorSearch against independent computations, for random data and random histories.

* ``exact: true`` returns numpy's brute-force top-k (MongoDB's normalised scores, ties by ``_id``);
* after any sequence of inserts, updates, deletes and committed or aborted transactions, searched
  between the writes, the index answers as one built from scratch on the final data - and holds
  exactly the vectors of the final documents;
* every result passes its ``filter``, and the results are the best documents ``find`` returns for
  that filter.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search.vectors import as_vector, numbers
from tests.unit.search.conftest import wait_ready

DIMS = 3
SIMILARITIES = ("euclidean", "cosine", "dotProduct")
VECTORS = st.lists(st.integers(min_value=-4, max_value=4), min_size=DIMS, max_size=DIMS)
VALUES = st.one_of(st.integers(min_value=0, max_value=3), st.sampled_from(["a", "b", None, True]))


def _index(name: str, similarity: str) -> SearchIndexModel:
    definition = {
        "fields": [
            {"type": "vector", "path": "v", "numDimensions": DIMS, "similarity": similarity},
            {"type": "filter", "path": "f"},
            {"type": "filter", "path": "g"},
        ]
    }
    return SearchIndexModel(definition=definition, name=name, type="vectorSearch")


def _scores(docs: list[dict[str, Any]], query: list[int], similarity: str) -> dict[Any, float]:
    """MongoDB's scores by numpy, over the documents with an indexable vector."""
    out = {}
    q = np.asarray(query, dtype=np.float64)
    for doc in docs:
        v = np.asarray(doc["v"], dtype=np.float64) if isinstance(doc.get("v"), list) else None
        if v is None or len(v) != DIMS:
            continue
        if similarity == "euclidean":
            out[doc["_id"]] = 1 / (1 + float(np.linalg.norm(q - v)))
        elif similarity == "cosine":
            if not v.any() or not q.any():
                continue
            out[doc["_id"]] = (1 + float(q @ v) / (np.linalg.norm(q) * np.linalg.norm(v))) / 2
        else:
            out[doc["_id"]] = (1 + float(q @ v)) / 2
    return out


def _top(scores: dict[Any, float], limit: int) -> list[Any]:
    """Best first, ties by _id; scores compared at float32 precision, as MongoDB's similarity is
    a float (exactly equal similarities tie whatever the last bits of a float64)."""
    return sorted(scores, key=lambda k: (-float(np.float32(scores[k])), k))[:limit]


def _search(coll: Any, index: str, query: list[int], limit: int, **options: Any) -> list[Any]:
    stage = {"index": index, "path": "v", "queryVector": query, "limit": limit, **options}
    return [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}])]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SIMILARITIES),
    st.lists(VECTORS, min_size=1, max_size=40),
    VECTORS.filter(any),
    st.integers(min_value=1, max_value=12),
)
def test_exact_equals_numpy(similarity: str, vectors: list[list[int]], query: list[int], limit: int) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.t.docs
        docs = [{"_id": i, "v": v} for i, v in enumerate(vectors)]
        coll.insert_many(docs)
        coll.create_search_index(_index("vec", similarity))
        wait_ready(coll, "vec")
        assert _search(coll, "vec", query, limit, exact=True) == _top(_scores(docs, query, similarity), limit)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(0, 30), VECTORS, VALUES),
        st.tuples(st.just("update"), st.integers(0, 30), VECTORS, VALUES),
        st.tuples(st.just("unset"), st.integers(0, 30), VECTORS, VALUES),
        st.tuples(st.just("delete"), st.integers(0, 30), VECTORS, VALUES),
        st.tuples(st.just("search"), st.integers(0, 30), VECTORS, VALUES),
        st.tuples(st.sampled_from(["commit", "abort"]), st.integers(0, 30), VECTORS, VALUES),
    ),
    max_size=40,
)


def _apply(coll: Any, op: tuple[str, int, list[int], Any], session: Any = None) -> None:
    kind, key, vector, value = op
    if kind == "insert":
        coll.replace_one({"_id": key}, {"v": vector, "f": value}, upsert=True, session=session)
    elif kind == "update":
        coll.update_one({"_id": key}, {"$set": {"v": vector, "g": value}}, session=session)
    elif kind == "unset":
        coll.update_one({"_id": key}, {"$unset": {"v": 1}}, session=session)
    elif kind == "delete":
        coll.delete_one({"_id": key}, session=session)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SIMILARITIES), OPS, VECTORS.filter(any))
def test_any_history_answers_as_a_fresh_index(
    similarity: str, ops: list[tuple[str, int, list[int], Any]], query: list[int]
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.t.docs
        coll.insert_many([{"_id": i, "v": [i % 3, 1, -1], "f": i % 2} for i in range(5)])
        coll.create_search_index(_index("old", similarity))
        wait_ready(coll, "old")
        for op in ops:
            if op[0] == "search":
                _search(coll, "old", op[2] if any(op[2]) else query, 3, numCandidates=5)
            elif op[0] in ("commit", "abort"):
                with client.start_session() as session, session.start_transaction():
                    _apply(coll, ("insert", op[1] + 100, op[2], op[3]), session)
                    _apply(coll, ("update", op[1], op[2], op[3]), session)
                    _search(coll, "old", query, 3, numCandidates=5)  # its snapshot, its writes
                    if op[0] == "abort":
                        session.abort_transaction()
            else:
                _apply(coll, op)
        coll.create_search_index(_index("fresh", similarity))
        wait_ready(coll, "fresh")
        final = list(coll.find())
        expected = _scores(final, query, similarity)
        for limit in (1, 5, 50):
            for options in ({"exact": True}, {"numCandidates": 100}):
                assert _search(coll, "old", query, limit, **options) == _top(expected, limit)
                assert _search(coll, "fresh", query, limit, **options) == _top(expected, limit)
        # The maintained index holds exactly the vectors a fresh build holds.
        engine = client._executor.engine
        states = {}
        for (index_id, _), state in engine.search.states.items():
            states[index_id] = state
        old, fresh = (states[i] for i in sorted(states))
        for state in (old, fresh):
            column = state.columns["v"]
            assert set(column.row_of) == set(fresh.columns["v"].row_of)
            for rid, row in column.row_of.items():
                assert np.array_equal(column.matrix[row], fresh.columns["v"].matrix[fresh.columns["v"].row_of[rid]])
            assert state.filter_docs == fresh.filter_docs


FILTERS = st.recursive(
    st.one_of(
        st.builds(lambda field, value: {field: value}, st.sampled_from("fg"), VALUES),
        st.builds(
            lambda field, op, value: {field: {op: value}},
            st.sampled_from("fg"),
            st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
            VALUES,
        ),
        st.builds(
            lambda field, op, values: {field: {op: values}},
            st.sampled_from("fg"),
            st.sampled_from(["$in", "$nin"]),
            st.lists(VALUES, max_size=3),
        ),
        st.builds(lambda field, flag: {field: {"$exists": flag}}, st.sampled_from("fg"), st.booleans()),
        st.builds(lambda field, value: {field: {"$not": {"$gt": value}}}, st.sampled_from("fg"), VALUES),
    ),
    lambda inner: st.builds(
        lambda op, clauses: {op: clauses}, st.sampled_from(["$and", "$or"]), st.lists(inner, min_size=1, max_size=3)
    ),
    max_leaves=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(VECTORS, VALUES, VALUES, st.booleans()), min_size=1, max_size=50),
    FILTERS,
    VECTORS.filter(any),
    st.integers(min_value=1, max_value=10),
)
def test_results_pass_the_filter(
    rows: list[tuple[list[int], Any, Any, bool]], flt: dict[str, Any], query: list[int], limit: int
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.t.docs
        docs = []
        for i, (v, f, g, has_g) in enumerate(rows):
            doc: dict[str, Any] = {"_id": i, "v": v, "f": f}
            if has_g:
                doc["g"] = g
            docs.append(doc)
        coll.insert_many(docs)
        coll.create_search_index(_index("vec", "euclidean"))
        wait_ready(coll, "vec")
        passing = list(coll.find(flt))  # find's answer to the same filter
        expected = _top(_scores(passing, query, "euclidean"), limit)
        ids = {d["_id"] for d in passing}
        for options in ({"exact": True}, {"numCandidates": max(limit, 10)}, {"numCandidates": 100}):
            got = _search(coll, "vec", query, limit, filter=flt, **options)
            assert set(got) <= ids
            if "exact" in options or options["numCandidates"] >= len(docs):
                assert got == expected
            else:
                assert len(got) == min(limit, len(passing))


ELEMENTS = st.one_of(
    st.floats(),  # NaN, infinities and -0.0 included
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([True, None, "1", [1.0]]),
)


@given(st.one_of(st.lists(st.floats(), max_size=12), st.lists(ELEMENTS, max_size=12)))
def test_an_array_of_doubles_reads_as_the_general_path_reads_it(values: list[Any]) -> None:
    """as_vector's fast path (doubles only) agrees with its general path on any array."""
    fast, general = as_vector(values), numbers(values)
    if general is None:
        assert fast is None
    else:
        assert fast is not None
        assert [repr(x) for x in fast] == [repr(x) for x in general]  # repr: NaN and -0.0 compared too
