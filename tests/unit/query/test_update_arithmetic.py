"""$inc, $mul and $bit, with MongoDB's numeric result types.

pymongo decodes int32 as ``int``, int64 as ``Int64``; results are compared
as BSON bytes so the type of every number counts.
"""

from __future__ import annotations

import bson
import pytest
from bson import Decimal128, Int64

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.update import compile_update

INC = "https://www.mongodb.com/docs/manual/reference/operator/update/inc/"
MUL = "https://www.mongodb.com/docs/manual/reference/operator/update/mul/"
BIT = "https://www.mongodb.com/docs/manual/reference/operator/update/bit/"

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1


def run(spec, doc):
    return compile_update(spec, Context()).apply(doc)


CASES = [
    (
        INC,
        {"$inc": {"quantity": -2, "metrics.orders": 1}},
        {"_id": 1, "quantity": 10, "metrics": {"orders": 2}},
        {"_id": 1, "quantity": 8, "metrics": {"orders": 3}},
    ),
    (INC, {"$inc": {"a": 5}}, {"_id": 1}, {"_id": 1, "a": 5}),
    (INC, {"$inc": {"a": Int64(5)}}, {"_id": 1}, {"_id": 1, "a": Int64(5)}),
    (INC, {"$inc": {"a.b": 1.5}}, {"_id": 1}, {"_id": 1, "a": {"b": 1.5}}),
    (INC, {"$inc": {"a.1": 1}}, {"_id": 1, "a": [1, 2]}, {"_id": 1, "a": [1, 3]}),
    # int32 + int32 overflowing becomes int64; int32 + int64 is int64.
    (INC, {"$inc": {"a": 1}}, {"_id": 1, "a": I32_MAX}, {"_id": 1, "a": Int64(I32_MAX + 1)}),
    (INC, {"$inc": {"a": -1}}, {"_id": 1, "a": -(2**31)}, {"_id": 1, "a": Int64(-(2**31) - 1)}),
    (INC, {"$inc": {"a": Int64(1)}}, {"_id": 1, "a": 1}, {"_id": 1, "a": Int64(2)}),
    (INC, {"$inc": {"a": 1}}, {"_id": 1, "a": Int64(1)}, {"_id": 1, "a": Int64(2)}),
    (INC, {"$inc": {"a": 1}}, {"_id": 1, "a": 3.5}, {"_id": 1, "a": 4.5}),
    (INC, {"$inc": {"a": 0.5}}, {"_id": 1, "a": Int64(2)}, {"_id": 1, "a": 2.5}),
    (INC, {"$inc": {"a": 1}}, {"_id": 1, "a": Decimal128("1.5")}, {"_id": 1, "a": Decimal128("2.5")}),
    (INC, {"$inc": {"a": Decimal128("0.1")}}, {"_id": 1, "a": Decimal128("0.2")}, {"_id": 1, "a": Decimal128("0.3")}),
    # A double entering Decimal128 arithmetic carries 15 significant digits.
    (INC, {"$inc": {"a": 0.5}}, {"_id": 1, "a": Decimal128("1")}, {"_id": 1, "a": Decimal128("1.500000000000000")}),
    # $mul: the type table of the manual page.
    (
        MUL,
        {"$mul": {"price": Decimal128("1.25"), "qty": 2}},
        {"_id": 1, "price": Decimal128("10.99"), "qty": 25},
        {"_id": 1, "price": Decimal128("13.7375"), "qty": 50},
    ),
    (
        MUL,
        {"$mul": {"price": Int64(100)}},
        {"_id": 2, "item": "Unknown"},
        {"_id": 2, "item": "Unknown", "price": Int64(0)},
    ),
    (MUL, {"$mul": {"price": 5}}, {"_id": 3, "price": Int64(10)}, {"_id": 3, "price": Int64(50)}),
    (MUL, {"$mul": {"a": 2.5}}, {"_id": 1}, {"_id": 1, "a": 0.0}),
    (MUL, {"$mul": {"a": 2}}, {"_id": 1}, {"_id": 1, "a": 0}),
    (MUL, {"$mul": {"a": Decimal128("2")}}, {"_id": 1}, {"_id": 1, "a": Decimal128("0")}),
    (MUL, {"$mul": {"a": 2}}, {"_id": 1, "a": 1.5}, {"_id": 1, "a": 3.0}),
    (MUL, {"$mul": {"a": 2.0}}, {"_id": 1, "a": 3}, {"_id": 1, "a": 6.0}),
    (MUL, {"$mul": {"a": 65536}}, {"_id": 1, "a": 65536}, {"_id": 1, "a": Int64(2**32)}),
    (MUL, {"$mul": {"a": 2}}, {"_id": 1, "a": 3}, {"_id": 1, "a": 6}),
    # $bit: and/or/xor in order; int32 with int32 stays int32.
    (BIT, {"$bit": {"expdata": {"and": 10}}}, {"_id": 1, "expdata": 13}, {"_id": 1, "expdata": 8}),
    (BIT, {"$bit": {"expdata": {"or": 5}}}, {"_id": 2, "expdata": 3}, {"_id": 2, "expdata": 7}),
    (BIT, {"$bit": {"expdata": {"xor": 5}}}, {"_id": 3, "expdata": 1}, {"_id": 3, "expdata": 4}),
    (BIT, {"$bit": {"a": {"and": 6, "or": 1}}}, {"_id": 1, "a": 3}, {"_id": 1, "a": 3}),
    (BIT, {"$bit": {"a": {"or": Int64(8)}}}, {"_id": 1, "a": 1}, {"_id": 1, "a": Int64(9)}),
    (BIT, {"$bit": {"a": {"and": 1}}}, {"_id": 1, "a": Int64(3)}, {"_id": 1, "a": Int64(1)}),
    (BIT, {"$bit": {"a": {"or": 5}}}, {"_id": 1}, {"_id": 1, "a": 5}),
    (BIT, {"$bit": {"a": {"xor": -1}}}, {"_id": 1, "a": 0}, {"_id": 1, "a": -1}),
]


@pytest.mark.parametrize(("url", "spec", "doc", "want"), CASES)
def test_arithmetic(url, spec, doc, want):
    got = run(spec, doc)
    assert bson.encode(got) == bson.encode(want), (got, want)


def test_mul_by_a_negative_double_creates_negative_zero():
    """https://www.mongodb.com/docs/manual/reference/operator/update/mul/ (a zero of the multiplier's type)"""
    got = run({"$mul": {"a": -2.5}}, {"_id": 1})
    assert got["a"] == 0.0 and str(got["a"]) == "-0.0"


ERRORS = [
    (INC, {"$inc": {"a": "x"}}, {"_id": 1}, 14, 'Cannot increment with non-numeric argument: {a: "x"}'),
    (INC, {"$inc": {"a.b": None}}, {"_id": 1}, 14, "Cannot increment with non-numeric argument: {a.b: null}"),
    (INC, {"$inc": {"a": True}}, {"_id": 1}, 14, "Cannot increment with non-numeric argument: {a: true}"),
    (MUL, {"$mul": {"a": "x"}}, {"_id": 1}, 14, 'Cannot multiply with non-numeric argument: {a: "x"}'),
    (
        INC,
        {"$inc": {"a": 1}},
        {"_id": 1, "a": "x"},
        14,
        "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string",
    ),
    (
        INC,
        {"$inc": {"a.b": 1}},
        {"_id": "k", "a": {"b": None}},
        14,
        "Cannot apply $inc to a value of non-numeric type. {_id: \"k\"} has the field 'b' of non-numeric type null",
    ),
    (
        MUL,
        {"$mul": {"a": 1}},
        {"_id": 1, "a": [1]},
        14,
        "Cannot apply $mul to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type array",
    ),
    # int64 overflow is an error, not a double.
    (
        INC,
        {"$inc": {"a": 1}},
        {"_id": 1, "a": Int64(I64_MAX)},
        2,
        "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}",
    ),
    (
        MUL,
        {"$mul": {"a": Int64(2**62)}},
        {"_id": 1, "a": 2},
        2,
        "Failed to apply $mul operations to current value ((NumberInt)2) for document {_id: 1}",
    ),
    (INC, {"$inc": {"a.b": 1}}, {"_id": 1, "a": 5}, 28, "Cannot create field 'b' in element {a: 5}"),
    (
        BIT,
        {"$bit": {"a": 5}},
        {"_id": 1},
        2,
        "The $bit modifier is not compatible with a int. You must pass in an embedded document: "
        "{$bit: {field: {and/or/xor: #}}",
    ),
    (
        BIT,
        {"$bit": {"a": {"not": 1}}},
        {"_id": 1},
        2,
        "The $bit modifier only supports 'and', 'or', and 'xor', not 'not' which is an unknown operator: {not: 1}",
    ),
    (
        BIT,
        {"$bit": {"a": {"and": 1.0}}},
        {"_id": 1},
        2,
        "The $bit modifier field must be an Integer(32/64 bit); a 'double' is not supported here: {and: 1.0}",
    ),
    (
        BIT,
        {"$bit": {"a": {}}},
        {"_id": 1},
        2,
        "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}",
    ),
    (
        BIT,
        {"$bit": {"a": {"and": 1}}},
        {"_id": 1, "a": 1.0},
        2,
        "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of non-integer type double",
    ),
]


@pytest.mark.parametrize(("url", "spec", "doc", "code", "message"), ERRORS)
def test_arithmetic_errors(url, spec, doc, code, message):
    with pytest.raises(CommandError) as info:
        run(spec, doc)
    assert (info.value.code, info.value.errmsg) == (code, message)
