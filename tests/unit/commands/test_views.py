"""Read-only views. Manual: https://www.mongodb.com/docs/manual/core/views/"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def sales(db: Any) -> Any:
    db.orders.insert_many([{"_id": i, "status": ["pending", "shipped"][i % 2], "total": i * 10} for i in range(10)])
    db.create_collection(
        "shipped", viewOn="orders", pipeline=[{"$match": {"status": "shipped"}}, {"$project": {"status": 0}}]
    )
    return db


def test_find_count_distinct_aggregate_read_through_the_pipeline(sales: Any) -> None:
    assert list(sales.shipped.find({"total": {"$gt": 40}}).sort("total", -1)) == [
        {"_id": 9, "total": 90},
        {"_id": 7, "total": 70},
        {"_id": 5, "total": 50},
    ]
    assert sales.shipped.count_documents({}) == 5
    assert sales.shipped.estimated_document_count() == 5
    assert sales.shipped.distinct("total", {"total": {"$lt": 40}}) == [10, 30]
    assert list(sales.shipped.aggregate([{"$group": {"_id": None, "sum": {"$sum": "$total"}}}])) == [
        {"_id": None, "sum": 250}
    ]


def test_views_of_views_and_lookup_into_a_view(sales: Any) -> None:
    sales.create_collection("big_shipped", viewOn="shipped", pipeline=[{"$match": {"total": {"$gte": 70}}}])
    assert [d["_id"] for d in sales.big_shipped.find()] == [7, 9]
    sales.customers.insert_one({"_id": "c", "order": 9})
    joined = sales.customers.aggregate(
        [{"$lookup": {"from": "big_shipped", "localField": "order", "foreignField": "_id", "as": "o"}}]
    )
    assert next(joined)["o"] == [{"_id": 9, "total": 90}]


def test_listed_as_views(sales: Any) -> None:
    info = next(sales.list_collections(filter={"name": "shipped"}))
    assert info["type"] == "view" and info["info"]["readOnly"] is True
    assert info["options"]["viewOn"] == "orders"


def test_views_are_read_only(sales: Any) -> None:
    for write in (lambda: sales.shipped.insert_one({"x": 1}), lambda: sales.shipped.create_index("total")):
        with pytest.raises(OperationFailure) as info:
            write()
        assert info.value.code == 166
    sales.drop_collection("shipped")
    assert "shipped" not in sales.list_collection_names()
    assert sales.orders.count_documents({}) == 10


def test_view_definition_errors(db: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        db.create_collection("v", viewOn="c", pipeline=[{"$out": "x"}])
    assert info.value.code == 167
    with pytest.raises(OperationFailure) as info:
        db.create_collection("v", viewOn="c", pipeline=[{"$bogus": 1}])
    assert info.value.code == 40324


def test_what_mongo_express_sends_to_open_a_view(sales: Any) -> None:
    """mongo-express's collection page (lib/routes/collection.js viewCollection): a find and a
    count, and with its admin option $collStats storageStats and listIndexes. mongod answers the
    last two on a view with CommandNotSupportedOnView (166): jstests/core/views/views_coll_stats.js
    ("attempting to retrieve storageStats fails") and views_all_commands.js (listIndexes:
    expectFailure), so mongo-express opens a view without its admin option, on mongod as here."""
    page = sales.command({"find": "shipped", "filter": {}, "sort": {}, "projection": {}, "skip": 0, "limit": 10})
    assert [d["_id"] for d in page["cursor"]["firstBatch"]] == [1, 3, 5, 7, 9]
    assert sales.command({"count": "shipped", "query": {}})["n"] == 5
    refused = {
        "listIndexes": lambda: list(sales.shipped.list_indexes()),
        "$collStats storageStats": lambda: list(sales.shipped.aggregate([{"$collStats": {"storageStats": {}}}])),
        "collStats": lambda: sales.command("collStats", "shipped"),
    }
    for what, call in refused.items():
        with pytest.raises(OperationFailure) as failed:
            call()
        assert (failed.value.code, failed.value.details["errmsg"]) == (
            166,
            f"Namespace {sales.name}.shipped is a view, not a collection",
        ), what
    assert next(sales.shipped.aggregate([{"$collStats": {"latencyStats": {}}}]))["ns"] == f"{sales.name}.shipped"
