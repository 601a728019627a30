"""The oplog: every committed write, in commit order, in the write's own SQLite transaction.

Table ``oplog(ts INTEGER PRIMARY KEY, entry BLOB)``: ``ts`` is the entry's
cluster time packed as ``seconds << 32 | increment`` (so SQLite's order is
the oplog's order), ``entry`` its BSON::

    {ts: Timestamp, t: 1, op: "i"|"u"|"d"|"c", ns: "db.coll", ui: UUID,
     o: ..., o2: {_id}, pre: <the document before>, r: true (a replacement),
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

import datetime
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import bson
from bson import Int64, Timestamp
from bson.binary import Binary, UuidRepresentation
from bson.raw_bson import RawBSONDocument

from foliodb.engine.catalog import CODEC
from foliodb.engine.clock import ClusterClock

SCHEMA = "CREATE TABLE IF NOT EXISTS oplog (ts INTEGER PRIMARY KEY, entry BLOB NOT NULL)"
RAW = bson.CodecOptions(document_class=RawBSONDocument)
DEFAULT_SIZE_MB = 1024
UNRECORDED_DBS = frozenset({"local", "config"})
TERM = Int64(1)


def pack(ts: Timestamp) -> int:
    return ts.time << 32 | ts.inc


def unpack(value: int) -> Timestamp:
    return Timestamp(value >> 32, value & 0xFFFFFFFF)


def _uuid(value: uuid.UUID) -> Binary:
    return Binary.from_uuid(value, UuidRepresentation.STANDARD)


def recorded(db: str, coll: str) -> bool:
    """Do writes to this namespace go to the oplog?"""
    return db not in UNRECORDED_DBS and coll != "system.profile"


class Oplog:
    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.executescript(SCHEMA)
        self.size_bytes = DEFAULT_SIZE_MB * 1024 * 1024
        self.min_retention_hours = 0.0
        self._pending: list[dict[str, Any]] = []
        self._transaction: tuple[Any, Any] | None = None  # (lsid, txnNumber) of a commit being replayed
        self.muted = False  # True while a commit applies a transaction's net effect: its own writes are recorded
        self._bytes: int | None = None  # total entry bytes (measured on first trim)
        row = conn.execute("SELECT value FROM catalog_meta WHERE key = 'oplog_trimmed_through'").fetchone()
        # Every entry at or before this (packed) time may be gone: resuming there is ChangeStreamHistoryLost.
        self.trimmed_through = int(row[0]) if row else 0
        self._trim_lock = threading.Lock()

    # -- recording (the writer's thread, inside its SQLite transaction) ------------------

    def add(self, entry: dict[str, Any]) -> None:
        self._pending.append(entry)

    def insert(self, db: str, coll: str, ui: uuid.UUID, doc_id: Any, data: bytes) -> None:
        if recorded(db, coll) and not self.muted:
            self._pending.append(
                {
                    "op": "i",
                    "ns": f"{db}.{coll}",
                    "ui": _uuid(ui),
                    "o": RawBSONDocument(data, RAW),
                    "o2": {"_id": doc_id},
                }
            )

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
        if recorded(db, coll) and not self.muted:
            entry: dict[str, Any] = {
                "op": "u",
                "ns": f"{db}.{coll}",
                "ui": _uuid(ui),
                "o": RawBSONDocument(after, RAW),
                "o2": {"_id": doc_id},
                "pre": RawBSONDocument(before, RAW),
            }
            if replace:
                entry["r"] = True
            if images:
                entry["img"] = True
            self._pending.append(entry)

    def delete(self, db: str, coll: str, ui: uuid.UUID, doc_id: Any, before: bytes, images: bool) -> None:
        if recorded(db, coll) and not self.muted:
            entry: dict[str, Any] = {
                "op": "d",
                "ns": f"{db}.{coll}",
                "ui": _uuid(ui),
                "o": {"_id": doc_id},
                "pre": RawBSONDocument(before, RAW),
            }
            if images:
                entry["img"] = True
            self._pending.append(entry)

    def command(self, db: str, ui: uuid.UUID | None, o: Mapping[str, Any], **extra: Any) -> None:
        if db not in UNRECORDED_DBS:
            entry: dict[str, Any] = {"op": "c", "ns": f"{db}.$cmd", "o": dict(o), **extra}
            if ui is not None:
                entry["ui"] = _uuid(ui)
            self._pending.append(entry)

    def transaction(self, lsid: Any, txn_number: Any) -> None:
        """The writes recorded from now to the commit are a transaction's: one applyOps entry."""
        self._transaction = (lsid, txn_number)

    def flush(self, conn: sqlite3.Connection, clock: ClusterClock) -> Timestamp | None:
        """Just before the writer's COMMIT: give the queued entries their cluster
        times and store them; the last time (None: nothing was recorded)."""
        pending, self._pending = self._pending, []
        txn, self._transaction = self._transaction, None
        if not pending:
            return None
        wall = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        if txn is not None:
            pending = [
                {
                    "op": "c",
                    "ns": "admin.$cmd",
                    "o": {"applyOps": pending},
                    "lsid": txn[0],
                    "txnNumber": txn[1],
                }
            ]
        rows = []
        ts = clock.last
        for entry in pending:
            ts = clock.tick(conn)
            data = bson.encode({"ts": ts, "t": TERM, **entry, "wall": wall}, codec_options=CODEC)
            rows.append((pack(ts), data))
        conn.executemany("INSERT INTO oplog (ts, entry) VALUES (?, ?)", rows)
        if self._bytes is not None:
            self._bytes += sum(len(data) for _, data in rows)
        return ts

    def rolled_back(self) -> None:
        self._pending.clear()
        self._transaction = None

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
