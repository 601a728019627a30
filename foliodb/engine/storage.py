"""The SQLite storage under a dbpath: one writer, a pool of snapshot readers.

The dbpath's files and lock: :mod:`foliodb.engine.dbpath`.

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

The read half (operations, views, the reader pool, pinned snapshots) is
:class:`~foliodb.engine.snapshot_reads.SnapshotReads`; the writer lock,
:class:`~foliodb.engine.writer_lock.WriterLock`.

After ``fork()`` the child refuses to use the parent's storage (SQLite
connections must not cross a fork) and never touches its connections or its
lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator

from bson import Timestamp

from foliodb import lane
from foliodb.engine.cache import DocumentCache
from foliodb.engine.catalog import Catalog, CatalogDraft
from foliodb.engine.checkpoint import Checkpointer
from foliodb.engine.clock import ClusterClock
from foliodb.engine.dbpath import DATA_FILE, DBPathLock, memory_file, read_only_uri, remove_files
from foliodb.engine.oplog import Oplog
from foliodb.engine.snapshot_reads import Reader, SnapshotReads, ThreadStates
from foliodb.engine.transactions import TransactionTable
from foliodb.engine.writer_lock import WriterLock
from foliodb.errors import CommandError, ErrorCode


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


class Storage(SnapshotReads):
    """The SQLite file of a dbpath: its writer, its readers, its catalog versions."""

    def __init__(self, path: str, read_only: bool = False) -> None:
        self.memory = path == ":memory:"
        # Read-only: SQLite opens the file mode=ro (immutable on media where even that cannot
        # lock), no dbpath lock is taken (nothing here writes), and every write is refused.
        self.read_only = read_only and not self.memory
        self.lock: DBPathLock | None = None
        self._uri: str | None = None
        if self.memory:
            self.file = memory_file()
        else:
            self.file = os.path.join(path, DATA_FILE)
            if self.read_only:
                if not os.path.isfile(self.file):
                    raise CommandError(ErrorCode.IllegalOperation, f"no FolioDB database at {path} to open read-only")
                self._uri = read_only_uri(self.file)
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
        self.oplog = Oplog(self.writer, not self.read_only)
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
        self._cleanup = weakref.finalize(self, remove_files, self.file) if self.memory else None
        self._writer_lock = WriterLock()
        # fsyncLock holds the writer lock across commands: how many locks are held, and what
        # orders the fsync commands among themselves.
        self.fsync_locks = 0
        self._fsync_mutex = threading.Lock()
        self._writer_view = Reader(self.writer)  # its catalog: the published one, or the draft being changed
        self._states = ThreadStates()
        self._idle: list[Reader] = []
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

    def catalog_draft(self) -> CatalogDraft:
        """The catalog the current write transaction changes (created on first use)."""
        assert self._states.state.writing, "catalog changes happen inside Storage.write()"
        if self.draft is None:
            self.draft = CatalogDraft(self.published, self.writer)
            self._writer_view.catalog = self.draft.catalog
        return self.draft

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
        self.cache.committing = True  # until write_ended: readers can no longer tell whether they see it
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
