"""The engine of one dbpath: storage, catalog and collection stores.

One :class:`Engine` per dbpath per process: :func:`open_engine` hands every
client of the same path the same engine (counted), so two clients in one
process share it instead of fighting over the dbpath lock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC, Catalog, CollectionInfo, IndexInfo
from foliodb.engine.records import CollectionStore
from foliodb.engine.storage import Storage
from foliodb.engine.ttl import TTLMonitor
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string

_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()

ID_INDEX_SPEC = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


def open_engine(path: str) -> Engine:
    """The process's engine for ``path`` (":memory:" is always a new one)."""
    if path == ":memory:":
        return Engine(path)
    key = os.path.realpath(path)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None or engine.closed:
            engine = Engine(path)
            _ENGINES[key] = engine
        engine.users += 1
        return engine


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


class Engine:
    def __init__(self, path: str) -> None:
        self.path = path
        self.storage = Storage(path)
        self.catalog = Catalog(self.storage.conn)
        self.storage.rollback_hooks.append(self._after_rollback)
        self._stores: dict[int, CollectionStore] = {}
        self.users = 1 if path == ":memory:" else 0
        self.closed = False
        # Server-wide parameters (getParameter/setParameter).
        self.parameters: dict[str, Any] = {"ttlMonitorSleepSecs": 60, "ttlMonitorEnabled": True}
        # Profiling settings per database (the profile command's ProfileSettings); empty: none.
        self.profiling: dict[str, Any] = {}
        self.ttl = TTLMonitor(self)
        self.ttl.start()

    @property
    def mutex(self) -> threading.RLock:
        return self.storage.mutex

    def _after_rollback(self) -> None:
        self.catalog.reload()
        self._stores.clear()

    def release(self) -> None:
        """One user is done; the last one closes the storage."""
        with _ENGINES_LOCK:
            self.users -= 1
            if self.users > 0 or self.closed:
                return
            self.closed = True
            if self.path != ":memory:":
                _ENGINES.pop(os.path.realpath(self.path), None)
        self.ttl.stop()
        self.storage.close()

    # -- collections -----------------------------------------------------------

    def store(self, db: str, name: str) -> CollectionStore | None:
        """The records of a collection; None when it does not exist or is a view."""
        info = self.catalog.get(db, name)
        if info is None or info.is_view:
            return None
        store = self._stores.get(info.id)
        if store is None or store.info is not info:
            store = CollectionStore(self.storage, self.catalog, info)
            self._stores[info.id] = store
        return store

    def create_collection(self, db: str, name: str, options: Mapping[str, Any] | None = None) -> CollectionStore:
        """A new collection with its _id index."""
        validate_db_name(db)
        validate_collection_name(db, name)
        if self.catalog.get(db, name) is not None:
            raise CommandError(ErrorCode.NamespaceExists, f"Collection {db}.{name} already exists.")
        with self.storage.write():
            info = self.catalog.add_collection(db, name, dict(options or {}))
            self.catalog.add_index(info, dict(ID_INDEX_SPEC))
        store = self.store(db, name)
        assert store is not None
        return store

    def ensure_collection(self, db: str, name: str) -> CollectionStore:
        """The collection, created implicitly (as a first insert does) if
        missing; a view cannot be written."""
        store = self.store(db, name)
        if store is None:
            info = self.catalog.get(db, name)
            if info is not None and info.is_view:
                raise CommandError(
                    ErrorCode.CommandNotSupportedOnView, f"Namespace {db}.{name} is a view, not a collection"
                )
            store = self.create_collection(db, name)
        return store

    def create_view(self, db: str, name: str, options: Mapping[str, Any]) -> None:
        validate_db_name(db)
        validate_collection_name(db, name)
        if self.catalog.get(db, name) is not None:
            raise CommandError(ErrorCode.NamespaceExists, f"Namespace {db}.{name} already exists")
        with self.storage.write():
            self.catalog.add_collection(db, name, dict(options))

    def resolve_view(self, db: str, name: str) -> tuple[str, list[Any]]:
        """(the collection a name reads from, the view pipelines to apply
        first); a plain collection resolves to itself and no pipeline."""
        pipeline: list[Any] = []
        seen: set[str] = set()
        info = self.catalog.get(db, name)
        while info is not None and info.is_view:
            if name in seen:
                raise CommandError(ErrorCode.GraphContainsCycle, f"View cycle detected: {sorted(seen)}")
            seen.add(name)
            pipeline = list(info.options.get("pipeline", [])) + pipeline
            name = info.options["viewOn"]
            info = self.catalog.get(db, name)
        return name, pipeline

    def drop_collection(self, db: str, name: str) -> bool:
        info = self.catalog.get(db, name)
        if info is None:
            return False
        with self.storage.write():
            self.catalog.remove_collection(info)
        self._stores.pop(info.id, None)
        return True

    def drop_database(self, db: str) -> None:
        with self.storage.write():
            for info in self.catalog.in_database(db):
                self.catalog.remove_collection(info)
                self._stores.pop(info.id, None)

    def rename_collection(self, db: str, name: str, to_db: str, to_name: str, drop_target: bool) -> None:
        validate_db_name(to_db)
        validate_collection_name(to_db, to_name)
        info = self.catalog.get(db, name)
        if info is None:
            raise CommandError(ErrorCode.NamespaceNotFound, "Source collection " + f"{db}.{name} does not exist")
        if (db, name) == (to_db, to_name):
            raise CommandError(ErrorCode.IllegalOperation, "Can't rename a collection to itself")
        target = self.catalog.get(to_db, to_name)
        with self.storage.write():
            if target is not None:
                if not drop_target:
                    raise CommandError(ErrorCode.NamespaceExists, "target namespace exists")
                self.catalog.remove_collection(target)
                self._stores.pop(target.id, None)
            self.catalog.rename_collection(info, to_db, to_name)

    def collections(self, db: str) -> list[CollectionInfo]:
        return self.catalog.in_database(db)

    def databases(self) -> list[str]:
        return self.catalog.databases()

    # -- indexes -----------------------------------------------------------------

    def build_index(self, store: CollectionStore, spec: dict[str, Any]) -> IndexInfo:
        """Create an index and fill it from the collection's documents, in one
        transaction: a failure (say, a duplicate under a unique index) leaves
        nothing behind."""
        with self.storage.write():
            index = self.catalog.add_index(store.info, spec)
            store.refresh_indexes()
            writer = next(w for w in store.writers if w.info is index)
            try:
                for rid, data in store.scan():
                    store.add_entries(writer, bson.decode(data, CODEC), rid)
            except BaseException:
                store.refresh_indexes()
                raise
        return index

    def drop_index(self, store: CollectionStore, index: IndexInfo) -> None:
        with self.storage.write():
            self.catalog.remove_index(store.info, index)
        store.refresh_indexes()
