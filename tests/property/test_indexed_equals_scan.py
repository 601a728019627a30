"""An indexed query returns exactly what a collection scan returns.

For random documents (nested, arrays, null, missing, every BSON type) and
random filters and sorts, each query runs twice: with the planner free to use
every index kind, and with FOLIODB_NO_INDEXES=1 (collection scans only). The
answers must be identical - the same documents, in the same order of sort
keys when sorted. (STYLE.md: "optimisations that can be switched off without
changing any answer".) The same holds for covered projections (the keys
answer), counts (COUNT_SCAN), distinct (DISTINCT_SCAN, down to which of
equal values of different types is kept) and min/max key ranges (a scan
keeps the documents with a key in the range).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import bson
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


# Documents without arrays, of values that decode back from their keys: the
# indexes stay key-readable, so covered queries, COUNT_SCAN and DISTINCT_SCAN
# with filters run their key-only paths.
_FLAT_VALUES = st.one_of(st.integers(min_value=-3, max_value=3), st.sampled_from([None, "a", "b", 1.5, True]))
FLAT_DOCUMENTS = st.dictionaries(
    st.sampled_from(["a", "b", "c", "x"]),
    st.one_of(_FLAT_VALUES, st.builds(lambda v: {"b": v}, _FLAT_VALUES)),
    max_size=4,
)
DOCUMENT_LISTS = st.one_of(st.lists(documents(max_leaves=8), max_size=25), st.lists(FLAT_DOCUMENTS, max_size=25))


def _condition() -> st.SearchStrategy[Any]:
    return st.one_of(
        SMALL_VALUES,
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), SMALL_VALUES),
        st.builds(lambda vs: {"$in": vs}, st.lists(SMALL_VALUES, max_size=3)),
        st.builds(lambda vs: {"$nin": vs}, st.lists(SMALL_VALUES, max_size=3)),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
        st.sampled_from([{"$type": "number"}, {"$type": "string"}, {"$type": "array"}, {"$type": "null"}]),
        st.sampled_from([{"$regex": "^a"}, {"$regex": "b"}, {"$regex": "^ab?"}]),
        # Regexes no prefix bounds: the index's keys are tested before their records are read.
        st.sampled_from([{"$regex": "^A", "$options": "i"}, {"$regex": "a$"}, re.compile("B", re.IGNORECASE)]),
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


PROJECTIONS = st.sampled_from(
    [
        None,
        None,
        {"a": 1, "_id": 0},
        {"a": 1, "b": 1, "_id": 0},
        {"b": 1},
        {"b": 1, "_id": 0},
        {"a.b": 1, "_id": 0},
        {"_id": 1},
    ]
)


@contextmanager
def _indexes(enabled: bool) -> Iterator[None]:
    previous = os.environ.get("FOLIODB_NO_INDEXES")
    os.environ["FOLIODB_NO_INDEXES"] = "" if enabled else "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["FOLIODB_NO_INDEXES"]
        else:
            os.environ["FOLIODB_NO_INDEXES"] = previous


def _both_ways(call: Callable[[], Any]) -> list[Any]:
    """``call()`` with indexes, then with collection scans: its result or its error code."""
    out = []
    for enabled in (True, False):
        with _indexes(enabled):
            try:
                out.append(("ok", call()))
            except OperationFailure as exc:
                out.append(("error", exc.code))
    return out


def _canonical(value: Any) -> Any:
    """A document with its fields in name order: a covered projection gives
    them in the index's order (as mongod's PROJECTION_COVERED), a fetched
    document in the stored order."""
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _run(
    coll: Any, filter_spec: dict[str, Any], sort: Any, limit: int, indexes: bool, projection: Any = None
) -> list[Any]:
    with _indexes(indexes):
        cursor = coll.find(filter_spec, projection)
        if sort:
            cursor = cursor.sort(sort)
        if limit:
            cursor = cursor.limit(limit)
        return list(cursor)


def _outcome(result: list[Any] | Exception, sort: Any, projection: Any) -> Any:
    if isinstance(result, Exception):
        return ("error", getattr(result, "code", None))
    if projection is not None:
        # Projected documents (maybe without _id) compare as a multiset.
        return sorted(repr(_canonical(doc)) for doc in result)
    if not sort:
        return sorted(repr(doc["_id"]) for doc in result)
    key = compile_sort(dict(sort)).key
    return [key(doc) for doc in result]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENT_LISTS, _filters(), SORTS, st.sampled_from([0, 0, 1, 3]), PROJECTIONS)
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


def _collection(client: Any, docs: list[dict[str, Any]]) -> Any:
    coll = client.db.c
    for keys, options in INDEXES:
        coll.create_index(keys, **options)
    for n, doc in enumerate(docs):
        doc["_id"] = n
        try:
            coll.insert_one(doc)
        except WriteError as exc:
            assert exc.code in (171, 16766)  # parallel arrays; hashed array
    return coll


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    DOCUMENT_LISTS,
    _filters(),
    st.sampled_from([0, 0, 2]),
    st.sampled_from([0, 0, 1, 3]),
)
def test_count_equals_collection_scan(
    docs: list[dict[str, Any]], filter_spec: dict[str, Any], skip: int, limit: int
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        _collection(client, docs)
        cmd = {"count": "c", "query": filter_spec, "skip": skip, "limit": limit}
        with_indexes, scan = _both_ways(lambda: client.db.command(cmd)["n"])
        assert with_indexes == scan


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENT_LISTS, FIELDS, st.one_of(st.just({}), _filters()))
def test_distinct_equals_collection_scan(docs: list[dict[str, Any]], key: str, filter_spec: dict[str, Any]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        _collection(client, docs)
        cmd = {"distinct": "c", "key": key, "query": filter_spec}
        # As BSON: the values' types count (1 and 1.0 are one value, the first met).
        with_indexes, scan = _both_ways(lambda: bson.encode({"v": client.db.command(cmd)["values"]}))
        assert with_indexes == scan


MIN_MAX_INDEXES = [[("a", 1)], [("b", -1)], [("a", 1), ("b", -1)], [("a.b", 1)], [("c", 1)]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    DOCUMENT_LISTS,
    st.sampled_from(MIN_MAX_INDEXES),
    st.lists(SMALL_VALUES, min_size=2, max_size=2),
    st.lists(SMALL_VALUES, min_size=2, max_size=2),
    st.sampled_from(["min", "max", "both"]),
    st.one_of(st.just({}), _filters()),
)
def test_min_max_equal_collection_scan(
    docs: list[dict[str, Any]], key: Any, low: list[Any], high: list[Any], which: str, filter_spec: dict[str, Any]
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        _collection(client, docs)
        cmd: dict[str, Any] = {"find": "c", "filter": filter_spec, "hint": dict(key), "batchSize": 1000}
        if which in ("min", "both"):
            cmd["min"] = {name: value for (name, _), value in zip(key, low, strict=False)}
        if which in ("max", "both"):
            cmd["max"] = {name: value for (name, _), value in zip(key, high, strict=False)}

        def run() -> list[Any]:
            return sorted(repr(doc["_id"]) for doc in client.db.command(cmd)["cursor"]["firstBatch"])

        with_indexes, scan = _both_ways(run)
        assert with_indexes == scan


KEY_FIELDS = st.sampled_from(["a", "b", "a.b"])
KEY_CONDITIONS = st.one_of(
    _FLAT_VALUES,
    st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), _FLAT_VALUES),
    st.builds(lambda vs: {"$in": vs}, st.lists(_FLAT_VALUES, max_size=3)),
    st.builds(lambda b: {"$exists": b}, st.booleans()),
    st.sampled_from([{"$type": "null"}, {"$type": "number"}, {"$gt": 0, "$lt": 3}]),
)
KEY_FILTERS = st.one_of(
    st.dictionaries(KEY_FIELDS, KEY_CONDITIONS, max_size=2),
    st.builds(
        lambda fs: {"$or": fs},
        st.lists(st.dictionaries(KEY_FIELDS, KEY_CONDITIONS, max_size=1), min_size=1, max_size=2),
    ),
)
KEY_PROJECTIONS = st.sampled_from(
    [{"_id": 0, "a": 1}, {"_id": 0, "b": 1}, {"_id": 0, "a": 1, "b": 1}, {"_id": 0, "a.b": 1}, {"a": 1}]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(FLAT_DOCUMENTS, max_size=30),
    KEY_FILTERS,
    KEY_PROJECTIONS,
    st.one_of(st.none(), st.sampled_from([[("a", 1)], [("b", -1)], [("a", 1), ("b", 1)]])),
    KEY_FIELDS,
)
def test_key_only_answers_equal_collection_scan(
    docs: list[dict[str, Any]], filter_spec: dict[str, Any], projection: Any, sort: Any, key: str
) -> None:
    """Indexes that stay key-readable (no arrays, values that decode back as
    themselves): covered finds, COUNT_SCAN and DISTINCT_SCAN with filters."""
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        for keys in ([("a", 1), ("b", -1)], [("b", 1)], [("a.b", 1)], [("a", 1)]):
            coll.create_index(keys)
        coll.insert_many([{**doc, "_id": n} for n, doc in enumerate(docs)] or [{"_id": 0}])
        db = client.db

        def find() -> Any:
            cursor = coll.find(filter_spec, projection)
            if sort:
                cursor = cursor.sort(sort)
            found = list(cursor)
            return sorted(repr(_canonical(doc)) for doc in found), sort and [
                compile_sort(dict(sort)).key(d) for d in found
            ]

        for call in (
            find,
            lambda: db.command({"count": "c", "query": filter_spec})["n"],
            lambda: bson.encode({"v": db.command({"distinct": "c", "key": key, "query": filter_spec})["values"]}),
        ):
            with_indexes, scan = _both_ways(call)
            assert with_indexes == scan


# -- collation-aware indexes ------------------------------------------------------------
# https://www.mongodb.com/docs/manual/reference/collation/#collation-and-index-use
# An index serves a query only under its own collation; its string keys are
# ICU sort keys. Strings that the collations below fold together (case,
# accents, punctuation, digits) make ties, prefixes and regexes interesting.
COLLATED_STRINGS = st.sampled_from(["a", "A", "á", "Á", "b", "B", "ab", "Ab", "a-b", "a b", "9", "10", "", "ä"])
COLLATED_VALUES = st.one_of(COLLATED_STRINGS, st.sampled_from([None, 1, 2.5, ["a", "B"], {"k": "A"}]))
COLLATIONS = st.sampled_from(
    [
        None,
        {"locale": "en", "strength": 1},
        {"locale": "en", "strength": 2},
        {"locale": "en"},
        {"locale": "en", "numericOrdering": True},
        {"locale": "en", "alternate": "shifted"},
        {"locale": "en", "caseFirst": "upper"},
        {"locale": "fr", "strength": 2, "caseLevel": True},
    ]
)
COLLATED_CONDITIONS = st.one_of(
    COLLATED_VALUES,
    st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), COLLATED_VALUES),
    st.builds(lambda vs: {"$in": vs}, st.lists(COLLATED_VALUES, max_size=3)),
    st.builds(lambda vs: {"$nin": vs}, st.lists(COLLATED_VALUES, max_size=2)),
    st.sampled_from([{"$regex": "^a"}, {"$regex": "^A"}, {"$in": ["b", {"$regex": "^a"}]}, {"$exists": True}]),
    st.builds(lambda lo, hi: {"$gte": lo, "$lt": hi}, COLLATED_STRINGS, COLLATED_STRINGS),
)
COLLATED_FILTERS = st.one_of(
    st.dictionaries(st.sampled_from(["s", "t"]), COLLATED_CONDITIONS, max_size=2),
    st.builds(
        lambda fs: {"$or": fs},
        st.lists(st.dictionaries(st.just("s"), COLLATED_CONDITIONS, max_size=1), min_size=1, max_size=2),
    ),
)


def _icu_outcome(docs: list[dict[str, Any]], collation: dict[str, Any] | None) -> list[Any]:
    """The sequence of sort values, each as ICU's own sort key for its
    collation (ties are then equal whatever their order): computed with ICU
    directly, not through FolioDB."""
    import icu

    if collation is None:
        return [repr(doc.get("s")) for doc in docs]
    collator = icu.Collator.createInstance(icu.Locale(collation["locale"]))
    if "strength" in collation:
        collator.setStrength({1: icu.Collator.PRIMARY, 2: icu.Collator.SECONDARY}[collation["strength"]])
    attributes = {
        "numericOrdering": (icu.UCollAttribute.NUMERIC_COLLATION, icu.UCollAttributeValue.ON),
        "alternate": (icu.UCollAttribute.ALTERNATE_HANDLING, icu.UCollAttributeValue.SHIFTED),
        "caseFirst": (icu.UCollAttribute.CASE_FIRST, icu.UCollAttributeValue.UPPER_FIRST),
        "caseLevel": (icu.UCollAttribute.CASE_LEVEL, icu.UCollAttributeValue.ON),
    }
    for name, (attribute, value) in attributes.items():
        if name in collation:
            collator.setAttribute(attribute, value)
    out = []
    for doc in docs:
        value = doc.get("s")
        out.append(collator.getSortKey(value) if isinstance(value, str) else repr(value))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.dictionaries(st.sampled_from(["s", "t"]), COLLATED_VALUES, max_size=2), max_size=20),
    COLLATIONS,
    COLLATIONS,
    COLLATED_FILTERS,
    st.sampled_from([None, [("s", 1)], [("s", -1)]]),
)
def test_collated_index_equals_collection_scan(
    docs: list[dict[str, Any]],
    index_collation: dict[str, Any] | None,
    query_collation: dict[str, Any] | None,
    filter_spec: dict[str, Any],
    sort: Any,
) -> None:
    """Collated indexes (single, compound, hashed, unique-free) answer every
    query, under their collation or another, as a collection scan does:
    finds (sorted or not), counts and distinct."""
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        extra = {} if index_collation is None else {"collation": index_collation}
        coll.create_index([("s", 1)], **extra)
        coll.create_index([("s", -1), ("t", 1)], **extra)
        coll.create_index([("t", "hashed")], **extra)
        for n, doc in enumerate(docs):
            try:
                coll.insert_one({**doc, "_id": n})
            except WriteError as exc:
                assert exc.code in (171, 16766)  # parallel arrays; hashed array
        options = {} if query_collation is None else {"collation": query_collation}

        def find() -> Any:
            cursor = coll.find(filter_spec, **options)
            if sort:
                cursor = cursor.sort(sort)
            found = list(cursor)
            return sorted(d["_id"] for d in found), sort and _icu_outcome(found, query_collation)

        for call in (
            find,
            lambda: coll.count_documents(filter_spec, **options),
            lambda: len(coll.distinct("s", filter_spec, **options)),
        ):
            with_indexes, scan = _both_ways(call)
            assert with_indexes == scan
