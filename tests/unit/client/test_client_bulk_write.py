"""``MongoClient.bulk_write``: writes to several collections in one call
(pymongo 4.9+, MongoDB 8.0's ``bulkWrite`` command).

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.errors import ClientBulkWriteException, InvalidOperation, OperationFailure
from pymongo.write_concern import WriteConcern

CLIENT_BULK = (
    "https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html#pymongo.mongo_client.MongoClient.bulk_write"
)
RESULT = "https://pymongo.readthedocs.io/en/stable/api/pymongo/results.html#pymongo.results.ClientBulkWriteResult"
EXCEPTION = "https://pymongo.readthedocs.io/en/stable/api/pymongo/errors.html#pymongo.errors.ClientBulkWriteException"
COMMAND = "https://www.mongodb.com/docs/manual/reference/command/bulkWrite/"


@pytest.fixture
def shop(client: Any) -> Any:
    client.shop.orders.insert_many([{"_id": 1, "status": "pending"}, {"_id": 2, "status": "pending"}])
    client.shop.stock.insert_many([{"_id": "A", "qty": 5}, {"_id": "B", "qty": 0}])
    return client


def models() -> list[Any]:
    return [
        InsertOne({"_id": 3, "status": "new"}, namespace="shop.orders"),
        UpdateOne({"_id": "A"}, {"$inc": {"qty": -1}}, namespace="shop.stock"),
        UpdateMany({"status": "pending"}, {"$set": {"status": "paid"}}, namespace="shop.orders"),
        ReplaceOne({"_id": "C"}, {"qty": 7}, upsert=True, namespace="shop.stock"),
        DeleteOne({"_id": "B"}, namespace="shop.stock"),
        DeleteMany({"status": "none"}, namespace="shop.orders"),
        InsertOne({"_id": 1, "note": "x"}, namespace="shop.notes"),
    ]


def test_summary_results_across_collections(shop: Any) -> None:
    # CLIENT_BULK / RESULT: counts add up over every collection written.
    result = shop.bulk_write(models())
    assert (result.inserted_count, result.matched_count, result.modified_count) == (2, 3, 3)
    assert (result.upserted_count, result.deleted_count, result.acknowledged) == (1, 1, True)
    assert not result.has_verbose_results
    with pytest.raises(InvalidOperation):
        _ = result.insert_results  # RESULT: only verbose results have per-operation results
    assert list(shop.shop.orders.find().sort("_id")) == [
        {"_id": 1, "status": "paid"},
        {"_id": 2, "status": "paid"},
        {"_id": 3, "status": "new"},
    ]
    assert list(shop.shop.stock.find().sort("_id")) == [{"_id": "A", "qty": 4}, {"_id": "C", "qty": 7}]
    assert list(shop.shop.notes.find()) == [{"_id": 1, "note": "x"}]  # created implicitly


def test_verbose_results_per_operation(shop: Any) -> None:
    # RESULT: insert_results, update_results and delete_results map each operation's index to its result.
    result = shop.bulk_write(models(), verbose_results=True)
    assert {i: r.inserted_id for i, r in result.insert_results.items()} == {0: 3, 6: 1}
    updates = {i: (r.matched_count, r.modified_count, r.upserted_id) for i, r in result.update_results.items()}
    assert updates == {1: (1, 1, None), 2: (2, 2, None), 3: (1, 0, "C")}
    assert {i: r.deleted_count for i, r in result.delete_results.items()} == {4: 1, 5: 0}


def test_an_ordered_bulk_stops_at_the_first_error(shop: Any) -> None:
    # EXCEPTION: write_errors hold each failed operation's idx; partial_result what ran before it.
    requests = [
        DeleteOne({"_id": 1}, namespace="shop.orders"),
        InsertOne({"_id": "A"}, namespace="shop.stock"),
        DeleteOne({"_id": 2}, namespace="shop.orders"),
    ]
    with pytest.raises(ClientBulkWriteException) as info:
        shop.bulk_write(requests, verbose_results=True)
    exc = info.value
    assert [(e["idx"], e["code"]) for e in exc.write_errors] == [(1, 11000)]
    assert exc.write_errors[0]["keyValue"] == {"_id": "A"}
    assert exc.partial_result is not None
    assert exc.partial_result.deleted_count == 1
    assert list(exc.partial_result.delete_results) == [0]
    assert shop.shop.orders.find_one(2) is not None  # not run


def test_an_unordered_bulk_runs_everything_it_can(shop: Any) -> None:
    # CLIENT_BULK: with ordered=False the writes after a failure still run.
    requests = [
        InsertOne({"_id": 1}, namespace="shop.orders"),
        DeleteOne({"_id": 2}, namespace="shop.orders"),
        UpdateOne({"_id": "A"}, {"$set": {"_id": "Z"}}, namespace="shop.stock"),
    ]
    with pytest.raises(ClientBulkWriteException) as info:
        shop.bulk_write(requests, ordered=False)
    exc = info.value
    assert [(e["idx"], e["code"]) for e in exc.write_errors] == [(0, 11000), (2, 66)]
    assert exc.partial_result is not None
    assert exc.partial_result.deleted_count == 1


def test_only_failures_leave_no_partial_result(shop: Any) -> None:
    # EXCEPTION: partial_result is None when no operation succeeded.
    with pytest.raises(ClientBulkWriteException) as info:
        shop.bulk_write([InsertOne({"_id": 1}, namespace="shop.orders")])
    assert info.value.partial_result is None


# (name, call, exception, manual page)
CLIENT_ERRORS: list[tuple[str, Any, type[Exception], str]] = [
    ("no models", lambda c: c.bulk_write([]), InvalidOperation, CLIENT_BULK),
    ("no namespace", lambda c: c.bulk_write([InsertOne({"x": 1})]), InvalidOperation, CLIENT_BULK),
    ("not a model", lambda c: c.bulk_write([{"insertOne": {}}]), TypeError, CLIENT_BULK),
    (
        "w=0 with verbose results",
        lambda c: c.bulk_write(
            [InsertOne({}, namespace="shop.x")], ordered=False, verbose_results=True, write_concern=WriteConcern(w=0)
        ),
        InvalidOperation,
        CLIENT_BULK,
    ),
    (
        "w=0 ordered",
        lambda c: c.bulk_write([InsertOne({}, namespace="shop.x")], write_concern=WriteConcern(w=0)),
        InvalidOperation,
        CLIENT_BULK,
    ),
]


@pytest.mark.parametrize(("call", "error", "manual"), [c[1:] for c in CLIENT_ERRORS], ids=[c[0] for c in CLIENT_ERRORS])
def test_client_side_errors(shop: Any, call: Any, error: type[Exception], manual: str) -> None:
    with pytest.raises(error):
        call(shop)


def test_unacknowledged_unordered_bulk(shop: Any) -> None:
    # CLIENT_BULK: w=0 needs ordered=False; the result is not acknowledged but the writes happen.
    result = shop.bulk_write(
        [InsertOne({"_id": 9}, namespace="shop.orders")], ordered=False, write_concern=WriteConcern(w=0)
    )
    assert result.acknowledged is False
    assert shop.shop.orders.find_one(9) == {"_id": 9}


def test_the_command_itself(shop: Any) -> None:
    # COMMAND: bulkWrite runs on admin, names collections in nsInfo and returns one
    # result per operation in a cursor, plus the totals.
    reply = shop.admin.command(
        {
            "bulkWrite": 1,
            "ops": [
                {"insert": 0, "document": {"_id": 5}},
                {"update": 1, "filter": {"_id": "A"}, "updateMods": {"$set": {"qty": 1}}},
                {"delete": 0, "filter": {"_id": 5}, "multi": False},
            ],
            "nsInfo": [{"ns": "shop.orders"}, {"ns": "shop.stock"}],
        }
    )
    assert reply["cursor"]["firstBatch"] == [
        {"ok": 1.0, "idx": 0, "n": 1},
        {"ok": 1.0, "idx": 1, "n": 1, "nModified": 1},
        {"ok": 1.0, "idx": 2, "n": 1},
    ]
    totals = {k: reply[k] for k in ("nErrors", "nInserted", "nUpserted", "nMatched", "nModified", "nDeleted")}
    assert totals == {"nErrors": 0, "nInserted": 1, "nUpserted": 0, "nMatched": 1, "nModified": 1, "nDeleted": 1}
    with pytest.raises(OperationFailure) as info:
        shop.shop.command({"bulkWrite": 1, "ops": [], "nsInfo": []})
    assert info.value.code == 13  # Unauthorized: only on the admin database


def test_a_command_error_travels_inside_the_exception(shop: Any) -> None:
    # EXCEPTION: "error: A top-level error that occurred during this operation."
    with pytest.raises(ClientBulkWriteException) as info:
        shop.bulk_write([InsertOne({"_id": 1}, namespace="no-dot")])
    error = info.value.error
    assert isinstance(error, OperationFailure)
    assert (error.code, error.details["codeName"]) == (73, "InvalidNamespace")
    assert info.value.partial_result is None
