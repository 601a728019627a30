"""Array query operators: $all, $elemMatch (value and object forms), $size.

Each case is (manual page, filter, documents, the _ids that match), worked
out by hand from the page. ``$elemMatch`` and ``$size`` see an array whole;
``$all`` is an ``$and`` of equalities (or of ``$elemMatch`` conditions).
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Decimal128, Int64, Regex

from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
ALL = OPS + "all/"
ELEM_MATCH = OPS + "elemMatch/"
SIZE = OPS + "size/"
ARRAYS = "https://www.mongodb.com/docs/manual/tutorial/query-arrays/"
ARRAY_DOCS = "https://www.mongodb.com/docs/manual/tutorial/query-array-of-documents/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


def _docs(*values: Any, name: str = "a") -> list[dict[str, Any]]:
    return [{"_id": i, name: v} for i, v in enumerate(values, 1)]


# The $all page's inventory (ObjectIds replaced by 1..4).
INVENTORY = [
    {
        "_id": 1,
        "code": "xyz",
        "tags": ["school", "book", "bag", "headphone", "appliance"],
        "qty": [
            {"size": "S", "num": 10, "color": "blue"},
            {"size": "M", "num": 45, "color": "blue"},
            {"size": "L", "num": 100, "color": "green"},
        ],
    },
    {
        "_id": 2,
        "code": "abc",
        "tags": ["appliance", "school", "book"],
        "qty": [
            {"size": "6", "num": 100, "color": "green"},
            {"size": "6", "num": 50, "color": "blue"},
            {"size": "8", "num": 100, "color": "brown"},
        ],
    },
    {
        "_id": 3,
        "code": "efg",
        "tags": ["school", "book"],
        "qty": [
            {"size": "S", "num": 10, "color": "blue"},
            {"size": "M", "num": 100, "color": "blue"},
            {"size": "L", "num": 100, "color": "green"},
        ],
    },
    {
        "_id": 4,
        "code": "ijk",
        "tags": ["electronics", "school"],
        "qty": [{"size": "M", "num": 100, "color": "green"}],
    },
]

# The $elemMatch page's scores and survey.
SCORES = [{"_id": 1, "results": [82, 85, 88]}, {"_id": 2, "results": [75, 88, 89]}]
SURVEY = [
    {"_id": 1, "results": [{"product": "abc", "score": 10}, {"product": "xyz", "score": 5}]},
    {"_id": 2, "results": [{"product": "abc", "score": 8}, {"product": "xyz", "score": 7}]},
    {"_id": 3, "results": [{"product": "abc", "score": 7}, {"product": "xyz", "score": 8}]},
    {"_id": 4, "results": [{"product": "abc", "score": 7}, {"product": "def", "score": 8}]},
]

# Shapes an array operator may meet.
SHAPES = _docs(
    [1, 6],  # 1
    [[1, 6]],  # 2
    [],  # 3
    [[]],  # 4
    [{}],  # 5
    [1, {"b": 2}],  # 6
    5,  # 7
    None,  # 8
    {"0": 1},  # 9: a document, not an array
    [None],  # 10
    ["apple", 7],  # 11
)

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    # $all
    (ALL, {"tags": {"$all": ["appliance", "school", "book"]}}, INVENTORY, [1, 2]),
    (ALL, {"tags": {"$all": ["school"]}}, INVENTORY, [1, 2, 3, 4]),
    (ALL, {"tags": {"$all": [Regex("^sch"), "book"]}}, INVENTORY, [1, 2, 3]),
    (ALL, {"qty": {"$all": [{"$elemMatch": {"size": "M", "num": {"$gt": 50}}}, {"$elemMatch": {"num": 100, "color": "green"}}]}}, INVENTORY, [3, 4]),
    (ALL, {"qty.num": {"$all": [50]}}, INVENTORY, [2]),
    (ALL, {"qty.num": 50}, INVENTORY, [2]),
    (ALL, {"code": {"$all": ["xyz"]}}, INVENTORY, [1]),  # on a non-array field: equality
    (ALL, {"tags": {"$all": []}}, INVENTORY, []),  # matches nothing
    (ALL, {"a": {"$all": [[1, 6]]}}, SHAPES, [1, 2]),
    (ALL, {"a": {"$all": [1, 6]}}, SHAPES, [1]),
    (ALL, {"a": {"$all": [None]}}, SHAPES, [8, 10]),
    (ALL, {"a": {"$all": [1.0, Decimal128("6")]}}, SHAPES, [1]),
    # $elemMatch, value form: one element satisfies every condition.
    (ELEM_MATCH, {"results": {"$elemMatch": {"$gte": 80, "$lt": 85}}}, SCORES, [1]),
    (ELEM_MATCH, {"results": {"$gte": 80, "$lt": 85}}, SCORES, [1, 2]),  # without it: any elements
    (ELEM_MATCH, {"a": {"$elemMatch": {"$gt": 5}}}, SHAPES, [1, 11]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$ne": 1}}}, SHAPES, [1, 2, 4, 5, 6, 10, 11]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$exists": True}}}, SHAPES, [1, 2, 4, 5, 6, 10, 11]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$eq": None}}}, SHAPES, [10]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$regex": "^ap"}}}, SHAPES, [11]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$type": "array"}}}, SHAPES, [2, 4]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$not": {"$type": "number"}}}}, SHAPES, [2, 4, 5, 6, 10, 11]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$elemMatch": {"$gt": 5}}}}, SHAPES, [2]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$size": 0}}}, SHAPES, [4]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$in": [6, "apple"]}}}, SHAPES, [1, 11]),
    # $elemMatch, object form: one element document satisfies the query.
    (ELEM_MATCH, {"results": {"$elemMatch": {"product": "xyz", "score": {"$gte": 8}}}}, SURVEY, [3]),
    (ARRAY_DOCS, {"results.product": "xyz", "results.score": {"$gte": 8}}, SURVEY, [1, 2, 3]),
    (ELEM_MATCH, {"results": {"$elemMatch": {"product": "xyz"}}}, SURVEY, [1, 2, 3]),
    (ELEM_MATCH, {"results.product": "xyz"}, SURVEY, [1, 2, 3]),
    (ELEM_MATCH, {"results": {"$elemMatch": {"product": {"$ne": "xyz"}}}}, SURVEY, [1, 2, 3, 4]),
    (ELEM_MATCH, {"results.product": {"$ne": "xyz"}}, SURVEY, [4]),
    (ELEM_MATCH, {"results": {"$elemMatch": {"$or": [{"score": 10}, {"product": "def"}]}}}, SURVEY, [1, 4]),
    (ELEM_MATCH, {"results": {"$elemMatch": {"$and": [{"product": "abc"}, {"score": {"$lt": 8}}]}}}, SURVEY, [3, 4]),
    (ELEM_MATCH, {"results": {"$elemMatch": {"$nor": [{"product": "abc"}, {"score": {"$lt": 8}}]}}}, SURVEY, [3, 4]),
    (ELEM_MATCH, {"a": {"$elemMatch": {}}}, SHAPES, [2, 4, 5, 6]),  # any document (or array) element
    (ELEM_MATCH, {"a": {"$elemMatch": {"b": 2}}}, SHAPES, [6]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"b": {"$exists": False}}}}, SHAPES, [2, 4, 5]),
    # An element array is a document keyed "0", "1", ... to the object form.
    (ELEM_MATCH, {"a": {"$elemMatch": {"0": 1}}}, SHAPES, [2]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"1": {"$gt": 5}}}}, SHAPES, [2]),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$comment": "x", "b": 2}}}, SHAPES, [6]),
    # $size: arrays of exactly that length; not scalars, not documents.
    (SIZE, {"a": {"$size": 2}}, SHAPES, [1, 6, 11]),
    (SIZE, {"a": {"$size": 0}}, SHAPES, [3]),
    (SIZE, {"a": {"$size": 1}}, SHAPES, [2, 4, 5, 10]),
    (SIZE, {"a": {"$size": 2.0}}, SHAPES, [1, 6, 11]),
    (SIZE, {"a": {"$size": Int64(2)}}, SHAPES, [1, 6, 11]),
    (ARRAYS, {"tags": {"$size": 3}}, INVENTORY, [2]),
    (SIZE, {"qty.num": {"$size": 1}}, INVENTORY, []),  # qty.num reaches numbers, not arrays
    (SIZE, {"a.b": {"$size": 2}}, _docs([{"b": [1, 2]}], [{"b": [1]}, {"b": [3, 4]}], {"b": [1, 2, 3]}), [1, 2]),
    (SIZE, {"a": {"$size": 1, "$all": [[1, 6]]}}, SHAPES, [2]),
]  # fmt: skip


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1])[:90] for c in CASES])
def test_array(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


ERRORS: list[tuple[str, dict[str, Any], int, str, str]] = [
    # (manual page, filter, code, codeName, errmsg)
    (ALL, {"a": {"$all": 5}}, 2, "BadValue", "$all needs an array"),
    (ALL, {"a": {"$all": {"x": 1}}}, 2, "BadValue", "$all needs an array"),
    (ALL, {"a": {"$all": [{"$elemMatch": {"b": 1}}, 5]}}, 2, "BadValue", "$all/$elemMatch has to be consistent"),
    (ALL, {"a": {"$all": [{"$elemMatch": {"b": 1}}, {"b": 1}]}}, 2, "BadValue", "$all/$elemMatch has to be consistent"),
    (ALL, {"a": {"$all": [1, {"$gt": 2}]}}, 2, "BadValue", "no $ expressions in $all"),
    (ALL, {"a": {"$all": [1, {"$elemMatch": {"b": 1}}]}}, 2, "BadValue", "no $ expressions in $all"),
    (ALL, {"a": {"$all": [{"$elemMatch": 1}]}}, 2, "BadValue", "$elemMatch needs an Object"),
    (ELEM_MATCH, {"a": {"$elemMatch": 1}}, 2, "BadValue", "$elemMatch needs an Object"),
    (ELEM_MATCH, {"a": {"$elemMatch": [{"b": 1}]}}, 2, "BadValue", "$elemMatch needs an Object"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$gt": 1, "b": 1}}}, 2, "BadValue", "unknown operator: b"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$foo": 1}}}, 2, "BadValue", "unknown operator: $foo"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 1]}}}}, 2, "BadValue", "$expr can only be applied to the top-level document"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$or": [{"$expr": True}]}}}, 2, "BadValue", "$expr can only be applied to the top-level document"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$text": {"$search": "x"}}}}, 2, "BadValue", "$text can only be applied to the top-level document"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$where": "true"}}}, 2, "BadValue", "$elemMatch cannot contain $where expression"),
    (ELEM_MATCH, {"a": {"$elemMatch": {"$or": [{"$where": "true"}]}}}, 2, "BadValue", "$elemMatch cannot contain $where expression"),
    (SIZE, {"a": {"$size": -1}}, 2, "BadValue", "$size may not be negative"),
    (SIZE, {"a": {"$size": -1.0}}, 2, "BadValue", "$size may not be negative"),
    (SIZE, {"a": {"$size": 2.5}}, 2, "BadValue", "$size must be a whole number"),
    (SIZE, {"a": {"$size": float("nan")}}, 2, "BadValue", "$size must be a whole number"),
    (SIZE, {"a": {"$size": Int64(2**40)}}, 2, "BadValue", "$size must be representable as a 32-bit integer"),
    (SIZE, {"a": {"$size": "2"}}, 2, "BadValue", "$size needs a number"),
    (SIZE, {"a": {"$size": None}}, 2, "BadValue", "$size needs a number"),
    (SIZE, {"a": {"$size": Decimal128("2")}}, 2, "BadValue", "$size needs a number"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("page", "spec", "code", "code_name", "message"), ERRORS, ids=[repr(e[1])[:80] for e in ERRORS]
)
def test_array_errors(page: str, spec: dict[str, Any], code: int, code_name: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert (info.value.code, info.value.code_name, info.value.errmsg) == (code, code_name, message), page
