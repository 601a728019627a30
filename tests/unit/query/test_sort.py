"""Sort keys: bytes that order documents as MongoDB's sort does.

Expected orders are written out by hand from the manual; the property test
derives each document's sort value independently (smallest array element
ascending, largest descending, [] below null, missing as null) and orders
with compare().
"""

from __future__ import annotations

import datetime
import functools
from typing import Any

import pytest
from bson import Decimal128, Int64, MaxKey, MinKey, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query import compare as cmp
from foliodb.query.sort import compile_sort

CURSOR_SORT = "https://www.mongodb.com/docs/manual/reference/method/cursor.sort/"
ORDER = "https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/"
SORT_STAGE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/sort/"
META = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/meta/"

_ = object()  # marks a missing field in the tables below


def _docs(values: list[Any], name: str = "a") -> list[dict[str, Any]]:
    return [{"_id": i + 1} if v is _ else {"_id": i + 1, name: v} for i, v in enumerate(values)]


MIXED = _docs([3, _, None, [], [5, 0], "x", MinKey(), [[1]], {"k": 1}, MaxKey(), [None, 7]])

DOTTED = _docs([
    [{"b": 5}, {"b": 1}],  # 1: 1 ascending, 5 descending
    {"b": 3},  # 2
    [{"c": 1}],  # 3: null
    [2, {"b": 4}],  # 4: null and 4 (a scalar element gives null)
    [],  # 5: null (an empty array on the way)
    [{"b": []}],  # 6: undefined (an empty array at the end)
    [{"b": [0, 10]}],  # 7: 0 ascending, 10 descending
    [[{"b": -1}]],  # 8: null (nested arrays are not entered)
])  # fmt: skip

NUMBERS = _docs([Int64(5), 4.5, Decimal128("4.75"), 5, float("nan"), None], "n")

COMPOUND = [
    {"_id": 1, "a": 1, "b": 1},
    {"_id": 2, "a": 1, "b": 2},
    {"_id": 3, "a": 0, "b": 5},
    {"_id": 4, "a": 1},
    {"_id": 5, "a": [1, 3], "b": 9},
]

SAME_ARRAY = [
    {"_id": 1, "a": [{"x": 1, "y": 5}, {"x": 2, "y": 0}]},  # keys (1, 5) and (2, 0): (1, 5) first
    {"_id": 2, "a": [{"x": 1, "y": 3}]},
]

TYPES = _docs([
    datetime.datetime(2020, 1, 1), True, ObjectId("000000000000000000000001"), b"\x01", [[1, 2]], {"z": 0},
    "s", 1, None, MinKey(), MaxKey(),
])  # fmt: skip

CASES: list[tuple[str, Any, list[dict[str, Any]], list[int]]] = [
    # (manual page, sort spec, documents, expected _id order)
    (CURSOR_SORT, {"a": 1}, MIXED, [7, 4, 2, 3, 11, 5, 1, 6, 9, 8, 10]),
    (CURSOR_SORT, {"a": -1}, MIXED, [10, 8, 9, 6, 11, 5, 1, 2, 3, 4, 7]),
    (CURSOR_SORT, {"a.b": 1}, DOTTED, [6, 3, 4, 5, 8, 7, 1, 2]),
    (CURSOR_SORT, {"a.b": -1}, DOTTED, [7, 1, 4, 2, 3, 5, 8, 6]),
    (ORDER, {"n": 1}, NUMBERS, [6, 5, 2, 3, 1, 4]),  # numbers by value whatever their type; NaN lowest
    (ORDER, {"a": 1}, TYPES, [10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 11]),
    (CURSOR_SORT, {"a": 1, "b": -1}, COMPOUND, [3, 5, 2, 1, 4]),
    (CURSOR_SORT, [("a", 1), ("b", -1)], COMPOUND, [3, 5, 2, 1, 4]),
    (CURSOR_SORT, {"a.x": 1, "a.y": 1}, SAME_ARRAY, [2, 1]),
    (CURSOR_SORT, {"a.1": 1}, _docs([[9, 2], [0, 5], [7]]), [3, 1, 2]),  # a position; [7] has none: null
    (CURSOR_SORT, {"a": 1.0}, _docs([2, 1]), [2, 1]),
    (CURSOR_SORT, {"a": Int64(-1)}, _docs([1, 2]), [2, 1]),
    (CURSOR_SORT, {"a": Decimal128("1")}, _docs([2, 1]), [2, 1]),
]


@pytest.mark.parametrize(("source", "spec", "docs", "expected"), CASES)
def test_sort_order(source: str, spec: Any, docs: list[dict[str, Any]], expected: list[int]) -> None:
    s = compile_sort(spec)
    assert [d["_id"] for d in sorted(docs, key=s.key)] == expected


def test_meta_sort_is_descending() -> None:
    # META: {$meta: "textScore"} sorts by score, highest first.
    s = compile_sort({"score": {"$meta": "textScore"}, "a": 1})
    assert s.fields == [("a", 1)]
    assert s.meta_fields == ["textScore"]
    rows = [({"_id": 1, "a": 2}, {"textScore": 1.0}), ({"_id": 2, "a": 1}, {"textScore": 3.0}),
            ({"_id": 3, "a": 0}, {"textScore": 1.0}), ({"_id": 4, "a": 0}, None)]  # fmt: skip
    ordered = sorted(rows, key=lambda row: s.key(row[0], row[1]))
    assert [doc["_id"] for doc, _ in ordered] == [2, 3, 1, 4]


def test_fields_and_natural() -> None:
    # CURSOR_SORT: $natural orders by the scan, it is not a key.
    s = compile_sort({"$natural": -1, "a.b": -1, "c": 1})
    assert s.natural == -1
    assert s.fields == [("a.b", -1), ("c", 1)]
    assert s.meta_fields == []
    assert compile_sort({"a": 1}).natural is None
    assert compile_sort({"$natural": 1}).natural == 1
    assert compile_sort({"a": 1.5}).fields == [("a", 1)]  # MongoDB truncates the direction


def test_parallel_arrays() -> None:
    # CURSOR_SORT: sorting on two arrays of one document is an error.
    s = compile_sort({"a": 1, "b": 1})
    assert s.key({"a": [1, 2], "b": 3}) < s.key({"a": 2, "b": 0})
    with pytest.raises(CommandError) as err:
        s.key({"a": [1], "b": [2]})
    assert err.value.code == 2
    assert err.value.code_name == "BadValue"
    assert err.value.errmsg == "cannot sort with keys that are parallel arrays"
    with pytest.raises(CommandError):
        compile_sort({"a.x": 1, "a.y": 1}).key({"a": [{"x": [1], "y": [2]}]})


ERRORS: list[tuple[str, Any, bool, int, str]] = [
    (SORT_STAGE, {"a": 2}, False, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"),
    (SORT_STAGE, {"a": 0}, False, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"),
    (SORT_STAGE, {"a": 0.5}, False, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"),
    (SORT_STAGE, {"a": "asc"}, False, 15974, 'Illegal key in $sort specification: a: "asc"'),
    (SORT_STAGE, {"a": True}, False, 15974, "Illegal key in $sort specification: a: true"),
    (META, {"a": {"$meta": "bogus"}}, False, 31138, 'Illegal $meta sort: $meta: "bogus"'),
    (META, {"a": {"$meta": 1}}, False, 31138, "Illegal $meta sort: $meta: 1"),
    (META, {"a": {"x": 1}}, False, 17312, "$meta is the only expression supported by $sort right now"),
    (META, {"a": {}}, False, 17312, "$meta is the only expression supported by $sort right now"),
    (META, {"a": {"$meta": "textScore", "x": 1}}, False, 9,
     "Cannot have additional keys in a $meta sort specification"),
    (SORT_STAGE, [("a", 1), ("a", -1)], False, 7472500, "$sort key must not contain duplicate keys (duplicate: 'a')"),
    (SORT_STAGE, {}, True, 15976, "$sort stage must have at least one sort key"),
    (SORT_STAGE, 5, True, 15973, "the $sort key specification must be an object"),
    (SORT_STAGE, {"$a": 1}, False, 16410,
     "FieldPath field names may not start with '$'. Consider using $getField or $setField."),
    (SORT_STAGE, {"a..b": 1}, False, 15998, "FieldPath field names may not be empty strings."),
]  # fmt: skip


@pytest.mark.parametrize(("source", "spec", "stage", "code", "errmsg"), ERRORS)
def test_errors(source: str, spec: Any, stage: bool, code: int, errmsg: str) -> None:
    with pytest.raises(CommandError) as err:
        compile_sort(spec, stage=stage)
    assert err.value.code == code
    assert err.value.errmsg == errmsg


def test_empty_find_sort_is_allowed() -> None:
    # CURSOR_SORT: find's sort may be empty (no sort).
    s = compile_sort({})
    assert s.fields == [] and s.meta_fields == [] and s.natural is None


# --- property: key order == compare() order on the sort values ---------------

_UNDEFINED = object()  # an empty array's sort value
_MISSING = object()

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.integers(min_value=-5, max_value=5).map(Int64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.sampled_from([MinKey(), MaxKey(), datetime.datetime(2000, 1, 1), Decimal128("2.5")]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["k", "m"]), inner, max_size=2)
    ),
    max_leaves=6,
)


def _sort_value(doc: dict[str, Any], name: str, descending: bool) -> Any:
    value = doc.get(name, _MISSING)
    if value is _MISSING:
        return None
    if isinstance(value, list):
        if not value:
            return _UNDEFINED
        pick = max if descending else min
        return pick(value, key=functools.cmp_to_key(cmp.compare))
    return value


def _compare_values(x: Any, y: Any) -> int:
    # undefined sits between MinKey and null in the type order.
    if x is _UNDEFINED or y is _UNDEFINED:
        bx = cmp.UNDEFINED if x is _UNDEFINED else cmp.bracket(x)
        by = cmp.UNDEFINED if y is _UNDEFINED else cmp.bracket(y)
        return (bx > by) - (bx < by)
    return cmp.compare(x, y)


def _expected_cmp(pattern: list[tuple[str, int]]) -> Any:
    def compare_docs(d1: dict[str, Any], d2: dict[str, Any]) -> int:
        for name, direction in pattern:
            c = _compare_values(_sort_value(d1, name, direction < 0), _sort_value(d2, name, direction < 0))
            if c:
                return c * direction
        return 0

    return compare_docs


_documents = st.lists(
    st.fixed_dictionaries({}, optional={"a": _values, "b": _scalars}),
    min_size=2,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(docs=_documents, direction_a=st.sampled_from([1, -1]), direction_b=st.sampled_from([1, -1]))
def test_key_order_agrees_with_compare(docs: list[dict[str, Any]], direction_a: int, direction_b: int) -> None:
    # ORDER and CURSOR_SORT: a total preorder over mixed types, arrays, null and missing.
    for pattern in ([("a", direction_a)], [("a", direction_a), ("b", direction_b)]):
        s = compile_sort(dict(pattern))
        expected = _expected_cmp(pattern)
        keys = [s.key(d) for d in docs]
        for i, d1 in enumerate(docs):
            for j, d2 in enumerate(docs):
                sign = (keys[i] > keys[j]) - (keys[i] < keys[j])
                assert sign == expected(d1, d2), (pattern, d1, d2)
        indexed = list(enumerate(docs))
        by_key = [i for i, _ in sorted(indexed, key=lambda p: s.key(p[1]))]
        by_compare = [i for i, _ in sorted(indexed, key=functools.cmp_to_key(lambda p, q: expected(p[1], q[1])))]
        assert by_key == by_compare
