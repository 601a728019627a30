"""pymongo's AsyncCursor and AsyncCommandCursor over the sync facade's cursors.

An async cursor stands for one sync cursor (:mod:`foliodb.client.cursor`),
which keeps its options, its server cursor id, its session and its buffered
batch. Building (``sort``, ``limit``...) runs on the loop: it sends nothing.
A document already in the buffer is taken on the loop too; only a call that
may send ``find`` or ``getMore`` (the first document, the first after a
batch, ``to_list``, ``explain``, ``close``) goes to a worker thread, so
iterating a cursor costs one thread hop per batch, not per document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pymongo.asynchronous.command_cursor as pymongo_command_cursor
import pymongo.asynchronous.cursor as pymongo_cursor

from foliodb.client.asynchronous.bridge import Bridged, chained, delegated, inline, offloaded, register
from foliodb.client.command_cursor import CommandCursor, RawBatchCommandCursor
from foliodb.client.cursor import Cursor, RawBatchCursor

if TYPE_CHECKING:
    from foliodb.client.asynchronous.mongo_client import AsyncMongoClient

_Cursor = pymongo_cursor.AsyncCursor
_CommandCursor = pymongo_command_cursor.AsyncCommandCursor
_END = object()  # what a worker's next() answers at the end: StopIteration cannot cross a Future


def _advance(cursor: Any) -> Any:
    try:
        return next(cursor)
    except StopIteration:
        return _END


def _try_advance(cursor: CommandCursor) -> Any:
    document = cursor.try_next()
    return _END if document is None else document


class _Iteration(Bridged):
    """What both kinds of async cursor share: iteration, one thread hop per batch."""

    def __init__(self, delegate: Any, client: AsyncMongoClient) -> None:
        # pymongo's __init__ does not run: the sync cursor holds the state.
        self._delegate = delegate
        self._owner = client

    async def _step(self, advance: Any) -> Any:
        delegate = self._delegate
        if delegate._buffer:  # taken from the batch already received: no I/O
            return advance(delegate)
        return await self._owner._offload.run(advance, delegate)

    async def next(self) -> Any:
        """The next document, by ``getMore`` when the batch runs out; StopAsyncIteration at the end."""
        document = await self._step(_advance)
        if document is _END:
            raise StopAsyncIteration
        return document

    async def __anext__(self) -> Any:
        return await self.next()

    def __aiter__(self) -> Any:
        return self

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._delegate!r})"


class AsyncCursor(_Iteration, _Cursor[Any]):
    """pymongo's ``AsyncCursor`` (an instance of it): a lazy ``find``, getMore by getMore.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/cursor.html"""

    _delegate: Cursor

    allow_disk_use = chained(_Cursor.allow_disk_use)
    batch_size = chained(_Cursor.batch_size)
    collation = chained(_Cursor.collation)
    comment = chained(_Cursor.comment)
    hint = chained(_Cursor.hint)
    limit = chained(_Cursor.limit)
    max = chained(_Cursor.max)
    max_await_time_ms = chained(_Cursor.max_await_time_ms)
    max_scan = chained(_Cursor.max_scan)
    max_time_ms = chained(_Cursor.max_time_ms)
    min = chained(_Cursor.min)
    remove_option = chained(_Cursor.remove_option)
    skip = chained(_Cursor.skip)
    sort = chained(_Cursor.sort)
    where = chained(_Cursor.where)
    clone = inline(_Cursor.clone)
    to_list = offloaded(_Cursor.to_list)
    close = offloaded(_Cursor.close)
    distinct = offloaded(_Cursor.distinct)
    explain = offloaded(_Cursor.explain)
    address = delegated(_Cursor.address)
    alive = delegated(_Cursor.alive)
    collection = delegated(_Cursor.collection)
    cursor_id = delegated(_Cursor.cursor_id)
    retrieved = delegated(_Cursor.retrieved)
    session = delegated(_Cursor.session)

    async def add_option(self, mask: int) -> AsyncCursor:
        """Set query flags by bitmask (pymongo's ``add_option``)."""
        self._delegate.add_option(mask)
        return self

    async def rewind(self) -> AsyncCursor:
        """Back to the unevaluated state: iterating again runs the query again."""
        await self._owner._offload.run(self._delegate.rewind)
        return self

    def __copy__(self) -> Any:
        return self.clone()

    def __deepcopy__(self, memo: Any) -> Any:
        return self.clone()


class AsyncRawBatchCursor(AsyncCursor, pymongo_cursor.AsyncRawBatchCursor[Any]):
    """``find_raw_batches``: each item is one batch of BSON bytes (``bson.decode_all``)."""


class AsyncCommandCursor(_Iteration, _CommandCursor[Any]):
    """pymongo's ``AsyncCommandCursor`` (an instance of it): aggregate, listCollections, listIndexes...

    https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/command_cursor.html"""

    _delegate: CommandCursor

    batch_size = chained(_CommandCursor.batch_size)
    to_list = offloaded(_CommandCursor.to_list)
    close = offloaded(_CommandCursor.close)
    address = delegated(_CommandCursor.address)
    alive = delegated(_CommandCursor.alive)
    cursor_id = delegated(_CommandCursor.cursor_id)
    session = delegated(_CommandCursor.session)

    async def try_next(self) -> Any:
        """The next document, or None when none is available yet (at most one ``getMore``)."""
        document = await self._step(_try_advance)
        return None if document is _END else document


class AsyncRawBatchCommandCursor(AsyncCommandCursor, pymongo_command_cursor.AsyncRawBatchCommandCursor[Any]):
    """``aggregate_raw_batches``: each item is one batch of BSON bytes."""


register(Cursor, AsyncCursor)
register(RawBatchCursor, AsyncRawBatchCursor)
register(CommandCursor, AsyncCommandCursor)
register(RawBatchCommandCursor, AsyncRawBatchCommandCursor)
