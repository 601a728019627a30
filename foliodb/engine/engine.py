"""The engine of one dbpath: storage, catalog and collection stores.

One :class:`Engine` per dbpath per process: :func:`open_engine` hands every
client of the same path the same engine (counted), so two clients in one
process share it instead of fighting over the dbpath lock.

Catalog changes (create, drop, rename, collMod, index changes) look the
catalog up and change it inside one write transaction, so two of them never
act on the same stale version; readers keep the version of their snapshot
(see :mod:`foliodb.engine.storage`).

Index builds (:mod:`foliodb.engine.index_builds`: built in chunks, without
holding the writer for the whole build) and multi-document transactions
(:mod:`foliodb.engine.transaction_lifecycle`) are methods of :class:`Engine`
defined in their own modules.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from bson import Timestamp
from bson.binary import Binary, UuidRepresentation

from foliodb import interrupt, lane
from foliodb.engine import index_builds, transaction_lifecycle
from foliodb.engine.catalog import Catalog, CatalogDraft, CollectionInfo, IndexInfo
from foliodb.engine.oplog import recorded
from foliodb.engine.plan_cache import IndexFilters
from foliodb.engine.records import CollectionStore
from foliodb.engine.search.manager import SearchIndexes
from foliodb.engine.sessions import SessionRegistry
from foliodb.engine.snapshot_reads import Reader
from foliodb.engine.storage import Storage
from foliodb.engine.transactions import Transaction
from foliodb.engine.ttl import TTLMonitor
from foliodb.engine.usage import EngineUsage
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string

_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()

ID_INDEX_SPEC = {"v": 2, "key": {"_id": 1}, "name": "_id_"}
# How long and how many readConcern snapshot points stay readable (mongod's minSnapshotHistoryWindowInSeconds).
SNAPSHOT_HISTORY_SECONDS = 300.0
MAX_SNAPSHOTS = 16


def id_index_spec(options: Mapping[str, Any]) -> dict[str, Any]:
    """A new collection's _id index: it takes the collection's default
    collation, as mongod's does (so _id is unique, and looked up, under it)."""
    if "collation" in options:
        return {**ID_INDEX_SPEC, "collation": dict(options["collation"])}
    return dict(ID_INDEX_SPEC)


def open_engine(path: str, read_only: bool = False) -> Engine:
    """The process's engine for ``path`` (":memory:" is always a new one); a read-only one apart."""
    if path == ":memory:":
        return Engine(path)
    key = os.path.realpath(path) + ("?ro" if read_only else "")
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None or engine.closed or engine.storage.forked:
            engine = Engine(path, read_only)
            _ENGINES[key] = engine
        engine.users += 1
        return engine


def _uuid(value: uuid.UUID) -> Binary:
    return Binary.from_uuid(value, UuidRepresentation.STANDARD)


def validate_db_name(name: str) -> None:
    if not is_string(name) or not name:
        raise CommandError(ErrorCode.InvalidNamespace, "Invalid database name: ''")
    bad = set('/\\. "$\x00')
    if any(ch in bad for ch in name) or len(name) >= 64:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid database name: '{name}'")


def validate_collection_name(db: str, name: str) -> None:
    if not is_string(name) or not name:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{db}.'")
    if "$" in name or "\x00" in name or name.startswith("."):
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid collection name: {name}")
    if db == "local" and name == "oplog.rs":  # the oplog's own name (commands/oplog_rs.py reads it)
        raise CommandError(ErrorCode.InvalidNamespace, f"cannot write to '{db}.{name}'")


class Engine:
    def __init__(self, path: str, read_only: bool = False) -> None:
        self.path = path
        self.storage = Storage(path, read_only)
        self.read_only = self.storage.read_only
        self.users = 1 if path == ":memory:" else 0
        self.closed = False
        # Called (newest first) when the last user releases the engine, before the storage closes:
        # the dbpath's shared socket stops there (foliodb.server.share).
        self.closing_hooks: list[Callable[[], None]] = []
        # Server-wide parameters (getParameter/setParameter).
        self.parameters: dict[str, Any] = {"ttlMonitorSleepSecs": 60, "ttlMonitorEnabled": True}
        # Profiling settings per database (the profile command's ProfileSettings); empty: none.
        self.profiling: dict[str, Any] = {}
        # Index filters (planCacheSetFilter) per collection uuid: in memory only, as mongod's.
        self.index_filters: dict[uuid.UUID, IndexFilters] = {}
        self.usage = EngineUsage(self.storage.published)  # $indexStats, latencyStats
        self.sessions = SessionRegistry(self.storage, self.abort_transaction)
        # readConcern snapshot reads' pinned snapshots: (session, cluster time) -> (reader, when pinned).
        self._snapshots: dict[tuple[bytes, int, int], tuple[Reader, float]] = {}
        self._snapshots_lock = threading.Lock()
        # The operations running on this engine (currentOp, killOp), from every client of it.
        self.operations: dict[int, interrupt.Operation] = {}
        self.opids = itertools.count(1)
        # The embedded clients' commands take turns here (a server's connections take theirs in
        # the server's lane, and so pass this one by): foliodb/lane.py.
        self.lane = lane.FairLane()
        self.ttl = TTLMonitor(self)
        if not self.read_only:  # housekeeping writes (expiry, oplog trims): nothing to do read-only
            self.ttl.start()
        # Search indexes' in-memory structures and their background builder (foliodb.engine.search).
        self.search = SearchIndexes(self)
        if any(info.search_indexes for info in self.storage.published.collections.values()):
            self.search.start()

    @property
    def catalog(self) -> Catalog:
        """The catalog version of this thread's reads (the newest inside a write)."""
        return self.storage.catalog()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """An operation outside any command (authentication's user lookups): its reads share one snapshot."""
        self.storage.begin_operation()
        try:
            yield
        finally:
            self.storage.end_operation()

    def draft(self) -> CatalogDraft:
        """The catalog the current write transaction changes."""
        return self.storage.catalog_draft()

    def release(self) -> None:
        """One user is done; the last one closes the storage."""
        with _ENGINES_LOCK:
            self.users -= 1
            if self.users > 0 or self.closed:
                return
            self.closed = True
            key = os.path.realpath(self.path) + ("?ro" if self.read_only else "")
            if self.path != ":memory:" and _ENGINES.get(key) is self:
                del _ENGINES[key]
        for hook in reversed(self.closing_hooks):
            hook()
        self.storage.release_fsync_locks()  # a TTL pass waiting for the writer must end
        self.ttl.stop()
        if not self.read_only and not self.storage.forked:
            self.sessions.save(self.storage)  # the next open then reads no oplog entries back
        self.search.close()  # saves what the search indexes applied since their last save
        self.storage.close()

    # Defined in their own modules (see the module docstring).
    begin_index_build = index_builds.begin_index_build
    run_index_build = index_builds.run_index_build
    wait_for_build = index_builds.wait_for_build
    drop_index = index_builds.drop_index
    begin_transaction = transaction_lifecycle.begin_transaction
    commit_transaction = transaction_lifecycle.commit_transaction
    abort_transaction = transaction_lifecycle.abort_transaction

    # -- collections -----------------------------------------------------------

    def housekeeping(self) -> None:
        """Each background tick: expire idle sessions and transactions past their
        lifetime; trim the oplog to its bound (rarely: it checks a running total)."""
        if self.closed or self.storage.forked:
            return
        self.sessions.reap()
        oplog = self.storage.oplog
        if not oplog.measured():
            with self.reading():
                oplog.measure(self.storage.reader())
        if oplog.over():
            with self.reading(), self.storage.write() as conn:
                # All of them first, in the same write: the trim may remove the entries their records rode.
                self.sessions.save(self.storage)
                oplog.trim(conn, time.time())
        else:
            self.sessions.save(self.storage, due=True)

    def store(self, db: str, name: str) -> CollectionStore | None:
        """The records of a collection; None when it does not exist or is a view."""
        info = self.catalog.get(db, name)
        if info is None or info.is_view:
            return None
        return self.store_of(info)

    def store_of(self, info: CollectionInfo) -> CollectionStore:
        store: CollectionStore | None = info.store
        if store is None:
            store = info.store = CollectionStore(self.storage, info)
            store.index_filters = self.index_filters.setdefault(info.uuid, {})
        return store

    def create_collection(self, db: str, name: str, options: Mapping[str, Any] | None = None) -> CollectionStore:
        """A new collection with its _id index (inside a transaction: one only
        the transaction sees until it commits)."""
        validate_db_name(db)
        validate_collection_name(db, name)
        txn = self.storage.transaction()
        if txn is not None:
            return self._create_in_transaction(txn, db, name, dict(options or {}))
        with self.storage.write():
            if self.catalog.get(db, name) is not None:
                raise CommandError(ErrorCode.NamespaceExists, f"Collection {db}.{name} already exists.")
            draft = self.draft()
            info = draft.add_collection(db, name, dict(options or {}))
            id_spec = id_index_spec(info.options)
            draft.add_index(info, id_spec)
            self.record(db, info, {"create": name, **(options or {}), "idIndex": dict(id_spec)})
            store = self.store(db, name)
        assert store is not None
        return store

    def ensure_collection(self, db: str, name: str) -> CollectionStore:
        """The collection, created implicitly (as a first insert does) if
        missing; a view cannot be written. Called inside a write."""
        store = self.store(db, name)
        if store is None:
            info = self.catalog.get(db, name)
            if info is not None and info.is_view:
                raise CommandError(
                    ErrorCode.CommandNotSupportedOnView, f"Namespace {db}.{name} is a view, not a collection"
                )
            store = self.create_collection(db, name)
        return store

    def _create_in_transaction(self, txn: Transaction, db: str, name: str, options: dict[str, Any]) -> CollectionStore:
        view = txn.view
        assert view.catalog is not None
        if view.catalog.get(db, name) is not None:
            raise CommandError(ErrorCode.NamespaceExists, f"Collection {db}.{name} already exists.")
        if options.get("capped") or name.startswith("system."):
            raise CommandError(
                ErrorCode.OperationNotSupportedInTransaction,
                f"Cannot create a capped or system collection {db}.{name} in a multi-document transaction.",
            )
        info = CollectionInfo(txn.next_pending_id, db, name, uuid.uuid4(), options)
        txn.next_pending_id -= 1
        info.indexes["_id_"] = IndexInfo(txn.next_pending_id, "_id_", id_index_spec(options))
        txn.next_pending_id -= 1
        txn.pending[(db, name)] = info
        # The transaction's own catalog version: its snapshot's, with the collection it created.
        view.catalog = Catalog({**view.catalog.collections, (db, name): info})
        return self.store_of(info)

    def create_view(self, db: str, name: str, options: Mapping[str, Any]) -> None:
        validate_db_name(db)
        validate_collection_name(db, name)
        with self.storage.write():
            if self.catalog.get(db, name) is not None:
                raise CommandError(ErrorCode.NamespaceExists, f"Namespace {db}.{name} already exists")
            info = self.draft().add_collection(db, name, dict(options))
            self.record(db, info, {"create": name, **options})

    def resolve_view(self, db: str, name: str) -> tuple[str, list[Any]]:
        """(the collection a name reads from, the view pipelines to apply
        first); a plain collection resolves to itself and no pipeline."""
        pipeline: list[Any] = []
        seen: set[str] = set()
        catalog = self.catalog
        info = catalog.get(db, name)
        while info is not None and info.is_view:
            if name in seen:
                raise CommandError(ErrorCode.GraphContainsCycle, f"View cycle detected: {sorted(seen)}")
            seen.add(name)
            pipeline = info.view_pipeline + pipeline
            name = info.view_on
            info = catalog.get(db, name)
        return name, pipeline

    def drop_collection(self, db: str, name: str) -> bool:
        with self.storage.write():
            info = self.catalog.get(db, name)
            if info is None:
                return False
            self.draft().remove_collection(info)
            self.record(db, info, {"drop": name})
        return True

    def drop_database(self, db: str) -> None:
        with self.storage.write():
            for info in self.catalog.in_database(db):
                self.draft().remove_collection(info)
                self.record(db, info, {"drop": info.name})
            self.record(db, None, {"dropDatabase": 1})

    def rename_collection(self, db: str, name: str, to_db: str, to_name: str, drop_target: bool) -> None:
        validate_db_name(to_db)
        validate_collection_name(to_db, to_name)
        with self.storage.write():
            catalog = self.catalog
            info = catalog.get(db, name)
            if info is None:
                raise CommandError(ErrorCode.NamespaceNotFound, "Source collection " + f"{db}.{name} does not exist")
            if (db, name) == (to_db, to_name):
                raise CommandError(ErrorCode.IllegalOperation, "Can't rename a collection to itself")
            target = catalog.get(to_db, to_name)
            draft = self.draft()
            if target is not None:
                if not drop_target:
                    raise CommandError(ErrorCode.NamespaceExists, "target namespace exists")
                draft.remove_collection(target)
            draft.rename_collection(info, to_db, to_name)
            renamed: dict[str, Any] = {"renameCollection": f"{db}.{name}", "to": f"{to_db}.{to_name}"}
            if target is not None:
                renamed.update(dropTarget=_uuid(target.uuid))
            self.record(db, info, renamed)

    def collections(self, db: str) -> list[CollectionInfo]:
        return self.catalog.in_database(db)

    def databases(self) -> list[str]:
        return self.catalog.databases()

    # -- readConcern snapshot reads ---------------------------------------------------

    def snapshot_at(self, session: bytes | None, at: Timestamp | None) -> tuple[Reader, Timestamp]:
        """The pinned snapshot a readConcern snapshot read reads: the session's
        own one at ``at`` if an earlier read pinned it; else a new one of the
        newest state, which is the state at ``at`` unless something committed
        after ``at`` (SnapshotTooOld, as mongod once the history is gone)."""
        with self._snapshots_lock:
            self._expire_snapshots()
            if session is not None and at is not None:
                kept = self._snapshots.get((session, at.time, at.inc))
                if kept is not None:
                    return kept[0], at
            view, newest = self.storage.pin_snapshot()
            if at is not None and (newest.time, newest.inc) > (at.time, at.inc):
                self.storage.unpin(view)
                raise CommandError(
                    ErrorCode.SnapshotTooOld,
                    f"Read timestamp {at} is older than the oldest available timestamp {newest}",
                )
            chosen = at if at is not None else newest
            if session is not None:
                self._snapshots[(session, chosen.time, chosen.inc)] = (view, time.monotonic())
            return view, chosen

    def release_snapshot(self, view: Reader) -> None:
        """A snapshot read without a session is done with its snapshot (a session's stay for its next reads)."""
        with self._snapshots_lock:
            if any(kept is view for kept, _ in self._snapshots.values()):
                return
        self.storage.unpin(view)

    def _expire_snapshots(self) -> None:
        now = time.monotonic()
        old = [key for key, (_, pinned) in self._snapshots.items() if now - pinned > SNAPSHOT_HISTORY_SECONDS]
        while len(self._snapshots) - len(old) > MAX_SNAPSHOTS:
            old.append(min((k for k in self._snapshots if k not in old), key=lambda k: self._snapshots[k][1]))
        for key in old:
            view, _ = self._snapshots.pop(key)
            self.storage.unpin(view)

    def record(self, db: str, info: CollectionInfo | None, o: dict[str, Any], **extra: Any) -> None:
        """Inside a write: a catalog change's oplog entry (``o``: mongod's command
        document; ``extra``: its other fields, as a collMod's ``o2``). A view's
        entry has no ``ui``: as in mongod, views have no UUID."""
        if info is not None and not recorded(db, info.name):
            return
        self.storage.oplog.command(db, info.uuid if info is not None and not info.is_view else None, o, **extra)

    def options_before(self, info: CollectionInfo) -> dict[str, Any]:
        """A collMod's ``o2.collectionOptions_old``: the collection's options (with its
        UUID) before the change, as mongod's oplog keeps them for the modify event."""
        return dict(info.options) if info.is_view else {"uuid": _uuid(info.uuid), **info.options}
