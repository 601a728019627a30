"""The SQLite storage under a dbpath: one file, one connection, one lock.

Layout of a dbpath directory::

    foliodb.sqlite      the data: catalog tables, a record table ``c<N>`` per
                        collection, an index table ``i<N>`` per index
    foliodb.sqlite-wal  SQLite's write-ahead log
    foliodb.lock        holds an exclusive ``flock`` while a process has the
                        dbpath open, and names that process

Durability (as MongoDB's default write concern): WAL mode with
``synchronous=NORMAL`` - a commit is in the WAL before the write is
acknowledged, so a killed process loses nothing acknowledged, and a power
loss leaves the file consistent (the newest commits may roll back).
``j=True`` additionally fsyncs the WAL before acknowledging.

A kernel ``flock`` dies with its process, so a lock left by a killed
process is simply taken over by the next opener.

Invariant: every change of records and index entries happens inside
:meth:`Storage.write`, one SQLite transaction, so no crash can separate a
document from its index entries.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator

from foliodb.errors import CommandError, ErrorCode

DATA_FILE = "foliodb.sqlite"
LOCK_FILE = "foliodb.lock"


class DBPathLock:
    """An exclusive, process-owned lock on a dbpath directory."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, LOCK_FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 4096).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise CommandError(
                ErrorCode.DBPathInUse,
                f"Unable to lock the dbpath {directory!r}: it is in use by {owner}. "
                "Only one process can open a FolioDB dbpath at a time; close the other client first.",
            ) from None
        owner = f"pid {os.getpid()} on {socket.gethostname()} ({' '.join(sys.argv)[:200]})"
        os.ftruncate(fd, 0)
        os.pwrite(fd, owner.encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class Storage:
    """One SQLite connection shared by the process's users of a dbpath.

    All access goes through :attr:`mutex`; SQLite's own locking is only the
    guard against other processes (which the dbpath lock already excludes).
    """

    def __init__(self, path: str) -> None:
        self.memory = path == ":memory:"
        self.lock: DBPathLock | None = None
        if self.memory:
            self.file = ":memory:"
        else:
            os.makedirs(path, exist_ok=True)
            self.lock = DBPathLock(path)
            self.file = os.path.join(path, DATA_FILE)
        try:
            self.conn = sqlite3.connect(self.file, isolation_level=None, check_same_thread=False, cached_statements=512)
        except sqlite3.Error as exc:
            if self.lock:
                self.lock.release()
            raise CommandError(ErrorCode.InternalError, f"cannot open {self.file}: {exc}") from None
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA cache_size=-65536")  # 64 MiB page cache
        self.conn.execute("PRAGMA temp_store=FILE")
        self.mutex = threading.RLock()
        self._depth = 0
        self._wal_fd: int | None = None
        # Called after a rollback, so in-memory mirrors (the catalog) can
        # forget changes that never reached the file.
        self.rollback_hooks: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; nested calls join the outermost one."""
        with self.mutex:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                for hook in self.rollback_hooks:
                    hook()
                raise
            self._depth = 0
            self.conn.execute("COMMIT")

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested unit inside :meth:`write` that can fail on its own."""
        self.conn.execute("SAVEPOINT unit")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO unit")
            self.conn.execute("RELEASE unit")
            raise
        self.conn.execute("RELEASE unit")

    @property
    def in_write(self) -> bool:
        return self._depth > 0

    def table_bytes(self, table: str) -> int | None:
        """Bytes of the pages holding ``table`` and its SQLite indexes (the ``dbstat``
        virtual table); None where this SQLite lacks it."""
        with self.mutex:
            try:
                row = self.conn.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = ?)",
                    (table,),
                ).fetchone()
            except sqlite3.OperationalError:
                return None
        return int(row[0] or 0)

    def sync(self) -> None:
        """Make committed writes survive power loss (``j: true``)."""
        if self.memory:
            return
        if self._wal_fd is None:
            wal = self.file + "-wal"
            if not os.path.exists(wal):
                return
            self._wal_fd = os.open(wal, os.O_RDONLY)
        os.fsync(self._wal_fd)

    def close(self) -> None:
        with self.mutex:
            if self._wal_fd is not None:
                os.close(self._wal_fd)
                self._wal_fd = None
            self.conn.close()
            if self.lock:
                self.lock.release()
