"""Logical query operators: $and $or $nor (top level) and $not (per field).

Each case is (manual page, filter, documents, the _ids that match), worked
out by hand from the page. ``$not`` and ``$nor`` complement a condition over
the whole path, so an array field fails ``{"$not": {"$gt": 1}}`` as soon as
one element is above 1, and a missing field passes.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Regex

from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
AND = OPS + "and/"
OR = OPS + "or/"
NOR = OPS + "nor/"
NOT = OPS + "not/"
LOGICAL = "https://www.mongodb.com/docs/manual/reference/operator/query-logical/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


# Prices and sales as the $and/$nor/$not pages use them.
ITEMS = [
    {"_id": 1, "item": "paper", "price": 1.99, "qty": 10, "sale": True},
    {"_id": 2, "item": "pens", "price": 2.5, "qty": 30, "sale": False},
    {"_id": 3, "item": "pencil", "price": 1.99, "qty": 5},
    {"_id": 4, "item": "ink", "qty": 40, "sale": True},
    {"_id": 5, "item": "eraser", "qty": 15},
    {"_id": 6, "item": "Plain", "price": 10, "qty": 25, "sale": False},
]

ARRAYS = [
    {"_id": 1, "a": [0, 5]},
    {"_id": 2, "a": [0, 1]},
    {"_id": 3, "a": 7},
    {"_id": 4},
    {"_id": 5, "a": []},
    {"_id": 6, "a": [[9]]},
]

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    # $and
    (AND, {"$and": [{"price": {"$ne": 1.99}}, {"price": {"$exists": True}}]}, ITEMS, [2, 6]),
    (AND, {"price": {"$ne": 1.99, "$exists": True}}, ITEMS, [2, 6]),  # the implicit form
    (AND, {"$and": [{"$or": [{"qty": {"$lt": 10}}, {"qty": {"$gt": 35}}]}, {"$or": [{"sale": True}, {"price": {"$lt": 2}}]}]}, ITEMS, [3, 4]),
    (AND, {"$and": [{"qty": {"$gt": 5}}, {"qty": {"$lt": 30}}]}, ITEMS, [1, 5, 6]),
    (AND, {"$and": [{}]}, ITEMS, [1, 2, 3, 4, 5, 6]),  # an empty filter matches all
    (AND, {"$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 5}}]}, ARRAYS, [1]),  # each judged over the whole array
    # $or
    (OR, {"$or": [{"qty": {"$lt": 10}}, {"price": 10}]}, ITEMS, [3, 6]),
    (OR, {"$or": [{"sale": True}, {"price": {"$exists": False}}]}, ITEMS, [1, 4, 5]),
    (OR, {"$or": [{"item": "nothing"}]}, ITEMS, []),
    (OR, {"item": "paper", "$or": [{"qty": 10}, {"qty": 11}]}, ITEMS, [1]),
    # $nor: matches documents that fail every clause, missing fields included.
    (NOR, {"$nor": [{"price": 1.99}, {"sale": True}]}, ITEMS, [2, 5, 6]),
    (NOR, {"$nor": [{"price": 1.99}, {"qty": {"$lt": 20}}, {"sale": True}]}, ITEMS, [2, 6]),
    (NOR, {"$nor": [{"price": {"$exists": False}}]}, ITEMS, [1, 2, 3, 6]),
    (NOR, {"$nor": [{"a": {"$gt": 1}}]}, ARRAYS, [2, 4, 5, 6]),
    # $not: the complement of the operator expression over the field.
    (NOT, {"price": {"$not": {"$gt": 1.99}}}, ITEMS, [1, 3, 4, 5]),
    (NOT, {"price": {"$not": {"$gt": 1.99, "$lt": 5}}}, ITEMS, [1, 3, 4, 5, 6]),
    (NOT, {"item": {"$not": Regex("^p.*")}}, ITEMS, [4, 5, 6]),
    (NOT, {"item": {"$not": {"$regex": "^p.*"}}}, ITEMS, [4, 5, 6]),
    (NOT, {"item": {"$not": {"$regex": Regex("^p.*")}}}, ITEMS, [4, 5, 6]),
    (NOT, {"item": {"$not": {"$regex": "^p.*", "$options": "i"}}}, ITEMS, [4, 5]),
    (NOT, {"item": {"$not": Regex("^p.*", "i")}}, ITEMS, [4, 5]),
    (NOT, {"a": {"$not": {"$gt": 1}}}, ARRAYS, [2, 4, 5, 6]),
    (NOT, {"a": {"$not": {"$in": [0]}}}, ARRAYS, [3, 4, 5, 6]),
    (NOT, {"a": {"$not": {"$size": 2}}}, ARRAYS, [3, 4, 5, 6]),
    (NOT, {"a": {"$not": {"$elemMatch": {"$gt": 4}}}}, ARRAYS, [2, 3, 4, 5, 6]),
    (NOT, {"a": {"$not": {"$exists": True}}}, ARRAYS, [4]),
    (NOT, {"a": {"$not": {"$not": {"$gt": 1}}}}, ARRAYS, [1, 3]),  # [[9]]: an array is not above 1
    (NOT, {"a": {"$not": {"$eq": None}}}, ARRAYS, [1, 2, 3, 5, 6]),
    (NOT, {"a": {"$not": {"$type": "array"}}}, ARRAYS, [3, 4]),
]  # fmt: skip


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1]) for c in CASES])
def test_logical(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


ERRORS: list[tuple[str, dict[str, Any], int, str, str]] = [
    # (manual page, filter, code, codeName, errmsg)
    (AND, {"$and": []}, 2, "BadValue", "$and/$or/$nor must be a nonempty array"),
    (OR, {"$or": []}, 2, "BadValue", "$and/$or/$nor must be a nonempty array"),
    (NOR, {"$nor": []}, 2, "BadValue", "$and/$or/$nor must be a nonempty array"),
    (AND, {"$and": {"a": 1}}, 2, "BadValue", "$and must be an array"),
    (OR, {"$or": 1}, 2, "BadValue", "$or must be an array"),
    (NOR, {"$nor": None}, 2, "BadValue", "$nor must be an array"),
    (OR, {"$or": [{"a": 1}, 1]}, 2, "BadValue", "$or/$and/$nor entries need to be full objects"),
    (AND, {"$and": [[{"a": 1}]]}, 2, "BadValue", "$or/$and/$nor entries need to be full objects"),
    (OR, {"$or": [{"a": {"$in": 1}}]}, 2, "BadValue", "$in needs an array"),  # branches are parsed too
    (NOT, {"a": {"$not": 5}}, 2, "BadValue", "$not needs a regex or a document"),
    (NOT, {"a": {"$not": "x"}}, 2, "BadValue", "$not needs a regex or a document"),
    (NOT, {"a": {"$not": {}}}, 2, "BadValue", "$not cannot be empty"),
    (NOT, {"a": {"$not": {"b": 1}}}, 2, "BadValue", "unknown operator: b"),
    (NOT, {"a": {"$not": {"$gt": 1, "b": 1}}}, 2, "BadValue", "unknown operator: b"),
    (NOT, {"a": {"$not": {"$foo": 1}}}, 2, "BadValue", "unknown operator: $foo"),
    # $and/$or/$nor take no path; $not takes one.
    (LOGICAL, {"a": {"$and": [{"b": 1}]}}, 2, "BadValue", "unknown operator: $and"),
    (LOGICAL, {"a": {"$or": [{"b": 1}]}}, 2, "BadValue", "unknown operator: $or"),
    (
        NOT,
        {"$not": {"a": 1}},
        2,
        "BadValue",
        "unknown top level operator: $not. If you have a field name that starts with a '$' symbol, "
        "consider using $getField or $setField.",
    ),
    (
        OPS,
        {"$foo": 1},
        2,
        "BadValue",
        "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, "
        "consider using $getField or $setField.",
    ),
]


@pytest.mark.parametrize(("page", "spec", "code", "code_name", "message"), ERRORS, ids=[repr(e[1]) for e in ERRORS])
def test_logical_errors(page: str, spec: dict[str, Any], code: int, code_name: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert (info.value.code, info.value.code_name, info.value.errmsg) == (code, code_name, message), page
