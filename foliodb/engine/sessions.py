"""Server sessions: what the engine remembers per ``lsid``.

A driver sends ``lsid`` with every command of a session. The engine keeps,
per session: when it was last used (it expires after
``logicalSessionTimeoutMinutes`` idle, 30, as mongod's), the highest
``txnNumber`` it has used, its current or last multi-document transaction,
and its last retryable write's reply (also stored in SQLite, in the write's
own SQLite transaction: ``retryable_writes``, so a retry after a crash finds
it and the write is never applied twice).

Ending, killing or expiring a session aborts its open transaction. Reaping
also aborts transactions older than ``transactionLifetimeLimitSeconds``.

Manual: https://www.mongodb.com/docs/manual/reference/server-sessions/
"""

from __future__ import annotations

import datetime
import hashlib
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import bson
from bson import Int64
from bson.binary import Binary

from foliodb.engine.catalog import CODEC
from foliodb.engine.transactions import State, Transaction
from foliodb.errors import CommandError, ErrorCode

TIMEOUT_MINUTES = 30
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


class SessionRegistry:
    """The engine's sessions."""

    def __init__(self, writer_conn: Any, abort: Callable[[Transaction], None]) -> None:
        writer_conn.executescript(_SCHEMA)
        self._abort = abort
        self.sessions: dict[bytes, ServerSession] = {}
        self.lock = threading.Lock()
        self.timeout_minutes = TIMEOUT_MINUTES
        self.transaction_lifetime = 60.0  # transactionLifetimeLimitSeconds

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
        row = reader("SELECT txn_number, reply FROM retryable_writes WHERE lsid = ?", (session.key,))
        if row:
            number, reply = row[0]
            session.retryable = (int(number), bson.decode(reply, CODEC))
            session.txn_number = max(session.txn_number, int(number))

    @staticmethod
    def store_retryable(conn: Any, session: ServerSession, txn_number: int, reply: dict[str, Any]) -> None:
        """Inside the write's SQLite transaction: remember its reply."""
        conn.execute(
            "INSERT OR REPLACE INTO retryable_writes (lsid, txn_number, reply, written) VALUES (?, ?, ?, ?)",
            # bytearray: bound as a BLOB directly, where bytes go through sqlite3's adapter lookup
            (bytearray(session.key), txn_number, bytearray(bson.encode(reply, codec_options=CODEC)), time.time()),
        )
        session.retryable = (txn_number, reply)
        session.loaded = True

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
