"""motor's API over the embedded async client, for libraries written for motor.

motor (``motor.motor_asyncio.AsyncIOMotorClient``) and pymongo's
AsyncMongoClient differ in a few places; code written for motor, such as
odmantic 1.x's ``AIOEngine``, needs motor's:

* ``aggregate``, ``aggregate_raw_batches``, ``list_indexes``,
  ``list_search_indexes`` and ``watch`` return their cursor (a change stream)
  at once, not a coroutine: its command runs at its first use (``to_list``,
  ``async for``, ``next``), as motor's latent cursors do;
* ``start_session()`` is a coroutine;
* a session's ``start_transaction()`` returns its async context manager at
  once (awaiting it works too, which is how pymongo's ``with_transaction``,
  shared by both, drives it);
* ``close()`` is a plain method.

Everything else is :class:`foliodb.AsyncMongoClient`'s: these classes are its
subclasses, answering through the same sync facade.
https://motor.readthedocs.io/en/stable/api-asyncio/
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from typing import Any

from pymongo.asynchronous.client_session import _TransactionContext

from foliodb.client.asynchronous.bridge import BRIDGED, to_async, to_sync
from foliodb.client.asynchronous.change_stream import AsyncCollectionChangeStream
from foliodb.client.asynchronous.collection import AsyncCollection
from foliodb.client.asynchronous.cursor import AsyncCommandCursor
from foliodb.client.asynchronous.database import AsyncDatabase
from foliodb.client.asynchronous.mongo_client import AsyncMongoClient
from foliodb.client.asynchronous.session import AsyncClientSession, sessions_of
from foliodb.client.collection import Collection
from foliodb.client.database import Database
from foliodb.client.session import ClientSession


class _Latent:
    """A cursor or change stream whose command runs at its first use."""

    _delegate: Any
    _owner: AsyncMongoClient

    def __init__(self, opener: Callable[[], Any], client: AsyncMongoClient) -> None:
        self._opener = opener
        self._owner = client
        self._delegate = None

    async def _open(self) -> None:
        if self._delegate is None:
            self._delegate = await self._owner._offload.run(self._opener)

    async def close(self) -> None:
        """Close it, if its command ran."""
        if self._delegate is not None:
            await self._owner._offload.run(self._delegate.close)

    @property
    def alive(self) -> bool:
        """Whether it may still return something (True before its command ran)."""
        return self._delegate is None or bool(self._delegate.alive)


def _opening(method: Callable[..., Any]) -> Callable[..., Any]:
    """The async method, after the latent object's command ran."""

    @functools.wraps(method)
    async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        await self._open()
        return await method(self, *args, **kwargs)

    return run


class MotorLatentCommandCursor(_Latent, AsyncCommandCursor):
    """motor's ``AsyncIOMotorLatentCommandCursor``: aggregate's cursor, run at its first use."""

    next = _opening(AsyncCommandCursor.next)
    try_next = _opening(AsyncCommandCursor.try_next)
    to_list = _opening(AsyncCommandCursor.to_list)


class MotorChangeStream(_Latent, AsyncCollectionChangeStream):
    """motor's ``AsyncIOMotorChangeStream``: ``watch``'s stream, opened at its first use."""

    try_next = _opening(AsyncCollectionChangeStream.try_next)

    @property
    def resume_token(self) -> Any:
        """The cached resume token (None before the stream was opened)."""
        return None if self._delegate is None else self._delegate.resume_token


def _latent(kind: type[_Latent], name: str) -> Callable[..., Any]:
    """A method returning the ``kind`` of latent object running the sync method ``name``."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        sync = getattr(self._delegate, name)
        opener = functools.partial(sync, *[to_sync(a) for a in args], **{k: to_sync(v) for k, v in kwargs.items()})
        return kind(opener, self._owner)

    method.__name__ = name
    return method


class AsyncIOMotorCollection(AsyncCollection):
    """motor's ``AsyncIOMotorCollection`` over the embedded engine."""

    aggregate = _latent(MotorLatentCommandCursor, "aggregate")
    aggregate_raw_batches = _latent(MotorLatentCommandCursor, "aggregate_raw_batches")
    list_indexes = _latent(MotorLatentCommandCursor, "list_indexes")
    list_search_indexes = _latent(MotorLatentCommandCursor, "list_search_indexes")
    watch = _latent(MotorChangeStream, "watch")


class AsyncIOMotorDatabase(AsyncDatabase):
    """motor's ``AsyncIOMotorDatabase`` over the embedded engine."""

    aggregate = _latent(MotorLatentCommandCursor, "aggregate")
    watch = _latent(MotorChangeStream, "watch")


class _MotorTransactionContext(_TransactionContext):
    """``async with session.start_transaction():``, as motor's; awaiting it gives itself."""

    def __await__(self) -> Generator[Any, None, _MotorTransactionContext]:
        return self
        yield  # a generator: awaiting it finishes at once


class AsyncIOMotorClientSession(AsyncClientSession):
    """motor's ``AsyncIOMotorClientSession`` of the embedded client."""

    def start_transaction(  # type: ignore[override]
        self,
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> _MotorTransactionContext:
        """Start a multi-statement transaction; ``async with`` on the result commits it, or aborts
        it on an exception (motor's ``start_transaction``)."""
        self._delegate.start_transaction(read_concern, write_concern, read_preference, max_commit_time_ms)
        return _MotorTransactionContext(self)


class AsyncIOMotorClient(AsyncMongoClient):
    """motor's ``AsyncIOMotorClient`` over an embedded dbpath (``AsyncIOMotorClient("./data")``).

    https://motor.readthedocs.io/en/stable/api-asyncio/asyncio_motor_client.html"""

    _bridged = {
        **BRIDGED,
        Database: AsyncIOMotorDatabase,
        Collection: AsyncIOMotorCollection,
        ClientSession: sessions_of(AsyncIOMotorClientSession),
    }

    async def start_session(self, *args: Any, **kwargs: Any) -> AsyncIOMotorClientSession:  # type: ignore[override]
        """A new session (a coroutine, as motor's ``start_session``)."""
        session: AsyncIOMotorClientSession = to_async(self._delegate.start_session(*args, **kwargs), self)
        return session

    watch = _latent(MotorChangeStream, "watch")

    def close(self) -> None:  # type: ignore[override]
        """Close the engine and release the dbpath (a plain method, as motor's ``close``)."""
        self._delegate.close()
        self._offload.close()

    async def __aexit__(self, *exc: Any) -> None:
        self.close()
