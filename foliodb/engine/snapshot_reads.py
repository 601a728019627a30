"""The read half of :class:`~foliodb.engine.storage.Storage`: operations, their snapshots, the reader pool.

An *operation* (one command: :meth:`SnapshotReads.begin_operation` ...
:meth:`SnapshotReads.end_operation`, nested calls join) opens a *view* at its
first read: a pooled :class:`Reader` connection inside one SQLite read
transaction, plus the catalog version that goes with it. Every read of the
operation sees that one committed state; inside a write, the thread reads
through the writer instead. A view's catalog is the published one only when
``ddl_seq`` was even and unchanged across the start of its SQLite snapshot,
so it always describes the tables its snapshot holds. A multi-document
transaction (or a readConcern snapshot read) pins a reader out of the pool
for its whole life (:meth:`SnapshotReads.pin_snapshot`), taken while no
commit is landing so its stamps are exact.

It keeps storage.py's invariant on idle readers: at most
``MAX_IDLE_READERS`` are kept, and after each commit none holds a stale
snapshot (:meth:`SnapshotReads._end_stale_snapshots`), so none pins the WAL.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from bson import Timestamp

from foliodb.engine.catalog import Catalog
from foliodb.engine.transactions import Transaction
from foliodb.errors import CommandError, ErrorCode

# Idle reader connections kept for reuse; more are closed when released.
MAX_IDLE_READERS = 32


class Reader:
    """A pooled reader connection and the snapshot it may still hold; pinned by
    a multi-document transaction, it also carries that transaction's writes."""

    __slots__ = ("catalog", "commits", "conn", "in_txn", "overlay")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.in_txn = False
        self.commits = -1  # the storage's commit count when the snapshot began
        self.catalog: Catalog | None = None
        self.overlay: Transaction | None = None


class ThreadState:
    """One thread's operation state: a plain object behind one thread-local lookup
    (``ThreadStates.state``), since each attribute read or set on a ``threading.local``
    costs a lookup of the thread's dictionary, and every operation reads and sets several."""

    __slots__ = ("depth", "txn", "view", "writing")

    def __init__(self) -> None:
        self.depth = 0  # operations open on this thread (nested ones join the outermost)
        self.view: Reader | None = None  # the operation's snapshot, opened at its first read
        self.writing = 0  # depth of write() on this thread
        self.txn: Reader | None = None  # the transaction this thread's command runs in (its pinned snapshot)


class ThreadStates(threading.local):
    def __init__(self) -> None:
        self.state = ThreadState()


class SnapshotReads:
    """What a thread reads through: its operation's snapshot, a pinned one, or the writer."""

    # Set by Storage.__init__ (the write half).
    forked: bool
    closed: bool
    pid: int
    published: Catalog
    cluster_time: Timestamp
    commits: int
    commit_seq: int
    ddl_seq: int
    _states: ThreadStates
    _writer_view: Reader
    _idle: list[Reader]
    _idle_in_txn: int
    _connect: Callable[[], sqlite3.Connection]  # a new connection to the dbpath's file

    # -- operations and their views --------------------------------------------

    def begin_operation(self) -> None:
        if self.forked:
            raise CommandError(
                ErrorCode.IllegalOperation,
                f"this FolioDB client was opened by process {self.pid} and cannot be used after fork(); "
                "open a new client in the child process",
            )
        if self.closed:
            raise CommandError(ErrorCode.IllegalOperation, "the FolioDB engine is closed")
        self._states.state.depth += 1

    def end_operation(self) -> None:
        state = self._states.state
        state.depth -= 1
        if not state.depth and state.view is not None:
            self._release_view(state)

    def end_view(self) -> None:
        """End this thread's snapshot now; its next read opens a new one (a long wait sees new commits)."""
        state = self._states.state
        if state.view is not None and not state.writing:
            self._release_view(state)

    def view(self) -> Reader:
        """What this thread reads through now: the writer inside :meth:`write`,
        else the operation's snapshot (opened on first use). Its ``conn`` and
        ``catalog`` go together."""
        state = self._states.state
        if state.writing:
            return self._writer_view
        view = state.txn or state.view
        if view is None:
            view = self._open_view(state)
        return view

    def reader(self) -> sqlite3.Connection:
        return self.view().conn

    def snapshot_stamp(self) -> int | None:
        """The commit count this thread's snapshot holds at least (the document cache's
        stamp), or None inside a write (its reads see its own uncommitted changes)."""
        if self._states.state.writing:
            return None
        return self.view().commits

    def catalog(self) -> Catalog:
        """The catalog version this thread's reads go with."""
        catalog = self.view().catalog
        assert catalog is not None
        return catalog

    # -- multi-document transactions ---------------------------------------------

    def transaction(self) -> Transaction | None:
        """The transaction this thread's command runs in, unless it is writing for real (a commit)."""
        state = self._states.state
        txn = state.txn
        if txn is None or state.writing:
            return None
        return txn.overlay

    def transaction_view(self) -> Reader | None:
        return self._states.state.txn

    def bind_transaction(self, view: Reader | None) -> None:
        """Run this thread's command in a transaction's snapshot (None: in none)."""
        self._states.state.txn = view

    def pin_snapshot(self) -> tuple[Reader, Timestamp]:
        """A reader held out of the pool inside a new snapshot, for a
        transaction's (or a snapshot read's) whole life, and the cluster time
        of the newest commit it holds. Exact: taken while no commit is under
        way (``commit_seq`` even and unchanged), so its ``commits`` stamp and
        cluster time describe exactly what it sees."""
        reader = self._take_reader()
        if reader.in_txn:
            reader.conn.execute("ROLLBACK")
            reader.in_txn = False
        conn = reader.conn
        while True:
            seq, ddl = self.commit_seq, self.ddl_seq
            if seq & 1 or ddl & 1:
                time.sleep(0)  # a commit is landing: a few microseconds
                continue
            commits, catalog, cluster_time = self.commits, self.published, self.cluster_time
            conn.execute("BEGIN")
            conn.execute("PRAGMA schema_version").fetchone()
            if self.commit_seq == seq and self.ddl_seq == ddl:
                break
            conn.execute("ROLLBACK")
        reader.in_txn = True
        reader.commits = commits
        reader.catalog = catalog
        return reader, cluster_time

    def unpin(self, reader: Reader) -> None:
        """A transaction ended: its snapshot goes back to the pool, ended."""
        reader.overlay = None
        if self.closed or self.forked:
            if not self.forked:
                reader.conn.close()
            return
        reader.conn.execute("ROLLBACK")
        reader.in_txn = False
        if len(self._idle) < MAX_IDLE_READERS:
            self._idle.append(reader)
        else:
            reader.conn.close()

    def read_latest(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """Rows of one statement against the newest committed state, outside
        any snapshot (a transaction checking what was committed since its own)."""
        reader = self._take_reader()
        try:
            if reader.in_txn:
                reader.conn.execute("ROLLBACK")
                reader.in_txn = False
            rows: list[Any] = reader.conn.execute(sql, args).fetchall()
            return rows
        finally:
            self._idle.append(reader)

    def _open_view(self, state: ThreadState) -> Reader:
        if not state.depth:
            raise RuntimeError("FolioDB storage read outside an operation (a bug: reads run inside a command)")
        reader = self._take_reader()
        if reader.in_txn:
            if reader.commits == self.commits:
                state.view = reader  # nothing committed since: still the newest snapshot
                return reader
            reader.conn.execute("ROLLBACK")
            reader.in_txn = False
        conn = reader.conn
        while True:
            seq = self.ddl_seq
            if seq & 1:
                time.sleep(0)  # a catalog change is being published: a few microseconds
                continue
            commits = self.commits
            catalog = self.published
            conn.execute("BEGIN")
            conn.execute("PRAGMA schema_version").fetchone()  # the read transaction (the snapshot) starts here
            if self.ddl_seq == seq:
                break
            conn.execute("ROLLBACK")
        reader.in_txn = True
        reader.commits = commits
        reader.catalog = catalog
        state.view = reader
        return reader

    def _take_reader(self) -> Reader:
        try:
            return self._idle.pop()
        except IndexError:
            pass
        conn = self._connect()
        conn.execute("PRAGMA query_only=1")
        # 4 MiB: the OS page cache is shared, and a full scan fills this one for nothing (each
        # MiB of it took 2 MiB of resident memory in a 1M-document sort: 28 MiB at 16).
        conn.execute("PRAGMA cache_size=-4096")
        return Reader(conn)

    def _release_view(self, state: ThreadState) -> None:
        reader = state.view
        assert reader is not None
        state.view = None
        if self.closed or self.forked:
            if not self.forked:
                reader.conn.close()
            return
        if reader.commits != self.commits:
            reader.conn.execute("ROLLBACK")  # already stale: don't pin the WAL while idle
            reader.in_txn = False
        else:
            self._idle_in_txn += 1
        if len(self._idle) >= MAX_IDLE_READERS:
            if reader.in_txn:
                reader.conn.execute("ROLLBACK")
            reader.conn.close()
            return
        self._idle.append(reader)

    def _end_stale_snapshots(self) -> None:
        """After a commit that left idle readers in a snapshot: end those snapshots (now stale)."""
        self._idle_in_txn = 0
        taken: list[Reader] = []
        while True:  # list.pop is atomic: each reader is either taken here or by one operation
            try:
                taken.append(self._idle.pop())
            except IndexError:
                break
        for reader in taken:
            if reader.in_txn:
                reader.conn.execute("ROLLBACK")
                reader.in_txn = False
        self._idle.extend(taken)
