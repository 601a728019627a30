"""``foliodb.AsyncMongoClient`` against pymongo's asynchronous API.

Its classes are instances of pymongo's async classes, every public method of
pymongo's (coroutine or not, as pymongo has it) is FolioDB's own or pymongo's
code known to run over FolioDB's (``with_transaction``, change streams'
``next``), and it behaves as the sync facade does: the sync results tests
(``test_client_results.CASES``) run again through the async client with the
same expected values, and a shared scenario gives both clients the same
answers.

Expected values are written out by hand (or are those of the cited sync tests).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pymongo
import pytest
from bson import ObjectId
from gridfs import AsyncGridFSBucket
from pymongo import InsertOne, ReturnDocument, UpdateOne
from pymongo.asynchronous.change_stream import AsyncChangeStream
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.command_cursor import AsyncCommandCursor
from pymongo.asynchronous.cursor import AsyncCursor
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, InvalidOperation, OperationFailure
from pymongo.results import BulkWriteResult, ClientBulkWriteResult, InsertOneResult, UpdateResult

import foliodb
from foliodb.client.asynchronous import (
    AsyncClientSession as FolioSession,
)
from foliodb.client.asynchronous import (
    AsyncCollection as FolioCollection,
)
from foliodb.client.asynchronous import (
    AsyncCollectionChangeStream as FolioChangeStream,
)
from foliodb.client.asynchronous import (
    AsyncCommandCursor as FolioCommandCursor,
)
from foliodb.client.asynchronous import (
    AsyncCursor as FolioCursor,
)
from foliodb.client.asynchronous import (
    AsyncDatabase as FolioDatabase,
)
from tests.unit.client.test_client_results import CASE_IDS, CASES, SEED

ASYNC_API = "https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/index.html"
TRANSACTIONS = "https://www.mongodb.com/docs/manual/core/transactions/"
GRIDFS = "https://pymongo.readthedocs.io/en/stable/api/gridfs/asynchronous/grid_file.html"

# (FolioDB's class, pymongo's): ASYNC_API.
PAIRS = [
    (foliodb.AsyncMongoClient, pymongo.AsyncMongoClient),
    (FolioDatabase, AsyncDatabase),
    (FolioCollection, AsyncCollection),
    (FolioCursor, AsyncCursor),
    (FolioCommandCursor, AsyncCommandCursor),
    (FolioSession, AsyncClientSession),
    (FolioChangeStream, AsyncChangeStream),
]
# pymongo's own code that runs as it is over FolioDB's methods, and what pymongo
# defines to refuse (iteration of a client, database or collection: ``next``).
PYMONGO_CODE = {
    "next": ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection", "AsyncChangeStream"),
    "__anext__": ("AsyncChangeStream",),
    "__aiter__": ("AsyncChangeStream",),
    "__aenter__": ("AsyncMongoClient", "AsyncClientSession", "AsyncChangeStream"),
    "__aexit__": ("AsyncMongoClient", "AsyncChangeStream"),
    "__getattr__": ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection"),
    "__getitem__": ("AsyncCursor",),  # pymongo's: an async cursor refuses indexing
    "with_transaction": ("AsyncClientSession",),
    "bind": ("AsyncClientSession",),
    # The four settings, from pymongo.common.BaseObject, set from the sync object's.
    "codec_options": ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection"),
    "read_preference": ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection"),
    "write_concern": ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection"),
    "read_concern": ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection"),
}


def public_names(cls: type) -> list[str]:
    dunders = ("__aiter__", "__anext__", "__aenter__", "__aexit__", "__getitem__", "__getattr__")
    return [name for name in dir(cls) if not name.startswith("_") or name in dunders]


def kind(cls: type, name: str) -> str:
    attr = inspect.getattr_static(cls, name)
    if isinstance(attr, property):
        return "async property" if inspect.iscoroutinefunction(attr.fget) else "property"
    return "coroutine" if inspect.iscoroutinefunction(attr) else "plain"


def defining_class(cls: type, name: str) -> type:
    return next(klass for klass in cls.__mro__ if name in vars(klass))


@pytest.mark.parametrize(("folio", "pymongo_class"), PAIRS, ids=[pair[1].__name__ for pair in PAIRS])
def test_every_public_method_is_foliodbs_and_async_as_pymongos(folio: type, pymongo_class: type) -> None:
    # ASYNC_API: FolioDB's class is pymongo's (isinstance checks pass), has each of its public
    # names, each a coroutine where pymongo's is one, and answers it with its own code
    # unless the name is pymongo's code known to run over FolioDB's.
    assert issubclass(folio, pymongo_class)
    for name in public_names(pymongo_class):
        assert kind(folio, name) == kind(pymongo_class, name), (pymongo_class.__name__, name)
        owner = defining_class(folio, name)
        if owner.__module__.startswith("foliodb."):
            continue
        assert pymongo_class.__name__ in PYMONGO_CODE.get(name, ()), (pymongo_class.__name__, name, owner)


def test_signatures_and_docs_are_pymongos() -> None:
    # A method made from pymongo's shows pymongo's signature and documentation (help(), IDEs).
    assert inspect.signature(FolioCollection.find_one_and_update) == inspect.signature(
        AsyncCollection.find_one_and_update
    )
    assert FolioCollection.insert_many.__doc__ == AsyncCollection.insert_many.__doc__


def run(scenario: Callable[[Any], Awaitable[None]]) -> None:
    async def main() -> None:
        client = foliodb.AsyncMongoClient(":memory:")
        try:
            await scenario(client)
        finally:
            await client.close()

    asyncio.run(main())


@pytest.mark.parametrize(("operation", "expected", "contents", "manual"), CASES, ids=CASE_IDS)
def test_write_results_as_the_sync_facade(
    operation: Callable[[Any], Any], expected: dict[str, Any], contents: list[dict[str, Any]], manual: str
) -> None:
    # The sync facade's result cases (test_client_results), through the async client: same results.
    async def scenario(client: Any) -> None:
        coll = client.test.results
        await coll.insert_many([dict(doc) for doc in SEED])
        result = await operation(coll)
        assert {name: getattr(result, name) for name in expected} == expected
        assert await coll.find().sort("_id").to_list() == contents

    run(scenario)


def plain(value: Any) -> Any:
    """A result object as its repr (pymongo's results have no ``==``), anything else as it is."""
    return repr(value) if type(value).__module__ == "pymongo.results" else value


async def shared_scenario(db: Any, wait: Callable[[Any], Awaitable[Any]]) -> list[Any]:
    """The same operations on a sync or async database: ``wait`` awaits an async answer."""
    coll = db.items
    out: list[Any] = []
    out.append(await wait(coll.insert_many([{"_id": i, "g": i % 3, "v": i * 10} for i in range(10)])))
    out.append(await wait(coll.count_documents({"g": 1})))
    out.append(await wait(coll.estimated_document_count()))
    out.append(await wait(coll.distinct("g")))
    out.append(await wait(coll.create_index([("g", 1), ("v", -1)], name="g_v")))
    out.append(await wait(coll.find_one({"_id": 3}, {"_id": 0})))
    out.append(
        await wait(coll.find_one_and_update({"_id": 4}, {"$inc": {"v": 1}}, return_document=ReturnDocument.AFTER))
    )
    out.append(await wait(coll.find_one_and_replace({"_id": 5}, {"g": 9})))
    out.append(await wait(coll.find_one_and_delete({"_id": 6})))
    out.append(await wait(coll.bulk_write([InsertOne({"_id": 20}), UpdateOne({"_id": 1}, {"$set": {"v": -1}})])))
    aggregate = await wait(coll.aggregate([{"$group": {"_id": "$g", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    out.append(await wait(aggregate.to_list()))
    out.append(await wait(coll.find({"g": 0}).sort("v", -1).skip(1).limit(2).to_list()))
    indexes = await wait(coll.list_indexes())
    out.append([index["name"] for index in await wait(indexes.to_list())])
    out.append(await wait(coll.index_information()))
    out.append(await wait(db.list_collection_names()))
    out.append((await wait(db.command("count", "items")))["n"])
    out.append(await wait(coll.drop_index("g_v")))
    out.append(await wait(coll.rename("renamed")))
    out.append(await wait(db.renamed.options()))
    out.append(await wait(db.drop_collection("renamed")))
    return [plain(answer) for answer in out]


def test_a_shared_scenario_answers_as_the_sync_facade() -> None:
    # The same operations through foliodb.MongoClient and foliodb.AsyncMongoClient give equal answers.
    async def answer(value: Any) -> Any:
        return value

    async def awaited(value: Any) -> Any:
        return await value if inspect.isawaitable(value) else value

    sync_client = foliodb.MongoClient(":memory:")
    try:
        sync_answers = asyncio.run(shared_scenario(sync_client.test, answer))
    finally:
        sync_client.close()
    answers: list[Any] = []

    async def scenario(client: Any) -> None:
        answers.extend(await shared_scenario(client.test, awaited))

    run(scenario)
    assert answers == sync_answers
    # And they are what the manual says (spot checks, by hand).
    assert answers[1] == 3  # g == 1: _id 1, 4, 7
    # Groups after the writes: _id 20 has no g (null sorts first), 5 was replaced by {g: 9}, 6 deleted.
    groups = [{"_id": None, "n": 1}, {"_id": 0, "n": 3}, {"_id": 1, "n": 3}, {"_id": 2, "n": 2}, {"_id": 9, "n": 1}]
    assert answers[10] == groups
    assert answers[11] == [{"_id": 3, "g": 0, "v": 30}, {"_id": 0, "g": 0, "v": 0}]


def test_results_handles_and_errors_are_pymongos() -> None:
    async def scenario(client: Any) -> None:
        db = client.get_database("shop")
        assert isinstance(db, AsyncDatabase) and db.client is client and db.name == "shop"
        coll = db.orders
        assert isinstance(coll, AsyncCollection) and coll.full_name == "shop.orders"
        assert coll.database == db and coll == db["orders"] and coll.sub.name == "orders.sub"
        assert isinstance(await coll.insert_one({"_id": 1}), InsertOneResult)
        with pytest.raises(DuplicateKeyError) as raised:
            await coll.insert_one({"_id": 1})
        assert raised.value.code == 11000
        with pytest.raises(OperationFailure) as failed:
            await db.command({"noSuchCommand": 1})
        assert failed.value.code == 59  # CommandNotFound
        assert isinstance(coll.find(), AsyncCursor)
        assert isinstance(await coll.aggregate([]), AsyncCommandCursor)
        assert isinstance(await coll.bulk_write([InsertOne({"_id": 2})]), BulkWriteResult)
        result = await client.bulk_write([InsertOne({"_id": 3}, namespace="shop.orders")])
        assert isinstance(result, ClientBulkWriteResult) and result.inserted_count == 1
        assert await coll.count_documents({}) == 3
        assert await client.address is None and await client.is_primary
        with pytest.raises(IndexError):
            coll.find()[0]  # pymongo's: an AsyncCursor refuses indexing

    run(scenario)


def test_closed_client_refuses_operations() -> None:
    async def main() -> None:
        client = foliodb.AsyncMongoClient(":memory:")
        await client.close()
        with pytest.raises(InvalidOperation):
            await client.test.items.find_one()

    asyncio.run(main())


def test_cursor_iterates_batch_by_batch() -> None:
    # ASYNC_API: async for / next() / to_list(n) over several getMore batches.
    async def scenario(client: Any) -> None:
        coll = client.test.items
        await coll.insert_many([{"_id": i} for i in range(25)])
        cursor = coll.find().sort("_id").batch_size(4)
        assert [doc["_id"] async for doc in cursor] == list(range(25))
        assert cursor.retrieved == 25 and not cursor.alive
        cursor = coll.find({}, sort=[("_id", -1)], batch_size=3)
        assert (await cursor.next())["_id"] == 24
        assert [doc["_id"] for doc in await cursor.to_list(5)] == [23, 22, 21, 20, 19]
        await cursor.close()
        assert not cursor.alive
        command_cursor = await coll.aggregate([{"$sort": {"_id": 1}}], batchSize=5)
        assert [doc["_id"] async for doc in command_cursor] == list(range(25))
        async with coll.find().limit(2) as limited:
            assert len(await limited.to_list()) == 2
        assert [doc["_id"] for doc in await (await coll.find({"_id": {"$lt": 2}}).rewind()).to_list()] == [0, 1]

    run(scenario)


def test_transactions_commit_abort_and_with_transaction() -> None:
    # TRANSACTIONS: writes in a transaction are seen outside it only after commit; an exception
    # in ``async with start_transaction()`` aborts; with_transaction commits its callback's writes.
    async def scenario(client: Any) -> None:
        coll = client.test.accounts
        await coll.insert_one({"_id": "a", "balance": 100})
        async with client.start_session() as session:
            assert isinstance(session, AsyncClientSession) and session.client is client
            async with await session.start_transaction():
                await coll.update_one({"_id": "a"}, {"$inc": {"balance": -30}}, session=session)
                assert (await coll.find_one({"_id": "a"}, session=session))["balance"] == 70
                assert (await coll.find_one({"_id": "a"}))["balance"] == 100
            assert (await coll.find_one({"_id": "a"}))["balance"] == 70
            with pytest.raises(ValueError):
                async with await session.start_transaction():
                    await coll.update_one({"_id": "a"}, {"$inc": {"balance": -70}}, session=session)
                    raise ValueError("abort")
            assert (await coll.find_one({"_id": "a"}))["balance"] == 70

            async def move(s: Any) -> str:
                await coll.update_one({"_id": "a"}, {"$inc": {"balance": -20}}, session=s)
                await coll.insert_one({"_id": "b", "balance": 20}, session=s)
                return "moved"

            assert await session.with_transaction(move) == "moved"
            assert not session.in_transaction
        assert session.has_ended
        assert [doc["balance"] for doc in await coll.find().sort("_id").to_list()] == [50, 20]

    run(scenario)


def test_a_bound_session_runs_the_operations_in_its_block() -> None:
    # pymongo 4.17+'s session.bind(): operations in the block run in the session (its transaction).
    async def scenario(client: Any) -> None:
        coll = client.test.bound
        async with client.start_session() as session:
            await session.start_transaction()
            async with session.bind(end_session=False):
                await coll.insert_one({"_id": 1})
                assert await coll.count_documents({}) == 1  # in the transaction
            assert await coll.count_documents({}) == 0  # outside it: not committed yet
            await session.commit_transaction()
        assert await coll.count_documents({}) == 1

    run(scenario)


def test_change_stream_and_cursor_session() -> None:
    # https://www.mongodb.com/docs/manual/changeStreams/: events in order; a cursor keeps its session.
    async def scenario(client: Any) -> None:
        coll = client.test.watched
        async with await coll.watch() as stream:
            assert isinstance(stream, AsyncChangeStream)
            await coll.insert_one({"_id": 1})
            await coll.update_one({"_id": 1}, {"$set": {"x": 1}})
            first = await stream.next()
            second = await stream.try_next() or await stream.next()
            assert (first["operationType"], first["documentKey"]) == ("insert", {"_id": 1})
            assert second["updateDescription"]["updatedFields"] == {"x": 1}
            assert stream.resume_token == second["_id"]
        assert not stream.alive
        async with client.start_session() as session:
            cursor = coll.find(session=session)
            assert cursor.session is session

    run(scenario)


def test_gridfs_bucket_round_trip() -> None:
    # GRIDFS: pymongo's AsyncGridFSBucket over the embedded async client.
    async def scenario(client: Any) -> None:
        bucket = AsyncGridFSBucket(client.files, chunk_size_bytes=1000)
        data = bytes(range(256)) * 20  # 5120 bytes: 6 chunks
        file_id = await bucket.upload_from_stream("blob.bin", data, metadata={"kind": "test"})
        assert isinstance(file_id, ObjectId)
        assert await client.files.fs.chunks.count_documents({"files_id": file_id}) == 6
        stream = await bucket.open_download_stream(file_id)
        assert await stream.read() == data
        assert [grid_file.filename async for grid_file in bucket.find({"metadata.kind": "test"})] == ["blob.bin"]
        await bucket.delete(file_id)
        assert await client.files.fs.files.count_documents({}) == 0

    run(scenario)


def test_update_result_raw_result_matches_the_update_command() -> None:
    # https://www.mongodb.com/docs/manual/reference/command/update/#output
    async def scenario(client: Any) -> None:
        result = await client.test.items.update_one({"_id": 1}, {"$set": {"x": 1}}, upsert=True)
        assert isinstance(result, UpdateResult)
        assert result.raw_result == {"n": 1, "nModified": 0, "upserted": 1, "ok": 1.0, "updatedExisting": False}

    run(scenario)


def test_a_sort_direction_of_an_int_subclass_is_an_int() -> None:
    # beanie's SortDirection(int, Enum): on the wire BSON sends it as an int, and so must the
    # embedded client (https://www.mongodb.com/docs/manual/reference/method/cursor.sort/).
    class Direction(int, enum.Enum):
        ASCENDING = 1
        DESCENDING = -1

    sync_client = foliodb.MongoClient(":memory:")
    try:
        sync_client.test.items.insert_many([{"_id": i} for i in range(3)])
        assert [d["_id"] for d in sync_client.test.items.find(sort=[("_id", Direction.DESCENDING)])] == [2, 1, 0]
    finally:
        sync_client.close()

    async def scenario(client: Any) -> None:
        await client.test.items.insert_many([{"_id": i} for i in range(3)])
        ascending = await client.test.items.find().sort("_id", Direction.ASCENDING).to_list()
        assert [d["_id"] for d in ascending] == [0, 1, 2]

    run(scenario)
