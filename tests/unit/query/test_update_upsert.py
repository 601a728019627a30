"""Upserts: the seed document from the filter, and updates applied to it."""

from __future__ import annotations

import bson
import pytest
from bson import Regex

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.update import compile_update, seed_from_filter

UPSERT = (
    "https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/#upsert-with-operator-expressions"
)
SPEC = "https://github.com/mongodb/specifications/tree/master/source/crud/tests/unified"


def same(got, want):
    assert bson.encode(got) == bson.encode(want), (got, want)


SEEDS = [
    (UPSERT, {"name": "Andy", "rating": 1, "score": 1}, {"name": "Andy", "rating": 1, "score": 1}),
    (UPSERT, {"_id": 4}, {"_id": 4}),
    (UPSERT, {"a": 1, "_id": 4}, {"_id": 4, "a": 1}),
    (UPSERT, {"a.b.c": 1, "a.d": 2}, {"a": {"b": {"c": 1}, "d": 2}}),
    (UPSERT, {"_id.x": 1, "_id.y": 2}, {"_id": {"x": 1, "y": 2}}),
    (UPSERT, {"a": {"$eq": 5}, "b": {"$gt": 1}, "c": {"$ne": 2}, "d": {"$in": [1, 2]}}, {"a": 5}),
    (UPSERT, {"$and": [{"a": 1}, {"$and": [{"b": 2}]}], "$or": [{"c": 3}, {"d": 4}]}, {"a": 1, "b": 2}),
    # What canonicalization turns into equalities.
    (UPSERT, {"a": {"$in": [5]}, "$or": [{"b": 6}], "c": {"$all": [7]}}, {"a": 5, "b": 6, "c": 7}),
    (UPSERT, {"a": Regex("^x"), "b": {"$in": [Regex("^y")]}, "c": {"$elemMatch": {"d": 1}}}, {}),
    (UPSERT, {"a": None, "b": [1, 2], "c": {"d": 1}}, {"a": None, "b": [1, 2], "c": {"d": 1}}),
    (UPSERT, {"$expr": {"$eq": ["$a", 1]}, "$comment": "x", "b": 1}, {"b": 1}),
    (UPSERT, {"a.0": 1}, {"a": {"0": 1}}),
    (UPSERT, {}, {}),
    (UPSERT, None, {}),
]


@pytest.mark.parametrize(("url", "filter_spec", "want"), SEEDS)
def test_seed(url, filter_spec, want):
    same(seed_from_filter(filter_spec), want)


def test_seed_values_are_copies():
    """https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/#upsert-with-operator-expressions"""
    value = {"d": [1]}
    seed = seed_from_filter({"c": value})
    assert seed["c"] == value and seed["c"] is not value


CONFLICTS = [
    ({"a": 1, "a.b": 2}, "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"),
    ({"a.b": 2, "$and": [{"a": 1}]}, "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"),
    ({"a": 1, "$and": [{"a": 1}]}, "cannot infer query fields to set, path 'a' is matched twice"),
    ({"a": {"$all": [1, 2]}}, "cannot infer query fields to set, path 'a' is matched twice"),
]


@pytest.mark.parametrize(("filter_spec", "message"), CONFLICTS)
def test_seed_conflicts(filter_spec, message):
    """https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/#upsert-with-operator-expressions"""
    with pytest.raises(CommandError) as info:
        seed_from_filter(filter_spec)
    assert (info.value.code, info.value.code_name, info.value.errmsg) == (54, "NotSingleValueField", message)


INSERTS = [
    # The manual's examples: equality fields, then the update.
    (UPSERT, {"name": "Andy", "rating": 1}, {"$inc": {"score": 1}}, {"name": "Andy", "rating": 1, "score": 1}),
    (
        UPSERT,
        {"_id": 1},
        {"$set": {"item": "apple"}, "$setOnInsert": {"defaultQty": 100}},
        {"_id": 1, "defaultQty": 100, "item": "apple"},
    ),
    (SPEC, {"_id": 4}, {"$inc": {"x": 1}}, {"_id": 4, "x": 1}),
    (SPEC, {"_id": 4}, {"x": 44}, {"_id": 4, "x": 44}),
    (SPEC, {"_id": 4}, {"_id": 4, "x": 44}, {"_id": 4, "x": 44}),
    # A replacement keeps only the seed's _id.
    (UPSERT, {"_id": 4, "name": "x"}, {"x": 1}, {"_id": 4, "x": 1}),
    (UPSERT, {"a": 1}, {"x": 1}, {"x": 1}),
    # A pipeline runs over the seed.
    (UPSERT, {"_id": 4, "a": 1}, [{"$set": {"b": "$a"}}], {"_id": 4, "a": 1, "b": 1}),
    # _id set by the update is placed first.
    (UPSERT, {"a": 1}, {"$set": {"_id": 7}}, {"_id": 7, "a": 1}),
    (UPSERT, {"a": 1}, {"$setOnInsert": {"_id": 7}}, {"_id": 7, "a": 1}),
    (UPSERT, {"_id": 5}, {"$set": {"_id": 5, "x": 1}}, {"_id": 5, "x": 1}),
]


@pytest.mark.parametrize(("url", "filter_spec", "update", "want"), INSERTS)
def test_upsert_inserts(url, filter_spec, update, want):
    seed = seed_from_filter(filter_spec)
    same(compile_update(update, Context()).apply(seed, inserting=True), want)


UPSERT_ERRORS = [
    # https://jira.mongodb.org/browse/SERVER-18076: _id from the filter may not be changed.
    (
        {"_id": 0},
        {"$setOnInsert": {"_id": 1}, "$set": {"x": 1}},
        66,
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    ),
    (
        {"_id": 0},
        {"_id": 1, "x": 1},
        66,
        "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 1",
    ),
    ({"a": 1}, {"$set": {"a.$": 1}}, 2, "The positional operator did not find the match needed from the query."),
    ({"a": 1}, {"$push": {"a": 2}}, 2, "The field 'a' must be an array but is of type int in document {no id}"),
]


@pytest.mark.parametrize(("filter_spec", "update", "code", "message"), UPSERT_ERRORS)
def test_upsert_errors(filter_spec, update, code, message):
    """https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/#upsert"""
    seed = seed_from_filter(filter_spec)
    with pytest.raises(CommandError) as info:
        compile_update(update, Context()).apply(seed, inserting=True)
    assert (info.value.code, info.value.errmsg) == (code, message)
