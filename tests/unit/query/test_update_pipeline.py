"""Replacement documents and update pipelines.

Cases follow the manual pages cited and the CRUD spec tests
(updateOne-pipeline.json, updateMany-pipeline.json, replaceOne.json,
*-let.json, *dots_and_dollars.json) of MongoDB's specifications repository.
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Timestamp

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.update import compile_update

NOW = datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)
SPEC = "https://github.com/mongodb/specifications/tree/master/source/crud/tests/unified"
PIPE = "https://www.mongodb.com/docs/manual/tutorial/update-with-aggregation-pipeline/"
REPLACE = "https://www.mongodb.com/docs/manual/reference/method/db.collection.replaceOne/"
T_DOC = {"_id": 1, "x": 1, "y": 1, "t": {"u": {"v": 1}}}


def run(spec, doc, inserting=False, let=None):
    return compile_update(spec, Context(variables=dict(let or {}), now=NOW)).apply(doc, inserting=inserting)


def same(got, want):
    assert bson.encode(got) == bson.encode(want), (got, want)


CASES = [
    # Replacement: the new document keeps the old _id, first.
    (REPLACE, {"x": 111}, {"_id": 2, "x": 22}, {"_id": 2, "x": 111}),
    (REPLACE, {"_id": 1, "x": 111}, {"_id": 1, "x": 11}, {"_id": 1, "x": 111}),
    (REPLACE, {"x": 1, "_id": 1}, {"_id": 1, "y": 2}, {"_id": 1, "x": 1}),
    (REPLACE, {}, {"_id": 1, "y": 2}, {"_id": 1}),
    (REPLACE, {"a.b": 1}, {"_id": 1}, {"_id": 1, "a.b": 1}),
    (REPLACE, {"a": {"$b": 1}}, {"_id": 1}, {"_id": 1, "a": {"$b": 1}}),
    (REPLACE, {"a": {"b.c": 1}}, {"_id": 1}, {"_id": 1, "a": {"b.c": 1}}),
    # _id values are compared by value, as MongoDB compares the immutable field.
    (REPLACE, {"_id": 1.0, "x": 1}, {"_id": 1}, {"_id": 1.0, "x": 1}),
    # Pipelines.
    (SPEC, [{"$project": {"x": 1}}, {"$addFields": {"foo": 1}}], T_DOC, {"_id": 1, "x": 1, "foo": 1}),
    (
        SPEC,
        [{"$replaceRoot": {"newRoot": "$t"}}, {"$addFields": {"foo": 1}}],
        T_DOC,
        {"_id": 1, "u": {"v": 1}, "foo": 1},
    ),
    (SPEC, [{"$addFields": {"foo": 1}}], {"_id": 1, "x": 1}, {"_id": 1, "x": 1, "foo": 1}),
    (PIPE, [{"$set": {"modified": "$$NOW"}}], {"_id": 1}, {"_id": 1, "modified": NOW}),
    (PIPE, [{"$set": {"t.w": 2, "x": "$y"}}], T_DOC, {"_id": 1, "x": 1, "y": 1, "t": {"u": {"v": 1}, "w": 2}}),
    (PIPE, [{"$set": {"t": {"w": "$x"}}}], T_DOC, {"_id": 1, "x": 1, "y": 1, "t": {"u": {"v": 1}, "w": 1}}),
    (PIPE, [{"$set": {"a.b": 5}}], {"_id": 1, "a": [{"c": 1}, 2]}, {"_id": 1, "a": [{"c": 1, "b": 5}, {"b": 5}]}),
    (PIPE, [{"$set": {"x": "$$REMOVE", "z": "$missing"}}], {"_id": 1, "x": 1, "y": 2}, {"_id": 1, "y": 2}),
    (
        PIPE,
        [{"$set": {"flag": {"$cond": [{"$eq": ["$x", 1]}, "one", "other"]}}}],
        {"_id": 1, "x": 1},
        {"_id": 1, "x": 1, "flag": "one"},
    ),
    (PIPE, [{"$unset": ["y", "t.u"]}], T_DOC, {"_id": 1, "x": 1, "t": {}}),
    (PIPE, [{"$unset": "x"}], {"_id": 1, "x": 1}, {"_id": 1}),
    (PIPE, [{"$project": {"_id": 0, "x": 1}}], {"_id": 1, "x": 1, "y": 2}, {"_id": 1, "x": 1}),
    (PIPE, [{"$replaceWith": {"$literal": {"k": 1}}}], {"_id": 1, "x": 1}, {"_id": 1, "k": 1}),
    (PIPE, [], {"_id": 1, "x": 1}, {"_id": 1, "x": 1}),
    # Pipelines may write top-level $-prefixed and dotted names (dots_and_dollars spec tests).
    (
        SPEC,
        [{"$replaceWith": {"$literal": {"_id": 1, "foo": {}, "$a": 1}}}],
        {"_id": 1, "foo": {}},
        {"_id": 1, "foo": {}, "$a": 1},
    ),
    (
        SPEC,
        [{"$replaceWith": {"$literal": {"_id": 1, "foo": {}, "a.b": 1}}}],
        {"_id": 1, "foo": {}},
        {"_id": 1, "foo": {}, "a.b": 1},
    ),
]


@pytest.mark.parametrize(("url", "spec", "doc", "want"), CASES)
def test_replacements_and_pipelines(url, spec, doc, want):
    same(run(spec, doc), want)


def test_pipeline_reads_let_variables():
    """CRUD spec updateMany-let.json: {$set: {x: "$$x", y: "$$y"}} with let {x: "foo", y: {$literal: "bar"}}"""
    got = run([{"$set": {"x": "$$x", "y": "$$y"}}], {"_id": 2, "name": "name"}, let={"x": "foo", "y": "bar"})
    same(got, {"_id": 2, "name": "name", "x": "foo", "y": "bar"})


def test_kinds():
    """https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/ (update parameter)"""
    ctx = Context()
    assert compile_update({"x": 1}, ctx).is_replacement
    assert compile_update({}, ctx).is_replacement
    assert not compile_update({"$set": {"x": 1}}, ctx).is_replacement
    assert compile_update([{"$set": {"x": 1}}], ctx).is_pipeline
    assert not compile_update({"x": 1}, ctx).is_pipeline


def test_zero_timestamp_in_a_replacement_becomes_now():
    """https://www.mongodb.com/docs/manual/reference/bson-types/#timestamps (empty timestamps in top-level fields)"""
    got = run({"ts": Timestamp(0, 0), "inner": {"ts": Timestamp(0, 0)}}, {"_id": 1})
    assert got["ts"] == Timestamp(1704164645, 1)
    assert got["inner"]["ts"] == Timestamp(0, 0)


def test_replacement_when_inserting_keeps_the_seed_id():
    """CRUD spec replaceOne.json: upsert with {_id: 4} filter and replacement {x: 1} inserts {_id: 4, x: 1}"""
    same(run({"x": 1}, {"_id": 4}, inserting=True), {"_id": 4, "x": 1})
    same(run({"_id": 4, "x": 1}, {"_id": 4}, inserting=True), {"_id": 4, "x": 1})
    same(run({"x": 1}, {}, inserting=True), {"x": 1})
    same(run({"x": 1, "$y": 2}, {}, inserting=True), {"x": 1, "$y": 2})


ERRORS = [
    (
        REPLACE,
        {"_id": 2, "x": 1},
        {"_id": 1},
        66,
        "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2",
    ),
    (
        REPLACE,
        {"_id": [1]},
        {"_id": 1},
        54,
        "After applying the update to the document, the (immutable) field '_id' was found to be an array or array "
        "descendant.",
    ),
    (
        "https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/dollar-prefix/",
        {"x": 1, "$rooms": 2},
        {"_id": 1},
        52,
        "The dollar ($) prefixed field '$rooms' in '$rooms' is not allowed in the context of an update's replacement "
        "document. Consider using an aggregation pipeline with $replaceWith.",
    ),
    (
        PIPE,
        [{"$set": {"_id": 2}}],
        {"_id": 1},
        66,
        "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2",
    ),
    (PIPE, [{"$match": {}}], {"_id": 1}, 72, "$match is not allowed to be used within an update"),
    (PIPE, [{"$group": {"_id": None}}], {"_id": 1}, 72, "$group is not allowed to be used within an update"),
    (PIPE, [{"$bogus": {}}], {"_id": 1}, 40324, "Unrecognized pipeline stage name: '$bogus'"),
    (
        PIPE,
        [{"$set": {}, "$unset": "a"}],
        {"_id": 1},
        40323,
        "A pipeline stage specification object must contain exactly one field.",
    ),
    (PIPE, [1], {"_id": 1}, 14, "Each element of the 'pipeline' array must be an object"),
    (PIPE, [{"$addFields": 5}], {"_id": 1}, 40272, "$addFields specification stage must be an object, got int"),
    (PIPE, [{"$set": "x"}], {"_id": 1}, 40272, "$set specification stage must be an object, got string"),
    (
        PIPE,
        [{"$set": {"$x": 1}}],
        {"_id": 1},
        16410,
        "Invalid $set :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or "
        "$setField.",
    ),
    (
        PIPE,
        [{"$set": {"a": {}}}],
        {"_id": 1},
        40180,
        "Invalid $set :: caused by :: an empty object is not a valid value. Found empty object at path a",
    ),
    (
        PIPE,
        [{"$set": {"a": {"$bogus": 1}}}],
        {"_id": 1},
        168,
        "Invalid $set :: caused by :: Unrecognized expression '$bogus'",
    ),
    (PIPE, [{"$unset": 1}], {"_id": 1}, 31002, "$unset specification must be a string or an array"),
    (
        PIPE,
        [{"$unset": []}],
        {"_id": 1},
        31119,
        "$unset specification must be a string or an array with at least one field",
    ),
    (
        PIPE,
        [{"$unset": ["a", 1]}],
        {"_id": 1},
        31120,
        "$unset specification must be a string or an array containing only string values",
    ),
    (
        PIPE,
        [{"$replaceRoot": 1}],
        {"_id": 1},
        40229,
        "expected an object as specification for $replaceRoot stage, got int",
    ),
    (PIPE, [{"$replaceRoot": {"bogus": 1}}], {"_id": 1}, 40415, "BSON field '$replaceRoot.bogus' is an unknown field."),
    (
        PIPE,
        [{"$replaceRoot": {}}],
        {"_id": 1},
        40414,
        "BSON field '$replaceRoot.newRoot' is missing but a required field",
    ),
    (
        PIPE,
        [{"$replaceRoot": {"newRoot": "$x"}}],
        {"_id": 1, "x": 5},
        40228,
        "'newRoot' expression  must evaluate to an object, but resulting value was: 5. Type of resulting value: 'int'. "
        "Input document: { _id: 1, x: 5 }",
    ),
    (
        PIPE,
        [{"$replaceWith": "$nope"}],
        {"_id": 1},
        40228,
        "'replacement document'  must evaluate to an object, but resulting value was: MISSING. Type of resulting value: "
        "'missing'. Input document: { _id: 1 }",
    ),
    (
        PIPE,
        [{"$set": {"x": "$$undefinedVar"}}],
        {"_id": 1},
        17276,
        "Invalid $set :: caused by :: Use of undefined variable: undefinedVar",
    ),
]


@pytest.mark.parametrize(("url", "spec", "doc", "code", "message"), ERRORS)
def test_replacement_and_pipeline_errors(url, spec, doc, code, message):
    with pytest.raises(CommandError) as info:
        run(spec, doc)
    assert (info.value.code, info.value.errmsg) == (code, message)


def test_input_is_not_modified():
    """https://www.mongodb.com/docs/manual/tutorial/update-with-aggregation-pipeline/"""
    doc = {"_id": 1, "a": [{"c": 1}], "t": {"u": 1}}
    before = bson.encode(doc)
    run([{"$set": {"a.b": 5, "t.w": 1}}, {"$unset": "t.u"}], doc)
    run({"z": 1}, doc)
    assert bson.encode(doc) == before
