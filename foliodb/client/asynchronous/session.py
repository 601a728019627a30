"""pymongo's AsyncClientSession over the sync facade's ClientSession.

:class:`AsyncClientSession` is an instance of pymongo's
``AsyncClientSession`` standing for one sync ``ClientSession``
(:mod:`foliodb.client.session`), which keeps all of the session's state: its
lsid, cluster and operation times, transaction state and options. Commit,
abort and ending run on a worker thread; starting a transaction only changes
that state (pymongo sends ``startTransaction`` with the first command), so it
runs on the loop. ``with_transaction`` (the retry loop of the convenient
transactions API) and ``bind`` are pymongo's own code, driving these methods.

One sync session has one async session (:func:`sessions_of`), so a cursor's
``session`` is the very session it was opened in.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pymongo.asynchronous.client_session as pymongo_session
from pymongo.asynchronous.client_session import _TransactionContext

from foliodb.client.asynchronous.bridge import Bridged, delegated, inline, offloaded, register
from foliodb.client.session import ClientSession

if TYPE_CHECKING:
    from foliodb.client.asynchronous.mongo_client import AsyncMongoClient

_Base = pymongo_session.AsyncClientSession


class AsyncClientSession(Bridged, _Base):
    """pymongo's ``AsyncClientSession`` (an instance of it) of the embedded async client.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/client_session.html"""

    def __init__(self, delegate: ClientSession, client: AsyncMongoClient) -> None:
        # pymongo's __init__ does not run: the sync session holds the state.
        self._delegate = delegate
        self._owner = client

    @property
    def client(self) -> AsyncMongoClient:
        """The AsyncMongoClient this session was started from."""
        return self._owner

    cluster_time = delegated(_Base.cluster_time)
    operation_time = delegated(_Base.operation_time)
    has_ended = delegated(_Base.has_ended)
    in_transaction = delegated(_Base.in_transaction)
    options = delegated(_Base.options)
    session_id = delegated(_Base.session_id)
    advance_cluster_time = inline(_Base.advance_cluster_time)
    advance_operation_time = inline(_Base.advance_operation_time)
    end_session = offloaded(_Base.end_session)
    commit_transaction = offloaded(_Base.commit_transaction)
    abort_transaction = offloaded(_Base.abort_transaction)

    async def start_transaction(
        self,
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> _TransactionContext:
        """Start a multi-statement transaction; ``async with`` on the result commits it, or
        aborts it on an exception (pymongo's ``start_transaction``)."""
        self._delegate.start_transaction(read_concern, write_concern, read_preference, max_commit_time_ms)
        return _TransactionContext(self)

    async def __aexit__(self, *exc: Any) -> None:
        await self.end_session()

    def __repr__(self) -> str:
        return f"AsyncClientSession({self._delegate!r})"


def sessions_of(cls: type[AsyncClientSession]) -> Callable[[ClientSession, AsyncMongoClient], AsyncClientSession]:
    """What makes the async session of class ``cls`` standing for a sync one: the same one each time."""
    sessions: weakref.WeakKeyDictionary[ClientSession, AsyncClientSession] = weakref.WeakKeyDictionary()

    def session_for(delegate: ClientSession, client: AsyncMongoClient) -> AsyncClientSession:
        session = sessions.get(delegate)
        if session is None:
            session = sessions[delegate] = cls(delegate, client)
        return session

    return session_for


register(ClientSession, sessions_of(AsyncClientSession))
