"""A collection's reads: documents by record id or ``_id`` key, scans in record-id
(or clustered key) order, index range reads and counts, sizes — each through the
caller's snapshot and, inside a transaction, merged with its overlay.

:class:`RecordReads` is the read half of :class:`~foliodb.engine.records.CollectionStore`;
no statement outlives a call (storage.py's invariant): scans fetch in batches.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import bson

from foliodb import collector, interrupt
from foliodb.engine.cache import DocumentCache, Haystack, Row, changed, entry_size, row_size
from foliodb.engine.catalog import CODEC, Catalog, CollectionInfo, IndexInfo
from foliodb.engine.index_writer import IndexWriter
from foliodb.engine.overlay import CollectionOverlay, in_range, merge_index_rows, merge_scan
from foliodb.engine.storage import Storage
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import collation

SCAN_BATCH = 256
PATCH_BATCH = 1000  # record ids read per statement when a cache entry is patched
# A scan's first fetch; each next one doubles, up to SCAN_BATCH. A suspended scan (an open cursor
# between getMores) holds the rows fetched and not yet returned: 256 of them were 224 KiB of a
# cursor of 1 KB documents opened with batchSize 1; a few at first keep an idle cursor small.
SCAN_FIRST = 2


class RecordReads:
    """The engine's one read interface to a collection's records and index entries."""

    storage: Storage
    info: CollectionInfo
    writers: list[IndexWriter]
    _cache: DocumentCache
    _checked: Catalog | None
    _get_sql: str
    _count_sql: str
    _by_id_sql: str

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

    def cached_rows(self, build: bool, patient: bool = False) -> list[Row] | None:
        """Every (record id, BSON, decoded document) in record-id order, in one snapshot,
        from the document cache (engine/cache.py), built from this snapshot when missing and
        ``build`` (the caller reads the whole collection anyway) - when ``patient`` (a scan
        with needles, which SQLite runs without decoding), only once the collection has had
        enough such scans (``DocumentCache.needle_scan_due``); an entry that writes have
        changed since it went in is patched from this snapshot first. None when the cache
        has no part in this read (off, a write's own view of a collection it changed, a
        transaction that wrote the collection, a clustered collection), the collection does
        not fit (estimated from its record ids and a sample, or where that says no from its
        rows' sizes, before anything is decoded) or the cache does not admit it
        (``DocumentCache.admits``). The documents are the cache's: read them, never change
        or hand them out."""
        cache = self._cache
        cid = self.info.id
        if not cache.max_bytes or cid < 0 or isinstance(self.info.options.get("clusteredIndex"), dict):
            return None
        storage = self.storage
        stamp = storage.snapshot_stamp()
        if stamp is None:
            # A write's own view: the newest committed state (it holds the writer lock) until it
            # changes the collection or the catalog.
            if cache.is_written(cid) or storage.draft is not None:
                return None
            stamp = storage.commits
        conn, overlay = self._read()
        if overlay is not None or conn is None:
            return None
        found = cache.get(cid, stamp)
        if found is not None:
            entry, deltas = found
            if not deltas:
                return entry.rows
            rows, size = entry.patched(deltas, self._records(conn, changed(deltas)))
            cache.patched(cid, entry, len(deltas), rows, size, stamp)
            return rows
        if build and patient:
            build = cache.needle_scan_due(cid)
        room = cache.room_for(cid) if build else 0
        if not room:
            return None
        table = self.info.table
        low, high = conn.execute(f"SELECT min(rid), max(rid) FROM {table}").fetchone()
        if low is not None:
            sample = conn.execute(f"SELECT length(doc) FROM {table} ORDER BY rid LIMIT 32").fetchall()
            average = sum(length for (length,) in sample) // len(sample)
            # With the haystack's copy of the bytes. Record ids overcount after deletes and a
            # sample may mislead: where the estimate says no, the rows' sizes decide (SQLite
            # reads a blob's length from its record header, not its pages).
            estimate = entry_size(high - low + 1, (high - low + 1) * average)
            if estimate > room:
                estimate = entry_size(*conn.execute(f"SELECT count(*), sum(length(doc)) FROM {table}").fetchone())
                if estimate > room:
                    cache.too_big(cid)
                    return None
            if not cache.admits(cid, estimate):
                return None
        built: list[Row] = []
        size = 0
        decode = bson.decode
        cursor = conn.execute(f"SELECT rid, doc FROM {table} ORDER BY rid")
        # Tens of thousands of new dicts that all live on: the cyclic collector would walk the
        # growing heap again and again while they are made (4 times the decoding's own time).
        try:
            with collector.PAUSED:
                for n, (rid, data) in enumerate(cursor):
                    if not n & 255:
                        interrupt.check()
                    size += row_size(data)
                    if size > room:
                        cache.too_big(cid)
                        return None
                    built.append((rid, data, decode(data, CODEC)))
        finally:
            cursor.close()  # no statement outlives the call (storage.py's invariant)
        haystack = Haystack.of(built)
        size += haystack.size()
        if size > room:
            cache.too_big(cid)
            return None
        cache.put(cid, built, size, stamp, haystack)
        return built

    def _records(self, conn: sqlite3.Connection, rids: list[int]) -> dict[int, bytes]:
        """The BSON of each of ``rids`` that exists in ``conn``'s snapshot."""
        found: dict[int, bytes] = {}
        sql = f"SELECT rid, doc FROM {self.info.table} WHERE rid IN (SELECT value FROM json_each(?))"
        for start in range(0, len(rids), PATCH_BATCH):
            found.update(conn.execute(sql, (json.dumps(rids[start : start + PATCH_BATCH]),)).fetchall())
        return found

    def cached_haystack(self, rows: list[Row]) -> Haystack | None:
        """The BSON end to end of ``rows`` (from :meth:`cached_rows`), while still cached."""
        return self._cache.haystack(self.info.id, rows)

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


def _needle_filter(needles: list[list[bytes]] | None, column: str) -> tuple[str, list[bytes]]:
    """The SQL that keeps rows whose ``column`` holds, for each group of needles,
    one of them (a scan's prefilter), and its arguments."""
    sql = "".join(" AND (" + " OR ".join(f"instr({column}, ?) > 0" for _ in group) + ")" for group in needles or ())
    return sql, [needle for group in needles or () for needle in group]
