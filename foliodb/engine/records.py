"""A collection's documents and index entries: the engine's write path.

:class:`CollectionStore` writes a document and all of its index entries with
one SQLite statement each, inside the caller's storage transaction, and
reads documents back by record id, by ``_id`` or in record-id order.

Invariants (checked by ``validate``):

* every record has exactly the entries its document yields for each index
  (none for a sparse or partial index that excludes it);
* an entry points at an existing record.
"""

from __future__ import annotations

import functools
import gc
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import bson

from foliodb import interrupt
from foliodb.engine.cache import Row, row_size
from foliodb.engine.catalog import CODEC, Catalog, CollectionInfo, IndexInfo, set_flag
from foliodb.engine.geo_keys import GEO_KINDS, FlatGrid, flat_document_keys, sphere_document_keys
from foliodb.engine.index_keys import EMPTY_ARRAY, document_keys, hashed_document_keys, wildcard_keys, with_rid
from foliodb.engine.oplog import recorded
from foliodb.engine.overlay import CollectionOverlay, in_range, merge_index_rows, merge_scan
from foliodb.engine.plan_cache import IndexFilters, PlanCache, PlanMemo
from foliodb.engine.storage import Storage
from foliodb.engine.text import TextIndex
from foliodb.engine.transactions import HeldByTransactionError, State, Transaction, WriteConflictError, write_conflict
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import collation, keystring
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter
from foliodb.query.keystring import is_canonical
from foliodb.query.paths import MISSING, reach
from foliodb.query.render import render_document

if TYPE_CHECKING:
    from foliodb.engine.bucket_catalog import BucketCatalog

# Statements on the single-document paths bind BLOBs as bytearray: the sqlite3 module binds bytes only
# after a failed adapter lookup that formats an error message (about 6,000 instructions a parameter,
# measured with callgrind); a bytearray binds directly, as the same BLOB.

MAX_BSON_SIZE = 16 * 1024 * 1024
# "MongoDB supports no more than 100 levels of nesting for BSON documents";
# each document or array is a level, the top-level document the first.
MAX_NESTING_DEPTH = 100
_MIN_LEVEL_BYTES = 7  # the smallest a nested level's encoding can be
SCAN_BATCH = 256
# A scan's first fetch; each next one doubles, up to SCAN_BATCH. A suspended scan (an open cursor
# between getMores) holds the rows fetched and not yet returned: 256 of them were 224 KiB of a
# cursor of 1 KB documents opened with batchSize 1; a few at first keep an idle cursor small.
SCAN_FIRST = 2


class IndexWriter:
    """Maintains one index's entries; compiled from its definition once."""

    def __init__(self, info: IndexInfo, building: bool = False) -> None:
        self.info = info
        # An index being built: a unique-key clash is recorded for the build to
        # fail on, instead of failing the write (see engine.py).
        self.building = building
        self.table = info.table
        self.fields = info.fields
        self.unique = info.unique
        self.sparse = bool(info.spec.get("sparse"))
        partial = info.spec.get("partialFilterExpression")
        # A collated index reads its partial filter, and keys strings, by its collation.
        self.collator = info.collator if info.kind != "text" else None
        self.partial: Callable[..., bool] | None = (
            compile_filter(partial, Context(collator=self.collator)) if partial is not None else None
        )
        self.is_id = info.name == "_id_"
        self.kind = info.kind
        if self.kind == "text":
            self.text = TextIndex.from_spec(info.spec)
        elif self.kind == "wildcard":
            root = next(iter(info.key))
            self.wildcard_root = tuple(root.split(".")[:-1])
            self.wildcard_projection = info.spec.get("wildcardProjection")
        elif self.kind == "hashed":
            self.hashed = [direction == "hashed" for direction in info.key.values()]
        elif self.kind in GEO_KINDS:
            self.geo_kinds = [str(direction) for direction in info.key.values()]
            spec = info.spec
            self.grid = FlatGrid(
                int(spec.get("bits", 26)), float(spec.get("min", -180.0)), float(spec.get("max", 180.0))
            )
        # Set when a document first makes the index multikey; the store
        # records it in the catalog within the same transaction.
        self.mark_multikey = False
        # Set when a key value first does not decode back as itself (2.0,
        # Int64(5)...): the index can no longer cover queries.
        self.mark_lossy = False
        self.insert_sql = f"INSERT INTO {self.table} (key, rid) VALUES (?, ?)"
        self.delete_sql = f"DELETE FROM {self.table} WHERE key = ?"

    def keys(self, doc: dict[str, Any]) -> dict[bytes, tuple[Any, ...]]:
        """The value keys of a document (the record id not yet appended),
        each with the values that made it; {} when the index skips it."""
        if self.is_id:
            value = doc["_id"]
            if not self.info.lossy and not is_canonical(value):
                self.mark_lossy = True
            if self.collator is not None:
                value = self.collator.transform(value)
            return {keystring.encode(value): (value,)}
        if self.partial is not None and not self.partial(doc):
            return {}
        if self.collator is not None:
            doc = self.collator.transform(doc)
        if self.kind != "btree":
            return self._special_keys(doc)
        if self.sparse and all(_absent(doc, parts) for parts, _ in self.fields):
            return {}
        keys, multikey = document_keys(doc, self.fields)
        if multikey and not self.info.multikey:
            self.mark_multikey = True
        if not self.info.lossy and not all(
            is_canonical(v) for values in keys.values() for v in values if v is not MISSING and v is not EMPTY_ARRAY
        ):
            self.mark_lossy = True
        return keys

    def _special_keys(self, doc: dict[str, Any]) -> dict[bytes, tuple[Any, ...]]:
        if self.kind == "text":
            # Text and wildcard indexes are sparse by nature: no terms, no entries. An entry is the
            # prefix values, the term, its score in the document and the suffix values (mongod's
            # FTSIndexFormat: a unique text index refuses two documents equal in all four).
            found = self.text.term_scores(doc)
            if not found:
                return {}
            before, after = self.text.extra_keys(doc) if self.text.before or self.text.after else (b"", b"")
            encode = keystring.encode
            return {before + encode(term) + encode(score) + after: (term,) for term, score in found.items()}
        if self.kind == "wildcard":
            keys = wildcard_keys(doc, self.wildcard_root, self.wildcard_projection)
            if keys and not self.info.multikey:
                self.mark_multikey = True  # several paths per document
            return keys
        if self.kind in GEO_KINDS:
            # Geo indexes are sparse by nature: no geometry, no entries.
            if self.kind == "2dsphere":
                keys = sphere_document_keys(doc, self.fields, self.geo_kinds)
            else:
                keys = flat_document_keys(doc, self.fields, self.geo_kinds, self.grid)
            if len(keys) > 1 and not self.info.multikey:
                self.mark_multikey = True
            return keys
        if self.sparse and all(_absent(doc, parts) for parts, _ in self.fields):
            return {}
        return hashed_document_keys(doc, self.fields, self.hashed)

    def duplicate_error(self, ns: str, values: tuple[Any, ...]) -> CommandError:
        key_pattern = dict(self.info.key)
        key_value = {
            name: (None if v is MISSING or v is EMPTY_ARRAY else v)
            for name, v in zip(key_pattern, values, strict=False)
        }
        if self.collator is None:
            shown = render_document(key_value)
            return CommandError(
                ErrorCode.DuplicateKey,
                f"E11000 duplicate key error collection: {ns} index: {self.info.name} dup key: {shown}",
                keyPattern=key_pattern,
                keyValue=key_value,
            )
        # A collated index knows its strings only as sort keys: mongod shows them in hex.
        key_value = {name: _collation_key(v) for name, v in key_value.items()}
        collation = render_document(self.collator.spec)
        return CommandError(
            ErrorCode.DuplicateKey,
            f"E11000 duplicate key error collection: {ns} index: {self.info.name} collation: {collation} "
            f"dup key: {render_document(key_value)}",
            keyPattern=key_pattern,
            keyValue=key_value,
            collation=dict(self.collator.spec),
        )


def _collation_key(value: Any) -> Any:
    """A transformed string (its sort key as latin-1) as mongod prints a collation key."""
    return collation.shown_key(value) if isinstance(value, str) else value


def _needle_filter(needles: list[list[bytes]] | None, column: str) -> tuple[str, list[bytes]]:
    """The SQL that keeps rows whose ``column`` holds, for each group of needles,
    one of them (a scan's prefilter), and its arguments."""
    sql = "".join(" AND (" + " OR ".join(f"instr({column}, ?) > 0" for _ in group) + ")" for group in needles or ())
    return sql, [needle for group in needles or () for needle in group]


def _absent(doc: dict[str, Any], parts: tuple[str, ...]) -> bool:
    """Does the path reach nothing (what a sparse index leaves out)?"""
    return all(value is MISSING for value, _ in reach(doc, parts, expand=False))


class CollectionStore:
    """Records and index entries of one version of a collection (its
    :class:`CollectionInfo`): writers for all its indexes, those being built
    included."""

    def __init__(self, storage: Storage, info: CollectionInfo) -> None:
        self.storage = storage
        self.info = info
        # Writes go through the writer connection, only inside Storage.write().
        self.conn: sqlite3.Connection = storage.writer
        self._txns = storage.transactions
        self._cache = storage.cache  # told of every record write (engine/cache.py)
        self._oplog = storage.oplog if recorded(info.db, info.name) else None  # None: writes here go unrecorded
        self._checked: Catalog | None = None  # the last catalog version this store was found alive in
        table = info.table
        self._insert_sql = f"INSERT INTO {table} (doc) VALUES (?)"
        self._update_sql = f"UPDATE {table} SET doc = ? WHERE rid = ?"
        self._delete_sql = f"DELETE FROM {table} WHERE rid = ?"
        self._get_sql = f"SELECT doc FROM {table} WHERE rid = ?"
        self._count_sql = f"SELECT count(*) FROM {table}"
        # A capped collection keeps at most `size` bytes and `max` documents,
        # evicting the oldest (lowest record id) after each insert.
        options = info.options
        self.cap_size: int | None = int(options["size"]) if options.get("capped") else None
        self.cap_max: int | None = int(options.get("max") or 0) or None if options.get("capped") else None
        self._cap_totals: list[int] | None = None  # [documents, bytes], loaded on first use
        # Record writes so far (each insert, update, delete, truncate): a cache of the
        # records (the bucket catalog) knows it is stale when this moved past what it saw.
        self.writes = 0
        # A time-series buckets collection's catalog of open buckets, made on first use.
        self.bucket_catalog: BucketCatalog | None = None

        self.writers = [IndexWriter(index) for index in info.indexes.values()]
        self.writers += [IndexWriter(index, building=True) for index in info.building.values()]
        self.plan_cache = PlanCache()  # this version's: a catalog change starts a new one
        self.plan_memo = PlanMemo()  # the planner's own, of this version too
        # The collection's index filters, shared by its versions (the engine's, by uuid).
        self.index_filters: IndexFilters = {}
        id_table = info.id_index.table
        self._by_id_sql = f"SELECT c.rid, c.doc FROM {id_table} AS i JOIN {table} AS c ON c.rid = i.rid WHERE i.key = ?"

    # -- writes (inside Storage.write) --------------------------------------

    def encode(self, doc: dict[str, Any], after_update: bool = False) -> bytes:
        try:
            data = bson.encode(doc, codec_options=CODEC)
        except (bson.errors.InvalidDocument, TypeError, OverflowError, ValueError) as exc:
            raise CommandError(ErrorCode.BadValue, f"cannot encode document: {exc}") from None
        if len(data) > MAX_BSON_SIZE:
            if after_update:
                raise CommandError(17419, f"Resulting document after update is larger than {MAX_BSON_SIZE}")
            raise CommandError(
                ErrorCode.BSONObjectTooLarge,
                f"object to insert too large. size in bytes: {len(data)}, max size: {MAX_BSON_SIZE}",
            )
        # Each nested level needs a 0x03 (document) or 0x04 (array) type byte and at least 7 bytes
        # (type, an empty name's NUL, length, terminator): the size, then the byte count (C speed),
        # rule most documents out before any walk.
        if (
            len(data) >= _MIN_LEVEL_BYTES * MAX_NESTING_DEPTH
            and data.count(3) + data.count(4) >= MAX_NESTING_DEPTH
            and _too_deep(doc)
        ):
            message = (
                f"Resulting document after update exceeds {MAX_NESTING_DEPTH} levels of nesting"
                if after_update
                else f"cannot insert document because it exceeds {MAX_NESTING_DEPTH} levels of nesting"
            )
            raise CommandError(ErrorCode.Overflow, message)
        return data

    def insert(self, doc: dict[str, Any], data: bytes | None = None) -> int:
        """Store a document (its ``_id`` already set) and its index entries.

        On failure (say, a duplicate key) nothing of the document remains,
        while the caller's transaction goes on: a batch continues with the
        next document as MongoDB's unordered inserts do."""
        if data is None:
            data = self.encode(doc)
        txn = self.storage.transaction()
        if txn is not None:
            return self._txn_insert(txn, doc, data)
        if self._txns.key_intents:
            self._wait_for_keys(doc, None)
        conn = self.conn
        self.writes += 1
        self._cache.writing(self.info.id)
        rid = conn.execute(self._insert_sql, (bytearray(data),)).lastrowid
        assert rid is not None
        try:
            for writer in self.writers:
                self.add_entries(writer, doc, rid)
        except BaseException:
            conn.execute(self._delete_sql, (rid,))
            for writer in self.writers:
                self._remove_own_entries(writer, doc, rid)
            raise
        if self._oplog is not None:
            self._oplog.insert(self.info.db, self.info.name, self.info.uuid, doc["_id"], data)
        if self.cap_size is not None:
            self._after_capped_insert(1, len(data))
        return rid

    def insert_batch(self, docs: list[dict[str, Any]]) -> None:
        """Store many documents with one statement per table (``executemany``).

        All or nothing: it raises on the first problem (a duplicate key, an
        unindexable document), and the caller, holding a savepoint, then
        rolls back and inserts one by one to report each error exactly."""
        encode = self.encode
        rows = [encode(doc) for doc in docs]
        txn = self.storage.transaction()
        if txn is not None:
            overlay = txn.writable(self.info)
            done: list[int] = []
            recorded_before = len(txn.writes)
            try:
                for doc, data in zip(docs, rows, strict=True):
                    done.append(self._txn_insert(txn, doc, data))
            except BaseException:
                for rid in done:
                    overlay.remove(rid)
                del txn.writes[recorded_before:]
                raise
            return
        if self._txns.key_intents:
            for doc in docs:
                self._wait_for_keys(doc, None)
        conn = self.conn
        self.writes += 1
        self._cache.writing(self.info.id)
        first = conn.execute(f"SELECT coalesce(max(rid), 0) + 1 FROM {self.info.table}").fetchone()[0]
        rids = range(first, first + len(docs))
        conn.executemany(
            f"INSERT INTO {self.info.table} (rid, doc) VALUES (?, ?)",
            zip(rids, map(bytearray, rows), strict=True),
        )
        for writer in self.writers:
            if writer.is_id:
                id_key = collation.key_encoder(writer.collator)
                entries = [(bytearray(id_key(doc["_id"])), rid) for doc, rid in zip(docs, rids, strict=True)]
                if not writer.info.lossy and not all(is_canonical(doc["_id"]) for doc in docs):
                    writer.mark_lossy = True
            elif writer.unique:
                entries = [(bytearray(k), rid) for doc, rid in zip(docs, rids, strict=True) for k in writer.keys(doc)]
            else:
                entries = [
                    (bytearray(with_rid(k, rid)), rid)
                    for doc, rid in zip(docs, rids, strict=True)
                    for k in writer.keys(doc)
                ]
            self._record_flags(writer)
            conn.executemany(writer.insert_sql, entries)
        if self._oplog is not None:
            self._oplog.insert_many(self.info.db, self.info.name, self.info.uuid, docs, rows)
        if self.cap_size is not None:
            self._after_capped_insert(len(rows), sum(len(row) for row in rows))

    def _after_capped_insert(self, documents: int, size: int) -> None:
        """Evict the oldest documents until the collection fits its cap."""
        if self._cap_totals is None:
            row = self.conn.execute(f"SELECT count(*), coalesce(sum(length(doc)), 0) FROM {self.info.table}").fetchone()
            self._cap_totals = [int(row[0]), int(row[1])]
        else:
            self._cap_totals[0] += documents
            self._cap_totals[1] += size
        totals = self._cap_totals
        assert self.cap_size is not None
        while totals[0] > 1 and (totals[1] > self.cap_size or (self.cap_max is not None and totals[0] > self.cap_max)):
            rid, data = self.conn.execute(f"SELECT rid, doc FROM {self.info.table} ORDER BY rid LIMIT 1").fetchone()
            self.delete(rid, bson.decode(data, CODEC))
            totals[0] -= 1
            totals[1] -= len(data)
            self._cap_totals = totals  # delete() forgot them; they are known

    def _remove_own_entries(self, writer: IndexWriter, doc: dict[str, Any], rid: int) -> None:
        try:
            keys = writer.keys(doc)
        except CommandError:
            return  # the document yields no keys for this index
        sql = f"DELETE FROM {writer.table} WHERE key = ? AND rid = ?"
        if writer.unique:
            self.conn.executemany(sql, [(k, rid) for k in keys])
        else:
            self.conn.executemany(sql, [(with_rid(k, rid), rid) for k in keys])

    def add_entries(self, writer: IndexWriter, doc: dict[str, Any], rid: int) -> None:
        keys = writer.keys(doc)
        self._record_flags(writer)
        try:
            if writer.unique:
                if len(keys) == 1:
                    (key,) = keys
                    self.conn.execute(writer.insert_sql, (bytearray(key), rid))
                else:
                    self.conn.executemany(writer.insert_sql, [(k, rid) for k in keys])
            else:
                self.conn.executemany(writer.insert_sql, [(with_rid(k, rid), rid) for k in keys])
        except sqlite3.IntegrityError:
            self._duplicate(writer, keys, rid)

    def add_build_entries(self, writer: IndexWriter, doc: dict[str, Any], rid: int) -> None:
        """An index build's entries for one document; entries that writes made
        since the build began may already be there."""
        keys = writer.keys(doc)
        self._record_flags(writer)
        insert = f"INSERT OR IGNORE INTO {writer.table} (key, rid) VALUES (?, ?)"
        if writer.unique:
            for key, values in keys.items():
                row = self.conn.execute(f"SELECT rid FROM {writer.table} WHERE key = ?", (key,)).fetchone()
                if row is not None and row[0] != rid:
                    raise writer.duplicate_error(self.info.ns, values)
            self.conn.executemany(insert, [(k, rid) for k in keys])
        else:
            self.conn.executemany(insert, [(with_rid(k, rid), rid) for k in keys])

    def _duplicate(self, writer: IndexWriter, keys: dict[bytes, tuple[Any, ...]], rid: int) -> None:
        """After an IntegrityError on a unique index: the duplicate-key error
        (recorded on an index being built, for its build to fail on)."""
        for key, values in keys.items():
            row = self.conn.execute(f"SELECT rid FROM {writer.table} WHERE key = ?", (key,)).fetchone()
            if row is not None and row[0] != rid:
                error = writer.duplicate_error(self.info.ns, values)
                if writer.building:
                    writer.info.build_error = error
                    return
                raise error from None
        raise sqlite3.IntegrityError(f"index {writer.info.name}: constraint failed")

    def _record_flags(self, writer: IndexWriter) -> None:
        """Note in the catalog what a document taught an index about itself."""
        if writer.mark_multikey:
            writer.mark_multikey = False
            set_flag(self.conn, writer.info, "multikey")
        if writer.mark_lossy:
            writer.mark_lossy = False
            set_flag(self.conn, writer.info, "lossy")

    def update(
        self,
        rid: int,
        old: dict[str, Any],
        new: dict[str, Any],
        data: bytes | None = None,
        old_data: bytes | None = None,
        replace: bool = False,
    ) -> None:
        """Replace a record's document, changing only the index entries that
        differ. All keys are worked out before anything is written, so the
        only failure left is a duplicate key; a savepoint guards that case
        (the caller's transaction goes on without this update). ``old_data``
        (the old document's BSON, when the caller has it) and ``replace`` (a
        replacement, not update operators) go to the oplog."""
        if data is None:
            data = self.encode(new, after_update=True)
        txn = self.storage.transaction()
        if txn is not None:
            self._txn_update(txn, rid, old, new, data, replace, old_data)
            return
        self._txns.written(self.info.id, rid)
        self.writes += 1
        self._cache.writing(self.info.id)
        if self._txns.key_intents:
            self._wait_for_keys(new, old)
        changes = []
        risky = False
        same_id = old.get("_id") is new.get("_id")  # the same value: the same _id key
        for writer in self.writers:
            if same_id and writer.is_id:
                continue
            old_keys = writer.keys(old)
            new_keys = writer.keys(new)
            self._record_flags(writer)
            if old_keys.keys() == new_keys.keys():
                continue
            removed = [k for k in old_keys if k not in new_keys]
            added = {k: v for k, v in new_keys.items() if k not in old_keys}
            risky = risky or (writer.unique and bool(added))
            changes.append((writer, removed, added))
        self._cap_totals = None
        if risky:
            with self.storage.savepoint():
                self._write_update(rid, data, changes)
        else:
            self._write_update(rid, data, changes)
        if self._oplog is not None:
            before = old_data if old_data is not None else self.encode(old)
            info = self.info
            self._oplog.update(info.db, info.name, info.uuid, new.get("_id"), before, data, replace, info.keeps_images)

    def _write_update(
        self, rid: int, data: bytes, changes: list[tuple[IndexWriter, list[bytes], dict[bytes, tuple[Any, ...]]]]
    ) -> None:
        conn = self.conn
        conn.execute(self._update_sql, (bytearray(data), rid))
        for writer, removed, added in changes:
            if writer.unique:
                conn.executemany(writer.delete_sql, [(k,) for k in removed])
            else:
                conn.executemany(writer.delete_sql, [(with_rid(k, rid),) for k in removed])
            try:
                if writer.unique:
                    conn.executemany(writer.insert_sql, [(k, rid) for k in added])
                else:
                    conn.executemany(writer.insert_sql, [(with_rid(k, rid), rid) for k in added])
            except sqlite3.IntegrityError:
                self._duplicate(writer, added, rid)

    def delete(self, rid: int, doc: dict[str, Any], data: bytes | None = None) -> None:
        """Remove a record and its index entries; ``data`` (its BSON, when the caller has it) goes to the oplog."""
        txn = self.storage.transaction()
        if txn is not None:
            overlay = txn.writable(self.info)
            if rid not in overlay.inserted:
                txn.claim_document(self.info.id, rid)
            overlay.remove(rid)
            if self._oplog is not None:
                before = data if data is not None else self.encode(doc)
                txn.writes.append(("d", self.info.id, doc.get("_id"), before, None, False))
            return
        self._txns.written(self.info.id, rid)
        self.writes += 1
        self._cache.writing(self.info.id)
        conn = self.conn
        self._cap_totals = None
        conn.execute(self._delete_sql, (rid,))
        for writer in self.writers:
            keys = writer.keys(doc)
            if len(keys) == 1:
                (key,) = keys
                conn.execute(writer.delete_sql, (bytearray(key if writer.unique else with_rid(key, rid)),))
            elif writer.unique:
                conn.executemany(writer.delete_sql, [(k,) for k in keys])
            else:
                conn.executemany(writer.delete_sql, [(with_rid(k, rid),) for k in keys])
        if self._oplog is not None:
            before = data if data is not None else self.encode(doc)
            self._oplog.delete(
                self.info.db, self.info.name, self.info.uuid, doc.get("_id"), before, self.info.keeps_images
            )

    @property
    def only_id_index(self) -> bool:
        """Is ``_id_`` its only index (none built meanwhile), in an uncapped collection?
        Then a delete needs no index key but the ``_id`` one (:meth:`delete_by_id_key`)."""
        return len(self.writers) == 1 and self.cap_size is None

    def delete_by_id_key(self, rid: int, id_key: bytes, data: bytes) -> None:
        """:meth:`delete` of the record ``rid`` whose ``_id`` index key is ``id_key``,
        outside a transaction, when :attr:`only_id_index`: nothing to decode."""
        self._txns.written(self.info.id, rid)
        self.writes += 1
        self._cache.writing(self.info.id)
        conn = self.conn
        conn.execute(self._delete_sql, (rid,))
        conn.execute(self.writers[0].delete_sql, (bytearray(id_key),))
        if self._oplog is not None:
            info = self.info
            self._oplog.delete(info.db, info.name, info.uuid, None, data, info.keeps_images)

    def truncate(self) -> None:
        held = next((t for (cid, _), t in list(self._txns.doc_intents.items()) if cid == self.info.id), None)
        if held is not None and held.state is State.IN_PROGRESS:
            raise HeldByTransactionError(held)
        self._cap_totals = None
        self.writes += 1
        self._cache.writing(self.info.id)
        if self._oplog is not None:  # each document's delete, for change streams and replicas
            kept = self.info.keeps_images
            for _, row in self._scan_table(False, None):
                doc = bson.decode(row, CODEC)
                self._oplog.delete(self.info.db, self.info.name, self.info.uuid, doc.get("_id"), row, kept)
        self.conn.execute(f"DELETE FROM {self.info.table}")
        for writer in self.writers:
            self.conn.execute(f"DELETE FROM {writer.table}")

    # -- writes inside a multi-document transaction (to its overlay) ------------------

    def _txn_insert(self, txn: Transaction, doc: dict[str, Any], data: bytes) -> int:
        self._writable_in_transaction()
        overlay = txn.writable(self.info)
        for writer in self.writers:
            if writer.unique:
                for key, values in writer.keys(doc).items():
                    self._txn_unique(txn, overlay, writer, key, values, None)
        rid = overlay.put(None, doc, data)
        if self._oplog is not None:
            txn.writes.append(("i", self.info.id, doc["_id"], None, data, False))
        return rid

    def _txn_update(
        self,
        txn: Transaction,
        rid: int,
        old: dict[str, Any],
        new: dict[str, Any],
        data: bytes,
        replace: bool,
        old_data: bytes | None,
    ) -> None:
        self._writable_in_transaction()
        overlay = txn.writable(self.info)
        if rid not in overlay.inserted:
            txn.claim_document(self.info.id, rid)
        for writer in self.writers:
            if writer.unique:
                old_keys = writer.keys(old)
                for key, values in writer.keys(new).items():
                    if key not in old_keys:
                        self._txn_unique(txn, overlay, writer, key, values, rid)
        if self._oplog is not None:
            before = old_data if old_data is not None else self.encode(old)
            txn.writes.append(("u", self.info.id, new.get("_id"), before, data, replace))
        overlay.put(rid, new, data)
        if replace:
            overlay.replaced.add(rid)

    def _txn_unique(
        self,
        txn: Transaction,
        overlay: CollectionOverlay,
        writer: IndexWriter,
        key: bytes,
        values: tuple[Any, ...],
        rid: int | None,
    ) -> None:
        """May the transaction add this unique key? DuplicateKey if its own view
        already holds it elsewhere; WriteConflict if another transaction holds it
        or someone committed it since the snapshot."""
        index = writer.info
        mine = in_range(overlay.entries(index, writer.keys, True), key, key + b"\x00")
        if any(other != rid for _, other in mine):
            raise writer.duplicate_error(self.info.ns, values)
        if self.info.id >= 0 and index.id >= 0:
            conn, _ = self._read()
            assert conn is not None
            sql = f"SELECT rid FROM {index.table} WHERE key = ?"
            seen = conn.execute(sql, (key,)).fetchone()
            if seen is not None and seen[0] != rid and not overlay.shadows(seen[0]):
                raise writer.duplicate_error(self.info.ns, values)
            latest = self.storage.read_latest(sql, (key,))
            if latest and (seen is None or latest[0][0] != seen[0]) and not overlay.shadows(latest[0][0]):
                raise WriteConflictError(write_conflict())  # committed by another since this snapshot
        txn.claim_key(index.id, key)

    def _writable_in_transaction(self) -> None:
        if self.cap_size is not None:
            raise CommandError(
                ErrorCode.OperationNotSupportedInTransaction,
                f"Collection '{self.info.ns}' is a capped collection. Writes in transactions are not allowed on "
                "capped collections.",
            )
        if self.info.name.startswith("system."):
            raise CommandError(
                ErrorCode.OperationNotSupportedInTransaction,
                f"Cannot write to system collection {self.info.ns} within a transaction.",
            )

    def _wait_for_keys(self, doc: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Outside transactions: wait for an open transaction holding a unique key this write adds."""
        for writer in self.writers:
            if writer.unique:
                old_keys = writer.keys(old) if old is not None else {}
                for key in writer.keys(doc):
                    if key not in old_keys:
                        self._txns.check_key(writer.info.id, key)

    # -- reads (the engine's one read interface) ---------------------------------

    def _read(self) -> tuple[sqlite3.Connection | None, CollectionOverlay | None]:
        """What to read through now: the snapshot's connection (None for a
        collection only a transaction knows, created inside it), and the
        running transaction's writes to this collection (None outside one, or
        if it wrote none). Checks first that the collection is still the same
        in the catalog version of the snapshot."""
        view = self.storage.view()
        catalog = view.catalog
        txn = view.overlay
        overlay = txn.overlay_of(self.info.id) if txn is not None else None
        if self.info.id < 0:
            return None, overlay
        if catalog is not self._checked:
            assert catalog is not None
            current = catalog.by_id.get(self.info.id)
            if current is None or (current.db, current.name) != (self.info.db, self.info.name):
                raise CommandError(ErrorCode.QueryPlanKilled, f"collection dropped or renamed: {self.info.ns}")
            self._checked = catalog
        return view.conn, overlay

    def _reader(self) -> sqlite3.Connection:
        """The snapshot's connection, for reads no transaction changes (validate, capped tails, sizes)."""
        conn, _ = self._read()
        if conn is None:
            raise CommandError(
                ErrorCode.OperationNotSupportedInTransaction, "not supported on a collection created in a transaction"
            )
        return conn

    def _index_read(self, index: IndexInfo) -> tuple[sqlite3.Connection | None, CollectionOverlay | None]:
        """:meth:`_read`, once ``index`` is known to be still there (QueryPlanKilled if it was dropped)."""
        conn, overlay = self._read()
        if conn is not None:
            current = self.storage.catalog().by_id[self.info.id]
            found = current.indexes.get(index.name) or current.building.get(index.name)
            if found is None or found.id != index.id:
                raise CommandError(ErrorCode.QueryPlanKilled, f"index '{index.name}' dropped")
        return conn, overlay

    def _overlay_entries(self, overlay: CollectionOverlay, index: IndexInfo) -> list[tuple[bytes, int]]:
        writer = next(w for w in self.writers if w.info.id == index.id)
        return overlay.entries(index, writer.keys, writer.unique)

    def get(self, rid: int) -> dict[str, Any] | None:
        data = self.get_raw(rid)
        return None if data is None else bson.decode(data, CODEC)

    def get_raw(self, rid: int) -> bytes | None:
        conn, overlay = self._read()
        if overlay is not None and overlay.shadows(rid):
            return overlay.rows[rid]
        if conn is None:
            return None
        row = conn.execute(self._get_sql, (rid,)).fetchone()
        return None if row is None else row[0]

    def id_key(self, value: Any) -> bytes:
        """The ``_id`` index key of an ``_id`` value (under the index's collation)."""
        return collation.key_encoder(self.info.id_index.collator)(value)

    def row_by_id_key(self, key: bytes) -> tuple[int, bytes] | None:
        """(rid, BSON) of the document whose ``_id`` encodes to ``key``."""
        conn, overlay = self._read()
        if overlay is not None:
            mine = in_range(self._overlay_entries(overlay, self.info.id_index), key, key + b"\x00")
            if mine:
                rid = mine[0][1]
                data = overlay.rows[rid]
                assert data is not None
                return rid, data
        if conn is None:
            return None
        row: tuple[int, bytes] | None = conn.execute(self._by_id_sql, (bytearray(key),)).fetchone()
        if row is not None and overlay is not None and overlay.shadows(row[0]):
            return None  # deleted in the transaction (a changed document would have been found above)
        return row

    def scan(self, reverse: bool = False, needles: list[list[bytes]] | None = None) -> Iterator[tuple[int, bytes]]:
        """Every (record id, BSON) in record-id order, read in batches so
        nothing is held open between them; with ``needles``, only records
        holding one needle of each group (SQLite's ``instr`` on the BLOB)."""
        conn, overlay = self._read()
        if overlay is not None:
            groups = needles or []

            def keep(data: bytes) -> bool:
                return all(any(needle in data for needle in group) for group in groups)

            main = self._scan_table(reverse, needles) if conn is not None else iter(())
            yield from merge_scan(main, overlay, reverse, keep)
        elif conn is not None:
            yield from self._scan_table(reverse, needles)

    def cached_rows(self, build: bool) -> list[Row] | None:
        """Every (record id, BSON, decoded document) in record-id order, in one snapshot,
        from the document cache (engine/cache.py), built from this snapshot when missing and
        ``build`` (the caller reads the whole collection anyway); None when the cache has no
        part in this read (off, a write's own view, a transaction that wrote the collection,
        a clustered collection) or the collection does not fit (estimated from its record
        ids and a sample before anything is decoded). The documents are the cache's: read
        them, never change or hand them out."""
        cache = self._cache
        cid = self.info.id
        if not cache.max_bytes or cid < 0 or isinstance(self.info.options.get("clusteredIndex"), dict):
            return None
        stamp = self.storage.snapshot_stamp()
        if stamp is None:
            return None
        conn, overlay = self._read()
        if overlay is not None or conn is None:
            return None
        rows = cache.get(cid, stamp)
        if rows is not None:
            return rows
        room = cache.room_for(cid) if build else 0
        if not room:
            return None
        table = self.info.table
        low, high = conn.execute(f"SELECT min(rid), max(rid) FROM {table}").fetchone()
        if low is not None:
            sample = conn.execute(f"SELECT length(doc) FROM {table} ORDER BY rid LIMIT 32").fetchall()
            average = sum(length for (length,) in sample) // len(sample)
            if (high - low + 1) * row_size(b"\x00" * average) > room * 2:  # record ids overcount after deletes
                cache.too_big(cid)
                return None
        built: list[Row] = []
        size = 0
        decode = bson.decode
        cursor = conn.execute(f"SELECT rid, doc FROM {table} ORDER BY rid")
        # Tens of thousands of new dicts that all live on: the cyclic collector would walk the
        # growing heap again and again while they are made (4 times the decoding's own time).
        collecting = gc.isenabled()
        gc.disable()
        try:
            for n, (rid, data) in enumerate(cursor):
                if not n & 255:
                    interrupt.check()
                size += row_size(data)
                if size > room:
                    cache.too_big(cid)
                    return None
                built.append((rid, data, decode(data, CODEC)))
        finally:
            if collecting:
                gc.enable()
            cursor.close()  # no statement outlives the call (storage.py's invariant)
        cache.put(cid, built, size, stamp)
        return built

    def _scan_table(self, reverse: bool, needles: list[list[bytes]] | None) -> Iterator[tuple[int, bytes]]:
        if isinstance(self.info.options.get("clusteredIndex"), dict):
            yield from self._scan_clustered(reverse, needles)
            return
        table = self.info.table
        narrowing, args = _needle_filter(needles, "doc")
        where = ("rid < ?" if reverse else "rid > ?") + narrowing
        order = "DESC" if reverse else ""
        sql = f"SELECT rid, doc FROM {table} WHERE {where} ORDER BY rid {order} LIMIT ?"
        last = (1 << 62) if reverse else 0
        fetch = SCAN_FIRST
        while True:
            conn, _ = self._read()
            assert conn is not None
            rows = conn.execute(sql, (last, *args, fetch)).fetchall()
            if not rows:
                return
            last, count = rows[-1][0], len(rows)
            rows.reverse()
            while rows:  # popped, so that a suspended scan holds only the rows still to come
                yield rows.pop()
            if count < fetch:
                return
            fetch = min(fetch * 2, SCAN_BATCH)

    def _scan_clustered(self, reverse: bool, needles: list[list[bytes]] | None) -> Iterator[tuple[int, bytes]]:
        """A clustered collection's natural order: its ``_id`` index's key order
        (the clustered index; see ``check_clustered`` in commands.collections)."""
        narrowing, args = _needle_filter(needles, "c.doc")
        where = ("k.key < ?" if reverse else "k.key > ?") + narrowing
        order = "DESC" if reverse else ""
        sql = (
            f"SELECT c.rid, c.doc, k.key FROM {self.info.id_index.table} AS k JOIN {self.info.table} AS c "
            f"ON c.rid = k.rid WHERE {where} ORDER BY k.key {order} LIMIT ?"
        )
        last = b"\xff" * 8 if reverse else b""
        fetch = SCAN_FIRST
        while True:
            conn, _ = self._read()
            assert conn is not None
            rows = conn.execute(sql, (last, *args, fetch)).fetchall()
            for rid, doc, _key in rows:
                yield rid, doc
            if len(rows) < fetch:
                return
            last = rows[-1][2]
            fetch = min(fetch * 2, SCAN_BATCH)

    def index_rows(
        self, index: IndexInfo, start: bytes, stop: bytes | None, forward: bool, keys_only: bool, limit: int
    ) -> list[tuple[bytes, int, bytes | None]]:
        """One batch of an index scan: up to ``limit`` (key, rid, BSON) with
        start <= key < stop (stop None: to the end), in key order or its
        reverse; with ``keys_only`` the BSON is None (nothing fetched)."""
        conn, overlay = self._index_read(index)
        rows: list[tuple[bytes, int, bytes | None]] = []
        if conn is not None:
            sql = _scan_statements(index.table, self.info.table)[(keys_only, forward, stop is not None)]
            # Records the transaction changed are left out of the snapshot's rows: fetch enough more.
            fetch = limit + (len(overlay.rows) if overlay is not None else 0)
            rows = conn.execute(sql, (start, stop, fetch) if stop is not None else (start, fetch)).fetchall()
        if overlay is None:
            return rows
        mine = in_range(self._overlay_entries(overlay, index), start, stop)
        return merge_index_rows(rows, mine, overlay, forward, keys_only, limit)

    def index_rids(self, index: IndexInfo, low: bytes, high: bytes) -> list[int]:
        """The distinct record ids of ``index``'s entries with low <= key < high."""
        conn, overlay = self._index_read(index)
        rids: list[int] = []
        if conn is not None:
            sql = f"SELECT DISTINCT rid FROM {index.table} WHERE key >= ? AND key < ?"
            rids = [row[0] for row in conn.execute(sql, (low, high)).fetchall()]
        if overlay is None:
            return rids
        kept = [rid for rid in rids if not overlay.shadows(rid)]
        return kept + sorted({rid for _, rid in in_range(self._overlay_entries(overlay, index), low, high)})

    def index_count(self, index: IndexInfo, ranges: list[tuple[bytes, bytes | None]], records: bool) -> int:
        """The entries of ``index`` in the key ranges ``[start, stop)`` (stop
        None: to the end), or with ``records`` the distinct records they
        point at (a multikey index lists a record under several keys). One
        statement: SQLite counts without handing rows to Python."""
        if not ranges:
            return 0
        conn, overlay = self._index_read(index)
        if overlay is not None:
            found: list[tuple[bytes, int]] = []
            for start, stop in ranges:
                while True:
                    batch = self.index_rows(index, start, stop, True, True, 512)
                    found.extend((key, rid) for key, rid, _ in batch)
                    if len(batch) < 512:
                        break
                    start = batch[-1][0] + b"\x00"
            return len({rid for _, rid in found}) if records else len(found)
        assert conn is not None
        terms = " OR ".join("(key >= ?" + (" AND key < ?)" if stop is not None else ")") for _, stop in ranges)
        args = [bound for start, stop in ranges for bound in (start, stop) if bound is not None]
        what = "count(DISTINCT rid)" if records else "count(*)"
        return int(conn.execute(f"SELECT {what} FROM {index.table} WHERE {terms}", args).fetchone()[0])

    def index_min_rid(self, index: IndexInfo, low: bytes, high: bytes | None) -> int | None:
        """The lowest record id among ``index``'s entries with low <= key < high
        (high None: to the end)."""
        conn, overlay = self._index_read(index)
        if overlay is not None:
            rids = [rid for _, rid, _ in self.index_rows(index, low, high, True, True, 1 << 30)]
            return min(rids) if rids else None
        assert conn is not None
        if high is None:
            row = conn.execute(f"SELECT min(rid) FROM {index.table} WHERE key >= ?", (low,)).fetchone()
        else:
            row = conn.execute(f"SELECT min(rid) FROM {index.table} WHERE key >= ? AND key < ?", (low, high)).fetchone()
        return None if row[0] is None else int(row[0])

    def index_entries(self, index: IndexInfo) -> set[tuple[bytes, int]]:
        """Every (key, rid) entry of ``index`` (validate)."""
        conn = self._reader()
        return set(conn.execute(f"SELECT key, rid FROM {index.table}").fetchall())

    def rows_from(self, rid: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (record id, BSON) from ``rid`` on, in record-id order."""
        sql = f"SELECT rid, doc FROM {self.info.table} WHERE rid >= ? ORDER BY rid LIMIT ?"
        return list(self._reader().execute(sql, (rid, limit)).fetchall())

    def count(self) -> int:
        conn, overlay = self._read()
        n = int(conn.execute(self._count_sql).fetchone()[0]) if conn is not None else 0
        return n + (overlay.count_change() if overlay is not None else 0)

    def count_through(self, rid: int, reverse: bool = False) -> int:
        """Records from the start of a scan in that direction up to ``rid``, included."""
        conn, _ = self._read()
        if conn is None:
            return 0
        condition = "rid >= ?" if reverse else "rid <= ?"
        sql = f"SELECT count(*) FROM {self.info.table} WHERE {condition}"
        return int(conn.execute(sql, (rid,)).fetchone()[0])

    def storage_size(self) -> int:
        """Bytes on disk (or in memory) of the records' pages; the data size where that is unknown."""
        if self.info.id < 0:
            return 0
        size = self.storage.table_bytes(self.info.table)
        return self.data_size() if size is None else size

    def index_sizes(self) -> dict[str, int]:
        """Bytes of each index's pages, by index name (0 where unknown)."""
        if self.info.id < 0:
            return dict.fromkeys(self.info.indexes, 0)
        return {name: self.storage.table_bytes(index.table) or 0 for name, index in self.info.indexes.items()}

    def data_size(self) -> int:
        conn, overlay = self._read()
        if overlay is not None:
            return sum(len(data) for _, data in self.scan())
        assert conn is not None
        row = conn.execute(f"SELECT coalesce(sum(length(doc)), 0) FROM {self.info.table}").fetchone()
        return int(row[0])


@functools.lru_cache(maxsize=256)
def _scan_statements(table: str, coll: str) -> dict[tuple[bool, bool, bool], str]:
    """The SELECTs of an index scan by (keys only, forward, bounded above)."""
    fetch = f"SELECT i.key, c.rid, c.doc FROM {table} AS i JOIN {coll} AS c ON c.rid = i.rid WHERE "
    keys_only = f"SELECT i.key, i.rid, NULL FROM {table} AS i WHERE "
    return {
        (covered, forward, bounded): select
        + ("i.key >= ?" + (" AND i.key < ?" if bounded else ""))
        + (" ORDER BY i.key" if forward else " ORDER BY i.key DESC")
        + " LIMIT ?"
        for covered, select in ((False, fetch), (True, keys_only))
        for forward in (True, False)
        for bounded in (True, False)
    }


def _too_deep(doc: dict[str, Any]) -> bool:
    """Whether ``doc`` nests documents and arrays past MAX_NESTING_DEPTH (iterative: no recursion limit)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            return True
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False
