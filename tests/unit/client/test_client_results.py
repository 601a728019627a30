"""The result objects pymongo's write methods return, from the embedded
client, and the small conveniences users rely on (``insert_one`` adding
``_id`` to the caller's dict, ``find_one`` taking a bare ``_id``).

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from bson import ObjectId
from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.errors import InvalidOperation
from pymongo.write_concern import WriteConcern

RESULTS = "https://pymongo.readthedocs.io/en/stable/api/pymongo/results.html"
INSERT_ONE = (
    "https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html#pymongo.collection.Collection.insert_one"
)
FIND_ONE = "https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html#pymongo.collection.Collection.find_one"
UPDATE_CMD = "https://www.mongodb.com/docs/manual/reference/command/update/#output"
BULK = "https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html#pymongo.collection.Collection.bulk_write"
WRITE_CONCERN = "https://www.mongodb.com/docs/manual/reference/write-concern/#w-option"

SEED = [{"_id": 1, "x": 1}, {"_id": 2, "x": 2}, {"_id": 3, "x": 3}]


@pytest.fixture
def coll(client: Any) -> Any:
    coll = client.test.results
    coll.insert_many([dict(doc) for doc in SEED])
    return coll


# (operation, expected result attributes, final contents, manual page)
CASES: list[tuple[Callable[[Any], Any], dict[str, Any], list[dict[str, Any]], str]] = [
    (lambda c: c.insert_one({"_id": 4}), {"inserted_id": 4, "acknowledged": True}, [*SEED, {"_id": 4}], RESULTS),
    (
        lambda c: c.insert_many([{"_id": 5}, {"_id": 4}]),
        {"inserted_ids": [5, 4], "acknowledged": True},
        [*SEED, {"_id": 4}, {"_id": 5}],
        RESULTS,
    ),
    (
        lambda c: c.update_one({"_id": 1}, {"$set": {"x": 10}}),
        {
            "matched_count": 1,
            "modified_count": 1,
            "upserted_id": None,
            "did_upsert": False,
            "raw_result": {"n": 1, "nModified": 1, "ok": 1.0, "updatedExisting": True},
        },
        [{"_id": 1, "x": 10}, *SEED[1:]],
        UPDATE_CMD,
    ),
    # Setting a field to its current value matches without modifying.
    (
        lambda c: c.update_one({"_id": 1}, {"$set": {"x": 1}}),
        {"matched_count": 1, "modified_count": 0},
        SEED,
        UPDATE_CMD,
    ),
    (
        lambda c: c.update_many({"x": {"$gte": 2}}, {"$inc": {"x": 1}}),
        {"matched_count": 2, "modified_count": 2, "upserted_id": None},
        [SEED[0], {"_id": 2, "x": 3}, {"_id": 3, "x": 4}],
        RESULTS,
    ),
    (
        lambda c: c.update_one({"_id": 9}, {"$set": {"x": 9}}, upsert=True),
        {
            "matched_count": 0,
            "modified_count": 0,
            "upserted_id": 9,
            "did_upsert": True,
            "raw_result": {"n": 1, "nModified": 0, "upserted": 9, "ok": 1.0, "updatedExisting": False},
        },
        [*SEED, {"_id": 9, "x": 9}],
        UPDATE_CMD,
    ),
    (
        lambda c: c.replace_one({"_id": 2}, {"y": 1}),
        {"matched_count": 1, "modified_count": 1, "upserted_id": None},
        [SEED[0], {"_id": 2, "y": 1}, SEED[2]],
        RESULTS,
    ),
    (
        lambda c: c.replace_one({"_id": 7}, {"y": 1}, upsert=True),
        {"matched_count": 0, "modified_count": 0, "upserted_id": 7},
        [*SEED, {"_id": 7, "y": 1}],
        RESULTS,
    ),
    (
        lambda c: c.delete_one({"x": {"$gt": 1}}),
        {"deleted_count": 1, "raw_result": {"n": 1, "ok": 1.0}},
        [SEED[0], SEED[2]],
        RESULTS,
    ),
    (lambda c: c.delete_many({}), {"deleted_count": 3}, [], RESULTS),
    (lambda c: c.delete_many({"x": 99}), {"deleted_count": 0}, SEED, RESULTS),
    (
        lambda c: c.bulk_write(
            [
                InsertOne({"_id": 4}),
                UpdateOne({"_id": 1}, {"$inc": {"x": 1}}),
                UpdateMany({"_id": {"$gte": 2}}, {"$set": {"x": 0}}),
                ReplaceOne({"_id": 8}, {"r": 1}, upsert=True),
                DeleteOne({"_id": 4}),
                DeleteMany({"x": 0}),
            ]
        ),
        {
            "inserted_count": 1,
            # UpdateMany also matches the document InsertOne added before it.
            "matched_count": 4,
            "modified_count": 4,
            "deleted_count": 3,
            "upserted_count": 1,
            "upserted_ids": {3: 8},
            "acknowledged": True,
        },
        [{"_id": 1, "x": 2}, {"_id": 8, "r": 1}],
        BULK,
    ),
]


CASE_IDS = [
    "insert_one",
    "insert_many",
    "update_one",
    "update_one-unchanged",
    "update_many",
    "update_one-upsert",
    "replace_one",
    "replace_one-upsert",
    "delete_one",
    "delete_many-all",
    "delete_many-none",
    "bulk_write",
]


@pytest.mark.parametrize(("operation", "expected", "contents", "manual"), CASES, ids=CASE_IDS)
def test_write_results(
    coll: Any, operation: Callable[[Any], Any], expected: dict[str, Any], contents: list[dict[str, Any]], manual: str
) -> None:
    result = operation(coll)
    assert {name: getattr(result, name) for name in expected} == expected
    assert list(coll.find().sort("_id")) == contents


def test_unacknowledged_results_refuse_counts(coll: Any) -> None:
    # RESULTS / WRITE_CONCERN: w=0 results are not acknowledged; their counts raise InvalidOperation.
    fire_and_forget = coll.with_options(write_concern=WriteConcern(w=0))
    inserted = fire_and_forget.insert_one({"_id": 4})
    assert inserted.acknowledged is False
    assert inserted.inserted_id == 4
    updated = fire_and_forget.update_one({"_id": 1}, {"$set": {"x": 5}})
    assert updated.acknowledged is False
    with pytest.raises(InvalidOperation):
        _ = updated.matched_count
    deleted = fire_and_forget.delete_many({"_id": 2})
    with pytest.raises(InvalidOperation):
        _ = deleted.deleted_count
    # The writes themselves happened.
    assert list(coll.find().sort("_id")) == [{"_id": 1, "x": 5}, {"_id": 3, "x": 3}, {"_id": 4}]


def test_insert_one_adds_id_to_the_callers_dict(client: Any) -> None:
    # INSERT_ONE: "If the document does not have an _id field one will be added automatically."
    doc = {"name": "Ana"}
    result = client.test.people.insert_one(doc)
    assert isinstance(doc["_id"], ObjectId)
    assert result.inserted_id == doc["_id"]
    assert client.test.people.find_one() == {"_id": doc["_id"], "name": "Ana"}


def test_insert_many_adds_ids_to_the_callers_dicts(client: Any) -> None:
    # RESULTS: InsertManyResult.inserted_ids lists the _id of each document, in order.
    docs = [{"n": 1}, {"_id": "given", "n": 2}, {"n": 3}]
    result = client.test.people.insert_many(docs)
    assert all("_id" in doc for doc in docs)
    assert result.inserted_ids == [docs[0]["_id"], "given", docs[2]["_id"]]


# (find_one argument, expected document, manual page)
FIND_ONE_CASES: list[tuple[Any, Any, str]] = [
    (2, {"_id": 2, "x": 2}, FIND_ONE),
    ({"x": 3}, {"_id": 3, "x": 3}, FIND_ONE),
    ("2", None, FIND_ONE),  # a string never matches an int _id
    (2.0, {"_id": 2, "x": 2}, FIND_ONE),  # numbers match across types
    (None, {"_id": 1, "x": 1}, FIND_ONE),
    (42, None, FIND_ONE),
]


@pytest.mark.parametrize(("argument", "expected", "manual"), FIND_ONE_CASES)
def test_find_one_takes_a_bare_id(coll: Any, argument: Any, expected: Any, manual: str) -> None:
    # FIND_ONE: filter may be "any other type to be used as the value for a query for _id".
    assert coll.find_one(argument) == expected


def test_find_one_with_object_id(client: Any) -> None:
    # FIND_ONE: an ObjectId filter is the _id to find.
    oid = client.test.things.insert_one({"k": 1}).inserted_id
    assert client.test.things.find_one(oid) == {"_id": oid, "k": 1}
    assert client.test.things.find_one(str(oid)) is None
