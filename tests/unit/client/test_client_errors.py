"""pymongo's exceptions from the embedded client: the classes users catch
and the details they read (codes, duplicate keys, bulk write errors, the
16 MiB limit).

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pymongo import DeleteOne, InsertOne, UpdateOne
from pymongo.errors import (
    BulkWriteError,
    CursorNotFound,
    DocumentTooLarge,
    DuplicateKeyError,
    OperationFailure,
    WriteError,
)

ERRORS = "https://pymongo.readthedocs.io/en/stable/api/pymongo/errors.html"
UNIQUE = "https://www.mongodb.com/docs/manual/core/index-unique/"
DUP_KEY = "https://www.mongodb.com/docs/manual/reference/error-codes/"  # 11000 DuplicateKey
BULK_WRITE = "https://www.mongodb.com/docs/manual/reference/method/db.collection.bulkWrite/#error-handling"
INSERT_MANY = "https://www.mongodb.com/docs/manual/reference/method/db.collection.insertMany/#error-handling"
LIMITS = "https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-BSON-Document-Size"
UPDATE_OPS = "https://www.mongodb.com/docs/manual/reference/operator/update/"
ID_FIELD = "https://www.mongodb.com/docs/manual/core/document/#the-_id-field"
QUERY_OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
GET_MORE = "https://www.mongodb.com/docs/manual/reference/command/getMore/"
COLLATION = "https://www.mongodb.com/docs/manual/reference/collation/"

BIG = "x" * (16 * 1024 * 1024)


@pytest.fixture
def coll(client: Any) -> Any:
    coll = client.test.errors
    coll.insert_many([{"_id": 1, "email": "a@example.com", "a": 1}, {"_id": 2, "email": "b@example.com", "a": [1, 2]}])
    coll.create_index("email", unique=True, sparse=True)
    coll.create_index([("first", 1), ("last", 1)], unique=True, sparse=True)
    return coll


# (operation, exception class, code, expected fields of `details`, manual page)
CASES: list[tuple[str, Callable[[Any], Any], type[Exception], int, dict[str, Any], str]] = [
    (
        "duplicate _id",
        lambda c: c.insert_one({"_id": 1}),
        DuplicateKeyError,
        11000,
        {"index": 0, "keyPattern": {"_id": 1}, "keyValue": {"_id": 1}},
        UNIQUE,
    ),
    (
        "duplicate secondary key",
        lambda c: c.insert_one({"email": "a@example.com"}),
        DuplicateKeyError,
        11000,
        {"keyPattern": {"email": 1}, "keyValue": {"email": "a@example.com"}},
        UNIQUE,
    ),
    (
        "duplicate compound key",
        lambda c: c.insert_many([{"email": "c", "first": "A", "last": "B"}, {"email": "d", "first": "A", "last": "B"}]),
        BulkWriteError,
        65,
        {"nInserted": 1},
        UNIQUE,
    ),
    (
        "update into a duplicate",
        lambda c: c.update_one({"_id": 2}, {"$set": {"email": "a@example.com"}}),
        DuplicateKeyError,
        11000,
        {"keyPattern": {"email": 1}, "keyValue": {"email": "a@example.com"}},
        UNIQUE,
    ),
    (
        "findAndModify into a duplicate",
        lambda c: c.find_one_and_update({"_id": 2}, {"$set": {"email": "a@example.com"}}),
        DuplicateKeyError,
        11000,
        {"codeName": "DuplicateKey", "keyPattern": {"email": 1}, "keyValue": {"email": "a@example.com"}},
        UNIQUE,
    ),
    (
        "unknown update operator",
        lambda c: c.update_one({"_id": 1}, {"$bad": {"a": 1}}),
        WriteError,
        9,
        {"codeName": "FailedToParse"},
        UPDATE_OPS,
    ),
    (
        "changing _id",
        lambda c: c.update_one({"_id": 1}, {"$set": {"_id": 5}}),
        WriteError,
        66,
        {
            "codeName": "ImmutableField",
            "errmsg": "Performing an update on the path '_id' would modify the immutable field '_id'",
        },
        ID_FIELD,
    ),
    (
        "array _id",
        lambda c: c.insert_one({"_id": [1]}),
        WriteError,
        53,
        {"codeName": "InvalidIdField", "errmsg": "The '_id' value cannot be of type array"},
        ID_FIELD,
    ),
    (
        "unknown query operator",
        lambda c: c.find_one({"$bad": 1}),
        OperationFailure,
        2,
        {"codeName": "BadValue"},
        QUERY_OPS,
    ),
    (
        "find with an unknown collation locale",
        lambda c: c.find_one({}, collation={"locale": "xx"}),
        OperationFailure,
        2,
        {"codeName": "BadValue"},
        COLLATION,
    ),
    (
        "update with a collation field mongod does not know",
        lambda c: c.update_one({}, {"$set": {"a": 2}}, collation={"locale": "en", "strenght": 2}),
        WriteError,
        40415,
        {"codeName": "Location40415"},
        COLLATION,
    ),
    (
        "getMore of an unknown cursor",
        lambda c: c.database.command("getMore", 12345, collection=c.name),
        CursorNotFound,
        43,
        {"codeName": "CursorNotFound"},
        GET_MORE,
    ),
]


@pytest.mark.parametrize(
    ("operation", "error", "code", "details", "manual"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_error_classes_and_details(
    coll: Any, operation: Callable[[Any], Any], error: type[Exception], code: int, details: dict[str, Any], manual: str
) -> None:
    with pytest.raises(error) as info:
        operation(coll)
    exc = info.value
    assert isinstance(exc, OperationFailure)  # ERRORS: every server error is an OperationFailure
    assert exc.code == code
    assert {key: exc.details[key] for key in details} == details


def test_the_simple_collation_is_accepted(coll: Any) -> None:
    # COLLATION: {locale: "simple"} is binary comparison, which FolioDB does.
    assert coll.find_one({"_id": 1}, collation={"locale": "simple"})["_id"] == 1
    assert coll.delete_one({"_id": 2}, collation={"locale": "simple"}).deleted_count == 1


def test_insert_many_ordered_stops_at_the_first_error(coll: Any) -> None:
    # INSERT_MANY: an ordered insertMany stops at the first error; BulkWriteError
    # reports what was inserted and each error's index in the request list.
    with pytest.raises(BulkWriteError) as info:
        coll.insert_many([{"_id": 10}, {"_id": 1}, {"_id": 11}])
    details = info.value.details
    assert details["nInserted"] == 1
    assert [(e["index"], e["code"], e["op"]) for e in details["writeErrors"]] == [(1, 11000, {"_id": 1})]
    assert details["writeErrors"][0]["keyValue"] == {"_id": 1}
    assert sorted(d["_id"] for d in coll.find()) == [1, 2, 10]


def test_insert_many_unordered_goes_on(coll: Any) -> None:
    # INSERT_MANY: unordered, every document that can be inserted is, and every error is reported.
    with pytest.raises(BulkWriteError) as info:
        coll.insert_many([{"_id": 1}, {"_id": 12}, {"_id": 2}, {"_id": 13}], ordered=False)
    details = info.value.details
    assert details["nInserted"] == 2
    assert [(e["index"], e["code"], e["op"]["_id"]) for e in details["writeErrors"]] == [(0, 11000, 1), (2, 11000, 2)]
    assert sorted(d["_id"] for d in coll.find()) == [1, 2, 12, 13]


def test_bulk_write_error_indexes_refer_to_the_request_list(coll: Any) -> None:
    # BULK_WRITE: writeErrors[].index is the position of the failed operation in
    # the operations passed, even when unordered operations are regrouped by kind.
    requests = [
        DeleteOne({"_id": 99}),
        InsertOne({"_id": 20}),
        UpdateOne({"_id": 2}, {"$set": {"email": "a@example.com"}}),
        InsertOne({"_id": 1}),
        UpdateOne({"_id": 20}, {"$set": {"x": 1}}),
    ]
    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write(requests, ordered=False)
    details = info.value.details
    errors = [(e["index"], e["code"]) for e in details["writeErrors"]]
    assert errors == [(2, 11000), (3, 11000)]
    # pymongo's UpdateOne sends upsert: false explicitly.
    assert details["writeErrors"][0]["op"] == {
        "q": {"_id": 2},
        "u": {"$set": {"email": "a@example.com"}},
        "multi": False,
        "upsert": False,
    }
    assert details["writeErrors"][1]["op"] == {"_id": 1}
    assert (details["nInserted"], details["nMatched"], details["nModified"], details["nRemoved"]) == (1, 1, 1, 0)


def test_ordered_bulk_write_stops_at_the_first_error(coll: Any) -> None:
    # BULK_WRITE: ordered operations stop at the first error; later ones do not run.
    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write([InsertOne({"_id": 30}), InsertOne({"_id": 30}), DeleteOne({"_id": 1})])
    assert [e["index"] for e in info.value.details["writeErrors"]] == [1]
    assert coll.find_one(1) is not None


# (operation, manual page)
TOO_LARGE: list[tuple[str, Callable[[Any], Any], str]] = [
    ("insert_one", lambda c: c.insert_one({"big": BIG}), LIMITS),
    ("insert_many", lambda c: c.insert_many([{"_id": 40}, {"big": BIG}]), LIMITS),
    ("bulk_write", lambda c: c.bulk_write([InsertOne({"big": BIG})]), LIMITS),
]


@pytest.mark.parametrize(("operation", "manual"), [c[1:] for c in TOO_LARGE], ids=[c[0] for c in TOO_LARGE])
def test_documents_over_16_mib_raise_document_too_large(
    coll: Any, operation: Callable[[Any], Any], manual: str
) -> None:
    # LIMITS: "The maximum BSON document size is 16 mebibytes"; pymongo raises DocumentTooLarge.
    with pytest.raises(DocumentTooLarge):
        operation(coll)
    assert coll.count_documents({"big": {"$exists": True}}) == 0


def test_an_update_growing_a_document_past_16_mib_fails(coll: Any) -> None:
    # LIMITS: an update may not make a document larger than the limit either.
    with pytest.raises(WriteError) as info:
        coll.update_one({"_id": 1}, {"$set": {"big": BIG}})
    assert info.value.code == 17419
    assert coll.find_one(1) == {"_id": 1, "email": "a@example.com", "a": 1}


@pytest.mark.parametrize(("stage", "expected"), [("$search", []), ("$searchMeta", [{"count": {"lowerBound": 0}}])])
def test_full_text_search_without_an_index_finds_nothing(client: Any, stage: str, expected: list[Any]) -> None:
    # As MongoDB Search: a $search naming no index returns no documents rather than an error.
    client.test.coll.insert_one({"t": "x"})
    assert list(client.test.coll.aggregate([{stage: {"text": {"query": "x", "path": "t"}}}])) == expected


def test_topology_properties_are_not_databases(client: Any) -> None:
    # pymongo's MongoClient.nodes / is_primary / is_mongos describe the deployment; a single embedded node.
    assert client.nodes == frozenset()
    assert client.is_primary is True
    assert client.is_mongos is False
    assert client.primary is None


def nested(levels: int) -> dict[str, Any]:
    """A document ``levels`` deep, the top-level document counting as the first."""
    doc: dict[str, Any] = {"s": 1}
    for _ in range(levels - 1):
        doc = {"s": doc}
    return doc


def test_nesting_deeper_than_100_levels_is_refused(client: Any) -> None:
    # LIMITS, "Nested Depth for BSON Documents": no more than 100 levels; each document or array is one.
    coll = client.test.deep
    assert coll.insert_one(nested(100)).acknowledged
    with pytest.raises(WriteError) as too_deep:
        coll.insert_one(nested(101))
    assert too_deep.value.code == 15  # Overflow
    arrays: Any = 1
    for _ in range(100):
        arrays = [arrays]
    with pytest.raises(WriteError):
        coll.insert_one({"a": arrays})  # 1 document + 100 arrays
    target = coll.insert_one({"n": 1}).inserted_id
    with pytest.raises(WriteError) as by_update:
        coll.update_one({"_id": target}, {"$set": {"deep": nested(100)}})
    assert by_update.value.code == 15
    assert coll.count_documents({}) == 2
