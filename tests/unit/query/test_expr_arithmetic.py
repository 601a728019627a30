"""Arithmetic expressions: $add $subtract $multiply $divide $mod, with
MongoDB's result types (int -> long -> double, decimal wins) and dates.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#arithmetic-expression-operators
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Decimal128, Int64
from bson.datetime_ms import DatetimeMS
from hypothesis import example, given
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables

ADD = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/add/"
SUBTRACT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/subtract/"
MULTIPLY = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/multiply/"
DIVIDE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/divide/"
MOD = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/mod/"
D = datetime.datetime
INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1
DOC = {"price": 10, "fee": 2, "date": D(2014, 3, 1, 8), "n": None, "s": "x"}


def evaluate(spec, doc=None):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, D(2024, 1, 1)))


def same(got, want):
    assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (ADD, {"$add": ["$price", "$fee"]}, 12),
        (ADD, {"$add": []}, 0),
        (ADD, {"$add": [INT_MAX, 1]}, Int64(INT_MAX + 1)),  # int overflow -> long
        (ADD, {"$add": [Int64(1), 2]}, Int64(3)),
        (ADD, {"$add": [Int64(LONG_MAX), 1]}, float(LONG_MAX) + 1.0),  # long overflow -> double
        (ADD, {"$add": [1, 2.5]}, 3.5),
        (ADD, {"$add": [Decimal128("1.1"), 2]}, Decimal128("3.1")),
        (ADD, {"$add": [Decimal128("1"), 0.1]}, Decimal128("1.100000000000000")),  # a double joins with 15 digits
        (ADD, {"$add": [1, "$n"]}, None),
        (ADD, {"$add": [1, "$missing"]}, None),
        (ADD, {"$add": ["$date", 3 * 24 * 60 * 60000]}, D(2014, 3, 4, 8)),
        (ADD, {"$add": [1000, "$date", 0.6]}, D(2014, 3, 1, 8, 0, 1, 1000)),  # doubles round half away from zero
        (ADD, {"$add": ["$date", Decimal128("1.5")]}, D(2014, 3, 1, 8, 0, 0, 2000)),  # decimals round half to even
        (ADD, {"$add": [D(9999, 12, 31, 23, 59, 59, 999000), 1]}, DatetimeMS(253402300800000)),
        (SUBTRACT, {"$subtract": [5, 3]}, 2),
        (SUBTRACT, {"$subtract": [-INT_MAX - 1, 1]}, Int64(-INT_MAX - 2)),
        (SUBTRACT, {"$subtract": [Int64(-LONG_MAX - 1), 1]}, float(-LONG_MAX - 1) - 1.0),
        (SUBTRACT, {"$subtract": [5.5, Decimal128("0.5")]}, Decimal128("5.00000000000000")),
        (SUBTRACT, {"$subtract": [D(2014, 3, 2), "$date"]}, Int64(16 * 3600 * 1000)),
        (SUBTRACT, {"$subtract": ["$date", 5 * 60 * 1000]}, D(2014, 3, 1, 7, 55)),
        (SUBTRACT, {"$subtract": ["$date", "$n"]}, None),
        (SUBTRACT, {"$subtract": ["$s", "$n"]}, None),  # null wins over a wrong type
        (MULTIPLY, {"$multiply": ["$price", 3]}, 30),
        (MULTIPLY, {"$multiply": []}, 1),
        (MULTIPLY, {"$multiply": [2**16, 2**16]}, Int64(2**32)),
        (MULTIPLY, {"$multiply": [Int64(2**62), 4]}, float(2**64)),
        (MULTIPLY, {"$multiply": [2, 1.5]}, 3.0),
        (MULTIPLY, {"$multiply": [Decimal128("2"), 1.5]}, Decimal128("3.00000000000000")),
        (MULTIPLY, {"$multiply": [2, "$missing", "$s"]}, None),  # the first null stops evaluation
        (DIVIDE, {"$divide": [9, 2]}, 4.5),
        (DIVIDE, {"$divide": [Int64(8), 2]}, 4.0),  # always a double without decimals
        (DIVIDE, {"$divide": [Decimal128("1"), 4]}, Decimal128("0.25")),
        (DIVIDE, {"$divide": [1, "$n"]}, None),
        (DIVIDE, {"$divide": ["$n", 0]}, None),
        (MOD, {"$mod": [10, 3]}, 1),
        (MOD, {"$mod": [-10, 3]}, -1),  # the remainder keeps the dividend's sign
        (MOD, {"$mod": [10, -3]}, 1),
        (MOD, {"$mod": [Int64(10), 3]}, Int64(1)),
        (MOD, {"$mod": [10.5, 3]}, 1.5),
        # A double divisor holding an int32 divides as an integer (mongod's ExpressionMod: Value::integral).
        (MOD, {"$mod": [10, 3.0]}, 1),
        (MOD, {"$mod": [Int64(10), 3.0]}, Int64(1)),
        (MOD, {"$mod": [Int64(500000000000), 450000000000.0]}, 50000000000.0),
        (MOD, {"$mod": [10, 3.5]}, 3.0),
        (MOD, {"$mod": [Decimal128("-10.5"), 3]}, Decimal128("-1.5")),
        (MOD, {"$mod": [Int64(-(2**63)), -1]}, Int64(0)),
        (MOD, {"$mod": [float("inf"), 2]}, float("nan")),
        (MOD, {"$mod": [1, "$missing"]}, None),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (ADD, {"$add": [1, "a"]}, 14, "$add only supports numeric or date types, not string"),
        (ADD, {"$add": ["$date", "$date"]}, 16612, "only one date allowed in an $add expression"),
        (ADD, {"$add": [[1], "$n"]}, 14, "$add only supports numeric or date types, not array"),
        (ADD, {"$add": ["$date", float("inf")]}, 15, "date overflow"),
        (ADD, {"$add": [D(2020, 1, 1), Int64(LONG_MAX)]}, 15, "date overflow"),
        (SUBTRACT, {"$subtract": ["$date", "a"]}, 14, "can't $subtract string from Date"),
        (SUBTRACT, {"$subtract": [1, "$date"]}, 14, "can't $subtract date from int"),
        (SUBTRACT, {"$subtract": ["a", 1]}, 14, "can't $subtract int from string"),
        (MULTIPLY, {"$multiply": [2, True]}, 14, "$multiply only supports numeric types, not bool"),
        (DIVIDE, {"$divide": [1, 0]}, 2, "can't $divide by zero"),
        (DIVIDE, {"$divide": [1, Decimal128("-0")]}, 2, "can't $divide by zero"),
        (DIVIDE, {"$divide": ["a", 1]}, 14, "$divide only supports numeric types, not string and int"),
        (MOD, {"$mod": [1, 0]}, 16610, "can't $mod by zero"),
        (MOD, {"$mod": [Decimal128("1"), 0]}, 5733415, "can't $mod by zero"),
        (MOD, {"$mod": [1, "a"]}, 16611, "$mod only supports numeric types, not int and string"),
    ],
)
def test_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert (raised.value.code, raised.value.errmsg) == (code, message)


def test_divide_by_zero_is_bad_value():
    with pytest.raises(CommandError) as raised:
        evaluate({"$divide": [1, 0]})
    assert raised.value.code_name == "BadValue"


@pytest.mark.parametrize(
    ("spec", "code"), [({"$subtract": [1]}, 16020), ({"$divide": [1, 2, 3]}, 16020), ({"$mod": 1}, 16020)]
)
def test_arity(spec, code):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/subtract/ (two arguments)
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


def expected_integer(n, long_operand):
    """MongoDB's type for an exact integer result: int32 if it fits and no
    operand was a long, else int64, else a double."""
    if not long_operand and -(2**31) <= n <= INT_MAX:
        return n
    if -(2**63) <= n <= LONG_MAX:
        return Int64(n)
    return float(n)


integers = st.one_of(st.integers(-(2**31), INT_MAX), st.integers(-(2**63), LONG_MAX).map(Int64))


@example(a=1025, b=Int64(9223372036854775296))  # the exact sum rounds to another double than 1025.0 + b
@given(integers, integers)
def test_integer_results_follow_the_widening_rules(a, b):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/add/#behavior
    long_operand = isinstance(a, Int64) or isinstance(b, Int64)
    same(evaluate({"$add": [a, b]}), expected_integer(int(a) + int(b), long_operand))
    difference = expected_integer(int(a) - int(b), long_operand)
    if isinstance(difference, float):  # mongod's $subtract: an overflowing difference, computed as doubles
        difference = float(a) - float(b)
    same(evaluate({"$subtract": [a, b]}), difference)
    product = int(a) * int(b)
    want = expected_integer(product, long_operand)
    if isinstance(want, float):  # the double product, computed as doubles
        want = float(a) * float(b)
    same(evaluate({"$multiply": [a, b]}), want)
