"""Dotted paths, arrays and null: the rules every field condition follows.

Each case is (manual page, filter, documents, the _ids that match), worked
out by hand from the tutorials. A path through an array of documents reaches
each element's field; a numeric component also selects an array position; a
path ending at an array offers each element and the array itself; nested
arrays are not entered implicitly; ``{"f": null}`` matches null and a missing
field, and through an array only where an element document lacks the field.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import DBRef, Int64

from foliodb.query import paths
from foliodb.query.filter import MatchDetails, compile_filter

TUTORIAL = "https://www.mongodb.com/docs/manual/tutorial/"
EMBEDDED = TUTORIAL + "query-embedded-documents/"
ARRAYS = TUTORIAL + "query-arrays/"
ARRAY_DOCS = TUTORIAL + "query-array-of-documents/"
NULL = TUTORIAL + "query-for-null-fields/"
DOT = "https://www.mongodb.com/docs/manual/core/document/#dot-notation"
POSITIONAL = "https://www.mongodb.com/docs/manual/reference/operator/update/positional/"
DBREF = "https://www.mongodb.com/docs/manual/reference/database-references/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


def _docs(*values: Any, name: str = "a") -> list[dict[str, Any]]:
    return [{"_id": i, name: v} for i, v in enumerate(values, 1)]


# query-embedded-documents' inventory.
SIZES = [
    {"_id": 1, "item": "journal", "qty": 25, "size": {"h": 14, "w": 21, "uom": "cm"}, "status": "A"},
    {"_id": 2, "item": "notebook", "qty": 50, "size": {"h": 8.5, "w": 11, "uom": "in"}, "status": "A"},
    {"_id": 3, "item": "paper", "qty": 100, "size": {"h": 8.5, "w": 11, "uom": "in"}, "status": "D"},
    {"_id": 4, "item": "planner", "qty": 75, "size": {"h": 22.85, "w": 30, "uom": "cm"}, "status": "D"},
    {"_id": 5, "item": "postcard", "qty": 45, "size": {"h": 10, "w": 15.25, "uom": "cm"}, "status": "A"},
]

# query-arrays' inventory.
TAGS = [
    {"_id": 1, "item": "journal", "qty": 25, "tags": ["blank", "red"], "dim_cm": [14, 21]},
    {"_id": 2, "item": "notebook", "qty": 50, "tags": ["red", "blank"], "dim_cm": [14, 21]},
    {"_id": 3, "item": "paper", "qty": 100, "tags": ["red", "blank", "plain"], "dim_cm": [14, 21]},
    {"_id": 4, "item": "planner", "qty": 75, "tags": ["blank", "red"], "dim_cm": [22.85, 30]},
    {"_id": 5, "item": "postcard", "qty": 45, "tags": ["blue"], "dim_cm": [10, 15.25]},
]

# query-array-of-documents' inventory.
INSTOCK = [
    {"_id": 1, "item": "journal", "instock": [{"warehouse": "A", "qty": 5}, {"warehouse": "C", "qty": 15}]},
    {"_id": 2, "item": "notebook", "instock": [{"warehouse": "C", "qty": 5}]},
    {"_id": 3, "item": "paper", "instock": [{"warehouse": "A", "qty": 60}, {"warehouse": "B", "qty": 15}]},
    {"_id": 4, "item": "planner", "instock": [{"warehouse": "A", "qty": 40}, {"warehouse": "B", "qty": 5}]},
    {"_id": 5, "item": "postcard", "instock": [{"warehouse": "B", "qty": 15}, {"warehouse": "C", "qty": 35}]},
]

# Shapes a dotted path "a.b" may run through.
THROUGH = _docs(
    {"b": 1},  # 1
    [{"b": 1}, {"b": 2}],  # 2
    [{"c": 1}],  # 3: an element document without b
    [1, 2],  # 4: scalar elements reach nothing
    [],  # 5: nothing
    5,  # 6: a scalar: b is missing
    {"b": None},  # 7
    [[{"b": 1}]],  # 8: nested arrays are not entered
    [{"b": [1, 3]}],  # 9: an array at the end offers its elements
    [1, {"c": 2}],  # 10
    {"b": [[1]]},  # 11
    None,  # 12
    [{"b": None}],  # 13
)

# Numeric components: array positions, and also field names "0", "1".
POSITIONS = _docs(
    [5, 6],  # 1
    {"0": 5},  # 2: a document with a field "0"
    [{"0": 5}],  # 3: an element document with a field "0"
    [[5]],  # 4: position 0 is an array holding 5
    [6, 5],  # 5
    [],  # 6
    [{"b": 5}, {"b": 6}],  # 7
    5,  # 8
)

# null at the top level: null, an array holding null, and missing match;
# an empty array, a nested [null] and a document do not.
NULLS = [*_docs(None, [None], [], [1, 2], [[None]], {"b": None}), {"_id": 7}]

# DBRefs are documents {$ref, $id, $db, ...}: paths step into them.
REFS = [
    {"_id": 1, "creator": DBRef("users", 5)},
    {"_id": 2, "creator": DBRef("users", 6, "accounts")},
    {"_id": 3, "refs": [DBRef("users", 5), DBRef("groups", 6)]},
    {"_id": 4, "creator": {"$ref": "users", "$id": 5, "extra": 1}},
]

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    # Embedded documents: exact match (order matters) or by dotted field.
    (EMBEDDED, {"size": {"h": 14, "w": 21, "uom": "cm"}}, SIZES, [1]),
    (EMBEDDED, {"size": {"w": 21, "h": 14, "uom": "cm"}}, SIZES, []),
    (EMBEDDED, {"size": {"h": 14, "w": 21}}, SIZES, []),  # a partial document does not match
    (EMBEDDED, {"size.uom": "in"}, SIZES, [2, 3]),
    (EMBEDDED, {"size.h": {"$lt": 15}}, SIZES, [1, 2, 3, 5]),
    (EMBEDDED, {"size.h": {"$lt": 15}, "size.uom": "in", "status": "D"}, SIZES, [3]),
    (EMBEDDED, {"size.depth": None}, SIZES, [1, 2, 3, 4, 5]),
    # Arrays: exact array, $all, an element, conditions on elements, positions.
    (ARRAYS, {"tags": ["red", "blank"]}, TAGS, [2]),
    (ARRAYS, {"tags": {"$all": ["red", "blank"]}}, TAGS, [1, 2, 3, 4]),
    (ARRAYS, {"tags": "red"}, TAGS, [1, 2, 3, 4]),
    (ARRAYS, {"dim_cm": {"$gt": 25}}, TAGS, [4]),
    (ARRAYS, {"dim_cm": {"$gt": 15, "$lt": 20}}, TAGS, [1, 2, 3, 5]),
    (ARRAYS, {"dim_cm": {"$elemMatch": {"$gt": 22, "$lt": 30}}}, TAGS, [4]),
    (ARRAYS, {"dim_cm.1": {"$gt": 25}}, TAGS, [4]),
    (ARRAYS, {"tags": {"$size": 3}}, TAGS, [3]),
    (ARRAYS, {"tags.0": "red"}, TAGS, [2, 3]),
    (ARRAYS, {"tags.5": {"$exists": True}}, TAGS, []),
    # Arrays of documents.
    (ARRAY_DOCS, {"instock": {"warehouse": "A", "qty": 5}}, INSTOCK, [1]),
    (ARRAY_DOCS, {"instock": {"qty": 5, "warehouse": "A"}}, INSTOCK, []),
    (ARRAY_DOCS, {"instock.qty": {"$lte": 20}}, INSTOCK, [1, 2, 3, 4, 5]),
    (ARRAY_DOCS, {"instock.0.qty": {"$lte": 20}}, INSTOCK, [1, 2, 5]),
    (ARRAY_DOCS, {"instock": {"$elemMatch": {"qty": 5, "warehouse": "A"}}}, INSTOCK, [1]),
    (ARRAY_DOCS, {"instock": {"$elemMatch": {"qty": {"$gt": 10, "$lte": 20}}}}, INSTOCK, [1, 3, 5]),
    (ARRAY_DOCS, {"instock.qty": {"$gt": 10, "$lte": 20}}, INSTOCK, [1, 3, 4, 5]),
    (ARRAY_DOCS, {"instock.qty": 5, "instock.warehouse": "A"}, INSTOCK, [1, 4]),
    (ARRAY_DOCS, {"instock.1.warehouse": "C"}, INSTOCK, [1, 5]),
    # Through arrays, element documents are entered, scalars and nested arrays are not.
    (DOT, {"a.b": 1}, THROUGH, [1, 2, 9]),  # [[1]] at 11 is not entered
    (DOT, {"a.b": {"$gt": 2}}, THROUGH, [9]),
    (DOT, {"a.b": [1, 3]}, THROUGH, [9]),
    (DOT, {"a.b": {"$exists": True}}, THROUGH, [1, 2, 7, 9, 11, 13]),
    (DOT, {"a.b": {"$exists": False}}, THROUGH, [3, 4, 5, 6, 8, 10, 12]),
    # Null: null or missing; through arrays, element documents lacking the field.
    (NULL, {"a.b": None}, THROUGH, [3, 6, 7, 10, 12, 13]),
    (NULL, {"a.b": {"$eq": None}}, THROUGH, [3, 6, 7, 10, 12, 13]),
    (NULL, {"a.b": {"$in": [None]}}, THROUGH, [3, 6, 7, 10, 12, 13]),
    (NULL, {"a.b": {"$ne": None}}, THROUGH, [1, 2, 4, 5, 8, 9, 11]),
    (NULL, {"a.b": {"$type": "null"}}, THROUGH, [7, 13]),
    (NULL, {"a": None}, NULLS, [1, 2, 7]),
    (NULL, {"a": {"$nin": [None]}}, NULLS, [3, 4, 5, 6]),
    # Numeric components: a position, and a field of that name.
    (DOT, {"a.0": 5}, POSITIONS, [1, 2, 3, 4]),
    (DOT, {"a.1": 5}, POSITIONS, [5]),
    (DOT, {"a.0": {"$gt": 5}}, POSITIONS, [5]),
    (DOT, {"a.0": {"$exists": False}}, POSITIONS, [6, 8]),
    (DOT, {"a.0.b": 5}, POSITIONS, [7]),
    (DOT, {"a.1.b": 5}, POSITIONS, []),
    (DOT, {"a.1.b": 6}, POSITIONS, [7]),
    (DOT, {"a.0": [5]}, POSITIONS, [4]),
    (DOT, {"a.00": 5}, POSITIONS, []),  # "00" is a field name only, and no document has it
    # Deeper paths through several arrays of documents.
    (DOT, {"a.b.c": 1}, _docs([{"b": [{"c": 1}]}], [{"b": {"c": [1]}}], [{"b": [{"c": 2}]}, {"b": {"c": 1}}], [{"b": [[{"c": 1}]]}]), [1, 2, 3]),
    (DOT, {"a.b.c": None}, _docs([{"b": [{"c": 1}]}], [{"b": [{"d": 1}]}], [{"b": 1}], [{"b": [1]}]), [2, 3]),
    # DBRef fields by dot notation, and $elemMatch over an array of DBRefs.
    (DBREF, {"creator.$id": 5}, REFS, [1, 4]),
    (DBREF, {"creator.$ref": "users", "creator.$db": "accounts"}, REFS, [2]),
    (DBREF, {"creator.$db": None}, REFS, [1, 3, 4]),
    (DBREF, {"refs.$ref": "groups"}, REFS, [3]),
    (DBREF, {"refs": {"$elemMatch": {"$ref": "groups", "$id": 6}}}, REFS, [3]),
    (DBREF, {"refs": {"$elemMatch": {"$ref": "users", "$id": 6}}}, REFS, []),
    (DBREF, {"creator": DBRef("users", 5)}, REFS, [1]),
    (DBREF, {"creator": {"$ref": "users", "$id": 5}}, REFS, [1]),
    (DBREF, {"creator.extra": 1}, REFS, [4]),
    # Numbers inside documents and arrays compare by value.
    (DOT, {"a": {"b": 1, "c": [2]}}, _docs({"b": 1.0, "c": [Int64(2)]}, {"b": 1, "c": [2.5]}, {"c": [2], "b": 1}), [1]),
]  # fmt: skip


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1])[:90] for c in CASES])
def test_paths(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


# MatchDetails.array_index: the position in the first array on the path of
# the element that matched, which the positional $ of updates and projections uses.
POSITIONS_OF_MATCH: list[tuple[dict[str, Any], dict[str, Any], int | None]] = [
    ({"items.sku": "b"}, {"items": [{"sku": "a"}, {"sku": "b"}]}, 1),
    ({"grades": {"$gte": 90}}, {"grades": [80, 85, 95, 90]}, 2),
    ({"grades": 85}, {"grades": [80, 85, 95]}, 1),
    ({"items": {"$elemMatch": {"sku": "c", "qty": {"$gt": 1}}}}, {"items": [{"sku": "c", "qty": 1}, {"sku": "c", "qty": 2}]}, 1),
    ({"items.qty": {"$elemMatch": {"$gt": 2}}}, {"items": [{"qty": [1]}, {"qty": [2, 3]}]}, 1),
    ({"a.b.c": 7}, {"a": [{"b": [{"c": 1}]}, {"b": [{"c": 2}, {"c": 7}]}]}, 1),
    ({"a": 1}, {"a": 1}, None),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "doc", "index"), POSITIONS_OF_MATCH, ids=[repr(p[0]) for p in POSITIONS_OF_MATCH])
def test_positional_index(spec: dict[str, Any], doc: dict[str, Any], index: int | None) -> None:
    details = MatchDetails()
    assert compile_filter(spec)(doc, details), POSITIONAL
    assert details.array_index == index, POSITIONAL


def test_other_path_readers_step_into_dbrefs() -> None:
    # DBREF: a DBRef is the document {$ref, $id, $db}, for every reader of paths.
    doc = {"r": DBRef("users", 5, "db"), "rs": [DBRef("users", 6), {"$id": 7}, 3]}
    assert paths.get_plain(doc, ("r", "$id")) == 5, DBREF
    assert paths.get_plain(doc, ("rs", "0", "$ref")) == "users", DBREF
    assert paths.get_expr(doc, ("rs", "$id")) == [6, 7], DBREF
    assert paths.leaf_values(doc, ("rs", "$id")) == [6, 7, paths.MISSING], DBREF
    assert [v for v, _ in paths.reach(doc, ("r", "$db"))] == ["db"], DBREF
