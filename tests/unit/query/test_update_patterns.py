"""Schema-design updates from the manual behave as written, and properties of
every update: the input is never modified, and a $set of a new field undone
by an $unset gives the document back."""

from __future__ import annotations

import copy

import bson
from bson import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.update import compile_update, seed_from_filter


def same(got, want):
    assert bson.encode(got) == bson.encode(want), (got, want)


def test_subset_pattern_keeps_the_last_100_comments():
    """https://www.mongodb.com/docs/manual/reference/operator/update/slice/ and
    https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/subset-pattern/"""
    doc = {"_id": 1, "title": "post", "comments": [{"n": i} for i in range(100)]}
    update = compile_update({"$push": {"comments": {"$each": [{"n": 100}], "$slice": -100}}}, Context())
    got = update.apply(doc)
    assert [c["n"] for c in got["comments"]] == list(range(1, 101))
    assert len(doc["comments"]) == 100 and doc["comments"][0] == {"n": 0}
    short = update.apply({"_id": 2, "comments": [{"n": 7}]})
    assert short["comments"] == [{"n": 7}, {"n": 100}]


def test_positional_changes_only_the_matched_line_item():
    """https://www.mongodb.com/docs/manual/reference/operator/update/positional/"""
    order = {
        "_id": 1,
        "items": [{"sku": "a1", "quantity": 1}, {"sku": "b2", "quantity": 2}, {"sku": "c3", "quantity": 3}],
    }
    details = MatchDetails()
    assert compile_filter({"_id": 1, "items.sku": "b2"})(order, details)
    got = compile_update({"$set": {"items.$.quantity": 5}}, Context()).apply(order, details.array_index)
    same(
        got,
        {
            "_id": 1,
            "items": [{"sku": "a1", "quantity": 1}, {"sku": "b2", "quantity": 5}, {"sku": "c3", "quantity": 3}],
        },
    )
    assert got["items"][0] is order["items"][0]  # untouched line items are shared, not copied


def test_helpful_vote_is_recorded_with_its_counter():
    """https://www.mongodb.com/docs/manual/tutorial/model-data-for-atomic-operations/ ($push and $inc in one update)"""
    review = {"_id": 1, "text": "great", "helpful_votes": 2, "voter_ids": ["u1", "u2"]}
    filter_ = {"_id": 1, "voter_ids": {"$ne": "u3"}}
    assert compile_filter(filter_)(review)
    got = compile_update({"$push": {"voter_ids": "u3"}, "$inc": {"helpful_votes": 1}}, Context()).apply(review)
    same(got, {"_id": 1, "text": "great", "helpful_votes": 3, "voter_ids": ["u1", "u2", "u3"]})
    assert not compile_filter({"_id": 1, "voter_ids": {"$ne": "u3"}})(got)


def test_hourly_bucket_records_a_minute():
    """https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/bucket-pattern/"""
    update = compile_update({"$set": {"values.59": 21.5}, "$inc": {"sum": 21.5, "count": 1}}, Context())
    bucket = {"_id": 1, "sensor": 7, "hour": 10, "values": {"0": 20.0, "1": 20.5}, "sum": 40.5, "count": 2}
    same(
        update.apply(bucket),
        {
            "_id": 1,
            "sensor": 7,
            "hour": 10,
            "values": {"0": 20.0, "1": 20.5, "59": 21.5},
            "sum": 62.0,
            "count": 3,
        },
    )
    # With the minutes as an array, minute 59 of a new hour pads the minutes before it with null.
    listed = update.apply({"_id": 2, "values": [20.0], "sum": 20.0, "count": Int64(1)})
    assert listed["values"] == [20.0, *[None] * 58, 21.5]
    assert listed["count"] == Int64(2) and listed["count"].__class__ is Int64
    # The first reading of an hour upserts the bucket: new fields in lexicographic order.
    seed = seed_from_filter({"sensor": 7, "hour": 11})
    same(update.apply(seed, inserting=True), {"sensor": 7, "hour": 11, "count": 1, "sum": 21.5, "values": {"59": 21.5}})


# -- properties -----------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "0", "1"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**31), 2**31 - 1), st.floats(allow_nan=False), st.text(max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=3)),
    max_leaves=8,
)
DOCS = st.dictionaries(NAMES, VALUES, max_size=4).map(lambda d: {"_id": 1, **d})
PATHS = st.sampled_from(["a", "b", "a.b", "a.0", "a.1.c", "b.a", "c.$[]", "a.$[]", "c", "a.$", "b.$.c"])
OPERATIONS = st.one_of(
    st.tuples(st.sampled_from(["$set", "$setOnInsert", "$min", "$max", "$push", "$addToSet", "$pull"]), VALUES),
    st.tuples(st.sampled_from(["$inc", "$mul"]), st.integers(-5, 5)),
    st.tuples(st.just("$unset"), st.just("")),
    st.tuples(st.just("$pop"), st.sampled_from([1, -1])),
    st.tuples(st.just("$pullAll"), st.lists(SCALARS, max_size=2)),
    st.tuples(st.just("$rename"), st.sampled_from(["x", "c.d", "a.z"])),
    st.tuples(st.just("$bit"), st.just({"xor": 3})),
    st.tuples(st.just("$currentDate"), st.just(True)),
)
UPDATES = st.lists(st.tuples(OPERATIONS, PATHS), min_size=1, max_size=3).map(
    lambda ops: {op: {path: arg} for (op, arg), path in ops}
)


@settings(max_examples=300, deadline=None)
@given(DOCS, UPDATES, st.booleans())
def test_apply_never_modifies_its_input(doc, spec, inserting):
    """https://www.mongodb.com/docs/manual/reference/operator/update/ (an update writes a new document version)"""
    before = copy.deepcopy(doc)
    encoded = bson.encode(doc)
    try:
        update = compile_update(spec, Context())
        update.apply(doc, 0, inserting)
    except CommandError:
        pass
    assert bson.encode(doc) == encoded
    assert doc == before


@settings(max_examples=200, deadline=None)
@given(DOCS, st.sampled_from(["new", "a.new"]), VALUES)
def test_set_then_unset_of_a_new_path_restores_the_document(doc, path, value):
    """https://www.mongodb.com/docs/manual/reference/operator/update/set/ and .../unset/"""
    if path == "a.new" and doc.get("a").__class__ is not dict:
        doc = {**doc, "a": {"k": 1}}
    encoded = bson.encode(doc)
    ctx = Context()
    added = compile_update({"$set": {path: value}}, ctx).apply(doc)
    assert added != doc
    restored = compile_update({"$unset": {path: ""}}, ctx).apply(added)
    assert bson.encode(restored) == encoded


@settings(max_examples=200, deadline=None)
@given(DOCS, UPDATES)
def test_one_compiled_update_gives_the_same_result_every_time(doc, spec):
    """https://www.mongodb.com/docs/manual/reference/method/db.collection.updateMany/ (one update, many documents)"""
    try:
        update = compile_update(spec, Context())
        first = update.apply(doc, 0)
    except CommandError:
        return
    assert bson.encode(update.apply(doc, 0)) == bson.encode(first)
