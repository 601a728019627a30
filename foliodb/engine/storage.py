"""The SQLite storage under a dbpath: one writer, a pool of snapshot readers.

Layout of a dbpath directory (created 0700, its files 0600)::

    foliodb.sqlite      the data: catalog tables, a record table ``c<N>`` per
                        collection, an index table ``i<N>`` per index
    foliodb.sqlite-wal  SQLite's write-ahead log
    foliodb.lock        holds an exclusive ``flock`` while a process has the
                        dbpath open, and names that process

``:memory:`` is the same file layout in a private temporary file (in
``/dev/shm`` where it exists), deleted at close: SQLite's in-memory databases
allow one connection only, and snapshot isolation needs several.

Durability (as MongoDB's default write concern): WAL mode with
``synchronous=NORMAL`` - a commit is in the WAL before the write is
acknowledged, so a killed process loses nothing acknowledged, and a power
loss leaves the file consistent (the newest commits may roll back).
``j=True`` additionally fsyncs the WAL before acknowledging.

Concurrency
-----------
* **One writer.** Every change happens inside :meth:`Storage.write`: one
  SQLite transaction on the writer connection, under the writer lock; nested
  calls on a thread join the outermost one. Writers are serialized; a waiting
  writer still stops at its deadline or ``killOp``.
* **Readers see snapshots.** An *operation* (one command:
  :meth:`begin_operation` ... :meth:`end_operation`, nested calls join) opens
  a *view* at its first read: a pooled reader connection inside one SQLite
  read transaction, plus the catalog version that goes with it. Every read of
  the operation sees that one committed state. In WAL mode readers never wait
  for the writer and the writer never waits for readers.
* **Writes read the newest state.** Inside :meth:`write`, the thread's reads
  go to the writer connection and see the transaction's own changes. A commit
  ends the thread's view, so the operation's next read sees its own write.
* **Caches of the write.** A cache the writer fills from its own uncommitted
  writes (the time-series bucket catalog) registers a hook in
  :attr:`Storage.rollback_hooks`; every rollback (of the write, of a failed
  commit, or of a savepoint inside it) runs them, so no cache outlives the
  changes it describes.
* **Catalog versions.** DDL builds a draft of the catalog (copy-on-write,
  :class:`~foliodb.engine.catalog.CatalogDraft`) that the commit publishes.
  ``ddl_seq`` is odd while a DDL commit is being published; a view pins the
  published catalog only when ``ddl_seq`` was even and unchanged across the
  start of its SQLite snapshot, so a view's catalog always describes the
  tables its snapshot holds.

Invariants:

* Every change of records and index entries happens inside :meth:`write`, one
  SQLite transaction, so no crash can separate a document from its index
  entries.
* No statement stays active after the call that ran it returns (reads fetch
  whole batches), so a view's connection can go back to the pool at any
  operation boundary, and cursors take a new snapshot per batch as MongoDB's
  yield between batches.
* An idle pooled reader is outside any transaction, or inside one whose
  snapshot is still the newest (its ``commits`` stamp equals the storage's);
  the writer ends stale idle snapshots after its commits, so none pins the WAL.

A kernel ``flock`` dies with its process, so a lock left by a killed process
is simply taken over by the next opener. After ``fork()`` the child refuses
to use the parent's storage (SQLite connections must not cross a fork) and
never touches its connections or its lock.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import socket
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from bson import Timestamp

from foliodb import interrupt, lane
from foliodb.engine.cache import DocumentCache
from foliodb.engine.catalog import Catalog, CatalogDraft
from foliodb.engine.checkpoint import Checkpointer
from foliodb.engine.clock import ClusterClock
from foliodb.engine.oplog import Oplog
from foliodb.engine.transactions import Transaction, TransactionTable
from foliodb.errors import CommandError, ErrorCode

DATA_FILE = "foliodb.sqlite"
LOCK_FILE = "foliodb.lock"
# Idle reader connections kept for reuse; more are closed when released.
MAX_IDLE_READERS = 32
_MEMORY_PREFIX = "foliodb-memory-"


class DBPathLock:
    """An exclusive, process-owned lock on a dbpath directory."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, LOCK_FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
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

    def release(self, forked: bool = False) -> None:
        if self._fd is not None:
            if not forked:  # a child shares the parent's lock: unlocking would free the parent's dbpath
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class _WriterLock:
    """The writer lock, handed over in arrival order: ``threading.Lock`` is not
    fair, and a thread writing in a loop would take it back before a waiting
    writer (an index build's next chunk, another connection) ever got it.

    It is held while ``_lock`` is: free with no one in line, it is taken with one
    ``acquire`` and let go with one ``release``, the path of nearly every write. A
    holder with someone in line hands it to the first without letting ``_lock`` go.
    ``_mutex`` guards the line; a thread that joins it tries ``_lock`` once more
    after joining, so a holder that let go just before (seeing no one in line)
    leaves no one waiting for a free lock (as :class:`foliodb.lane.FairLane`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mutex = threading.Lock()
        self._waiters: collections.deque[threading.Lock] = collections.deque()

    def acquire(self) -> None:
        """Take the lock, waiting in line; a wait ends at the operation's deadline or killOp."""
        op = interrupt.current()
        if op is not None:
            op.wants_writer()  # currentOp's locks
        if not self._waiters and self._lock.acquire(False):
            return
        with self._mutex:
            if not self._waiters and self._lock.acquire(False):
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
            if self._lock.acquire(False):  # let go as this thread joined the line: the first in line's
                self._waiters.popleft().release()
        lane.leave()  # nothing waits in the lane
        waited_from = time.monotonic()
        if op is not None:
            op.waiting_for_lock = True
        try:
            while not turn.acquire(timeout=0.05):
                try:
                    interrupt.check()  # maxTimeMS and killOp end a wait for the writer
                except BaseException:
                    with self._mutex:
                        if turn in self._waiters:
                            self._waiters.remove(turn)
                            raise
                    self.release()  # handed over meanwhile: pass it on
                    raise
        finally:
            if op is not None:
                op.waiting_for_lock = False
                op.waited_for_writer(time.monotonic() - waited_from)

    def release(self) -> None:
        if not self._waiters:
            self._lock.release()
            if not self._waiters:
                return
            # A thread joined the line as this one let go: the lock is the first in line's,
            # unless a newcomer took it meanwhile (it hands it on when it lets go).
            with self._mutex:
                if self._waiters and self._lock.acquire(False):
                    self._waiters.popleft().release()
            return
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()  # the next in line owns it now
            else:  # the line gave up waiting meanwhile
                self._lock.release()


class _Reader:
    """A pooled reader connection and the snapshot it may still hold; pinned by
    a multi-document transaction, it also carries that transaction's writes."""

    __slots__ = ("catalog", "commits", "conn", "in_txn", "overlay")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.in_txn = False
        self.commits = -1  # the storage's commit count when the snapshot began
        self.catalog: Catalog | None = None
        self.overlay: Transaction | None = None


class _ThreadState:
    """One thread's operation state: a plain object behind one thread-local lookup
    (``_ThreadStates.state``), since each attribute read or set on a ``threading.local``
    costs a lookup of the thread's dictionary, and every operation reads and sets several."""

    __slots__ = ("depth", "txn", "view", "writing")

    def __init__(self) -> None:
        self.depth = 0  # operations open on this thread (nested ones join the outermost)
        self.view: _Reader | None = None  # the operation's snapshot, opened at its first read
        self.writing = 0  # depth of write() on this thread
        self.txn: _Reader | None = None  # the transaction this thread's command runs in (its pinned snapshot)


class _ThreadStates(threading.local):
    def __init__(self) -> None:
        self.state = _ThreadState()


class _Write:
    """:meth:`Storage.write`'s context: the outermost one on a thread begins the SQLite
    transaction and commits it (or rolls it back on an exception); a nested one joins it; in
    a multi-document transaction the writes go to its overlay, so there is nothing to begin."""

    __slots__ = ("_joined", "_outer", "_storage")

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._outer = self._joined = False

    def __enter__(self) -> sqlite3.Connection:
        storage = self._storage
        state = storage._states.state
        if state.writing:
            state.writing += 1
            self._joined = True
        elif state.txn is None:
            # The outermost write begins the SQLite transaction (inline: every write passes here).
            lock = storage._writer_lock
            lock.acquire()
            try:
                storage.writer.execute("BEGIN IMMEDIATE")
            except BaseException:
                lock.release()
                raise
            storage._writer_view.catalog = storage.published  # the newest: every catalog change commits here
            state.writing = 1
            self._outer = True
        return storage.writer

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._outer:
            self._storage._end_write(kind is not None)
        elif self._joined:
            self._storage._states.state.writing -= 1


_STORAGES: weakref.WeakSet[Storage] = weakref.WeakSet()
# Connections of storages inherited across fork(): kept referenced, so the
# child never finalizes (closes, checkpoints) what belongs to the parent.
_INHERITED: list[object] = []


def _after_fork_in_child() -> None:
    for storage in list(_STORAGES):
        storage.forked = True
        if storage._cleanup is not None:
            storage._cleanup.detach()  # the parent's :memory: file is not the child's to remove
        if storage.checkpointer is not None:
            storage._stop_checkpointer.detach()  # its thread is the parent's; the child has none
            _INHERITED.append(storage.checkpointer.conn)
        _INHERITED.append(storage.writer)
        _INHERITED.extend(reader.conn for reader in storage._idle)


os.register_at_fork(after_in_child=_after_fork_in_child)


def _read_only_uri(file: str) -> str:
    """``mode=ro``, or ``immutable=1`` when even a read-only open cannot lock the file (read-only
    media: no -shm can be made beside it); immutable assumes nobody writes it meanwhile."""
    uri = f"file:{urllib.parse.quote(file)}?mode=ro"
    try:
        probe = sqlite3.connect(uri, uri=True)
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            probe.close()
    except sqlite3.OperationalError:
        return f"file:{urllib.parse.quote(file)}?immutable=1"
    return uri


class Storage:
    """The SQLite file of a dbpath: its writer, its readers, its catalog versions."""

    def __init__(self, path: str, read_only: bool = False) -> None:
        self.memory = path == ":memory:"
        # Read-only: SQLite opens the file mode=ro (immutable on media where even that cannot
        # lock), no dbpath lock is taken (nothing here writes), and every write is refused.
        self.read_only = read_only and not self.memory
        self.lock: DBPathLock | None = None
        self._uri: str | None = None
        if self.memory:
            self.file = _memory_file()
        else:
            self.file = os.path.join(path, DATA_FILE)
            if self.read_only:
                if not os.path.isfile(self.file):
                    raise CommandError(ErrorCode.IllegalOperation, f"no FolioDB database at {path} to open read-only")
                self._uri = _read_only_uri(self.file)
            else:
                os.makedirs(path, mode=0o700, exist_ok=True)
                self.lock = DBPathLock(path)
        try:
            if not self.read_only:
                # Created private before SQLite opens it: its -wal and -shm files take the same mode.
                os.close(os.open(self.file, os.O_RDWR | os.O_CREAT, 0o600))
            self.writer = self._connect()
            if not self.read_only:
                self.writer.execute("PRAGMA journal_mode=WAL")
                self.writer.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's job (checkpoint.py)
            self.writer.execute(f"PRAGMA synchronous={self._synchronous}")
            self.writer.execute("PRAGMA cache_size=-65536")  # 64 MiB page cache
            self.published: Catalog = Catalog.load(self.writer)
        except (sqlite3.Error, OSError) as exc:
            if self.lock:
                self.lock.release()
            raise CommandError(ErrorCode.InternalError, f"cannot open {self.file}: {exc}") from None
        self.clock = ClusterClock(self.writer)
        self.oplog = Oplog(self.writer)
        self.new_entries = threading.Condition()  # notified when a commit recorded oplog entries
        self.watchers = 0  # threads waiting on it (change streams, awaitData cursors)
        self.cluster_time: Timestamp = self.clock.last  # of the newest commit
        self.transactions = TransactionTable()
        self.cache = DocumentCache()  # decoded collections for scans (engine/cache.py)
        self.draft: CatalogDraft | None = None  # the writer's catalog changes, published at commit
        # Run when the current write (or a savepoint of it) rolls back; emptied when it ends.
        self.rollback_hooks: dict[object, Callable[[], None]] = {}  # by what they drop: each once
        self.ddl_seq = 0  # odd while a catalog change is being published
        self.commit_seq = 0  # odd while any commit is landing (for exact snapshots)
        self.commits = 0  # writer commits so far: a snapshot stamped with this count is the newest
        self.pid = os.getpid()
        self.forked = False
        self.closed = False
        # A :memory: file goes when its storage does, or at exit should close() never run.
        self._cleanup = weakref.finalize(self, _remove_files, self.file) if self.memory else None
        self._writer_lock = _WriterLock()
        # fsyncLock holds the writer lock across commands: how many locks are held, and what
        # orders the fsync commands among themselves.
        self.fsync_locks = 0
        self._fsync_mutex = threading.Lock()
        self._writer_view = _Reader(self.writer)  # its catalog: the published one, or the draft being changed
        self._states = _ThreadStates()
        self._idle: list[_Reader] = []
        self._idle_in_txn = 0  # idle readers left inside a snapshot (an upper bound)
        self._wal_fd: int | None = None
        self.checkpointer: Checkpointer | None = None
        if not self.read_only:
            self.checkpointer = Checkpointer(self._checkpoint_connection, self.writer, self._writer_lock)
            self._stop_checkpointer = weakref.finalize(self, self.checkpointer.stop)
        _STORAGES.add(self)

    @property
    def _synchronous(self) -> str:
        return "OFF" if self.memory else "NORMAL"

    def _checkpoint_connection(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute(f"PRAGMA synchronous={self._synchronous}")  # its checkpoints fsync as the writer's would
        conn.execute("PRAGMA cache_size=-2048")
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self._uri is not None:
            conn = sqlite3.connect(self._uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA query_only=ON")
            return conn
        conn = sqlite3.connect(self.file, isolation_level=None, check_same_thread=False, cached_statements=512)
        conn.execute("PRAGMA temp_store=FILE")
        return conn

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

    def view(self) -> _Reader:
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

    def transaction_view(self) -> _Reader | None:
        return self._states.state.txn

    def bind_transaction(self, view: _Reader | None) -> None:
        """Run this thread's command in a transaction's snapshot (None: in none)."""
        self._states.state.txn = view

    def pin_snapshot(self) -> tuple[_Reader, Timestamp]:
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

    def unpin(self, reader: _Reader) -> None:
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

    def catalog_draft(self) -> CatalogDraft:
        """The catalog the current write transaction changes (created on first use)."""
        assert self._states.state.writing, "catalog changes happen inside Storage.write()"
        if self.draft is None:
            self.draft = CatalogDraft(self.published, self.writer)
            self._writer_view.catalog = self.draft.catalog
        return self.draft

    def _open_view(self, state: _ThreadState) -> _Reader:
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

    def _take_reader(self) -> _Reader:
        try:
            return self._idle.pop()
        except IndexError:
            pass
        conn = self._connect()
        conn.execute("PRAGMA query_only=1")
        # 4 MiB: the OS page cache is shared, and a full scan fills this one for nothing (each
        # MiB of it took 2 MiB of resident memory in a 1M-document sort: 28 MiB at 16).
        conn.execute("PRAGMA cache_size=-4096")
        return _Reader(conn)

    def _release_view(self, state: _ThreadState) -> None:
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
        taken: list[_Reader] = []
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

    # -- writes ------------------------------------------------------------------

    def write(self) -> _Write:
        """A write transaction (a context manager yielding the writer connection); nested
        calls on a thread join the outermost one."""
        if self.read_only:
            raise CommandError(ErrorCode.IllegalOperation, "Cannot execute a write operation in read-only mode")
        return _Write(self)

    def _end_write(self, failed: bool) -> None:
        state = self._states.state
        state.writing = 0
        if failed:
            try:
                self.draft = None
                self.transactions.rolled_back()
                self.oplog.rolled_back()
                self.writer.execute("ROLLBACK")
            finally:
                self.cache.write_ended(self.commits, committed=False)
                self._run_rollback_hooks()
                self.rollback_hooks.clear()
                self._writer_lock.release()
            return
        committed = False
        try:
            self._commit()
            committed = True
        finally:
            self.cache.write_ended(self.commits, committed)
            if self.rollback_hooks:
                self.rollback_hooks.clear()
            self._writer_lock.release()
        if state.view is not None:
            self._release_view(state)  # the operation's next read sees this write

    def _commit(self) -> None:
        try:
            ts = self.oplog.flush(self.writer, self.clock)
        except BaseException:
            self._rollback_failed_commit()
            raise
        self.commit_seq += 1  # odd until the counters describe this commit
        try:
            draft = self.draft
            if draft is None:
                try:
                    self.writer.execute("COMMIT")
                except BaseException:
                    self._rollback_failed_commit()
                    raise
            else:
                self._commit_draft(draft)
            # commits before cluster_time: a reader that sees the new cluster time must not reuse a
            # snapshot stamped with the old count (it would lack this commit, and a change stream
            # would report a high-water mark past an entry it never read).
            self.commits += 1
            if ts is not None:
                self.cluster_time = ts
        finally:
            self.commit_seq += 1
        if self.checkpointer is not None:
            self.checkpointer.committed()
        self.transactions.committed(self.commits)
        if self._idle_in_txn:
            self._end_stale_snapshots()
        if ts is not None and self.watchers:
            with self.new_entries:
                self.new_entries.notify_all()

    def wait_for_entries(self, after: Timestamp, timeout: float) -> None:
        """Until the cluster time passes ``after`` (a commit recorded something) or ``timeout`` seconds."""
        lane.leave()
        with self.new_entries:
            self.watchers += 1
            try:
                if (self.cluster_time.time, self.cluster_time.inc) <= (after.time, after.inc):
                    self.new_entries.wait(timeout)
            finally:
                self.watchers -= 1

    def _commit_draft(self, draft: CatalogDraft) -> None:
        """The COMMIT of a write that changed the catalog: the draft is published with it."""
        self.ddl_seq += 1
        try:
            self.writer.execute("COMMIT")
        except BaseException:
            self.draft = None
            self._rollback_failed_commit()
            self.ddl_seq += 1
            raise
        self.published = draft.finish()
        self.draft = None
        self.ddl_seq += 1

    def _run_rollback_hooks(self) -> None:
        for hook in self.rollback_hooks.values():
            hook()

    def _rollback_failed_commit(self) -> None:
        self._run_rollback_hooks()
        self.transactions.rolled_back()
        self.oplog.rolled_back()
        self.clock.rolled_back()
        if self.writer.in_transaction:
            self.writer.execute("ROLLBACK")

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested unit inside :meth:`write` that can fail on its own. Catalog
        changes do not happen inside one (a draft cannot roll back partway).
        In a transaction, the overlay's own writes are each all or nothing."""
        if self.transaction() is not None:
            yield
            return
        self.writer.execute("SAVEPOINT unit")
        try:
            yield
        except BaseException:
            self.writer.execute("ROLLBACK TO unit")
            self.writer.execute("RELEASE unit")
            self._run_rollback_hooks()
            raise
        self.writer.execute("RELEASE unit")

    @property
    def in_write(self) -> bool:
        return self._states.state.writing > 0

    # -- sizes, durability, closing ------------------------------------------------

    def table_bytes(self, table: str) -> int | None:
        """Bytes of the pages holding ``table`` and its SQLite indexes (the ``dbstat``
        virtual table); None where this SQLite lacks it."""
        try:
            row = (
                self.reader()
                .execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = ?)",
                    (table,),
                )
                .fetchone()
            )
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

    def fsync_lock(self) -> int:
        """fsyncLock: hold the writer (other writes wait; reads go on) until as many
        :meth:`fsync_unlock` calls; the first lock checkpoints and syncs the log. The new count."""
        with self._fsync_mutex:
            if not self.fsync_locks:
                self._writer_lock.acquire()  # a wait maxTimeMS and killOp end
                try:
                    if not self.read_only:
                        self.writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.sync()
                except BaseException:
                    self._writer_lock.release()
                    raise
            self.fsync_locks += 1
            return self.fsync_locks

    def fsync_unlock(self) -> int | None:
        """Undo one :meth:`fsync_lock` (the last one lets writes go on); the count left, None when
        not locked."""
        with self._fsync_mutex:
            if not self.fsync_locks:
                return None
            self.fsync_locks -= 1
            if not self.fsync_locks:
                self._writer_lock.release()
            return self.fsync_locks

    def release_fsync_locks(self) -> None:
        """Let writes go on whatever fsyncLock holds (closing, as mongod at shutdown)."""
        with self._fsync_mutex:
            if self.fsync_locks:
                self.fsync_locks = 0
                self._writer_lock.release()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.release_fsync_locks()  # else the writer lock below, and threads waiting for it, never come
        if self.forked:
            if self.lock:
                self.lock.release(forked=True)
            return
        if self.checkpointer is not None:
            self._stop_checkpointer()  # before the writer lock: a catch-up checkpoint may be waiting for it
        self._writer_lock.acquire()
        try:
            if self._wal_fd is not None:
                os.close(self._wal_fd)
                self._wal_fd = None
            while self._idle:
                self._idle.pop().conn.close()
            self.writer.close()
            if self.lock:
                self.lock.release()
            if self._cleanup is not None:
                self._cleanup()
        finally:
            self._writer_lock.release()


def _memory_file() -> str:
    """A new private file for a ``:memory:`` database, after removing those of dead processes."""
    directory = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if name.startswith(_MEMORY_PREFIX) and name.endswith(".sqlite"):
                pid = name[len(_MEMORY_PREFIX) :].split("-", 1)[0]
                if pid.isdigit() and not _alive(int(pid)):
                    _remove_files(os.path.join(directory, name))
    return os.path.join(directory, f"{_MEMORY_PREFIX}{os.getpid()}-{uuid.uuid4().hex}.sqlite")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_files(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + suffix)
