"""Element query operators: $exists and $type.

Each case is (manual page, filter, documents, the _ids that match), worked
out by hand. ``$exists`` asks whether the path reaches a value (null counts,
missing does not); ``$type`` matches a value of the type, an array field by
its elements or, for "array", as a whole.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.dbref import DBRef

from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
EXISTS = OPS + "exists/"
TYPE = OPS + "type/"
NULL = "https://www.mongodb.com/docs/manual/tutorial/query-for-null-fields/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


# The $exists page's spices.
SPICES = [
    {"_id": 1, "saffron": 5, "cinnamon": 5, "mustard": None},
    {"_id": 2, "saffron": 3, "cinnamon": None, "mustard": 8},
    {"_id": 3, "saffron": None, "cinnamon": 3, "mustard": 9},
    {"_id": 4, "saffron": 1, "cinnamon": 2, "mustard": 3},
    {"_id": 5, "saffron": 2, "mustard": 5},
    {"_id": 6, "saffron": 3, "cinnamon": 2},
    {"_id": 7, "saffron": 4},
    {"_id": 8, "cinnamon": 2, "mustard": 4},
    {"_id": 9, "cinnamon": 2},
    {"_id": 10, "mustard": 6},
]

QTY = [
    {"_id": 1, "qty": 5},
    {"_id": 2, "qty": 15},
    {"_id": 3, "qty": 20},
    {"_id": 4},
    {"_id": 5, "qty": None},
]

PATHS = [
    {"_id": 1, "a": [{"b": None}]},
    {"_id": 2, "a": [1, 2]},
    {"_id": 3, "a": [{"c": 1}]},
    {"_id": 4, "a": {"b": 0}},
    {"_id": 5, "a": 5},
    {"_id": 6, "a": [{"c": 1}, {"b": 2}]},
    {"_id": 7, "a": []},
    {"_id": 8, "a": [[{"b": 1}]]},
]

# The $type page's address book: a string, a double, a long, an int, an array of strings.
ADDRESSES = [
    {"_id": 1, "address": "2030 Martin Way", "zipCode": "90698345"},
    {"_id": 2, "address": "156 Lunar Place", "zipCode": 43339374.0},
    {"_id": 3, "address": "2324 Pluto Place", "zipCode": Int64(3921412)},
    {"_id": 4, "address": "55 Saturn Ring", "zipCode": 88602117},
    {"_id": 5, "address": "104 Venus Drive", "zipCode": ["834847278", "1893289032"]},
    {"_id": 6, "address": "9 Mars Street", "zipCode": Decimal128("12345")},
]

GRADES = [
    {"_id": 1, "name": "Alice King", "classAverage": 87.33333333333333},
    {"_id": 2, "name": "Bob Jenkins", "classAverage": "83.52"},
    {"_id": 3, "name": "Cathy Hart", "classAverage": "94.06"},
    {"_id": 4, "name": "Drew Williams", "classAverage": 93},
]

READINGS = [
    {"_id": 1, "readings": [25, 23, ["Hello", "World"], 22]},
    {"_id": 2, "readings": [25, 25, 25]},
    {"_id": 3, "readings": "N/A"},
    {"_id": 4, "readings": []},
    {"_id": 5},
]

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    # $exists
    (EXISTS, {"saffron": {"$exists": True}}, SPICES, [1, 2, 3, 4, 5, 6, 7]),
    (EXISTS, {"cinnamon": {"$exists": False}}, SPICES, [5, 7, 10]),
    (EXISTS, {"qty": {"$exists": True, "$nin": [5, 15]}}, QTY, [3, 5]),
    (EXISTS, {"qty": {"$exists": 1}}, QTY, [1, 2, 3, 5]),  # any true value
    (EXISTS, {"qty": {"$exists": 0}}, QTY, [4]),
    (EXISTS, {"qty": {"$exists": None}}, QTY, [4]),
    (EXISTS, {"qty": {"$exists": "no"}}, QTY, [1, 2, 3, 5]),  # a string is true
    (EXISTS, {"a.b": {"$exists": True}}, PATHS, [1, 4, 6]),
    (EXISTS, {"a.b": {"$exists": False}}, PATHS, [2, 3, 5, 7, 8]),
    (EXISTS, {"a.1": {"$exists": True}}, PATHS, [2, 6]),
    (EXISTS, {"a.0": {"$exists": True}}, PATHS, [1, 2, 3, 6, 8]),
    (EXISTS, {"a": {"$exists": True}}, PATHS, [1, 2, 3, 4, 5, 6, 7, 8]),  # [] exists
    # null versus missing.
    (NULL, {"qty": None}, QTY, [4, 5]),
    (NULL, {"qty": {"$type": "null"}}, QTY, [5]),
    (NULL, {"qty": {"$type": 10}}, QTY, [5]),
    (NULL, {"qty": {"$exists": False}}, QTY, [4]),
    # $type by alias, by number and "number".
    (TYPE, {"zipCode": {"$type": 2}}, ADDRESSES, [1, 5]),
    (TYPE, {"zipCode": {"$type": "string"}}, ADDRESSES, [1, 5]),
    (TYPE, {"zipCode": {"$type": 1}}, ADDRESSES, [2]),
    (TYPE, {"zipCode": {"$type": "double"}}, ADDRESSES, [2]),
    (TYPE, {"zipCode": {"$type": "long"}}, ADDRESSES, [3]),
    (TYPE, {"zipCode": {"$type": 16}}, ADDRESSES, [4]),
    (TYPE, {"zipCode": {"$type": "decimal"}}, ADDRESSES, [6]),
    (TYPE, {"zipCode": {"$type": "number"}}, ADDRESSES, [2, 3, 4, 6]),
    (TYPE, {"zipCode": {"$type": 2.0}}, ADDRESSES, [1, 5]),  # a whole double names a type
    (TYPE, {"zipCode": {"$type": Int64(18)}}, ADDRESSES, [3]),
    (TYPE, {"classAverage": {"$type": [2, 1]}}, GRADES, [1, 2, 3]),
    (TYPE, {"classAverage": {"$type": ["string", "double"]}}, GRADES, [1, 2, 3]),
    (TYPE, {"classAverage": {"$type": ["number"]}}, GRADES, [1, 4]),
    # "array" matches arrays (empty ones too, and nested ones); other types match elements.
    (TYPE, {"readings": {"$type": "array"}}, READINGS, [1, 2, 4]),
    (TYPE, {"readings": {"$type": 4}}, READINGS, [1, 2, 4]),
    (TYPE, {"readings": {"$type": "string"}}, READINGS, [3]),
    (TYPE, {"readings": {"$type": "int"}}, READINGS, [1, 2]),
    (TYPE, {"readings.2": {"$type": "array"}}, READINGS, [1]),
]


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1]) for c in CASES])
def test_element(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


# Every BSON type pymongo decodes, with the alias and number the $type page gives it.
TYPED: list[tuple[Any, str, int]] = [
    (1.5, "double", 1),
    ("s", "string", 2),
    ({"x": 1}, "object", 3),
    (DBRef("c", 1), "object", 3),
    ([], "array", 4),
    (b"\x00", "binData", 5),
    (Binary(b"\x00" * 16, 4), "binData", 5),
    (ObjectId("65f000000000000000000000"), "objectId", 7),
    (True, "bool", 8),
    (datetime.datetime(2024, 1, 1), "date", 9),
    (None, "null", 10),
    (Regex("x", "i"), "regex", 11),
    (Code("f()"), "javascript", 13),
    (Code("f()", {"a": 1}), "javascriptWithScope", 15),
    (7, "int", 16),
    (-(2**31), "int", 16),
    (2**31, "long", 18),  # an int beyond int32 is stored as int64
    (Timestamp(1, 1), "timestamp", 17),
    (Int64(7), "long", 18),
    (Decimal128("7"), "decimal", 19),
    (MinKey(), "minKey", -1),
    (MaxKey(), "maxKey", 127),
]
NUMERIC = {"double", "int", "long", "decimal"}


@pytest.mark.parametrize(("value", "alias", "number"), TYPED, ids=[repr(t[0]) for t in TYPED])
def test_type_aliases_and_numbers(value: Any, alias: str, number: int) -> None:
    doc = {"_id": 1, "f": value}
    for spec in ({"$type": alias}, {"$type": number}, {"$type": [alias]}, {"$type": ["minKey", number]}):
        assert compile_filter({"f": spec})(doc), (TYPE, spec)
    assert compile_filter({"f": {"$type": "number"}})(doc) == (alias in NUMERIC), TYPE
    others = [name for _, name, _ in TYPED if name != alias]
    assert not compile_filter({"f": {"$type": others}})(doc) or alias == "array", TYPE


ERRORS: list[tuple[str, dict[str, Any], int, str, str]] = [
    # (manual page, filter, code, codeName, errmsg)
    (TYPE, {"a": {"$type": "foo"}}, 2, "BadValue", "Unknown type name alias: foo"),
    (TYPE, {"a": {"$type": ["string", "strings"]}}, 2, "BadValue", "Unknown type name alias: strings"),
    (TYPE, {"a": {"$type": 100}}, 2, "BadValue", "Invalid numerical type code: 100"),
    (TYPE, {"a": {"$type": 0}}, 2, "BadValue", "Invalid numerical type code: 0"),  # no longer $exists: false
    (TYPE, {"a": {"$type": 2.5}}, 2, "BadValue", "Invalid numerical type code: 2.5"),
    (TYPE, {"a": {"$type": {"x": 1}}}, 14, "TypeMismatch", "type must be represented as a number or a string"),
    (TYPE, {"a": {"$type": [True]}}, 14, "TypeMismatch", "type must be represented as a number or a string"),
    (TYPE, {"a": {"$type": []}}, 9, "FailedToParse", "$type must match at least one type"),
]


@pytest.mark.parametrize(("page", "spec", "code", "code_name", "message"), ERRORS, ids=[repr(e[1]) for e in ERRORS])
def test_element_errors(page: str, spec: dict[str, Any], code: int, code_name: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert (info.value.code, info.value.code_name, info.value.errmsg) == (code, code_name, message), page
