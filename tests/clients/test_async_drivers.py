"""The asynchronous Python drivers against ``foliodb serve``: motor (on asyncio)
and pymongo's own AsyncMongoClient. They share pymongo's wire code, but their
connection pools, monitors and cursors are their own.

Expected values are written out by hand.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from motor.motor_asyncio import AsyncIOMotorClient
from pymongo import AsyncMongoClient
from pymongo.errors import DuplicateKeyError

from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients


async def exercise(client: Any) -> None:
    coll = client.shop.orders
    await coll.insert_many([{"_id": i, "user": i % 5, "total": i * 10} for i in range(300)])
    assert await coll.count_documents({"user": 2}) == 60
    assert await coll.find_one({"_id": 7}) == {"_id": 7, "user": 2, "total": 70}
    ids = [doc["_id"] async for doc in coll.find({"user": 4}).sort("_id", -1).batch_size(7)]
    assert ids == list(range(299, -1, -5))
    await coll.update_many({"user": 0}, {"$inc": {"total": 1}})
    cursor = coll.aggregate([{"$group": {"_id": "$user", "sum": {"$sum": "$total"}}}, {"$sort": {"_id": 1}}])
    if asyncio.iscoroutine(cursor):  # pymongo's AsyncCollection.aggregate is a coroutine; motor's is not
        cursor = await cursor
    totals = await cursor.to_list(None)
    expected = [10 * sum(range(u, 300, 5)) + (60 if u == 0 else 0) for u in range(5)]
    assert [t["sum"] for t in totals] == expected
    with pytest.raises(DuplicateKeyError):
        await coll.insert_one({"_id": 1})
    # Concurrent operations share the connection pool.
    counts = await asyncio.gather(*(coll.count_documents({"user": u}) for u in range(5)))
    assert counts == [60] * 5
    assert (await coll.delete_many({"total": {"$gte": 1000}})).deleted_count == 200


def test_motor(server: RunningServer) -> None:
    async def main() -> None:
        client = AsyncIOMotorClient(server.uri, serverSelectionTimeoutMS=5000)
        try:
            await exercise(client)
        finally:
            client.close()

    asyncio.run(main())


def test_pymongo_async_client(server: RunningServer) -> None:
    async def main() -> None:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(server.uri, serverSelectionTimeoutMS=5000)
        try:
            await exercise(client)
        finally:
            await client.close()

    asyncio.run(main())
