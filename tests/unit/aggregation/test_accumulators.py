"""Accumulators in $group: values, result types and errors.

Expected values are worked out by hand (or with plain Python arithmetic)
from the manual page cited in each case.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.aggregation.runner import pipeline_error, run_pipeline

ACC = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
SUM = ACC + "sum/"
AVG = ACC + "avg/"
MIN = ACC + "min/"
MAX = ACC + "max/"
FIRST = ACC + "first/"
LAST = ACC + "last/"
PUSH = ACC + "push/"
ADDTOSET = ACC + "addToSet/"
MERGE = ACC + "mergeObjects/"
STDPOP = ACC + "stdDevPop/"
STDSAMP = ACC + "stdDevSamp/"
COUNT = ACC + "count-accumulator/"
TOP = ACC + "top/"
BOTTOM = ACC + "bottom/"
TOPN = ACC + "topN/"
BOTTOMN = ACC + "bottomN/"
FIRSTN = ACC + "firstN/"
LASTN = ACC + "lastN/"
MAXN = ACC + "maxN/"
MINN = ACC + "minN/"
MEDIAN = ACC + "median/"
PERCENTILE = ACC + "percentile/"
GROUP = ACC + "group/"

ABSENT = object()  # a document without the field


def group_value(spec: dict[str, Any], values: list[Any]) -> Any:
    docs = [{"_id": i} if v is ABSENT else {"_id": i, "v": v} for i, v in enumerate(values)]
    (out,) = run_pipeline([{"$group": {"_id": None, "r": spec}}], docs)
    return out["r"]


def same(actual: Any, expected: Any) -> bool:
    """Equal with the same Python (BSON) type, recursively."""
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, float) and math.isnan(expected):
        return math.isnan(actual)
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(same(a, e) for a, e in zip(actual, expected, strict=True))
    if isinstance(expected, dict):
        return list(actual) == list(expected) and all(same(actual[k], expected[k]) for k in expected)
    return bool(actual == expected)


# (accumulator spec, input values of field v, expected result, manual page)
CASES = [
    # $sum: ints stay int, widen to long then double; non-numbers ignored.
    ({"$sum": "$v"}, [1, 2, 3], 6, SUM),
    ({"$sum": "$v"}, ["a", None, ABSENT, True], 0, SUM),
    ({"$sum": "$v"}, [2**31 - 1, 1], Int64(2**31), SUM),
    ({"$sum": "$v"}, [Int64(1), 2], Int64(3), SUM),
    ({"$sum": "$v"}, [Int64(2**63 - 1), 1], float(2**63), SUM),
    ({"$sum": "$v"}, [1, 2.5], 3.5, SUM),
    ({"$sum": "$v"}, [0.1] * 10, 1.0, SUM),
    ({"$sum": "$v"}, [1, Decimal128("2.5")], Decimal128("3.5"), SUM),
    ({"$sum": "$v"}, [float("inf"), float("-inf")], float("nan"), SUM),
    ({"$sum": 1}, [ABSENT, ABSENT, "x"], 3, SUM),
    ({"$count": {}}, [ABSENT, 1, None], 3, COUNT),
    # $avg: double, decimal with a decimal input, null without numbers.
    ({"$avg": "$v"}, [1, 2], 1.5, AVG),
    ({"$avg": "$v"}, [2, 4, "x", None], 3.0, AVG),
    ({"$avg": "$v"}, ["x", ABSENT], None, AVG),
    ({"$avg": "$v"}, [Decimal128("1"), 2], Decimal128("1.5"), AVG),
    ({"$avg": "$v"}, [Int64(10), Int64(20)], 15.0, AVG),
    # $min/$max: BSON order, null and missing ignored.
    ({"$min": "$v"}, [3, None, 1, ABSENT, 2], 1, MIN),
    ({"$max": "$v"}, [3, "a", 1], "a", MAX),
    ({"$min": "$v"}, [None, ABSENT], None, MIN),
    ({"$max": "$v"}, [[1, 2], [1, 3]], [1, 3], MAX),
    ({"$min": "$v"}, [2, 1.5, Int64(3)], 1.5, MIN),
    # $first/$last: positional, missing is null.
    ({"$first": "$v"}, [ABSENT, 2, 3], None, FIRST),
    ({"$first": "$v"}, [None, 2], None, FIRST),
    ({"$last": "$v"}, [1, 2, 3], 3, LAST),
    # $push keeps null, skips missing; $addToSet dedups by value.
    ({"$push": "$v"}, [1, ABSENT, None, 1], [1, None, 1], PUSH),
    ({"$addToSet": "$v"}, [1, 1.0, Int64(1), 2, ABSENT], [1, 2], ADDTOSET),
    ({"$addToSet": "$v"}, [{"a": 1}, {"a": 1}, [1], [1]], [{"a": 1}, [1]], ADDTOSET),
    # $mergeObjects: later fields win, null/missing ignored.
    ({"$mergeObjects": "$v"}, [{"a": 1, "b": 1}, None, {"b": 2}, ABSENT], {"a": 1, "b": 2}, MERGE),
    ({"$mergeObjects": "$v"}, [None], {}, MERGE),
    # $stdDevPop/$stdDevSamp: doubles, non-numbers ignored.
    ({"$stdDevPop": "$v"}, [2, 4, 4, 4, 5, 5, 7, 9], 2.0, STDPOP),
    ({"$stdDevSamp": "$v"}, [1, 2, 3, 4], math.sqrt(5 / 3), STDSAMP),
    ({"$stdDevSamp": "$v"}, [1], None, STDSAMP),
    ({"$stdDevPop": "$v"}, ["x"], None, STDPOP),
    # $top/$bottom and the N forms: sort order, ties to the earlier input.
    ({"$top": {"sortBy": {"v": -1}, "output": "$_id"}}, [5, 9, 9, 1], 1, TOP),
    ({"$bottom": {"sortBy": {"v": -1}, "output": "$_id"}}, [5, 9, 9, 1], 3, BOTTOM),
    ({"$top": {"sortBy": {"v": 1}, "output": "$v"}}, [ABSENT, 2], None, TOP),
    ({"$topN": {"n": 2, "sortBy": {"v": 1}, "output": "$v"}}, [3, 1, 2, 1], [1, 1], TOPN),
    ({"$bottomN": {"n": 2, "sortBy": {"v": 1}, "output": ["$_id", "$v"]}}, [3, 1, 2, 3], [[0, 3], [3, 3]], BOTTOMN),
    ({"$topN": {"n": 5, "sortBy": {"v": 1}, "output": "$v"}}, [2, 1], [1, 2], TOPN),
    # $firstN/$lastN keep null (missing as null); $maxN/$minN skip it.
    ({"$firstN": {"n": 2, "input": "$v"}}, [ABSENT, 1, 2], [None, 1], FIRSTN),
    ({"$lastN": {"n": 2, "input": "$v"}}, [1, 2, None], [2, None], LASTN),
    ({"$lastN": {"n": 3, "input": "$v"}}, [1], [1], LASTN),
    ({"$maxN": {"n": 2, "input": "$v"}}, [3, None, 7, 5, ABSENT], [7, 5], MAXN),
    ({"$minN": {"n": 3, "input": "$v"}}, [3, None, 7, 5], [3, 5, 7], MINN),
    ({"$maxN": {"n": Int64(1), "input": "$v"}}, [1, "a"], ["a"], MAXN),
    # $median/$percentile (method approximate): discrete rank ceil(p*n)-1.
    ({"$median": {"input": "$v", "method": "approximate"}}, [5, 1, 3, "x"], 3.0, MEDIAN),
    ({"$median": {"input": "$v", "method": "approximate"}}, [4, 1, 3, 2], 2.0, MEDIAN),
    ({"$median": {"input": "$v", "method": "approximate"}}, ["x"], None, MEDIAN),
    (
        {"$percentile": {"input": "$v", "p": [0.0, 0.5, 0.9, 1.0], "method": "approximate"}},
        list(range(1, 11)),
        [1.0, 5.0, 9.0, 10.0],
        PERCENTILE,
    ),
    ({"$percentile": {"input": "$v", "p": [0.5, 0.75], "method": "approximate"}}, ["x"], [None, None], PERCENTILE),
]


@pytest.mark.parametrize(("spec", "values", "expected", "page"), CASES)
def test_accumulator(spec: dict[str, Any], values: list[Any], expected: Any, page: str) -> None:
    result = group_value(spec, values)
    assert same(result, expected), (result, expected)


def test_n_may_depend_on_the_group_key() -> None:
    """FIRSTN: ``n`` is evaluated against the group key document."""
    docs = [{"g": g, "v": v} for g, v in [("a", 1), ("a", 2), ("a", 3), ("b", 4), ("b", 5)]]
    out = run_pipeline(
        [
            {
                "$group": {
                    "_id": {"g": "$g"},
                    "r": {"$firstN": {"input": "$v", "n": {"$cond": [{"$eq": ["$g", "a"]}, 1, 2]}}},
                }
            },
            {"$sort": {"_id.g": 1}},
        ],
        docs,
    )
    assert out == [{"_id": {"g": "a"}, "r": [1]}, {"_id": {"g": "b"}, "r": [4, 5]}]


# (accumulator spec, code, manual page)
ERRORS = [
    ({"$nope": "$v"}, 15952, GROUP),
    ({"$sum": ["$v", 1]}, 40237, GROUP),
    ({"$count": {"x": 1}}, 14, COUNT),
    ({"$mergeObjects": "$v"}, 40400, MERGE),
    ({"$firstN": [1]}, 40237, FIRSTN),
    ({"$firstN": 5}, 5787801, FIRSTN),
    ({"$firstN": {"input": "$v"}}, 5787906, FIRSTN),
    ({"$firstN": {"n": 2}}, 5787907, FIRSTN),
    ({"$firstN": {"n": 2, "input": "$v", "x": 1}}, 5787901, FIRSTN),
    ({"$lastN": {"n": 0, "input": "$v"}}, 5787908, LASTN),
    ({"$maxN": {"n": 1.5, "input": "$v"}}, 5787903, MAXN),
    ({"$minN": {"n": "x", "input": "$v"}}, 5787902, MINN),
    ({"$top": {"output": "$v"}}, 5788005, TOP),
    ({"$top": {"sortBy": {"v": 1}}}, 5788004, TOP),
    ({"$top": {"sortBy": {}, "output": "$v"}}, 9657900, TOP),
    ({"$top": {"n": 1, "sortBy": {"v": 1}, "output": "$v"}}, 5788002, TOP),
    ({"$topN": {"sortBy": {"v": 1}, "output": "$v"}}, 5788003, TOPN),
    ({"$median": {"input": "$v"}}, 40414, MEDIAN),
    ({"$median": {"input": "$v", "method": "exact"}}, 2, MEDIAN),
    ({"$percentile": {"input": "$v", "p": 0.5, "method": "approximate"}}, 7750301, PERCENTILE),
    ({"$percentile": {"input": "$v", "p": [1.5], "method": "approximate"}}, 7750303, PERCENTILE),
    ({"$percentile": {"input": "$v", "p": ["$v"], "method": "approximate"}}, 7750300, PERCENTILE),
    ({"$percentile": {"input": "$v", "p": ["a"], "method": "approximate"}}, 7750302, PERCENTILE),
]


@pytest.mark.parametrize(("spec", "code", "page"), ERRORS)
def test_accumulator_errors(spec: dict[str, Any], code: int, page: str) -> None:
    error = pipeline_error([{"$group": {"_id": None, "r": spec}}], [{"v": 5}])
    assert error.code == code


def test_merge_objects_error_message() -> None:
    error = pipeline_error([{"$group": {"_id": None, "r": {"$mergeObjects": "$v"}}}], [{"v": 5}])
    assert error.errmsg == "$mergeObjects requires object inputs, but input 5 is of type int"


numbers = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(numbers, min_size=1, max_size=30))
def test_sum_and_avg_are_exact_then_rounded(values: list[Any]) -> None:
    """SUM/AVG: the total of mixed ints and doubles equals the exact sum rounded once."""
    exact = sum((Fraction(v) for v in values), Fraction(0))
    total = group_value({"$sum": "$v"}, values)
    if any(isinstance(v, float) for v in values):
        assert total == float(exact) and isinstance(total, float)
    else:
        assert total == int(exact)
    assert group_value({"$avg": "$v"}, values) == float(exact) / len(values)


def test_decimal_sum_is_decimal128() -> None:
    total = group_value({"$sum": "$v"}, [Decimal128("0.1")] * 3 + [1])
    assert total == Decimal128(Decimal("1.3"))
