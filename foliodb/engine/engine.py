"""The engine of one dbpath: storage, catalog and collection stores.

One :class:`Engine` per dbpath per process: :func:`open_engine` hands every
client of the same path the same engine (counted), so two clients in one
process share it instead of fighting over the dbpath lock.

Catalog changes (create, drop, rename, collMod, index changes) look the
catalog up and change it inside one write transaction, so two of them never
act on the same stale version; readers keep the version of their snapshot
(see :mod:`foliodb.engine.storage`).

Index builds do not hold the writer for their whole run (MongoDB's hybrid
builds, made simpler by a serialized writer): the index is first committed as
*building* - every later write maintains its entries, but no query sees it -
then the existing documents are indexed in chunks, each chunk one short write
transaction reading the chunk's documents as they are now, and finally the
index is committed as ready. Because a chunk reads the current documents and
writes maintain the index for every change after the first commit, the index
ends exactly right. A unique-key clash seen by a concurrent write is recorded
and fails the build at its end (as mongod's build fails on a constraint
violation), and a failed, killed or aborted build removes its index.
Collections small enough to index in one chunk are built in one transaction.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson import Timestamp
from bson.binary import Binary, UuidRepresentation

from foliodb import interrupt, lane
from foliodb.engine.catalog import CODEC, Catalog, CatalogDraft, CollectionInfo, IndexInfo
from foliodb.engine.oplog import recorded
from foliodb.engine.plan_cache import IndexFilters
from foliodb.engine.records import CollectionStore
from foliodb.engine.search.manager import SearchIndexes
from foliodb.engine.sessions import SessionRegistry
from foliodb.engine.storage import Storage, _Reader
from foliodb.engine.transactions import State, Transaction, WriteConflictError, write_conflict
from foliodb.engine.ttl import TTLMonitor
from foliodb.engine.usage import EngineUsage
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string

_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()

ID_INDEX_SPEC = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


# Documents indexed per write transaction of an index build: a few milliseconds of the writer.
BUILD_CHUNK = 1000
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


@dataclass
class IndexBuild:
    """A build in progress: its collection and the indexes it fills."""

    collection_id: int
    names: list[str]
    index_ids: list[int]
    total: int  # documents when it began (the progress figure's total)


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
        self.sessions = SessionRegistry(self.storage.writer, self.abort_transaction)
        # readConcern snapshot reads' pinned snapshots: (session, cluster time) -> (reader, when pinned).
        self._snapshots: dict[tuple[bytes, int, int], tuple[_Reader, float]] = {}
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
        self.search.close()  # saves what the search indexes applied since their last save
        self.storage.close()

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
                oplog.trim(conn, time.time())

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

    # -- indexes -----------------------------------------------------------------

    def begin_index_build(self, store: CollectionStore, specs: list[dict[str, Any]]) -> IndexBuild | None:
        """Inside a write: add the indexes. A collection that fits one chunk is
        indexed here, in this transaction (None is returned); a larger one gets
        its indexes as *building*, to be filled by :meth:`run_index_build`
        after this transaction commits."""
        txn = self.storage.transaction()
        if txn is not None:
            self._index_in_transaction(txn, store, specs)
            return None
        draft = self.draft()
        info = store.info
        total = store.count()
        building = total > BUILD_CHUNK
        indexes = [draft.add_index(info, spec, building=building) for spec in specs]
        if not building:
            self.record(info.db, info, {"createIndexes": info.name, "indexes": [dict(i.spec) for i in indexes]})
        if building:
            return IndexBuild(info.id, [i.name for i in indexes], [i.id for i in indexes], total)
        if total:
            filled = self.store_of(draft.catalog.by_id[info.id])
            ids = {index.id for index in indexes}
            writers = [w for w in filled.writers if w.info.id in ids]
            for rid, data in filled.scan():
                doc = bson.decode(data, CODEC)
                for writer in writers:
                    filled.add_entries(writer, doc, rid)
        return None

    def _index_in_transaction(self, txn: Transaction, store: CollectionStore, specs: list[dict[str, Any]]) -> None:
        """Indexes on a collection the transaction created (mongod allows no other inside one)."""
        info = store.info
        if info.id >= 0:
            raise CommandError(
                ErrorCode.OperationNotSupportedInTransaction,
                f"Cannot create new indexes on existing collection {info.ns} in a multi-document transaction.",
            )
        for spec in specs:
            info.indexes[spec["name"]] = IndexInfo(txn.next_pending_id, spec["name"], spec)
            txn.next_pending_id -= 1
        info.store = None  # a new store maintains the new indexes
        overlay = txn.overlay_of(info.id)
        if overlay is not None:
            fresh = self.store_of(info)
            for writer in fresh.writers:
                if writer.unique and writer.info.name in {spec["name"] for spec in specs}:
                    entries = overlay.entries(writer.info, writer.keys, True)
                    for (key, _), (next_key, _) in itertools.pairwise(entries):
                        if key == next_key:
                            raise CommandError(
                                ErrorCode.DuplicateKey, f"E11000 duplicate key error collection: {info.ns}"
                            )

    # -- multi-document transactions ----------------------------------------------------------

    def begin_transaction(self, options: dict[str, Any]) -> Transaction:
        """A new transaction on a pinned snapshot."""
        table = self.storage.transactions
        table.opening_snapshot()  # before the snapshot: every commit after it gets stamped
        txn = None
        try:
            view, _ = self.storage.pin_snapshot()
            txn = Transaction(table, view, view.commits, options)
            view.overlay = txn
        finally:
            table.begin(txn)
        return txn

    def commit_transaction(self, txn: Transaction) -> None:
        """Apply a transaction's writes in one write transaction, or raise
        WriteConflictError (and abort it) when another write got there first."""
        storage = self.storage
        bound = storage.transaction_view()
        storage.bind_transaction(None)
        try:
            if txn.collections or txn.pending:
                with storage.write():
                    txn.state = State.COMMITTING
                    storage.oplog.transaction(txn.lsid, txn.number)
                    self._replay(txn)
        except (CommandError, WriteConflictError):
            txn.state = State.IN_PROGRESS
            self.abort_transaction(txn)
            raise WriteConflictError(write_conflict()) from None
        except BaseException:
            txn.state = State.IN_PROGRESS
            self.abort_transaction(txn)
            raise
        finally:
            storage.bind_transaction(bound)
        txn.end(State.COMMITTED)
        storage.unpin(txn.view)

    def _replay(self, txn: Transaction) -> None:
        created: dict[int, CollectionInfo] = {}
        for (db, name), pending in txn.pending.items():
            if self.catalog.get(db, name) is not None:
                raise WriteConflictError(write_conflict())  # someone created it meanwhile
            draft = self.draft()
            info = draft.add_collection(db, name, dict(pending.options))
            for index in pending.indexes.values():
                draft.add_index(info, dict(index.spec))
            created[pending.id] = info
            self.record(db, info, {"create": name, **pending.options, "idIndex": dict(pending.id_index.spec)})
            built = [dict(index.spec) for index in pending.indexes.values() if index.name != "_id_"]
            if built:
                self.record(db, info, {"createIndexes": name, "indexes": built})
        if txn.changed_since_snapshot():
            raise WriteConflictError(write_conflict())
        oplog = self.storage.oplog
        oplog.muted = True  # the net effect is applied below; the oplog gets each write as it happened
        try:
            self._apply_overlays(txn, created)
        finally:
            oplog.muted = False
        for op, collection_id, doc_id, before, after, replace in txn.writes:
            target = created.get(collection_id) or self.catalog.by_id[collection_id]
            if op == "i":
                assert after is not None
                oplog.insert(target.db, target.name, target.uuid, doc_id, after)
            elif op == "u":
                assert before is not None and after is not None
                oplog.update(target.db, target.name, target.uuid, doc_id, before, after, replace, target.keeps_images)
            else:
                assert before is not None
                oplog.delete(target.db, target.name, target.uuid, doc_id, before, target.keeps_images)

    def _apply_overlays(self, txn: Transaction, created: dict[int, CollectionInfo]) -> None:
        for collection_id, overlay in txn.collections.items():
            target = created.get(collection_id) or self.catalog.by_id.get(collection_id)
            if target is None:
                raise WriteConflictError(write_conflict())  # dropped meanwhile
            store = self.store_of(target)
            for rid, data in overlay.rows.items():
                if rid in overlay.inserted:
                    if data is not None:
                        store.insert(overlay.docs[rid], data)
                    continue
                raw = store.get_raw(rid)
                if raw is None:
                    raise WriteConflictError(write_conflict())  # deleted meanwhile
                current = bson.decode(raw, CODEC)
                if data is None:
                    store.delete(rid, current, raw)
                else:
                    store.update(rid, current, overlay.docs[rid], data, raw, rid in overlay.replaced)

    def snapshot_at(self, session: bytes | None, at: Timestamp | None) -> tuple[_Reader, Timestamp]:
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

    def release_snapshot(self, view: _Reader) -> None:
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

    def abort_transaction(self, txn: Transaction) -> None:
        if txn.state in (State.COMMITTED, State.ABORTED):
            return
        txn.end(State.ABORTED)
        self.storage.unpin(txn.view)

    def run_index_build(self, build: IndexBuild) -> None:
        """Fill a building index chunk by chunk, then make it ready; on any
        failure (a duplicate key, killOp, maxTimeMS, the collection or index
        dropped meanwhile) remove what the build added, and raise."""
        op = interrupt.current()
        done = 0
        last = 0
        try:
            while True:
                interrupt.check()
                with self.storage.write():
                    store, _ = self._building(build)
                    writers = [w for w in store.writers if w.info.id in build.index_ids]
                    rows = store.rows_from(last + 1, BUILD_CHUNK)
                    for rid, data in rows:
                        doc = bson.decode(data, CODEC)
                        for writer in writers:
                            store.add_build_entries(writer, doc, rid)
                done += len(rows)
                if op is not None:
                    op.progress = (done, max(build.total, done))
                if len(rows) < BUILD_CHUNK:
                    break
                last = rows[-1][0]
            with self.storage.write():
                store, indexes = self._building(build)
                for index in indexes:
                    if index.build_error is not None:
                        raise index.build_error
                draft = self.draft()
                for index in indexes:
                    draft.index_ready(store.info, index)
                self.record(
                    store.info.db,
                    store.info,
                    {"createIndexes": store.info.name, "indexes": [dict(i.spec) for i in indexes]},
                )
        except BaseException:
            self._abandon_build(build)
            raise

    def _building(self, build: IndexBuild) -> tuple[CollectionStore, list[IndexInfo]]:
        """The current store and indexes of a build; IndexBuildAborted when they went away."""
        info = self.catalog.by_id.get(build.collection_id)
        if info is None:
            raise CommandError(ErrorCode.IndexBuildAborted, "Index build aborted: the collection was dropped")
        indexes = []
        for name, index_id in zip(build.names, build.index_ids, strict=True):
            index = info.building.get(name)
            if index is None or index.id != index_id:
                raise CommandError(ErrorCode.IndexBuildAborted, f"Index build aborted: index '{name}' was dropped")
            indexes.append(index)
        return self.store_of(info), indexes

    def _abandon_build(self, build: IndexBuild) -> None:
        with self.storage.write():
            info = self.catalog.by_id.get(build.collection_id)
            if info is None:
                return
            for name, index_id in zip(build.names, build.index_ids, strict=True):
                index = info.building.get(name)
                if index is not None and index.id == index_id:
                    self.draft().remove_index(info, index)

    def wait_for_build(self, db: str, name: str, index_name: str) -> None:
        """Until no index named ``index_name`` is being built on the collection
        (a second createIndexes of it waits for the first, as mongod's does)."""
        while True:
            self.storage.end_view()
            info = self.catalog.get(db, name)
            if info is None or index_name not in info.building:
                return
            interrupt.check()
            lane.leave()
            time.sleep(0.02)

    def drop_index(self, info: CollectionInfo, index: IndexInfo) -> None:
        """Inside a write: drop a ready index, or abort a build in progress."""
        ready = index.name in self.catalog.by_id[info.id].indexes
        self.draft().remove_index(info, index)
        if ready:
            self.record(info.db, info, {"dropIndexes": info.name, "index": index.name, "spec": dict(index.spec)})

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
