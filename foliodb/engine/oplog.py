"""The oplog: every committed write, in commit order, in the write's own SQLite transaction.

Table ``oplog(ts INTEGER PRIMARY KEY, entry BLOB, session BLOB)``: ``ts`` is the entry's
cluster time packed as ``seconds << 32 | increment`` (so SQLite's order is
the oplog's order), ``session`` the record of the retryable write whose last
entry this is, or NULL (:mod:`foliodb.engine.sessions`; never part of the entry
readers see), ``entry`` its BSON::

    {ts: Timestamp, t: 1, op: "i"|"u"|"d"|"c", ns: "db.coll", ui: UUID,
     o: ..., o2: {_id}, pre: <the document before: of an update, or of a
     delete marked img>, r: true (a replacement),
     img: true (an update or delete while the collection had
     changeStreamPreAndPostImages enabled), wall: date, lsid, txnNumber}

as mongod's oplog entries, with one difference kept internal: an update
stores the whole new document (``o``) and the one before (``pre``) instead of
mongod's ``{$v: 2, diff}`` - both are at hand when the write happens, so
recording costs no diff; readers compute the diff (:func:`diff`) and the
update description from them when they need it, and ``pre`` is also the
pre-image of ``fullDocumentBeforeChange`` - for the writes marked ``img``
only, as mongod records pre-images only while the option is on. A transaction's commit writes one
entry ``{op: "c", ns: "admin.$cmd", o: {applyOps: [...]}, lsid, txnNumber}``
holding its writes in order, as mongod does. DDL writes ``op: "c"`` entries
(``create``, ``drop``, ``renameCollection``, ``createIndexes``,
``dropIndexes``, ``collMod``, ``dropDatabase``).

Writes queue their entries (:meth:`Oplog.add`) while the writer's SQLite
transaction runs; its commit (:meth:`Oplog.flush`, under the writer lock, just
before SQLite's COMMIT) gives each its cluster time and inserts them, so an
entry exists exactly when its write does. Writes to the ``local`` and
``config`` databases and to ``system.profile`` are not recorded, as mongod's.

Bounded like mongod's: entries beyond ``size_bytes`` (``--oplogSizeMB``) are
removed oldest first, but none younger than ``min_retention_hours``
(:meth:`Oplog.trim`, run by the engine's background tick).
"""

from __future__ import annotations

import sqlite3
import struct
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import bson
from bson import ObjectId, Timestamp
from bson.binary import Binary, UuidRepresentation

from foliodb.engine.catalog import CODEC
from foliodb.engine.clock import ClusterClock

SCHEMA = "CREATE TABLE IF NOT EXISTS oplog (ts INTEGER PRIMARY KEY, entry BLOB NOT NULL, session BLOB)"
DEFAULT_SIZE_MB = 1024
UNRECORDED_DBS = frozenset({"local", "config"})


def pack(ts: Timestamp) -> int:
    return ts.time << 32 | ts.inc


def unpack(value: int) -> Timestamp:
    return Timestamp(value >> 32, value & 0xFFFFFFFF)


def _uuid(value: uuid.UUID) -> Binary:
    return Binary.from_uuid(value, UuidRepresentation.STANDARD)


_INT32 = struct.Struct("<i")
_INT64 = struct.Struct("<q")
_T = b"\x12t\x00" + _INT64.pack(1)
# A queued entry is the whole entry, its length, ts and wall zero until its commit fills them in
# place: _START (the length, then ts and t), the elements between t and wall, _TAIL (wall, the NUL).
_TS_NAME = b"\x11ts\x00"
_START = _INT32.pack(0) + _TS_NAME + _INT64.pack(0) + _T
_TAIL = b"\x09wall\x00" + _INT64.pack(0) + b"\x00"
_ELEMENTS = slice(len(_START), -len(_TAIL))
# The length and ts in one pack (ts as a BSON timestamp: increment, then seconds; as two small ints,
# which struct converts faster than the packed time).
_FRONT = struct.Struct("<i4sII")
_WALL_FROM_END = 9  # wall's value: the 8 bytes before the closing NUL
# ``{_id: ObjectId}`` (the usual _id) up to the id's 12 bytes; as ``o2``; what follows o2's id.
_OID_DOC = _INT32.pack(22) + b"\x07_id\x00"
_OID_O2 = b"\x03o2\x00" + _OID_DOC
_OID_END = b"\x00" + _TAIL
_INSERT = "INSERT INTO oplog (ts, entry) VALUES (?, ?)"
_INSERT_RECORDED = "INSERT INTO oplog (ts, entry, session) VALUES (?, ?, ?)"
# A bytearray, not bytes: it can be filled in at the commit, and sqlite3 binds it as a BLOB
# directly, where bytes first go through its adapter lookup (two failed attribute lookups, each
# an AttributeError built and cleared: about a sixth of an insert_many's oplog cost).
_join = bytearray().join
_APPLY_OPS_HEAD = b"\x02op\x00\x02\x00\x00\x00c\x00\x02ns\x00\x0b\x00\x00\x00admin.$cmd\x00"


def _string(value: bytes) -> bytes:
    """A BSON string's value: length (with the NUL), bytes, NUL."""
    return _INT32.pack(len(value) + 1) + value + b"\x00"


def _document(elements: bytes) -> bytes:
    return _INT32.pack(len(elements) + 5) + elements + b"\x00"


# Value sizes of the BSON types an _id may have: fixed, or read from the int32 after the name.
_FIXED_SIZE = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16, 0x7F: 0, 0xFF: 0}
_PREFIXED_SIZE = {0x02: 4, 0x0D: 4, 0x0E: 4, 0x03: 0, 0x04: 0, 0x05: 5}  # what the length leaves out


def _id_doc(data: bytes, doc_id: Any) -> bytes:
    """``{_id: doc_id}`` as BSON: from an ObjectId's bytes, or the first element of the document
    ``data`` when that is its ``_id`` (as stored documents have it), sliced rather than encoded again.
    ``doc_id`` None: the ``_id`` is whatever ``data`` holds."""
    if type(doc_id) is ObjectId:  # the usual _id, and the cheapest: no slicing
        return _OID_DOC + doc_id.binary + b"\x00"
    if data[5:9] == b"_id\x00":
        kind = data[4]
        size = _FIXED_SIZE.get(kind)
        if size is None and kind in _PREFIXED_SIZE:
            size = _INT32.unpack_from(data, 9)[0] + _PREFIXED_SIZE[kind]
        if size is not None:
            return _document(data[4 : 9 + size])
    if doc_id is None:
        doc_id = bson.decode(data, CODEC).get("_id")
    return bson.encode({"_id": doc_id}, codec_options=CODEC)


def recorded(db: str, coll: str) -> bool:
    """Do writes to this namespace go to the oplog?"""
    return db not in UNRECORDED_DBS and coll != "system.profile"


class Oplog:
    def __init__(self, conn: sqlite3.Connection, writable: bool = True) -> None:
        conn.executescript(SCHEMA)
        # False only for an oplog from before retryable-write records rode it, opened read-only.
        self.has_sessions = any(column[1] == "session" for column in conn.execute("PRAGMA table_info(oplog)"))
        if not self.has_sessions and writable:
            # None of its entries carries a record.
            self.has_sessions = True
            conn.execute("ALTER TABLE oplog ADD COLUMN session BLOB")
            conn.execute(
                "INSERT OR REPLACE INTO catalog_meta (key, value) "
                "SELECT 'sessions_through', coalesce(max(ts), 0) FROM oplog"
            )
        self.size_bytes = DEFAULT_SIZE_MB * 1024 * 1024
        self.min_retention_hours = 0.0
        self.pending: list[bytearray] = []  # the queued entries (see _START), appended by Recorders
        self._recorders: dict[tuple[str, str, int], Recorder] = {}
        self._transaction: tuple[Any, Any] | None = None  # (lsid, txnNumber) of a commit being replayed
        self.muted = False  # True while a commit applies a transaction's net effect: its own writes are recorded
        # A retryable write's session record (engine/sessions.py), stored on the last entry of the commit.
        self.session_record: bytearray | None = None
        self._bytes: int | None = None  # total entry bytes (measured on first trim)
        row = conn.execute("SELECT value FROM catalog_meta WHERE key = 'oplog_trimmed_through'").fetchone()
        # Every entry at or before this (packed) time may be gone: resuming there is ChangeStreamHistoryLost.
        self.trimmed_through = int(row[0]) if row else 0
        self._trim_lock = threading.Lock()

    # -- recording (the writer's thread, inside its SQLite transaction) ------------------
    #
    # A queued entry is built from bytes (see _START): a write's document is already BSON, and
    # the start of a namespace's entries, up to ``o``'s name, is encoded once (a Recorder's).
    # ``flush`` fills in ``ts`` and ``wall`` - the same bytes ``bson.encode`` of the entry would give.

    def recorder(self, db: str, coll: str, ui: uuid.UUID) -> Recorder:
        """The recorder of a recorded namespace's writes (a collection's store keeps its own)."""
        key = (db, coll, ui.int)  # UUID's own hash and == are Python code
        recorder = self._recorders.get(key)
        if recorder is None:
            if len(self._recorders) > 10_000:  # namespaces come and go: bound the cache
                self._recorders.clear()
            recorder = self._recorders[key] = Recorder(self, db, coll, ui)
        return recorder

    def add(self, entry: Mapping[str, Any]) -> None:
        self.pending.append(_join((_START, bson.encode(entry, codec_options=CODEC)[4:-1], _TAIL)))

    def insert(self, db: str, coll: str, ui: uuid.UUID, doc_id: Any, data: bytes) -> None:
        if recorded(db, coll):
            self.recorder(db, coll, ui).insert(doc_id, data)

    def update(
        self,
        db: str,
        coll: str,
        ui: uuid.UUID,
        doc_id: Any,
        before: bytes,
        after: bytes,
        replace: bool,
        images: bool,
    ) -> None:
        if recorded(db, coll):
            self.recorder(db, coll, ui).update(doc_id, before, after, replace, images)

    def delete(self, db: str, coll: str, ui: uuid.UUID, doc_id: Any, before: bytes, images: bool) -> None:
        if recorded(db, coll):
            self.recorder(db, coll, ui).delete(doc_id, before, images)

    def command(self, db: str, ui: uuid.UUID | None, o: Mapping[str, Any], **extra: Any) -> None:
        if db not in UNRECORDED_DBS:
            entry: dict[str, Any] = {"op": "c", "ns": f"{db}.$cmd", "o": dict(o), **extra}
            if ui is not None:
                entry["ui"] = _uuid(ui)
            self.add(entry)

    def transaction(self, lsid: Any, txn_number: Any) -> None:
        """The writes recorded from now to the commit are a transaction's: one applyOps entry."""
        self._transaction = (lsid, txn_number)

    def flush(self, conn: sqlite3.Connection, clock: ClusterClock) -> Timestamp | None:
        """Just before the writer's COMMIT: give the queued entries their cluster
        times and store them; the last time (None: nothing was recorded)."""
        pending, self.pending = self.pending, []
        txn, self._transaction = self._transaction, None
        record, self.session_record = self.session_record, None
        if not pending:
            return None
        wall = time.time_ns() // 1_000_000
        if txn is not None:
            ops = b"".join(
                b"\x03" + str(i).encode() + b"\x00" + _document(bytes(op[_ELEMENTS])) for i, op in enumerate(pending)
            )
            apply_ops = _document(b"\x04applyOps\x00" + _document(ops))
            extra = bson.encode({"lsid": txn[0], "txnNumber": txn[1]}, codec_options=CODEC)[4:-1]
            pending = [_join((_START, _APPLY_OPS_HEAD, b"\x03o\x00", apply_ops, extra, _TAIL))]
        count = len(pending)
        seconds, inc = clock.tick(conn, count)  # one reading of the clock for the whole commit
        first = seconds << 32 | inc
        size, set_front, set_wall = 0, _FRONT.pack_into, _INT64.pack_into
        for entry in pending:
            length = len(entry)
            set_front(entry, 0, length, _TS_NAME, inc, seconds)
            set_wall(entry, length - _WALL_FROM_END, wall)
            size += length
            inc += 1
        if record is not None:
            if count == 1:  # a point write's: no rows to build
                conn.execute(_INSERT_RECORDED, (first, pending[0], record))
            else:
                rows: list[tuple[int, bytearray, bytearray | None]] = [
                    (ts, entry, None) for ts, entry in zip(range(first, first + count), pending, strict=True)
                ]
                rows[-1] = (rows[-1][0], rows[-1][1], record)
                conn.executemany(_INSERT_RECORDED, rows)
        elif count == 1:
            conn.execute(_INSERT, (first, pending[0]))
        else:
            conn.executemany(_INSERT, zip(range(first, first + count), pending, strict=True))
        if self._bytes is not None:
            self._bytes += size
        return Timestamp(seconds, inc - 1)

    def rolled_back(self) -> None:
        self.pending.clear()
        self._transaction = None
        self.session_record = None

    # -- reading and bounding -----------------------------------------------------------

    @staticmethod
    def entries_after(conn: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (packed ts, entry BSON) after ``after``, in order."""
        rows: list[tuple[int, bytes]] = conn.execute(
            "SELECT ts, entry FROM oplog WHERE ts > ? ORDER BY ts LIMIT ?", (after, limit)
        ).fetchall()
        return rows

    @staticmethod
    def oldest(conn: sqlite3.Connection) -> int | None:
        row = conn.execute("SELECT min(ts) FROM oplog").fetchone()
        return None if row[0] is None else int(row[0])

    def measured(self) -> bool:
        return self._bytes is not None

    def measure(self, conn: sqlite3.Connection) -> None:
        """Total the entries' bytes once (a read: no writer held); commits keep the total since."""
        if self._bytes is None:
            self._bytes = int(conn.execute("SELECT coalesce(sum(length(entry)), 0) FROM oplog").fetchone()[0])

    def over(self) -> bool:
        return self._bytes is not None and self._bytes > self.size_bytes

    def trim(self, conn: sqlite3.Connection, now: float) -> int:
        """Inside a write: remove the oldest entries past the size bound (never
        younger than the minimum retention); how many."""
        with self._trim_lock:
            self.measure(conn)
            assert self._bytes is not None
            removed = 0
            # No minimum retention: any entry may go, the newest included.
            keep_after = (
                pack(Timestamp(int(now - self.min_retention_hours * 3600), 0))
                if self.min_retention_hours > 0
                else (1 << 63) - 1
            )
            while self._bytes > self.size_bytes:
                rows = conn.execute(
                    "SELECT ts, length(entry) FROM oplog WHERE ts < ? ORDER BY ts LIMIT 1000", (keep_after,)
                ).fetchall()
                if not rows:
                    break
                last, freed = 0, 0
                for ts, size in rows:  # the oldest entries, just enough of them
                    last, freed = ts, freed + size
                    removed += 1
                    if self._bytes - freed <= self.size_bytes:
                        break
                conn.execute("DELETE FROM oplog WHERE ts <= ?", (last,))
                conn.execute(
                    "INSERT OR REPLACE INTO catalog_meta (key, value) VALUES ('oplog_trimmed_through', ?)", (last,)
                )
                self.trimmed_through = last
                self._bytes -= freed
            return removed


def decoded(data: bytes) -> dict[str, Any]:
    return bson.decode(data, CODEC)


def transaction_ops(entry: Mapping[str, Any]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(index in the transaction, op) of an entry: an applyOps entry's ops, or the entry itself (index 0)."""
    o = entry.get("o")
    if entry.get("op") == "c" and isinstance(o, Mapping) and "applyOps" in o:
        yield from enumerate(o["applyOps"])
    else:
        yield 0, entry


# -- update descriptions -------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal as BSON: same types, same values, same field order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def update_description(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """A change stream's ``updateDescription`` from the documents before and
    after an update: fields set (dotted paths, array elements by index),
    removed, and arrays cut short (``truncatedArrays``), as mongod derives them
    from its update diff; ``disambiguatedPaths`` for paths whose parts hold a
    dot or are numeric keys of a document."""
    updated: dict[str, Any] = {}
    removed: list[str] = []
    truncated: list[dict[str, Any]] = []
    ambiguous: dict[str, list[Any]] = {}

    def walk(old: Mapping[str, Any], new: Mapping[str, Any], prefix: list[Any]) -> None:
        for key in old:
            if key not in new:
                removed.append(_path([*prefix, key], ambiguous))
        for key, value in new.items():
            if key not in old:
                updated[_path([*prefix, key], ambiguous)] = value
            elif not _same(old[key], value):
                previous = old[key]
                if isinstance(previous, dict) and isinstance(value, dict):
                    walk(previous, value, [*prefix, key])
                elif isinstance(previous, list) and isinstance(value, list):
                    walk_array(previous, value, [*prefix, key])
                else:
                    updated[_path([*prefix, key], ambiguous)] = value

    def walk_array(old: list[Any], new: list[Any], prefix: list[Any]) -> None:
        if len(new) < len(old):
            truncated.append({"field": _path(prefix, ambiguous), "newSize": len(new)})
        for index, value in enumerate(new):
            if index >= len(old):
                updated[_path([*prefix, index], ambiguous)] = value
            elif not _same(old[index], value):
                previous = old[index]
                if isinstance(previous, dict) and isinstance(value, dict):
                    walk(previous, value, [*prefix, index])
                else:
                    updated[_path([*prefix, index], ambiguous)] = value

    walk(before, after, [])
    out: dict[str, Any] = {"updatedFields": updated, "removedFields": removed, "truncatedArrays": truncated}
    if ambiguous:
        out["disambiguatedPaths"] = ambiguous
    return out


def _path(parts: list[Any], ambiguous: dict[str, list[Any]]) -> str:
    dotted = ".".join(str(p) for p in parts)
    if any(isinstance(p, str) and ("." in p or p.isdigit()) for p in parts):
        ambiguous[dotted] = parts
    return dotted


class Recorder:
    """One recorded namespace's entries (:class:`Oplog`'s ``insert``, ``update`` and ``delete``),
    queued on its oplog: the start of each kind of entry, up to ``o``'s name, encoded once."""

    __slots__ = ("_delete", "_insert", "_oplog", "_update")

    def __init__(self, oplog: Oplog, db: str, coll: str, ui: uuid.UUID) -> None:
        self._oplog = oplog
        ns = b"\x02ns\x00" + _string(f"{db}.{coll}".encode())
        tail = b"\x05ui\x00\x10\x00\x00\x00\x04" + ui.bytes + b"\x03o\x00"
        self._insert, self._update, self._delete = (
            _START + b"\x02op\x00" + _string(op) + ns + tail for op in (b"i", b"u", b"d")
        )

    def insert(self, doc_id: Any, data: bytes) -> None:
        if not self._oplog.muted:
            if type(doc_id) is ObjectId:  # _id_doc's common case inline
                entry = _join((self._insert, data, _OID_O2, doc_id.binary, _OID_END))
            else:
                entry = _join((self._insert, data, b"\x03o2\x00", _id_doc(data, doc_id), _TAIL))
            self._oplog.pending.append(entry)

    def insert_many(self, docs: list[dict[str, Any]], rows: list[bytes]) -> None:
        """The entries of documents inserted together (``rows``: their BSON), as :meth:`insert`'s."""
        if not self._oplog.muted:
            head, append = self._insert, self._oplog.pending.append
            for doc, data in zip(docs, rows, strict=True):
                doc_id = doc["_id"]
                if type(doc_id) is ObjectId:  # inlined as in insert: this loop is the batch's oplog cost
                    append(_join((head, data, _OID_O2, doc_id.binary, _OID_END)))
                else:
                    append(_join((head, data, b"\x03o2\x00", _id_doc(data, doc_id), _TAIL)))

    def update(self, doc_id: Any, before: bytes, after: bytes, replace: bool, images: bool) -> None:
        if not self._oplog.muted:
            parts = [self._update, after, b"\x03o2\x00", _id_doc(after, doc_id), b"\x03pre\x00", before]
            if replace:
                parts.append(b"\x08r\x00\x01")
            if images:
                parts.append(b"\x08img\x00\x01")
            parts.append(_TAIL)
            self._oplog.pending.append(_join(parts))

    def delete(self, doc_id: Any, before: bytes, images: bool) -> None:
        if not self._oplog.muted:
            head = self._delete
            if images:
                entry = _join((head, _id_doc(before, doc_id), b"\x03pre\x00", before, b"\x08img\x00\x01", _TAIL))
            else:  # no pre-image to keep: a delete's event needs only its document key
                entry = _join((head, _id_doc(before, doc_id), _TAIL))
            self._oplog.pending.append(entry)
