"""pymongo's async change streams over the sync facade's.

An async change stream stands for one sync change stream
(:mod:`foliodb.client.change_stream`: pymongo's ChangeStream classes over
the executor), which keeps the resume token and resumes after a resumable
error. ``try_next`` (at most one ``getMore``, which waits up to
``maxAwaitTimeMS`` for a change) runs on a worker thread; ``next`` and
``async for`` are pymongo's own loop of ``try_next`` calls, so a task
waiting for a change holds no thread between two getMores and is cancelled
at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pymongo.asynchronous.change_stream as pymongo_change_stream
import pymongo.change_stream

from foliodb.client.asynchronous.bridge import Bridged, delegated, offloaded, register
from foliodb.client.change_stream import ClusterChangeStream, CollectionChangeStream, DatabaseChangeStream

if TYPE_CHECKING:
    from foliodb.client.asynchronous.mongo_client import AsyncMongoClient

_Base = pymongo_change_stream.AsyncChangeStream


class _Bridged(Bridged):
    """What the three kinds share: pymongo's next/async for over the sync stream's try_next."""

    _timeout: float | None = None  # pymongo's timeoutMS for next(); the embedded client takes none

    def __init__(self, delegate: pymongo.change_stream.ChangeStream[Any], client: AsyncMongoClient) -> None:
        # pymongo's __init__ does not run: the sync stream holds the state.
        self._delegate = delegate
        self._owner = client

    try_next = offloaded(_Base.try_next)
    close = offloaded(_Base.close)
    alive = delegated(_Base.alive)
    resume_token = delegated(_Base.resume_token)


class AsyncCollectionChangeStream(_Bridged, pymongo_change_stream.AsyncCollectionChangeStream[Any]):
    """Changes to one collection: :meth:`AsyncCollection.watch`."""


class AsyncDatabaseChangeStream(_Bridged, pymongo_change_stream.AsyncDatabaseChangeStream[Any]):
    """Changes to every collection of a database: :meth:`AsyncDatabase.watch`."""


class AsyncClusterChangeStream(_Bridged, pymongo_change_stream.AsyncClusterChangeStream[Any]):
    """Changes to every database: :meth:`AsyncMongoClient.watch`."""


register(CollectionChangeStream, AsyncCollectionChangeStream)
register(DatabaseChangeStream, AsyncDatabaseChangeStream)
register(ClusterChangeStream, AsyncClusterChangeStream)
