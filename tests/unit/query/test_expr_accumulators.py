"""Accumulator-named expressions over arrays: $sum $avg $max $min $stdDevPop
$stdDevSamp $median $percentile $firstN $lastN $maxN $minN.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/sum/#use-in-other-supported-stages
(and the pages of each operator cited per case)
"""

from __future__ import annotations

import datetime
import math
import statistics
from fractions import Fraction

import bson
import pytest
from bson import Decimal128, Int64
from hypothesis import given
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
DOC = {"quizzes": [10, 6, 7], "labs": [5, 8], "final": 80, "midterm": 75, "n": None, "mixed": [1, "a", None, 2.5]}


def url(name):
    return BASE + name + "/"


def evaluate(spec, doc=None):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, datetime.datetime(2024, 1, 1)))


def same(got, want):
    assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("sum"), {"$sum": "$quizzes"}, 23),
        (url("sum"), {"$sum": ["$final", "$midterm"]}, 155),
        (url("sum"), {"$sum": ["$quizzes", 1]}, 1),  # among several arguments an array is not a number
        (url("sum"), {"$sum": "$mixed"}, 3.5),
        (url("sum"), {"$sum": "$n"}, 0),
        (url("sum"), {"$sum": []}, 0),
        (url("sum"), {"$sum": [[2**31 - 1, 1]]}, Int64(2**31)),
        (url("sum"), {"$sum": [[Int64(1), 2]]}, Int64(3)),
        (url("sum"), {"$sum": [[Int64(2**63 - 1), 1]]}, float(2**63)),
        (url("sum"), {"$sum": [[0.1, 0.2, 0.3]]}, 0.6),  # summed exactly, rounded once
        (url("sum"), {"$sum": [[1, Decimal128("0.5")]]}, Decimal128("1.5")),
        (url("sum"), {"$sum": [[float("inf"), 1]]}, float("inf")),
        (url("avg"), {"$avg": "$quizzes"}, 23 / 3),
        (url("avg"), {"$avg": ["$final", "$midterm"]}, 77.5),
        (url("avg"), {"$avg": "$mixed"}, 1.75),
        (url("avg"), {"$avg": [["a"]]}, None),
        (url("avg"), {"$avg": [[Decimal128("1"), 2]]}, Decimal128("1.5")),
        (url("max"), {"$max": "$quizzes"}, 10),
        (url("max"), {"$max": ["$final", "$midterm"]}, 80),
        (url("max"), {"$max": "$mixed"}, "a"),  # strings sort above numbers
        (url("max"), {"$max": [["$n"]]}, None),
        (url("max"), {"$max": [None, "$missing"]}, None),
        (url("min"), {"$min": "$mixed"}, 1),  # null is ignored
        (url("min"), {"$min": [[[1], 5]]}, 5),
        (url("stdDevPop"), {"$stdDevPop": [["a"]]}, None),
        (url("stdDevPop"), {"$stdDevPop": [[5]]}, 0.0),
        (url("stdDevSamp"), {"$stdDevSamp": [[5]]}, None),
        (url("median"), {"$median": {"input": "$quizzes", "method": "approximate"}}, 7.0),
        (url("median"), {"$median": {"input": [1, 2, 3, 4], "method": "approximate"}}, 2.0),
        (url("median"), {"$median": {"input": "$final", "method": "approximate"}}, 80.0),
        (url("median"), {"$median": {"input": "$n", "method": "approximate"}}, None),
        (url("median"), {"$median": {"input": ["a"], "method": "approximate"}}, None),
        (
            url("percentile"),
            {"$percentile": {"input": [5, 1, 4, 2, 3], "p": [0.5, 0.75, 0.9, 0, 1], "method": "approximate"}},
            [3.0, 4.0, 5.0, 1.0, 5.0],
        ),
        (url("percentile"), {"$percentile": {"input": [], "p": [0.5, 0.9], "method": "approximate"}}, [None, None]),
        (
            url("percentile"),
            {"$percentile": {"input": "$final", "p": [{"$literal": 0.5}], "method": "approximate"}},
            [80.0],
        ),
        (url("firstN-array-element"), {"$firstN": {"n": 2, "input": [10, 20, 30]}}, [10, 20]),
        (url("firstN-array-element"), {"$firstN": {"n": 5, "input": [10, None]}}, [10, None]),
        (url("firstN-array-element"), {"$firstN": {"n": 2.0, "input": [1, 2, 3]}}, [1, 2]),
        (url("lastN-array-element"), {"$lastN": {"n": 2, "input": [10, 20, 30]}}, [20, 30]),
        (url("lastN-array-element"), {"$lastN": {"n": Int64(9), "input": [10]}}, [10]),
        (url("maxN-array-element"), {"$maxN": {"n": 2, "input": [3, None, "a", 5]}}, ["a", 5]),
        (url("minN-array-element"), {"$minN": {"n": 2, "input": [3, None, "a", 5]}}, [3, 5]),
        (url("minN-array-element"), {"$minN": {"n": 3, "input": [None]}}, []),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"$stdDevPop": "$quizzes"}, statistics.pstdev([10, 6, 7])),
        ({"$stdDevSamp": "$quizzes"}, statistics.stdev([10, 6, 7])),
        ({"$stdDevPop": [[1, Decimal128("3"), "x", None]]}, 1.0),
        ({"$stdDevSamp": [1, 2, 3, 4]}, statistics.stdev([1, 2, 3, 4])),
    ],
)
def test_standard_deviations(spec, want):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/stdDevPop/ (numbers only, as doubles)
    got = evaluate(spec)
    assert isinstance(got, float) and got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("median"), {"$median": 1}, 7436201),
        (url("median"), {"$median": {"input": [], "method": "approximate", "p": [0.5]}}, 40415),
        (url("median"), {"$median": {"input": []}}, 40414),
        (url("median"), {"$median": {"input": [], "method": "exact"}}, 2),
        (url("median"), {"$median": {"input": [], "method": 1}}, 14),
        (url("percentile"), {"$percentile": 1}, 7436200),
        (url("percentile"), {"$percentile": {"input": [], "method": "approximate"}}, 40414),
        (url("percentile"), {"$percentile": {"input": [], "p": "$p", "method": "approximate"}}, 7750300),
        (url("percentile"), {"$percentile": {"input": [], "p": [], "method": "approximate"}}, 7750301),
        (url("percentile"), {"$percentile": {"input": [], "p": 0.5, "method": "approximate"}}, 7750301),
        (url("percentile"), {"$percentile": {"input": [], "p": ["a"], "method": "approximate"}}, 7750302),
        (url("percentile"), {"$percentile": {"input": [], "p": [1.5], "method": "approximate"}}, 7750303),
        (url("firstN"), {"$firstN": [1]}, 5787801),
        (url("maxN"), {"$maxN": 1}, 5787900),
        (url("firstN"), {"$firstN": {"n": 1, "input": [], "x": 1}}, 5787901),
        (url("lastN"), {"$lastN": {"input": []}}, 5787906),
        (url("minN"), {"$minN": {"n": 1}}, 5787907),
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (
            url("firstN"),
            {"$firstN": {"n": "a", "input": [1]}},
            5787902,
            "Value for 'n' must be of integral type, but found \"a\"",
        ),
        (
            url("firstN"),
            {"$firstN": {"n": 1.5, "input": [1]}},
            5787903,
            "Value for 'n' must be of integral type, but found 1.5",
        ),
        (url("lastN"), {"$lastN": {"n": 0, "input": [1]}}, 5787908, "'n' must be greater than 0, found 0"),
        (url("maxN"), {"$maxN": {"n": 1, "input": "$n"}}, 5788200, "Input must be an array"),
        (url("minN"), {"$minN": {"n": "$missing", "input": [1]}}, 5787902, None),
    ],
)
def test_runtime_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert raised.value.code == code
    if message is not None:
        assert raised.value.errmsg == message


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=20))
def test_sum_of_doubles_is_rounded_once(values):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/sum/#behavior
    exact = sum((Fraction(v) for v in values), Fraction(0))
    same(evaluate({"$sum": [values]}), float(exact) if values else 0)


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=30), st.floats(0, 1))
def test_percentile_is_the_nearest_rank(values, p):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/percentile/#behavior
    ordered = sorted(values)
    rank = max(1, math.ceil(p * len(ordered)))
    got = evaluate({"$percentile": {"input": values, "p": [p], "method": "approximate"}})
    assert got == [float(ordered[rank - 1])]
