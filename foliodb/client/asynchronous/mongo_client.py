"""``foliodb.AsyncMongoClient``: pymongo's AsyncMongoClient over an embedded engine.

``AsyncMongoClient("./data")`` opens a dbpath in this process, as
``foliodb.MongoClient`` does, and answers pymongo's asynchronous API
(``pymongo.asynchronous``): its classes are instances of pymongo's
``AsyncMongoClient``, ``AsyncDatabase``, ``AsyncCollection``,
``AsyncCursor``, ``AsyncCommandCursor``, ``AsyncClientSession`` and
``AsyncChangeStream``, so libraries that check for them (beanie, pymongo's
``AsyncGridFSBucket``) accept them, and errors and results are pymongo's.

It is one implementation with the sync client: each async object stands for
a sync facade object (:mod:`foliodb.client.asynchronous.bridge`), and each
operation is the sync facade's, run on a worker thread of the client's pool
(:mod:`foliodb.client.asynchronous.offload`), so the event loop never waits
for the engine, and cancelling the task that awaits an operation stops it as
``killOp`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import pymongo.asynchronous.mongo_client as pymongo_mongo_client
from pymongo.client_options import ClientOptions

# Each module registers its classes with the bridge.
import foliodb.client.asynchronous.change_stream
import foliodb.client.asynchronous.collection
import foliodb.client.asynchronous.cursor
import foliodb.client.asynchronous.database
import foliodb.client.asynchronous.session  # noqa: F401
from foliodb.client.asynchronous.bridge import BRIDGED, Bridged, copy_settings, inline, offloaded, to_async, to_sync
from foliodb.client.asynchronous.offload import Offload, track
from foliodb.client.driver_hooks import no_network
from foliodb.client.mongo_client import DEFAULT_PATH, MongoClient
from foliodb.commands import Executor

_Base = pymongo_mongo_client.AsyncMongoClient
# Worker threads when maxPoolSize is None (pymongo's "no limit"): more than any machine runs at once.
_UNBOUNDED_WORKERS = 1000


class AsyncMongoClient(Bridged, _Base[Any]):
    """pymongo's ``AsyncMongoClient`` (an instance of it) over an embedded dbpath.

    Takes what ``foliodb.MongoClient`` takes (a dbpath or ``":memory:"``, pymongo's options,
    ``read_only``...). Operations run on up to ``maxPoolSize`` worker threads at once (pymongo's
    connection pool size, 100 by default).

    https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/mongo_client.html"""

    HOST = DEFAULT_PATH
    PORT = 0
    _bridged = BRIDGED  # the async classes its results come back as (foliodb.client.asynchronous.bridge)

    def __init__(
        self,
        host: str | Sequence[str] | None = None,
        port: int | None = None,
        document_class: type | None = None,
        tz_aware: bool | None = None,
        connect: bool | None = None,
        type_registry: Any = None,
        **kwargs: Any,
    ) -> None:
        # pymongo's __init__ does not run (no topology, no monitor tasks): the sync client holds the state.
        delegate = MongoClient(host, port, document_class, tz_aware, connect, type_registry, **kwargs)
        self._delegate = delegate
        self._owner = self
        copy_settings(self, delegate)
        self._encrypter = None  # pymongo's cursors look for client-side encryption before each batch
        delegate._run = track(delegate._run)  # each command of an offloaded call can be stopped
        workers = int(delegate.options.pool_options.max_pool_size or _UNBOUNDED_WORKERS)
        self._offload = Offload(workers, self._kill)

    def _kill(self, command: Mapping[str, Any]) -> None:
        """``killOp`` the operation running ``command`` when this process runs it; when the
        dbpath's owner is another process, close the command's connection to it, which stops
        the operation there as a client's disconnect does (ClientDisconnect)."""
        executor = self._delegate._executor
        local = executor if isinstance(executor, Executor) else executor.local
        if local is None:
            executor.abandon(command)
            return
        for opid, op in list(local.operations.items()):
            if op.command is command:
                local.execute("admin", {"killOp": 1, "op": opid})

    # -- what pymongo reaches its network layer for -----------------------------------------

    @property
    def _topology(self) -> NoReturn:  # type: ignore[override]
        raise no_network("AsyncMongoClient._topology")

    async def _get_topology(self) -> NoReturn:
        raise no_network("AsyncMongoClient._get_topology()")

    # pymongo's own AsyncCursor (gridfs's AsyncGridOutCursor is one) asks the client to run its
    # find and getMore and to release it: the sync facade's hooks answer (foliodb.client.driver_hooks).

    def _ensure_session(self, session: Any = None) -> Any:
        return to_async(self._delegate._ensure_session(to_sync(session)), self)

    async def _run_operation(self, operation: Any, run_with_conn: Any, address: Any = None) -> Any:
        operation.session = to_sync(operation.session)
        return await self._offload.run(self._delegate._run_operation, operation, run_with_conn, address)

    async def _cleanup_cursor_lock(self, cursor_id: int, address: Any, conn_mgr: Any, session: Any) -> None:
        cleanup = self._delegate._cleanup_cursor_lock
        await self._offload.run(cleanup, cursor_id, address, conn_mgr, to_sync(session))

    def _cleanup_cursor_no_lock(self, cursor_id: int, address: Any, conn_mgr: Any, session: Any) -> None:
        self._delegate._cleanup_cursor_no_lock(cursor_id, address, conn_mgr, to_sync(session))

    # -- handles and sessions (no I/O: on the loop) -----------------------------------------

    __getitem__ = inline(_Base.__getitem__)
    get_database = inline(_Base.get_database)
    get_default_database = inline(_Base.get_default_database)
    start_session = inline(_Base.start_session)
    append_metadata = inline(_Base.append_metadata)

    # -- operations (on a worker thread) ---------------------------------------------------

    bulk_write = offloaded(_Base.bulk_write)
    drop_database = offloaded(_Base.drop_database)
    list_database_names = offloaded(_Base.list_database_names)
    list_databases = offloaded(_Base.list_databases)
    server_info = offloaded(_Base.server_info)
    watch = offloaded(_Base.watch)

    async def aconnect(self) -> None:
        """Nothing to connect to: the dbpath was opened when the client was made."""

    async def close(self) -> None:
        """Close the engine and release the dbpath (pymongo's ``close``); later operations raise
        InvalidOperation."""
        await self._offload.run(self._delegate.close)
        self._offload.close()

    async def aclose(self) -> None:
        """Alias for :meth:`close`, for ``contextlib.aclosing``."""
        await self.close()

    # -- properties ------------------------------------------------------------------------

    @property
    def options(self) -> ClientOptions:
        """The client's options as pymongo parsed them (pymongo's ``ClientOptions``)."""
        return self._delegate.options

    @property
    def topology_description(self) -> NoReturn:
        """Not available: an embedded client has no server topology to describe."""
        raise no_network("AsyncMongoClient.topology_description")

    @property
    def nodes(self) -> frozenset[tuple[str, int]]:
        """The set of known servers: empty for an embedded client."""
        return self._delegate.nodes

    @property
    async def address(self) -> None:
        """None: an embedded client has no server address."""
        return self._delegate.address

    @property
    async def primary(self) -> None:
        """None: an embedded node has no address."""
        return self._delegate.primary

    @property
    async def secondaries(self) -> set[tuple[str, int | None]]:
        """None on an embedded single node."""
        return self._delegate.secondaries

    @property
    async def arbiters(self) -> set[tuple[str, int | None]]:
        """None on an embedded single node."""
        return self._delegate.arbiters

    @property
    async def is_primary(self) -> bool:
        """True: the embedded single node takes writes."""
        return self._delegate.is_primary

    @property
    async def is_mongos(self) -> bool:
        """False: the embedded engine is not a mongos router."""
        return self._delegate.is_mongos

    @property
    def dbpath(self) -> str:
        """The directory this client opened (or ``:memory:``)."""
        return self._delegate.dbpath

    def eq_props(self) -> tuple[Any, ...]:
        """What makes two clients equal: the engine they share."""
        return self._delegate.eq_props()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncMongoClient):
            return self.eq_props() == other.eq_props()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.eq_props())

    def __repr__(self) -> str:
        return f"AsyncMongoClient({self._delegate.dbpath!r})"
