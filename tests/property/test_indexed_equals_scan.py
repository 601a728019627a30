"""An indexed query returns exactly what a collection scan returns.

For random documents (nested, arrays, null, missing, every BSON type) and
random filters and sorts, each query runs twice: with the planner free to use
every index kind, and with FOLIODB_NO_INDEXES=1 (collection scans only). The
answers must be identical - the same documents, in the same order of sort
keys when sorted. (STYLE.md: "optimisations that can be switched off without
changing any answer".)
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

import foliodb
from foliodb.query.sort import compile_sort
from tests.bson_values import bson_values, documents

INDEXES: list[tuple[Any, dict[str, Any]]] = [
    ([("a", 1)], {}),
    ([("b", -1)], {}),
    ([("a", 1), ("b", -1)], {}),
    ([("c", 1)], {"sparse": True}),
    ([("x", 1)], {"partialFilterExpression": {"a": {"$gt": 0}}}),
    ([("b", "hashed")], {}),
    ([("$**", 1)], {}),
    ([("a.b", 1)], {}),
]

FIELDS = st.sampled_from(["a", "b", "c", "x", "a.b", "a.0", "b.c"])
SMALL_VALUES = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([None, "a", "b", 1.5, float("nan"), [], [1, 2], {"b": 1}, True]),
    bson_values(max_leaves=3),
)


def _condition() -> st.SearchStrategy[Any]:
    return st.one_of(
        SMALL_VALUES,
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), SMALL_VALUES),
        st.builds(lambda vs: {"$in": vs}, st.lists(SMALL_VALUES, max_size=3)),
        st.builds(lambda vs: {"$nin": vs}, st.lists(SMALL_VALUES, max_size=3)),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
        st.sampled_from([{"$type": "number"}, {"$type": "string"}, {"$type": "array"}, {"$type": "null"}]),
        st.sampled_from([{"$regex": "^a"}, {"$regex": "b"}, {"$regex": "^ab?"}]),
        st.builds(lambda v: {"$elemMatch": {"$gte": v}}, st.integers(min_value=-2, max_value=2)),
        st.builds(lambda lo, hi: {"$gt": lo, "$lt": hi}, st.integers(-2, 2), st.integers(-2, 3)),
        st.builds(lambda v: {"$all": [v]}, SMALL_VALUES),
        st.builds(lambda n: {"$size": n}, st.integers(0, 2)),
    )


def _filters() -> st.SearchStrategy[dict[str, Any]]:
    simple = st.dictionaries(FIELDS, _condition(), max_size=2)
    return st.one_of(
        simple,
        st.builds(lambda fs: {"$or": fs}, st.lists(simple, min_size=1, max_size=2)),
        st.builds(lambda fs: {"$and": fs}, st.lists(simple, min_size=1, max_size=2)),
    )


SORTS = st.one_of(
    st.none(),
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "a.b"]), st.sampled_from([1, -1])),
        min_size=1,
        max_size=2,
        unique_by=lambda t: t[0],
    ),
)


PROJECTIONS = st.sampled_from([None, None, {"a": 1, "_id": 0}, {"a": 1, "b": 1, "_id": 0}, {"b": 1}])


def _run(
    coll: Any, filter_spec: dict[str, Any], sort: Any, limit: int, indexes: bool, projection: Any = None
) -> list[Any]:
    previous = os.environ.get("FOLIODB_NO_INDEXES")
    os.environ["FOLIODB_NO_INDEXES"] = "" if indexes else "1"
    try:
        cursor = coll.find(filter_spec, projection)
        if sort:
            cursor = cursor.sort(sort)
        if limit:
            cursor = cursor.limit(limit)
        return list(cursor)
    finally:
        if previous is None:
            del os.environ["FOLIODB_NO_INDEXES"]
        else:
            os.environ["FOLIODB_NO_INDEXES"] = previous


def _outcome(result: list[Any] | Exception, sort: Any, projection: Any) -> Any:
    if isinstance(result, Exception):
        return ("error", getattr(result, "code", None))
    if projection is not None:
        # Projected documents (maybe without _id) compare as a multiset.
        return sorted(repr(doc) for doc in result)
    if not sort:
        return sorted(repr(doc["_id"]) for doc in result)
    key = compile_sort(dict(sort)).key
    return [key(doc) for doc in result]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents(max_leaves=8), max_size=25), _filters(), SORTS, st.sampled_from([0, 0, 1, 3]), PROJECTIONS)
def test_indexed_query_equals_collection_scan(
    docs: list[dict[str, Any]], filter_spec: dict[str, Any], sort: Any, limit: int, projection: Any
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        for keys, options in INDEXES:
            coll.create_index(keys, **options)
        for n, doc in enumerate(docs):
            doc["_id"] = n
            try:
                coll.insert_one(doc)
            except WriteError as exc:
                assert exc.code in (171, 16766)  # parallel arrays; hashed array
        results = []
        for indexes in (True, False):
            try:
                results.append(_run(coll, filter_spec, sort, limit if sort else 0, indexes, projection))
            except OperationFailure as exc:
                results.append(exc)
        # Sorted results compare by their sort keys: ties may come in any order
        # (and, with a limit, different tied documents may make the cut).
        if projection is not None and limit and sort:
            return  # which tied documents make the cut is not defined
        with_indexes, scan = (_outcome(r, sort, projection) for r in results)
        assert with_indexes == scan
        assert client.db.validate_collection("c")["valid"]


@pytest.mark.parametrize(
    "filter_spec",
    [
        {"a": None},
        {"a": {"$exists": False}},
        {"c": None},
        {"a.b": None},
        {"b": {"$in": [None, 1]}},
        {"a": []},
        {"a": [1, 2]},
    ],
)
def test_null_and_array_edges(filter_spec: dict[str, Any]) -> None:
    docs = [
        {"_id": 1},
        {"_id": 2, "a": None},
        {"_id": 3, "a": []},
        {"_id": 4, "a": [1, 2]},
        {"_id": 5, "a": [[1, 2]]},
        {"_id": 6, "a": {"b": None}},
        {"_id": 7, "a": [{"b": 1}, {"c": 1}]},
        {"_id": 8, "b": 1, "c": None},
        {"_id": 9, "a": 1, "c": [None]},
    ]
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        for keys, options in INDEXES:
            coll.create_index(keys, **options)
        coll.insert_many(docs)
        indexed = _run(coll, filter_spec, None, 0, True)
        scanned = _run(coll, filter_spec, None, 0, False)
        assert sorted(d["_id"] for d in indexed) == sorted(d["_id"] for d in scanned)
