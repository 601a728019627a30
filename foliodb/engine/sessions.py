"""Server sessions: what the engine remembers per ``lsid``.

A driver sends ``lsid`` with every command of a session. The engine keeps,
per session: when it was last used (it expires after
``logicalSessionTimeoutMinutes`` idle, 30, as mongod's), the highest
``txnNumber`` it has used, its current or last multi-document transaction,
and its last retryable write's reply, stored in the write's own SQLite
transaction so that a retry after a crash finds it and the write is never
applied twice:

* a write that records oplog entries carries its record on its last entry
  (the oplog's ``session`` column: BSON ``{lsid, n: txnNumber, reply}``), as
  mongod's ``config.transactions`` points at the oplog - no statement of its
  own; such records are also kept in memory (:attr:`SessionRegistry.unsaved`)
  and copied into ``retryable_writes`` by the engine's housekeeping
  (:meth:`SessionRegistry.save`), which then moves the ``sessions_through``
  mark (catalog_meta: a packed oplog time) past them, in one transaction;
* a write that records none (an update that matched nothing, a write that
  failed) writes its ``retryable_writes`` row itself.

Invariant: every record is in ``retryable_writes`` or on an oplog entry
after ``sessions_through``, so opening the engine reads those entries back
into :attr:`SessionRegistry.unsaved`, and the oplog is never trimmed past
records not yet saved (the trim saves first). Where a session has both, the
higher ``txnNumber`` is its last.

Ending, killing or expiring a session aborts its open transaction. Reaping
also aborts transactions older than ``transactionLifetimeLimitSeconds``.

Manual: https://www.mongodb.com/docs/manual/reference/server-sessions/
"""

from __future__ import annotations

import datetime
import hashlib
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import bson
from bson import Int64
from bson.binary import Binary

from foliodb.engine.catalog import CODEC
from foliodb.engine.oplog import pack
from foliodb.engine.transactions import State, Transaction
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.engine.storage import Storage

TIMEOUT_MINUTES = 30
SAVE_SECONDS = 5.0
SAVE_RECORDS = 10_000
_THROUGH = "sessions_through"  # catalog_meta: records on oplog entries up to this time are in retryable_writes
# Newer wins: a record saved from the oplog never replaces a later one a write stored in its own row.
_UPSERT = (
    "INSERT INTO retryable_writes (lsid, txn_number, reply, written) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (lsid) DO UPDATE SET txn_number = excluded.txn_number, reply = excluded.reply, "
    "written = excluded.written WHERE excluded.txn_number >= retryable_writes.txn_number"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS retryable_writes (
    lsid BLOB PRIMARY KEY,
    txn_number INTEGER NOT NULL,
    reply BLOB NOT NULL,
    written REAL NOT NULL
) WITHOUT ROWID
"""
# WITHOUT ROWID (a database made before keeps its rowid table, which answers the same): a record is
# one b-tree entry and one page to write, not a row and its key's index entry - 20k instructions a
# retryable write instead of 28k (callgrind, bare sqlite3).


@dataclass
class ServerSession:
    key: bytes  # the lsid's id (UUID bytes)
    lsid: dict[str, Any]
    last_use: float = field(default_factory=time.monotonic)
    txn_number: int = -1  # the highest txnNumber this session has used
    txn: Transaction | None = None  # its current or last transaction
    txn_number_of_txn: int = -1  # the txnNumber of ``txn``
    retryable: tuple[int, dict[str, Any]] | None = None  # (txnNumber, reply) of its last retryable write
    loaded: bool = False  # ``retryable`` read back from SQLite
    owner: tuple[str, str] | None = None  # (db, user) who started it under access control; None: no auth


def lsid_key(lsid: Any) -> bytes:
    """The session's identity in an ``lsid`` document (``{id: UUID}``)."""
    if not isinstance(lsid, dict | Mapping) or "id" not in lsid:  # dict first: the ABC check is slow
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'lsid' is the wrong type, expected object")
    value = lsid["id"]
    if isinstance(value, Binary) and value.subtype in (3, 4):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    raise CommandError(ErrorCode.TypeMismatch, "BSON field 'lsid.id' is the wrong type, expected UUID")


_INT32 = struct.Struct("<i")
_INT64 = struct.Struct("<q")


def retryable_record(key: bytes, txn_number: int, reply: Mapping[str, Any]) -> bytes:
    """A retryable write's record as an oplog entry carries it: the BSON of ``{lsid: Binary(key),
    n: txn_number, reply}``, as ``bson.encode`` makes it (``n`` an int32 when it fits), put
    together without building the Binary and the outer document (every retryable write)."""
    if -(1 << 31) <= txn_number < 1 << 31:
        number = b"\x10n\x00" + _INT32.pack(txn_number)
    else:
        number = b"\x12n\x00" + _INT64.pack(txn_number)
    elements = b"".join(
        (
            b"\x05lsid\x00",
            _INT32.pack(len(key)),
            b"\x00",
            key,
            number,
            b"\x03reply\x00",
            bson.encode(reply, codec_options=CODEC),
        )
    )
    return _INT32.pack(len(elements) + 5) + elements + b"\x00"


class SessionRegistry:
    """The engine's sessions."""

    def __init__(self, storage: Storage, abort: Callable[[Transaction], None]) -> None:
        writer_conn = storage.writer
        writer_conn.executescript(_SCHEMA)
        self._abort = abort
        self.sessions: dict[bytes, ServerSession] = {}
        self.lock = threading.Lock()
        self.timeout_minutes = TIMEOUT_MINUTES
        self.transaction_lifetime = 60.0  # transactionLifetimeLimitSeconds
        # Records that rode the oplog and are not in retryable_writes yet: lsid key -> (txnNumber,
        # the record's BSON as on its entry).
        self.unsaved: dict[bytes, tuple[int, bytes]] = {}
        self._unsaved_since: float | None = None  # monotonic time of the oldest unsaved record
        if storage.oplog.has_sessions:
            row = writer_conn.execute("SELECT value FROM catalog_meta WHERE key = ?", (_THROUGH,)).fetchone()
            for (record,) in writer_conn.execute(
                "SELECT session FROM oplog WHERE ts > ? AND session IS NOT NULL ORDER BY ts",
                (int(row[0]) if row else 0,),
            ):
                found = bson.decode(record, CODEC)
                self.unsaved[bytes(found["lsid"])] = (int(found["n"]), bytes(record))

    def touch(self, lsid: Any, owner: tuple[str, str] | None = None, key: bytes | None = None) -> ServerSession:
        """The session of ``lsid`` (``key``: its :func:`lsid_key`, when the caller has it), used now."""
        if key is None:
            key = lsid_key(lsid)
        with self.lock:
            session = self.sessions.get(key)
            if session is None:
                session = self.sessions[key] = ServerSession(key, dict(lsid), owner=owner)
            elif session.owner is None:
                session.owner = owner  # first touched by a command that runs as no one (hello, ...)
            session.last_use = time.monotonic()
        return session

    def find(self, lsid: Any) -> ServerSession | None:
        return self.sessions.get(lsid_key(lsid))

    def load_retryable(self, session: ServerSession, reader: Any) -> None:
        """Read the session's last retryable write back from storage (once: after a restart)."""
        if session.loaded:
            return
        session.loaded = True
        found = None
        row = reader("SELECT txn_number, reply FROM retryable_writes WHERE lsid = ?", (session.key,))
        if row:
            number, reply = row[0]
            found = (int(number), bson.decode(reply, CODEC))
        with self.lock:
            unsaved = self.unsaved.get(session.key)
        if unsaved is not None and (found is None or unsaved[0] > found[0]):
            found = (unsaved[0], bson.decode(unsaved[1], CODEC)["reply"])
        if found is not None:
            session.retryable = found
            session.txn_number = max(session.txn_number, found[0])

    def store_retryable(self, storage: Storage, session: ServerSession, txn_number: int, reply: dict[str, Any]) -> None:
        """Inside the write's SQLite transaction: remember its reply - on the write's last
        oplog entry when it recorded any, else in its own row."""
        oplog = storage.oplog
        if oplog.pending and not oplog.muted:
            record = retryable_record(session.key, txn_number, reply)
            oplog.session_record = bytearray(record)
            key = session.key
            with self.lock:
                before = self.unsaved.get(key)
                self.unsaved[key] = (txn_number, record)
                if self._unsaved_since is None:
                    self._unsaved_since = time.monotonic()

            def forget() -> None:  # the write rolled back: its record never was
                with self.lock:
                    if before is None:
                        self.unsaved.pop(key, None)
                    else:
                        self.unsaved[key] = before

            storage.rollback_hooks[("retryable", key)] = forget
        else:
            storage.writer.execute(
                _UPSERT,
                # bytearray: bound as a BLOB directly, where bytes go through sqlite3's adapter lookup
                (bytearray(session.key), txn_number, bytearray(bson.encode(reply, codec_options=CODEC)), time.time()),
            )
        session.retryable = (txn_number, reply)
        session.loaded = True

    def save(self, storage: Storage, due: bool = False) -> None:
        """Copy the records that rode the oplog into ``retryable_writes`` and move
        ``sessions_through`` past them (before the oplog is trimmed, at close). ``due``:
        only if the oldest has waited :data:`SAVE_SECONDS` or they are many (housekeeping's
        ticks: the fewer saves, the less they cost the writes; the more, the fewer entries
        an open after a crash reads back)."""
        with self.lock:
            waiting, since = len(self.unsaved), self._unsaved_since
        if not waiting or (
            due and waiting < SAVE_RECORDS and since is not None and time.monotonic() - since < SAVE_SECONDS
        ):
            return
        with storage.write() as conn:
            # Taken under the writer lock: a write that committed while this one waited for the
            # lock has its record here too, so sessions_through (the cluster time, below) never
            # passes a committed record that retryable_writes lacks (an open after a crash reads
            # back only the oplog entries after it: such a record was lost, and its write,
            # retried, was applied again).
            with self.lock:
                saving = dict(self.unsaved)
            written = time.time()
            conn.executemany(
                _UPSERT,
                [
                    (key, number, bson.encode(bson.decode(record, CODEC)["reply"], codec_options=CODEC), written)
                    for key, (number, record) in saving.items()
                ],
            )
            # Under the writer lock: every record committed so far is at or before the cluster time.
            conn.execute(
                "INSERT OR REPLACE INTO catalog_meta (key, value) VALUES (?, ?)", (_THROUGH, pack(storage.cluster_time))
            )

            def unsave() -> None:  # the write this save joined rolled back: they are unsaved again
                with self.lock:
                    for key, value in saving.items():
                        self.unsaved.setdefault(key, value)
                    self._unsaved_since = time.monotonic()

            storage.rollback_hooks[("sessions", "save")] = unsave
        with self.lock:  # what a write stored meanwhile stays unsaved
            for key, value in saving.items():
                if self.unsaved.get(key) is value:
                    del self.unsaved[key]
            self._unsaved_since = time.monotonic() if self.unsaved else None

    def end(self, keys: list[bytes]) -> None:
        """endSessions / killSessions: forget them, aborting their transactions."""
        with self.lock:
            ended = [self.sessions.pop(key) for key in keys if key in self.sessions]
        for session in ended:
            self._abort_open(session)

    def end_all(self) -> None:
        with self.lock:
            ended = list(self.sessions.values())
            self.sessions.clear()
        for session in ended:
            self._abort_open(session)

    def _abort_open(self, session: ServerSession) -> None:
        txn = session.txn
        if txn is not None and txn.state is State.IN_PROGRESS:
            self._abort(txn)

    def reap(self) -> None:
        """Expire idle sessions; abort transactions past their lifetime."""
        now = time.monotonic()
        idle = self.timeout_minutes * 60.0
        with self.lock:
            expired = [key for key, s in self.sessions.items() if now - s.last_use > idle]
            stale = [
                s.txn
                for s in self.sessions.values()
                if s.txn is not None
                and s.txn.state is State.IN_PROGRESS
                and now - s.txn.started > self.transaction_lifetime
            ]
        for txn in stale:
            self._abort(txn)
        if expired:
            self.end(expired)

    def listing(self, owners: set[tuple[str, str] | None] | None) -> list[dict[str, Any]]:
        """``$listLocalSessions`` documents (mongod's session records): of the sessions whose
        owner is in ``owners`` (None: every session)."""
        now = time.monotonic()
        wall = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        with self.lock:
            sessions = [s for s in self.sessions.values() if owners is None or s.owner in owners]
        records = []
        for s in sessions:
            record: dict[str, Any] = {
                "_id": {"id": s.lsid["id"], "uid": user_digest(s.owner)},
                "lastUse": wall - datetime.timedelta(seconds=now - s.last_use),
            }
            if s.owner is not None:
                record["user"] = {"name": f"{s.owner[1]}@{s.owner[0]}"}
            records.append(record)
        return records

    def idle_transactions(self, busy: set[bytes]) -> list[dict[str, Any]]:
        """``$currentOp``'s ``idleSession`` documents: the sessions with a transaction in progress
        and no command running (``busy``: the sessions running one), as mongod shows them."""
        now = time.monotonic()
        wall = datetime.datetime.now(datetime.UTC)
        with self.lock:
            sessions = [
                s
                for s in self.sessions.values()
                if s.txn is not None and s.txn.state is State.IN_PROGRESS and s.key not in busy
            ]
        out = []
        for s in sessions:
            txn = s.txn
            assert txn is not None
            open_seconds = now - txn.started
            started = wall - datetime.timedelta(seconds=open_seconds)
            parameters: dict[str, Any] = {"txnNumber": Int64(s.txn_number_of_txn), "autocommit": False}
            if txn.options.get("readConcern") is not None:
                parameters["readConcern"] = txn.options["readConcern"]
            entry: dict[str, Any] = {
                "type": "idleSession",
                "desc": "inactive transaction",
                "lsid": {"id": s.lsid["id"], "uid": user_digest(s.owner)},
                "transaction": {
                    "parameters": parameters,
                    "startWallClockTime": started.isoformat(),
                    "timeOpenMicros": Int64(int(open_seconds * 1_000_000)),
                    "expiryTime": (started + datetime.timedelta(seconds=self.transaction_lifetime)).isoformat(),
                },
                "active": False,
                "waitingForLock": False,
            }
            if s.owner is not None:
                entry["effectiveUsers"] = [{"user": s.owner[1], "db": s.owner[0]}]
            out.append(entry)
        return out


def user_digest(owner: tuple[str, str] | None) -> Binary:
    """A session's ``uid``: SHA-256 of ``user@db``, or of nothing without access control (mongod's
    ``getLogicalSessionUserDigestFor``)."""
    name = b"" if owner is None else f"{owner[1]}@{owner[0]}".encode()
    return Binary(hashlib.sha256(name).digest())
