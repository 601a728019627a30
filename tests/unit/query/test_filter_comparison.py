"""Comparison query operators: $eq $ne $gt $gte $lt $lte $in $nin.

Each case is (manual page, filter, documents, the _ids that match), the
expected _ids worked out by hand from the page. Numbers compare by value
across int32, int64, double and Decimal128; ordering operators stay inside
the operand's type bracket; null also matches a missing field.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
EQ = OPS + "eq/"
NE = OPS + "ne/"
GT = OPS + "gt/"
GTE = OPS + "gte/"
LT = OPS + "lt/"
LTE = OPS + "lte/"
IN = OPS + "in/"
NIN = OPS + "nin/"
ORDER = "https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/"
ARRAYS = "https://www.mongodb.com/docs/manual/tutorial/query-arrays/"
NULL = "https://www.mongodb.com/docs/manual/tutorial/query-for-null-fields/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


def _docs(*values: Any, name: str = "a") -> list[dict[str, Any]]:
    """Documents _id 1, 2, ... holding each value at ``name`` (MISSING: no field)."""
    return [{"_id": i} if v is MISSING else {"_id": i, name: v} for i, v in enumerate(values, 1)]


MISSING = object()

# The $eq page's inventory.
EQ_INVENTORY = [
    {"_id": 1, "item": {"name": "ab", "code": "123"}, "qty": 15, "tags": ["A", "B", "C"]},
    {"_id": 2, "item": {"name": "cd", "code": "123"}, "qty": 20, "tags": ["B"]},
    {"_id": 3, "item": {"name": "ij", "code": "456"}, "qty": 25, "tags": ["A", "B"]},
    {"_id": 4, "item": {"name": "xy", "code": "456"}, "qty": 30, "tags": ["B", "A"]},
    {"_id": 5, "item": {"name": "mn", "code": "000"}, "qty": 20, "tags": [["A", "B"], "C"]},
]

# One of each numeric type and look-alikes of other types.
NUMBERS = _docs(
    1,  # 1 int32
    Int64(1),  # 2
    1.0,  # 3
    Decimal128("1"),  # 4
    Decimal128("1.000"),  # 5
    "1",  # 6: a string is not a number
    True,  # 7: nor is a boolean
    [1],  # 8: an array holding 1
    float("nan"),  # 9
    Decimal128("NaN"),  # 10
    -0.0,  # 11
    0,  # 12
    Decimal128("-0"),  # 13
    2**53 + 1,  # 14: an int64 no double holds
    float(2**53),  # 15
    Decimal128("0.1"),  # 16
    0.1,  # 17: the double nearest 0.1, which is not 0.1
    None,  # 18
    MISSING,  # 19
    float("inf"),  # 20
    Decimal128("-Infinity"),  # 21
)

# One value of each type bracket, in the manual's order, with missing.
DATE = datetime.datetime(2024, 5, 1)
OID = ObjectId("65f000000000000000000000")
BRACKETS = _docs(
    MinKey(),  # 1
    None,  # 2
    5,  # 3
    "m",  # 4
    {"k": 1},  # 5
    b"\x01",  # 6 binData
    OID,  # 7
    False,  # 8
    DATE,  # 9
    Timestamp(10, 1),  # 10
    Regex("^m"),  # 11
    MaxKey(),  # 12
    MISSING,  # 13
)

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    # $eq: the manual's examples.
    (EQ, {"qty": {"$eq": 20}}, EQ_INVENTORY, [2, 5]),
    (EQ, {"qty": 20}, EQ_INVENTORY, [2, 5]),
    (EQ, {"item.name": {"$eq": "ab"}}, EQ_INVENTORY, [1]),
    (EQ, {"tags": {"$eq": "B"}}, EQ_INVENTORY, [1, 2, 3, 4]),
    (EQ, {"tags": {"$eq": ["A", "B"]}}, EQ_INVENTORY, [3, 5]),
    (EQ, {"item": {"$eq": {"name": "ab", "code": "123"}}}, EQ_INVENTORY, [1]),
    (EQ, {"item": {"code": "123", "name": "ab"}}, EQ_INVENTORY, []),  # field order matters
    # Numbers: by value across types; NaN equals only NaN; -0 == 0.
    (ORDER, {"a": 1}, NUMBERS, [1, 2, 3, 4, 5, 8]),
    (ORDER, {"a": Int64(1)}, NUMBERS, [1, 2, 3, 4, 5, 8]),
    (ORDER, {"a": Decimal128("1.0")}, NUMBERS, [1, 2, 3, 4, 5, 8]),
    (ORDER, {"a": {"$eq": 1.0}}, NUMBERS, [1, 2, 3, 4, 5, 8]),
    (ORDER, {"a": float("nan")}, NUMBERS, [9, 10]),
    (ORDER, {"a": Decimal128("NaN")}, NUMBERS, [9, 10]),
    (ORDER, {"a": 0}, NUMBERS, [11, 12, 13]),
    (ORDER, {"a": -0.0}, NUMBERS, [11, 12, 13]),
    (ORDER, {"a": 2**53 + 1}, NUMBERS, [14]),
    (ORDER, {"a": float(2**53)}, NUMBERS, [15]),
    (ORDER, {"a": Decimal128("0.1")}, NUMBERS, [16]),
    (ORDER, {"a": 0.1}, NUMBERS, [17]),
    (ORDER, {"a": float("inf")}, NUMBERS, [20]),
    (ORDER, {"a": Decimal128("Infinity")}, NUMBERS, [20]),
    (ORDER, {"a": "1"}, NUMBERS, [6]),
    (ORDER, {"a": True}, NUMBERS, [7]),
    # Ordering: numbers only, NaN never (except $gte/$lte NaN, which is NaN).
    (GT, {"a": {"$gt": 0}}, NUMBERS, [1, 2, 3, 4, 5, 8, 14, 15, 16, 17, 20]),
    (GT, {"a": {"$gt": Decimal128("0.1")}}, NUMBERS, [1, 2, 3, 4, 5, 8, 14, 15, 17, 20]),
    (GT, {"a": {"$gt": 0.1}}, NUMBERS, [1, 2, 3, 4, 5, 8, 14, 15, 20]),
    (GT, {"a": {"$gt": float(2**53)}}, NUMBERS, [14, 20]),
    (GT, {"a": {"$gt": float("nan")}}, NUMBERS, []),
    (GTE, {"a": {"$gte": float("nan")}}, NUMBERS, [9, 10]),
    (GTE, {"a": {"$gte": 1}}, NUMBERS, [1, 2, 3, 4, 5, 8, 14, 15, 20]),
    (LT, {"a": {"$lt": 1}}, NUMBERS, [11, 12, 13, 16, 17, 21]),
    (LT, {"a": {"$lt": Decimal128("NaN")}}, NUMBERS, []),
    (LTE, {"a": {"$lte": -0.0}}, NUMBERS, [11, 12, 13, 21]),
    (LTE, {"a": {"$lte": float("nan")}}, NUMBERS, [9, 10]),
    (LT, {"a": {"$lt": float("-inf")}}, NUMBERS, []),
    (GT, {"a": {"$gt": "0"}}, NUMBERS, [6]),  # strings compare with strings only
    (GT, {"a": {"$gt": False}}, NUMBERS, [7]),
    # Type brackets: an ordering operand only meets values of its bracket...
    (ORDER, {"a": {"$gt": 4}}, BRACKETS, [3]),
    (ORDER, {"a": {"$lt": "z"}}, BRACKETS, [4]),
    (ORDER, {"a": {"$gte": {}}}, BRACKETS, [5]),
    (ORDER, {"a": {"$gt": b""}}, BRACKETS, [6]),
    (ORDER, {"a": {"$gte": OID}}, BRACKETS, [7]),
    (ORDER, {"a": {"$lt": True}}, BRACKETS, [8]),
    (ORDER, {"a": {"$lte": DATE}}, BRACKETS, [9]),
    (ORDER, {"a": {"$gt": Timestamp(9, 9)}}, BRACKETS, [10]),
    (ORDER, {"a": {"$gt": datetime.datetime(1970, 1, 1)}}, BRACKETS, [9]),  # a date is no timestamp
    # ... except MinKey and MaxKey operands, which bound every value, missing too.
    (ORDER, {"a": {"$gt": MinKey()}}, BRACKETS, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]),
    (ORDER, {"a": {"$gte": MinKey()}}, BRACKETS, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]),
    (ORDER, {"a": {"$lt": MaxKey()}}, BRACKETS, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13]),
    (ORDER, {"a": {"$lt": MinKey()}}, BRACKETS, []),
    (ORDER, {"a": {"$gt": MaxKey()}}, BRACKETS, []),
    (ORDER, {"a": MinKey()}, BRACKETS, [1]),
    (ORDER, {"a": MaxKey()}, BRACKETS, [12]),
    # null compares equal to null and missing; nothing is above or below it.
    (NULL, {"a": None}, BRACKETS, [2, 13]),
    (NULL, {"a": {"$eq": None}}, BRACKETS, [2, 13]),
    (ORDER, {"a": {"$gte": None}}, BRACKETS, [2, 13]),
    (ORDER, {"a": {"$lte": None}}, BRACKETS, [2, 13]),
    (ORDER, {"a": {"$gt": None}}, BRACKETS, []),
    (ORDER, {"a": {"$lt": None}}, BRACKETS, []),
    # Regex: a plain regex value matches strings, $eq compares regexes as values.
    (EQ, {"a": Regex("^m")}, BRACKETS, [4, 11]),
    (EQ, {"a": {"$eq": Regex("^m")}}, BRACKETS, [11]),
    (EQ, {"a": {"$eq": Regex("^m", "i")}}, BRACKETS, []),
    # Documents compare field by field: type bracket, name, value; a prefix is smaller.
    (ORDER, {"a": {"$gt": {"x": 1}}}, _docs({"x": 2}, {"x": 1, "y": 0}, {"y": 0}, {"x": "s"}, {"x": 0}, {}, {"w": 9}, {"x": 1}), [1, 2, 3, 4]),
    (ORDER, {"a": {"$lt": {"x": 1}}}, _docs({"x": 2}, {"x": 1, "y": 0}, {"y": 0}, {"x": "s"}, {"x": 0}, {}, {"w": 9}, {"x": 1}), [5, 6, 7]),
    (ORDER, {"a": {"x": 1, "y": 2}}, _docs({"x": 1, "y": 2}, {"x": 1.0, "y": Int64(2)}, {"y": 2, "x": 1}, {"x": 1}, [{"x": 1, "y": 2}]), [1, 2, 5]),
    # Arrays: whole, or element by element; a prefix is smaller.
    (ORDER, {"a": {"$gt": [1]}}, _docs([2], [1, 0], [0, 5], [[2]], [1], 5, []), [1, 2, 4]),
    (ORDER, {"a": {"$lt": [1]}}, _docs([2], [1, 0], [0, 5], [[0]], [1], 5, []), [3, 4, 7]),
    (ARRAYS, {"a": [1, 2]}, _docs([1, 2], [2, 1], [1, 2, 3], [[1, 2], 3], [1.0, Decimal128("2")], 1), [1, 4, 5]),
    (ARRAYS, {"a": []}, _docs([], [[]], [1], None, MISSING), [1, 2]),
    (ARRAYS, {"a": 5}, _docs([1, 5], [[5]], 5, [5.0], []), [1, 3, 4]),
    (ARRAYS, {"a": {"$gt": 1, "$lt": 5}}, _docs([0, 9], [3], [0, 1], 3, [[3]]), [1, 2, 4]),
    # $ne: not equal over the whole path (an array holding the value fails).
    (NE, {"a": {"$ne": 1}}, _docs([1, 2], [2, 3], 1.0, 2, None, MISSING, [[1]]), [2, 4, 5, 6, 7]),
    (NE, {"a": {"$ne": None}}, _docs(None, MISSING, [None, 1], [1], 0, []), [4, 5, 6]),
    (NE, {"a": {"$ne": [1, 2]}}, _docs([1, 2], [[1, 2]], [1], [2, 1], MISSING), [3, 4, 5]),
    (NE, {"qty": {"$ne": 20}}, EQ_INVENTORY, [1, 3, 4]),
    (NE, {"tags": {"$ne": "A"}}, EQ_INVENTORY, [2, 5]),
    # $in: equal to any; regexes match; null matches missing; [] nothing.
    (IN, {"qty": {"$in": [15, 30]}}, EQ_INVENTORY, [1, 4]),
    (IN, {"tags": {"$in": ["C", "Z"]}}, EQ_INVENTORY, [1, 5]),
    (IN, {"tags": {"$in": [Regex("^C"), "Z"]}}, EQ_INVENTORY, [1, 5]),
    (IN, {"tags": {"$in": [["A", "B"]]}}, EQ_INVENTORY, [3, 5]),
    (IN, {"a": {"$in": [1]}}, NUMBERS, [1, 2, 3, 4, 5, 8]),
    (IN, {"a": {"$in": [float("nan"), "1"]}}, NUMBERS, [6, 9, 10]),
    (IN, {"a": {"$in": [None]}}, NUMBERS, [18, 19]),
    (IN, {"a": {"$in": []}}, NUMBERS, []),
    (IN, {"a": {"$in": [Regex("^M", "i")]}}, BRACKETS, [4]),
    (IN, {"a": {"$in": [MinKey(), MaxKey()]}}, BRACKETS, [1, 12]),
    # $nin: none equal, missing fields included.
    (NIN, {"qty": {"$nin": [15, 30]}}, EQ_INVENTORY, [2, 3, 5]),
    (NIN, {"tags": {"$nin": ["C"]}}, EQ_INVENTORY, [2, 3, 4]),
    (NIN, {"price": {"$nin": [1]}}, EQ_INVENTORY, [1, 2, 3, 4, 5]),
    (NIN, {"a": {"$nin": [None]}}, NUMBERS, [i for i in range(1, 22) if i not in (18, 19)]),
    (NIN, {"a": {"$nin": []}}, NUMBERS, list(range(1, 22))),
    # (a regex matches strings and an equal regex value, so both are excluded)
    (NIN, {"a": {"$nin": [Regex("^m")]}}, BRACKETS, [1, 2, 3, 5, 6, 7, 8, 9, 10, 12, 13]),
]  # fmt: skip


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1]) for c in CASES])
def test_comparison(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


def test_ordering_never_crosses_brackets_except_min_max_key() -> None:
    # ORDER: "$gt: 4" etc. match only their own bracket, so for each bracket
    # value v, {$gte: v} and {$lte: v} together match exactly the documents
    # whose value equals v in that bracket.
    for doc in BRACKETS[1:11]:
        value = doc["a"]
        if isinstance(value, Regex) or value is None:
            continue
        both = compile_filter({"a": {"$gte": value, "$lte": value}})
        assert [d["_id"] for d in BRACKETS if both(d)] == [doc["_id"]], ORDER


ERRORS: list[tuple[str, dict[str, Any], int, str, str]] = [
    # (manual page, filter, code, codeName, errmsg)
    (IN, {"a": {"$in": 5}}, 2, "BadValue", "$in needs an array"),
    (IN, {"a": {"$in": {"x": 1}}}, 2, "BadValue", "$in needs an array"),
    (NIN, {"a": {"$nin": "x"}}, 2, "BadValue", "$nin needs an array"),
    (IN, {"a": {"$in": [1, {"$gt": 1}]}}, 2, "BadValue", "cannot nest $ under $in"),
    (NIN, {"a": {"$nin": [{"$exists": True}]}}, 2, "BadValue", "cannot nest $ under $nin"),
    (NE, {"a": {"$ne": Regex("x")}}, 2, "BadValue", "Can't have regex as arg to $ne."),
    (GT, {"a": {"$gt": Regex("x")}}, 2, "BadValue", "Can't have RegEx as arg to predicate over field"),
    (LTE, {"a": {"$lte": Regex("x")}}, 2, "BadValue", "Can't have RegEx as arg to predicate over field"),
    (OPS, {"a": {"$foo": 1}}, 2, "BadValue", "unknown operator: $foo"),
    (OPS, {"a": {"$gt": 1, "b": 1}}, 2, "BadValue", "unknown operator: b"),
]


@pytest.mark.parametrize(("page", "spec", "code", "code_name", "message"), ERRORS, ids=[repr(e[1]) for e in ERRORS])
def test_comparison_errors(page: str, spec: dict[str, Any], code: int, code_name: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert (info.value.code, info.value.code_name, info.value.errmsg) == (code, code_name, message), page


def test_in_with_dbref_documents_is_equality() -> None:
    # IN: "$in ... allows DBRefs" - a {$ref, $id} document is a value, not an operator.
    docs = [{"_id": 1, "r": {"$ref": "c", "$id": 1}}, {"_id": 2, "r": {"$ref": "c", "$id": 2}}]
    assert matched({"r": {"$in": [{"$ref": "c", "$id": 1}]}}, docs) == [1], IN
    assert matched({"r": {"$ref": "c", "$id": 2}}, docs) == [2], EQ
