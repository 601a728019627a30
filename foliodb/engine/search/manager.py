"""The search indexes of one engine at run time: states, builds, saving.

:class:`SearchIndexes` keeps a derived state (for a ``vectorSearch`` index a
:class:`~foliodb.engine.search.state.VectorState`, for a ``search`` index a
:class:`~foliodb.engine.search.text.index.TextState`; :data:`DERIVED` names the class per
index type) per (index, definition version), and a background thread that

* **builds** a state that has none: loads its saved files (then the next
  search replays the change log from their watermark), or, with no usable
  files, scans the collection in chunks of :data:`BUILD_CHUNK` documents, each
  in a fresh snapshot, then applies the log written since the scan began (a
  chunk may have read a document before or after a concurrent change: the
  log replays every change made after the scan's first snapshot, so the result
  is exact). The build is an operation in ``currentOp`` (``progress``), stops
  at ``killOp`` (the index is then ``FAILED`` until its definition changes or
  the engine restarts), and never holds the writer: reads and writes go on;
* **absorbs** pending rows into the HNSW graphs and small full-text segments into larger
  ones, in small batches on one thread (usearch's own threads unused), and after each
  round of work waits as long as the round took: the absorbing takes at most half of one
  core (a :data:`BACKGROUND_SHARE`), so writes and searches beside it keep the rest; and
  applying documents (a build's chunks, a catch-up) it offers the interpreter to other
  threads every few documents (:func:`~foliodb.engine.search.follow.let_others_run`);
* **saves** a state after :data:`SAVE_AFTER` applied changes, or a quarter of its
  size if more (saving rewrites every file: the log replays the changes since), but not
  sooner after the last save than :data:`SAVE_SPACING` times that save's duration (so
  saving a large state takes at most a tenth of the time), and every state when the
  engine closes; then trims the change log to what every saved state has applied.

Until its build is done an index is ``BUILDING``: a ``$vectorSearch`` on it
then scans its snapshot exactly, a ``$search`` indexes its snapshot on the spot (slow,
never wrong). A state whose version no
longer matches the catalog is dropped with its files.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from foliodb import interrupt
from foliodb.engine.catalog import CollectionInfo
from foliodb.engine.search import state as state_files
from foliodb.engine.search.catalog import SearchIndexInfo, log_table, trim_log
from foliodb.engine.search.follow import PAUSE_EVERY, let_others_run
from foliodb.engine.search.numeric import available
from foliodb.engine.search.state import VectorState
from foliodb.engine.search.text import index as text_index
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.engine.engine import Engine

log = logging.getLogger("foliodb.search")

# The in-memory state of each index type that has one, with its module's load(directory, id,
# version, definition) for saved files. A state applies documents by record id (apply), log
# entries (catch_up), and saves itself whole (save); see state.py.
DERIVED: dict[str, Any] = {
    "vectorSearch": (VectorState, state_files.load),
    "search": (text_index.TextState, text_index.load),
}
State = VectorState | text_index.TextState
SEARCH_DIR = "foliodb.search"
BUILD_CHUNK = 1000
SAVE_AFTER = 10_000  # changes applied to a state before it is saved again
SAVE_SPACING = 10  # a save waits this many times the last save's duration after it
BACKGROUND_SHARE = 0.5  # of the wall time, at most, the background thread works
TICK_SECONDS = 0.05


def newest_seq(conn: Any, collection_id: int) -> int:
    """The newest change-log seq the connection's snapshot holds (0: none yet)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (log_table(collection_id),)).fetchone()
    return int(row[0]) if row is not None else 0


def read_changes(conn: Any, info: CollectionInfo, after: int) -> tuple[list[tuple[int, int]], dict[int, bytes]]:
    """The log entries past ``after`` and the documents they name, as the snapshot holds them."""
    entries = conn.execute(f"SELECT seq, rid FROM {log_table(info.id)} WHERE seq > ? ORDER BY seq", (after,)).fetchall()
    rids = list(dict.fromkeys(rid for _, rid in entries))
    rows: dict[int, bytes] = {}
    for i in range(0, len(rids), 500):
        chunk = rids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        rows.update(conn.execute(f"SELECT rid, doc FROM {info.table} WHERE rid IN ({marks})", chunk).fetchall())
    return entries, rows


def log_reaches(conn: Any, info: CollectionInfo, watermark: int) -> bool:
    """Does the log still hold every entry after ``watermark`` (seqs are contiguous)?"""
    row = conn.execute(f"SELECT min(seq) FROM {log_table(info.id)}").fetchone()
    return row[0] is None or int(row[0]) <= watermark + 1 or newest_seq(conn, info.id) <= watermark


class SearchIndexes:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.directory = None if engine.path == ":memory:" else os.path.join(engine.path, SEARCH_DIR)
        self.states: dict[tuple[int, int], State] = {}
        self.failed: dict[tuple[int, int], str] = {}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._swept = False  # stale saved files removed once after opening
        # $indexStats-style usage per index id: [searches since, when counting began].
        self.usage: dict[int, list[Any]] = {}

    # -- what queries and commands ask -----------------------------------------------------

    def start(self) -> None:
        if self._thread is None and available() and not self.engine.read_only:
            self._thread = threading.Thread(target=self._run, name="foliodb-search", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        self.start()
        self._wake.set()

    def ready_state(self, index: SearchIndexInfo) -> State | None:
        state = self.states.get((index.id, index.version))
        return state if state is not None and state.ready else None

    def used(self, index: SearchIndexInfo) -> None:
        """A search ran on the index (``accesses.ops`` in $listSearchIndexes)."""
        entry = self.usage.setdefault(index.id, [0, datetime.datetime.now(datetime.UTC).replace(tzinfo=None)])
        entry[0] += 1

    def indexed(self, index: SearchIndexInfo) -> int | None:
        """How many documents a ready index holds (None: not built)."""
        state = self.ready_state(index)
        if state is None:
            return None
        with state.lock:
            return len(state)

    def status(self, index: SearchIndexInfo) -> str:
        key = (index.id, index.version)
        if key in self.failed or not available():  # a build failed, or the search extra is missing
            return "FAILED"
        return "READY" if self.ready_state(index) is not None else "BUILDING"

    def forget(self, index: SearchIndexInfo) -> None:
        """An index was dropped (or redefined): its states and files go."""
        with self.lock:
            self.usage.pop(index.id, None)
            for key in [k for k in self.states if k[0] == index.id]:
                del self.states[key]
            for key in [k for k in self.failed if k[0] == index.id]:
                del self.failed[key]
        if self.directory is not None:
            state_files.remove_files(self.directory, index.id)

    def close(self) -> None:
        """Stop the thread and save what changed (the engine is closing)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.directory is None:
            return
        for state in list(self.states.values()):
            if state.ready and state.watermark != state.saved:
                with state.lock:
                    saved = state.copy()
                with contextlib.suppress(OSError):
                    saved.write(self.directory)

    # -- the background thread ------------------------------------------------------------

    def _run(self) -> None:
        storage = self.engine.storage
        while not self._stop.is_set():
            self._wake.wait(TICK_SECONDS * 20)
            self._wake.clear()
            while not self._stop.is_set() and not storage.closed and not storage.forked:
                started = time.monotonic()
                try:
                    busy = self._tick()
                except CommandError as exc:
                    log.debug("search tick: %s", exc)
                    busy = False
                except Exception:  # a background thread must outlive any one failure
                    log.exception("search indexes: background work failed")
                    busy = False
                if not busy:
                    break
                # Bounded: rest in proportion to the work done (BACKGROUND_SHARE); a round that
                # built a whole index rests no longer than a second.
                worked = time.monotonic() - started
                self._stop.wait(min(1.0, worked * (1 - BACKGROUND_SHARE) / BACKGROUND_SHARE))

    def _indexes(self, every_type: bool = False) -> list[tuple[CollectionInfo, SearchIndexInfo]]:
        storage = self.engine.storage
        storage.begin_operation()
        try:
            catalog = storage.catalog()
        finally:
            storage.end_operation()
        return [
            (info, index)
            for info in catalog.collections.values()
            for index in info.search_indexes.values()
            if every_type or index.type in DERIVED
        ]

    def _tick(self) -> bool:
        """One round of background work; whether more is waiting."""
        indexes = self._indexes()
        live = {(index.id, index.version) for _, index in indexes}
        with self.lock:
            gone = [k for k in self.states if k not in live]
            for key in gone:
                del self.states[key]
        if self.directory is not None and (gone or not self._swept):
            # Files of indexes dropped since (with their collection, or redefined).
            ids = {index.id for _, index in self._indexes(every_type=True)}
            state_files.remove_other_files(self.directory, lambda saved: saved not in ids)
            self._swept = True
        busy = False
        for info, index in indexes:
            if self._stop.is_set():
                return False
            key = (index.id, index.version)
            if key in self.failed:
                continue
            state = self.states.get(key)
            if state is None:
                self._build(info, index)
                return True
            self.catch_up(info, state)
            busy = state.absorb() > 0 or busy  # it takes the state's lock as it needs
            due = state.changes >= max(SAVE_AFTER, len(state) // 4)
            if due and self.directory is not None and time.monotonic() >= state.save_after:
                self._save(info, state)
        return busy

    def catch_up(self, info: CollectionInfo, state: State) -> None:
        """Bring a ready state up to the newest commit (between searches, so they find less to do)."""
        storage = self.engine.storage
        storage.begin_operation()
        try:
            conn = storage.reader()
            if storage.catalog().by_id.get(info.id) is None:
                return
            newest = newest_seq(conn, info.id)
            if newest > state.watermark:
                entries, changed = read_changes(conn, info, state.watermark)
                prepared = state.prepare(changed)  # before the lock: searches go on meanwhile
                with state.lock:
                    state.catch_up(entries, prepared, newest, let_others_run)
        finally:
            storage.end_operation()

    def _save(self, info: CollectionInfo, state: State) -> None:
        assert self.directory is not None
        started = time.monotonic()
        with state.lock:
            saved = state.copy()
        saved.write(self.directory)  # outside the lock: searches go on meanwhile
        state.save_after = time.monotonic() + SAVE_SPACING * (time.monotonic() - started)
        siblings = [
            self.states.get((index.id, index.version))
            for index in info.search_indexes.values()
            if index.type in DERIVED
        ]
        floor = min((s.saved if s is not None else 0) for s in siblings)
        if floor > 0:
            storage = self.engine.storage
            storage.begin_operation()
            try:
                with storage.write() as conn:
                    if storage.catalog().by_id.get(info.id) is not None:
                        trim_log(conn, info.id, floor)
            finally:
                storage.end_operation()

    def _build(self, info: CollectionInfo, index: SearchIndexInfo) -> None:
        make, load = DERIVED[index.type]
        key = (index.id, index.version)
        engine = self.engine
        storage = engine.storage
        loaded = None
        if self.directory is not None:
            loaded = load(self.directory, index.id, index.version, index.parsed)
        if loaded is not None:
            storage.begin_operation()
            try:
                usable = log_reaches(storage.reader(), info, loaded.watermark)
            finally:
                storage.end_operation()
            if usable:
                with self.lock:
                    self.states[key] = loaded
                return
        op = interrupt.Operation(
            next(engine.opids), info.db, {"createSearchIndexes": info.name, "indexes": [{"name": index.name}]}
        )
        engine.operations[op.opid] = op
        previous = interrupt.bind(op)
        try:
            state = self._scan(info, make(index.id, index.version, index.parsed), op)
        except CommandError as exc:
            with self.lock:
                self.failed[key] = exc.errmsg
            return
        finally:
            interrupt.bind(previous)
            engine.operations.pop(op.opid, None)
        if key not in {(i.id, i.version) for _, i in self._indexes()}:
            return  # dropped or redefined while it was being built
        with self.lock:
            self.states[key] = state
        if self.directory is not None:
            self._save(info, state)

    def _scan(self, info: CollectionInfo, state: State, op: Any) -> State:
        storage = self.engine.storage
        storage.begin_operation()
        try:
            conn = storage.reader()
            start = newest_seq(conn, info.id)
            total = int(conn.execute(f"SELECT count(*) FROM {info.table}").fetchone()[0])
        finally:
            storage.end_operation()
        op.progress = (0, total)
        done, last = 0, 0
        while True:
            interrupt.check()
            if self._stop.is_set():
                raise CommandError(ErrorCode.InterruptedAtShutdown, "interrupted at shutdown")
            storage.begin_operation()
            try:
                if storage.catalog().by_id.get(info.id) is None:
                    raise CommandError(276, "Index build aborted: the collection was dropped")
                rows = (
                    storage.reader()
                    .execute(
                        f"SELECT rid, doc FROM {info.table} WHERE rid > ? ORDER BY rid LIMIT ?", (last, BUILD_CHUNK)
                    )
                    .fetchall()
                )
            finally:
                storage.end_operation()
            with state.lock:
                for n, (rid, data) in enumerate(rows, 1):
                    state.apply(rid, data)
                    if not n % PAUSE_EVERY:
                        let_others_run()
            done += len(rows)
            op.progress = (done, max(total, done))
            if len(rows) < BUILD_CHUNK:
                break
            last = rows[-1][0]
        state.watermark = start
        storage.begin_operation()
        try:
            conn = storage.reader()
            entries, changed = read_changes(conn, info, start)
            prepared = state.prepare(changed)
            with state.lock:
                state.catch_up(entries, prepared, newest_seq(conn, info.id), let_others_run)
        finally:
            storage.end_operation()
        state.history_floor = state.watermark
        state.ready = True
        return state

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Until every search index is built, caught up with the newest commit, its graphs
        have absorbed all its rows and its full-text segments are merged (tests and benchmarks
        measure the index this way); False at the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.wake()
            idle = True
            for info, index in self._indexes():
                key = (index.id, index.version)
                state = self.states.get(key)
                if key in self.failed:
                    continue
                if state is None or not state.ready:
                    idle = False
                    continue
                self.catch_up(info, state)
                idle = idle and not state.pending()
            if idle:
                return True
            time.sleep(TICK_SECONDS)
        return False
