"""Field update operators, update paths, field order, conflicts and _id.

Expected documents are written out by hand from the manual pages cited; they
are compared as BSON bytes, so field order and numeric types count.
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Timestamp

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.update import compile_update

NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
CTX = Context(now=NOW)

M = "https://www.mongodb.com/docs/manual/reference/operator/update/"


def run(spec, doc, **kw):
    filters = kw.pop("array_filters", None)
    return compile_update(spec, CTX, filters).apply(doc, **kw)


def same(got, want):
    assert bson.encode(got) == bson.encode(want), (got, want)


CASES = [
    # $set
    (M + "set/", {"$set": {"a": 2}}, {"_id": 1, "a": 1, "b": 1}, {"_id": 1, "a": 2, "b": 1}),
    (M + "set/", {"$set": {"c": 3}}, {"_id": 1, "a": 1}, {"_id": 1, "a": 1, "c": 3}),
    (M + "set/", {"$set": {"d.e.f": 1}}, {"_id": 1}, {"_id": 1, "d": {"e": {"f": 1}}}),
    (
        M + "set/",
        {"$set": {"details.make": "Kustom"}},
        {"_id": 1, "details": {"model": "14Q3", "make": "X"}},
        {"_id": 1, "details": {"model": "14Q3", "make": "Kustom"}},
    ),
    (
        M + "set/",
        {"$set": {"tags.1": "rain gear"}},
        {"_id": 1, "tags": ["a", "b"]},
        {"_id": 1, "tags": ["a", "rain gear"]},
    ),
    (M + "set/", {"$set": {"a.3": 1}}, {"_id": 1, "a": [0]}, {"_id": 1, "a": [0, None, None, 1]}),
    (M + "set/", {"$set": {"a.1.b": 1}}, {"_id": 1, "a": []}, {"_id": 1, "a": [None, {"b": 1}]}),
    (M + "set/", {"$set": {"a.0": 1}}, {"_id": 1, "a": {}}, {"_id": 1, "a": {"0": 1}}),
    (M + "set/", {"$set": {}}, {"_id": 1, "a": 1}, {"_id": 1, "a": 1}),
    (M + "set/", {"$set": {"a": {"b": [1, {"c": 2}]}}}, {"_id": 1, "a": 5}, {"_id": 1, "a": {"b": [1, {"c": 2}]}}),
    # Behavior: fields are created in lexicographic order, numeric names numerically.
    (M, {"$set": {"z": 1, "b": 1, "m.y": 1, "m.c": 1}}, {"_id": 1}, {"_id": 1, "b": 1, "m": {"c": 1, "y": 1}, "z": 1}),
    (M, {"$set": {"a.10": 10, "a.2": 2}}, {"_id": 1, "a": {}}, {"_id": 1, "a": {"2": 2, "10": 10}}),
    (M, {"$set": {"a.10": 10, "a.2": 2}}, {"_id": 1, "a": []}, {"_id": 1, "a": [None, None, 2, *[None] * 7, 10]}),
    (M, {"$set": {"a.02": 1, "a.10": 1, "a.9": 1}}, {"_id": 1, "a": {}}, {"_id": 1, "a": {"02": 1, "9": 1, "10": 1}}),
    (M, {"$inc": {"b": 1}, "$set": {"a": 1}}, {"_id": 1, "c": 1}, {"_id": 1, "c": 1, "a": 1, "b": 1}),
    # $unset
    (
        M + "unset/",
        {"$unset": {"quantity": "", "instock": ""}},
        {"_id": 1, "sku": "x", "quantity": 2, "instock": True},
        {"_id": 1, "sku": "x"},
    ),
    (M + "unset/", {"$unset": {"a.1": ""}}, {"_id": 1, "a": [1, 2, 3]}, {"_id": 1, "a": [1, None, 3]}),
    (M + "unset/", {"$unset": {"nope": ""}}, {"_id": 1, "a": 1}, {"_id": 1, "a": 1}),
    (M + "unset/", {"$unset": {"a.b.c": ""}}, {"_id": 1, "a": 5}, {"_id": 1, "a": 5}),
    (M + "unset/", {"$unset": {"a.b": ""}}, {"_id": 1, "a": {"b": 1, "c": 2}}, {"_id": 1, "a": {"c": 2}}),
    # $setOnInsert does nothing on an update of an existing document.
    (
        M + "setOnInsert/",
        {"$set": {"item": "apple"}, "$setOnInsert": {"defaultQty": 100}},
        {"_id": 1},
        {"_id": 1, "item": "apple"},
    ),
    # $min / $max compare in BSON order.
    (
        M + "min/",
        {"$min": {"lowScore": 150}},
        {"_id": 1, "highScore": 800, "lowScore": 200},
        {"_id": 1, "highScore": 800, "lowScore": 150},
    ),
    (M + "min/", {"$min": {"lowScore": 250}}, {"_id": 1, "lowScore": 200}, {"_id": 1, "lowScore": 200}),
    (
        M + "min/",
        {"$min": {"d": datetime.datetime(2013, 9, 25)}},
        {"_id": 1, "d": datetime.datetime(2014, 1, 1)},
        {"_id": 1, "d": datetime.datetime(2013, 9, 25)},
    ),
    (M + "min/", {"$min": {"a": "s"}}, {"_id": 1, "a": 5}, {"_id": 1, "a": 5}),
    (M + "min/", {"$min": {"a": 3}}, {"_id": 1}, {"_id": 1, "a": 3}),
    (M + "max/", {"$max": {"highScore": 950}}, {"_id": 1, "highScore": 800}, {"_id": 1, "highScore": 950}),
    (M + "max/", {"$max": {"highScore": 870}}, {"_id": 1, "highScore": 950}, {"_id": 1, "highScore": 950}),
    (M + "max/", {"$max": {"a": "s"}}, {"_id": 1, "a": 5}, {"_id": 1, "a": "s"}),
    # $currentDate: a date, or a timestamp of the same second.
    (
        M + "currentDate/",
        {"$currentDate": {"lastModified": True, "cancellation.date": {"$type": "timestamp"}}},
        {"_id": 1, "status": "a"},
        {"_id": 1, "status": "a", "cancellation": {"date": Timestamp(1714979289, 1)}, "lastModified": NOW},
    ),
    (M + "currentDate/", {"$currentDate": {"d": False}}, {"_id": 1, "d": 1}, {"_id": 1, "d": NOW}),
    (M + "currentDate/", {"$currentDate": {"d": {"$type": "date"}}}, {"_id": 1}, {"_id": 1, "d": NOW}),
    # $rename: a $set of the destination then an $unset of the source.
    (
        M + "rename/",
        {"$rename": {"nmae": "name"}},
        {"_id": 1, "alias": ["x"], "nmae": {"first": "a"}, "mobile": "5"},
        {"_id": 1, "alias": ["x"], "mobile": "5", "name": {"first": "a"}},
    ),
    (
        M + "rename/",
        {"$rename": {"name.first": "name.fname"}},
        {"_id": 1, "name": {"first": "a", "last": "b"}},
        {"_id": 1, "name": {"last": "b", "fname": "a"}},
    ),
    (M + "rename/", {"$rename": {"wife": "spouse"}}, {"_id": 1, "a": 1}, {"_id": 1, "a": 1}),
    (M + "rename/", {"$rename": {"a": "b"}}, {"_id": 1, "a": 1, "b": 2, "c": 3}, {"_id": 1, "b": 1, "c": 3}),
    (
        M + "rename/",
        {"$rename": {"a": "x.y"}},
        {"_id": 1, "a": [1], "x": {"z": 0}},
        {"_id": 1, "x": {"z": 0, "y": [1]}},
    ),
    (M + "rename/", {"$rename": {"a.b": "a.c"}}, {"_id": 1, "a": {"b": 1}}, {"_id": 1, "a": {"c": 1}}),
    # _id may be set to its own value (binary equal) and created when absent.
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$set": {"_id": 1, "a": 2}},
        {"_id": 1, "a": 1},
        {"_id": 1, "a": 2},
    ),
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$set": {"_id.a": 1}},
        {"_id": {"a": 1}},
        {"_id": {"a": 1}},
    ),
    # Dollar and dot field names below the top level are allowed (MongoDB 5.0+).
    (
        "https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/dollar-prefix/",
        {"$set": {"address.$street": "Elm"}},
        {"_id": 1, "address": {"$number": 1}},
        {"_id": 1, "address": {"$number": 1, "$street": "Elm"}},
    ),
]


@pytest.mark.parametrize(("url", "spec", "doc", "want"), CASES)
def test_field_operators(url, spec, doc, want):
    same(run(spec, doc), want)


ERRORS = [
    # Paths that cannot be created.
    (M + "set/", {"$set": {"a.b": 1}}, {"_id": 1, "a": 1}, 28, "Cannot create field 'b' in element {a: 1}"),
    (
        M + "set/",
        {"$set": {"a.b.c": 1}},
        {"_id": 1, "a": {"b": "x"}},
        28,
        "Cannot create field 'c' in element {b: \"x\"}",
    ),
    (M + "set/", {"$set": {"a.b": 1}}, {"_id": 1, "a": [1, 2]}, 28, "Cannot create field 'b' in element {a: [ 1, 2 ]}"),
    (M + "set/", {"$set": {"a.1.b": 1}}, {"_id": 1, "a": [1, 2]}, 28, "Cannot create field 'b' in element {1: 2}"),
    (
        M + "set/",
        {"$set": {"a..b": 1}},
        {"_id": 1},
        56,
        "The update path 'a..b' contains an empty field name, which is not allowed.",
    ),
    (M + "set/", {"$set": {"": 1}}, {"_id": 1}, 56, "An empty update path is not valid."),
    # Unknown operators, malformed operator arguments.
    (
        M,
        {"$foo": {"a": 1}},
        {"_id": 1},
        9,
        "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array",
    ),
    (
        M,
        {"$set": {"a": 1}, "b": 1},
        {"_id": 1},
        9,
        "Unknown modifier: b. Expected a valid update modifier or pipeline-style update specified as an array",
    ),
    (
        M,
        {"$set": 5},
        {"_id": 1},
        9,
        "Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 5}",
    ),
    (
        M,
        {"$unset": [1]},
        {"_id": 1},
        9,
        "Modifiers operate on fields but we found type array instead. For example: {$mod: {<field>: ...}} "
        "not {$unset: [ 1 ]}",
    ),
    # Two operators on one path, or on a path and its prefix.
    (M, {"$set": {"a": 1}, "$inc": {"a": 1}}, {"_id": 1}, 40, "Updating the path 'a' would create a conflict at 'a'"),
    (M, {"$set": {"a.b": 1, "a": 1}}, {"_id": 1}, 40, "Updating the path 'a' would create a conflict at 'a'"),
    (M, {"$set": {"a": 1, "a.b": 1}}, {"_id": 1}, 40, "Updating the path 'a.b' would create a conflict at 'a'"),
    (
        M,
        {"$set": {"a.b.c": 1}, "$unset": {"a.b": 1}},
        {"_id": 1},
        40,
        "Updating the path 'a.b' would create a conflict at 'a.b'",
    ),
    (
        M + "rename/",
        {"$rename": {"a": "b"}, "$set": {"b": 1}},
        {"_id": 1},
        40,
        "Updating the path 'b' would create a conflict at 'b'",
    ),
    (
        M + "rename/",
        {"$rename": {"a": "b"}, "$set": {"a.c": 1}},
        {"_id": 1},
        40,
        "Updating the path 'a.c' would create a conflict at 'a'",
    ),
    # _id is immutable.
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$set": {"_id": 2}},
        {"_id": 1},
        66,
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    ),
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$set": {"_id": 1.0}},
        {"_id": 1},
        66,
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    ),
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$unset": {"_id": ""}},
        {"_id": 1},
        66,
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    ),
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$inc": {"_id.n": 1}},
        {"_id": {"n": 1}},
        66,
        "Performing an update on the path '_id.n' would modify the immutable field '_id'",
    ),
    (
        "https://www.mongodb.com/docs/manual/core/document/#the-_id-field",
        {"$set": {"_id.b": 1}},
        {"_id": {"a": 1}},
        66,
        "Updating the path '_id' to _id: { a: 1, b: 1 } would modify the immutable field '_id'",
    ),
    (
        M + "rename/",
        {"$rename": {"_id": "x"}},
        {"_id": 1},
        66,
        "Unsetting the path '_id' using $rename would modify the immutable field '_id'",
    ),
    # A top-level $-prefixed field may not be written by an update.
    (
        "https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/dollar-prefix/",
        {"$set": {"phone": 25.17, "$hotel": 320.10}},
        {"_id": 1},
        52,
        "The dollar ($) prefixed field '$hotel' in '$hotel' is not allowed in the context of an update's replacement "
        "document. Consider using an aggregation pipeline with $replaceWith.",
    ),
    # $currentDate arguments.
    (
        M + "currentDate/",
        {"$currentDate": {"d": 1}},
        {"_id": 1},
        2,
        "int is not valid type for $currentDate. Please use a boolean ('true') or a $type expression "
        "({$type: 'timestamp/date'}).",
    ),
    (
        M + "currentDate/",
        {"$currentDate": {"d": {"$type": "string"}}},
        {"_id": 1},
        2,
        "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}",
    ),
    (M + "currentDate/", {"$currentDate": {"d": {"x": 1}}}, {"_id": 1}, 2, "Unrecognized $currentDate option: x"),
    # $rename arguments and paths.
    (M + "rename/", {"$rename": {"a": 1}}, {"_id": 1}, 2, "The 'to' field for $rename must be a string: a: 1"),
    (
        M + "rename/",
        {"$rename": {"a": "a"}},
        {"_id": 1},
        2,
        'The source and target field for $rename must differ: a: "a"',
    ),
    (
        M + "rename/",
        {"$rename": {"a": "a.b"}},
        {"_id": 1},
        2,
        'The source and target field for $rename must not be on the same path: a: "a.b"',
    ),
    (M + "rename/", {"$rename": {"a.$": "b"}}, {"_id": 1}, 2, "The source field for $rename may not be dynamic: a.$"),
    (
        M + "rename/",
        {"$rename": {"a": "b.$[]"}},
        {"_id": 1},
        2,
        "The destination field for $rename may not be dynamic: b.$[]",
    ),
    (
        M + "rename/",
        {"$rename": {"a.0": "b"}},
        {"_id": 1, "a": [1]},
        2,
        "The source field cannot be an array element, 'a.0' in doc with _id: 1 has an array field called 'a'",
    ),
    (
        M + "rename/",
        {"$rename": {"a": "b.0"}},
        {"_id": 1, "a": 1, "b": [5]},
        2,
        "The destination field cannot be an array element, 'b.0' in doc with _id: 1 has an array field called 'b'",
    ),
    (
        M + "rename/",
        {"$rename": {"a.b": "c"}},
        {"_id": 1, "a": 1},
        28,
        "cannot use the part (a of a.b) to traverse the element ({a: 1})",
    ),
    (
        M + "rename/",
        {"$rename": {"a": "b.c"}},
        {"_id": 1, "a": 1, "b": 2},
        28,
        "Cannot create field 'c' in element {b: 2}",
    ),
]


@pytest.mark.parametrize(("url", "spec", "doc", "code", "message"), ERRORS)
def test_field_errors(url, spec, doc, code, message):
    with pytest.raises(CommandError) as info:
        run(spec, doc)
    assert info.value.code == code
    assert info.value.errmsg == message


def test_setOnInsert_applies_only_when_inserting():
    """https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/"""
    spec = {"$set": {"item": "apple"}, "$setOnInsert": {"defaultQty": 100}}
    same(run(spec, {"_id": 1}, inserting=True), {"_id": 1, "defaultQty": 100, "item": "apple"})


def test_dollar_field_allowed_when_the_upsert_inserts():
    """https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/dollar-prefix/ (upserts validate as inserts)"""
    same(
        run({"$set": {"phone": 25.17, "$hotel": 320.10}}, {"date": "2021-07-07"}, inserting=True),
        {"date": "2021-07-07", "$hotel": 320.10, "phone": 25.17},
    )


def test_set_places_a_copy_of_its_value():
    """https://www.mongodb.com/docs/manual/reference/operator/update/set/"""
    value = {"b": [1]}
    update = compile_update({"$set": {"a": value}}, CTX)
    first = update.apply({"_id": 1})
    second = update.apply({"_id": 2})
    assert first["a"] == second["a"] == value
    assert first["a"] is not value and first["a"] is not second["a"]
    assert first["a"]["b"] is not value["b"]


def test_codenames():
    """https://www.mongodb.com/docs/manual/reference/error-codes/"""
    with pytest.raises(CommandError) as info:
        run({"$set": {"a": 1}, "$unset": {"a": 1}}, {"_id": 1})
    assert info.value.code_name == "ConflictingUpdateOperators"
    with pytest.raises(CommandError) as info:
        run({"$set": {"_id": 2}}, {"_id": 1})
    assert info.value.code_name == "ImmutableField"
    with pytest.raises(CommandError) as info:
        run({"$set": {"a.b": 2}}, {"_id": 1, "a": 1})
    assert info.value.code_name == "PathNotViable"
