"""Schema validation on the write path: a collection's validator checks
inserts, upserts and updates' results, with its level and action, unless the
write bypasses it; failures carry MongoDB 5+'s errInfo.

The validator is the orders ``$jsonSchema`` of the "Orders with snapshots"
system (the schema-design texts' EXAMPLES.md). Expected errInfo documents are written
out by hand in the shape the manual shows.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from bson import ObjectId
from pymongo import InsertOne, ReplaceOne, UpdateOne
from pymongo.errors import BulkWriteError, ClientBulkWriteException, OperationFailure, WriteError

SCHEMA_VALIDATION = "https://www.mongodb.com/docs/manual/core/schema-validation/"
JSON_SCHEMA = "https://www.mongodb.com/docs/manual/core/schema-validation/specify-json-schema/"
LEVELS = "https://www.mongodb.com/docs/manual/core/schema-validation/specify-validation-level/"
ACTIONS = "https://www.mongodb.com/docs/manual/core/schema-validation/handle-invalid-documents/"
BYPASS = "https://www.mongodb.com/docs/manual/core/schema-validation/bypass-document-validation/"
QUERY_RULES = "https://www.mongodb.com/docs/manual/core/schema-validation/specify-query-expression-rules/"
COLL_MOD = "https://www.mongodb.com/docs/manual/reference/command/collMod/#validation-rules"

STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]
ORDERS = {
    "$jsonSchema": {
        "bsonType": "object",
        "title": "Order",
        "required": ["user_id", "items", "total", "status"],
        "properties": {
            "user_id": {"bsonType": "objectId"},
            "items": {
                "bsonType": "array",
                "minItems": 1,
                "items": {"bsonType": "object", "required": ["sku", "price", "quantity"]},
            },
            "total": {"bsonType": "number", "minimum": 0, "description": "order total in cents"},
            "status": {"enum": STATUSES},
        },
    }
}
USER = ObjectId("65a1b2c3d4e5f60718293a4b")


def order(_id: Any, **fields: Any) -> dict[str, Any]:
    doc = {"_id": _id, "user_id": USER, "items": [{"sku": "A-1", "price": 950, "quantity": 2}]}
    doc.update(total=1900, status="pending")
    doc.update(fields)
    return doc


def without(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != name}


def missing(name: str) -> dict[str, Any]:
    """The details of a document lacking one required field."""
    return {
        "operatorName": "$jsonSchema",
        "title": "Order",
        "schemaRulesNotSatisfied": [
            {
                "operatorName": "required",
                "specifiedAs": {"required": ["user_id", "items", "total", "status"]},
                "missingProperties": [name],
            }
        ],
    }


def bad_status(value: Any) -> dict[str, Any]:
    """The details of a document whose status is not one of the enum's."""
    return {
        "operatorName": "$jsonSchema",
        "title": "Order",
        "schemaRulesNotSatisfied": [
            {
                "operatorName": "properties",
                "propertiesNotSatisfied": [
                    {
                        "propertyName": "status",
                        "details": [
                            {
                                "operatorName": "enum",
                                "specifiedAs": {"enum": STATUSES},
                                "reason": "value was not found in enum",
                                "consideredValue": value,
                            }
                        ],
                    }
                ],
            }
        ],
    }


def bad_total(value: Any, type_name: str) -> dict[str, Any]:
    """The details of a document whose total is not a number."""
    return {
        "operatorName": "$jsonSchema",
        "title": "Order",
        "schemaRulesNotSatisfied": [
            {
                "operatorName": "properties",
                "propertiesNotSatisfied": [
                    {
                        "propertyName": "total",
                        "description": "order total in cents",
                        "details": [
                            {
                                "operatorName": "bsonType",
                                "specifiedAs": {"bsonType": "number"},
                                "reason": "type did not match",
                                "consideredValue": value,
                                "consideredType": type_name,
                            }
                        ],
                    }
                ],
            }
        ],
    }


@pytest.fixture
def orders(client: Any) -> Any:
    client.shop.create_collection("orders", validator=ORDERS)
    client.shop.orders.insert_one(order(1))
    return client.shop.orders


# (name, write, exception, errInfo, documents afterwards, manual page)
REJECTED: list[tuple[str, Callable[[Any], Any], type[Exception], dict[str, Any], list[int], str]] = [
    (
        "insert_one missing a field",
        lambda c: c.insert_one(without("status", order(2))),
        WriteError,
        {"failingDocumentId": 2, "details": missing("status")},
        [1],
        JSON_SCHEMA,
    ),
    (
        "insert_one with a bad enum value",
        lambda c: c.insert_one(order(2, status="lost")),
        WriteError,
        {"failingDocumentId": 2, "details": bad_status("lost")},
        [1],
        JSON_SCHEMA,
    ),
    (
        "update_one to a bad type",
        lambda c: c.update_one({"_id": 1}, {"$set": {"total": "19.00"}}),
        WriteError,
        {"failingDocumentId": 1, "details": bad_total("19.00", "string")},
        [1],
        SCHEMA_VALIDATION,
    ),
    (
        "replace_one dropping a field",
        lambda c: c.replace_one({"_id": 1}, without("total", order(1))),
        WriteError,
        {"failingDocumentId": 1, "details": missing("total")},
        [1],
        SCHEMA_VALIDATION,
    ),
    (
        "upsert inserting an invalid document",
        lambda c: c.update_one({"_id": 7}, {"$set": without("user_id", order(7))}, upsert=True),
        WriteError,
        {"failingDocumentId": 7, "details": missing("user_id")},
        [1],
        SCHEMA_VALIDATION,
    ),
    (
        "update_many stopping at the invalid result",
        lambda c: c.update_many({}, {"$set": {"status": "gone"}}),
        WriteError,
        {"failingDocumentId": 1, "details": bad_status("gone")},
        [1],
        SCHEMA_VALIDATION,
    ),
    (
        "find_one_and_update",
        lambda c: c.find_one_and_update({"_id": 1}, {"$set": {"status": 3}}),
        OperationFailure,
        {"failingDocumentId": 1, "details": bad_status(3)},
        [1],
        SCHEMA_VALIDATION,
    ),
    (
        "find_one_and_replace",
        lambda c: c.find_one_and_replace({"_id": 1}, without("user_id", order(1))),
        OperationFailure,
        {"failingDocumentId": 1, "details": missing("user_id")},
        [1],
        SCHEMA_VALIDATION,
    ),
]


@pytest.mark.parametrize(
    ("write", "error", "err_info", "ids", "manual"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_invalid_writes_are_rejected_with_err_info(
    orders: Any, write: Callable[[Any], Any], error: type[Exception], err_info: Any, ids: list[int], manual: str
) -> None:
    # DocumentValidationFailure (121) "Document failed validation", errInfo since MongoDB 5.0.
    with pytest.raises(error) as info:
        write(orders)
    exc = info.value
    assert isinstance(exc, OperationFailure)
    assert exc.code == 121
    assert exc.details["codeName"] == "DocumentValidationFailure"
    assert exc.details["errmsg"] == "Document failed validation"
    assert exc.details["errInfo"] == err_info
    assert [d["_id"] for d in orders.find().sort("_id")] == ids
    assert orders.find_one(1) == order(1)


def test_insert_many_reports_err_info_per_document(orders: Any) -> None:
    # SCHEMA_VALIDATION + unordered inserts: valid documents go in, each invalid one is a write error.
    with pytest.raises(BulkWriteError) as info:
        orders.insert_many([order(2), order(3, status="lost"), order(4), order(5, total=-1)], ordered=False)
    errors = info.value.details["writeErrors"]
    assert [(e["index"], e["code"], e["errInfo"]["failingDocumentId"]) for e in errors] == [(1, 121, 3), (3, 121, 5)]
    assert errors[0]["errInfo"]["details"] == bad_status("lost")
    assert info.value.details["nInserted"] == 2
    assert [d["_id"] for d in orders.find().sort("_id")] == [1, 2, 4]


def test_bulk_writes_are_validated(client: Any, orders: Any) -> None:
    # SCHEMA_VALIDATION: every write path checks, collection and client bulk writes included.
    with pytest.raises(BulkWriteError) as info:
        orders.bulk_write([UpdateOne({"_id": 1}, {"$set": {"status": "x"}}), InsertOne(order(2))])
    assert [(e["index"], e["code"]) for e in info.value.details["writeErrors"]] == [(0, 121)]
    with pytest.raises(ClientBulkWriteException) as client_info:
        client.bulk_write([ReplaceOne({"_id": 1}, without("user_id", order(1)), namespace="shop.orders")])
    assert client_info.value.write_errors[0]["errInfo"] == {"failingDocumentId": 1, "details": missing("user_id")}


# (name, writes that would fail validation, invalid documents afterwards, manual page)
BYPASSED: list[tuple[str, Callable[[Any], Any], int, str]] = [
    ("insert_one", lambda c: c.insert_one({"_id": 2}, bypass_document_validation=True), 1, BYPASS),
    ("insert_many", lambda c: c.insert_many([{"_id": 2}], bypass_document_validation=True), 1, BYPASS),
    (
        "update_one",
        lambda c: c.update_one({"_id": 1}, {"$set": {"status": "x"}}, bypass_document_validation=True),
        1,
        BYPASS,
    ),
    ("replace_one", lambda c: c.replace_one({"_id": 1}, {}, bypass_document_validation=True), 1, BYPASS),
    (
        "find_one_and_update",
        lambda c: c.find_one_and_update({"_id": 1}, {"$unset": {"items": 1}}, bypassDocumentValidation=True),
        1,
        BYPASS,
    ),
    (
        "bulk_write",
        lambda c: c.bulk_write(
            [InsertOne({"_id": 2}), UpdateOne({"_id": 1}, {"$set": {"total": "x"}})], bypass_document_validation=True
        ),
        2,
        BYPASS,
    ),
    (
        "client bulk_write",
        lambda c: c.database.client.bulk_write(
            [InsertOne({"_id": 2}, namespace="shop.orders")], bypass_document_validation=True
        ),
        1,
        BYPASS,
    ),
]


@pytest.mark.parametrize(("write", "invalid", "manual"), [c[1:] for c in BYPASSED], ids=[c[0] for c in BYPASSED])
def test_bypass_document_validation(orders: Any, write: Callable[[Any], Any], invalid: int, manual: str) -> None:
    # BYPASS: each write may skip validation; the invalid documents are stored.
    write(orders)
    assert orders.count_documents({"$nor": [ORDERS]}) == invalid


def test_bypass_writes_invalid_documents(orders: Any) -> None:
    # BYPASS: with bypassDocumentValidation the invalid document is stored as written.
    orders.insert_one({"_id": 2, "status": "draft"}, bypass_document_validation=True)
    assert orders.find_one(2) == {"_id": 2, "status": "draft"}


def test_moderate_level_leaves_invalid_documents_alone(client: Any) -> None:
    # LEVELS: "moderate" applies the rules to inserts and to updates of documents
    # that already pass; existing invalid documents may be updated freely.
    db = client.shop
    db.orders.insert_many([order(1), {"_id": 2, "status": "legacy"}])
    db.command("collMod", "orders", validator=ORDERS, validationLevel="moderate")
    assert db.orders.update_one({"_id": 2}, {"$set": {"note": "still invalid"}}).modified_count == 1
    with pytest.raises(WriteError) as info:
        db.orders.update_one({"_id": 1}, {"$set": {"status": "legacy"}})
    assert info.value.details["errInfo"] == {"failingDocumentId": 1, "details": bad_status("legacy")}
    with pytest.raises(WriteError):
        db.orders.insert_one({"_id": 3})


def test_strict_level_checks_updates_of_invalid_documents(client: Any) -> None:
    # LEVELS / COLL_MOD: under "strict" (the default) an update of a document
    # that fails the rules must produce a valid document.
    db = client.shop
    db.orders.insert_many([order(1), {"_id": 2, "status": "legacy"}])
    db.command("collMod", "orders", validator=ORDERS)
    with pytest.raises(WriteError) as info:
        db.orders.update_one({"_id": 2}, {"$set": {"note": "x"}})
    assert info.value.details["errInfo"]["failingDocumentId"] == 2
    db.orders.update_one({"_id": 2}, {"$set": order(2)})
    assert db.orders.find_one(2) == order(2)


def test_level_off_checks_nothing(client: Any) -> None:
    # LEVELS: "off" disables validation.
    client.shop.create_collection("orders", validator=ORDERS, validationLevel="off")
    client.shop.orders.insert_one({"_id": 1})
    client.shop.orders.update_one({"_id": 1}, {"$set": {"status": "?"}})
    assert client.shop.orders.find_one(1) == {"_id": 1, "status": "?"}


def test_warn_action_logs_and_writes(client: Any, caplog: pytest.LogCaptureFixture) -> None:
    # ACTIONS: with validationAction "warn" the write succeeds and the violation is logged.
    client.shop.create_collection("orders", validator=ORDERS, validationAction="warn")
    with caplog.at_level(logging.WARNING, logger="foliodb"):
        client.shop.orders.insert_one({"_id": 5, "status": "lost"})
        client.shop.orders.insert_one(order(6))
    assert client.shop.orders.count_documents({}) == 2
    warnings = [r.getMessage() for r in caplog.records if "would fail validation" in r.getMessage()]
    assert len(warnings) == 1
    assert "shop.orders" in warnings[0]
    assert "'failingDocumentId': 5" in warnings[0]


def test_deletes_are_never_validated(client: Any) -> None:
    # SCHEMA_VALIDATION: rules apply to inserts and updates only.
    client.shop.orders.insert_one({"_id": 1})
    client.shop.command("collMod", "orders", validator=ORDERS)
    assert client.shop.orders.delete_one({"_id": 1}).deleted_count == 1


def test_now_is_the_time_of_each_write(client: Any) -> None:
    # QUERY_RULES: $expr validators may use $$NOW, the time of the operation; a
    # validator compiled for an earlier command must not keep an older clock.
    validator = {"$expr": {"$lte": ["$created_at", "$$NOW"]}}
    client.shop.create_collection("events", validator=validator)
    events = client.shop.events
    events.insert_one({"_id": 1, "created_at": datetime.datetime(2020, 1, 1)})
    time.sleep(0.05)
    just_now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    events.insert_one({"_id": 2, "created_at": just_now})
    future = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(days=1)
    with pytest.raises(WriteError) as info:
        events.insert_one({"_id": 3, "created_at": future})
    assert info.value.details["errInfo"]["failingDocumentId"] == 3


# (name, create/collMod call, code, errmsg, manual page)
BAD_OPTIONS: list[tuple[str, Callable[[Any], Any], int, str, str]] = [
    (
        "create with a bad level",
        lambda db: db.create_collection("c", validator={"a": 1}, validationLevel="loose"),
        2,
        "Enumeration value 'loose' for field 'create.validationLevel' is not a valid value.",
        LEVELS,
    ),
    (
        "collMod with a bad action",
        lambda db: db.command("collMod", "orders", validationAction="ignore"),
        2,
        "Enumeration value 'ignore' for field 'collMod.validationAction' is not a valid value.",
        COLL_MOD,
    ),
    (
        "validator not a document",
        lambda db: db.create_collection("c", validator=5),
        14,
        "BSON field 'create.validator' is the wrong type 'int', expected type 'object'",
        SCHEMA_VALIDATION,
    ),
    (
        "$where in a validator",
        lambda db: db.create_collection("c", validator={"$where": "true"}),
        2,
        "$where is not allowed in this context",
        QUERY_RULES,
    ),
]


@pytest.mark.parametrize(
    ("call", "code", "errmsg", "manual"), [c[1:] for c in BAD_OPTIONS], ids=[c[0] for c in BAD_OPTIONS]
)
def test_invalid_validation_options_are_refused(
    orders: Any, call: Callable[[Any], Any], code: int, errmsg: str, manual: str
) -> None:
    with pytest.raises(OperationFailure) as info:
        call(orders.database)
    assert (info.value.code, info.value.details["errmsg"]) == (code, errmsg)
    assert orders.options() == {"validator": ORDERS}
