"""What every in-memory search index shares: following its collection's change log.

A :class:`Follower` describes the collection as of ``watermark``, the newest change-log
``seq`` it has applied (see :mod:`foliodb.engine.search.catalog`). Subclasses say what a
change does (:meth:`apply`: the document ``rid`` is now ``data``, None when deleted).

* **Catching up** (:meth:`catch_up`): a reader whose snapshot's newest ``seq`` is past the
  watermark applies the log entries in between, reading the changed documents in its own
  snapshot, before it searches; so a search sees every write that committed before its
  snapshot, exactly as a find does. The reading and :meth:`prepare` (a text index's analysis)
  happen before the lock is taken; under it only what is still past the watermark is applied.
* **Older readers**: ``history`` remembers which record ids each applied ``seq`` changed
  (the last :data:`HISTORY` entries); a reader whose snapshot is older than the watermark
  searches without those records and scores its own versions of them
  (:meth:`changed_since`); a reader older than the history scans its snapshot instead.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

# (seq, rid) pairs kept for readers older than the watermark.
HISTORY = 100_000
# Documents the background thread applies between two offers of the interpreter to other threads.
PAUSE_EVERY = 8


def let_others_run() -> None:
    """Release the interpreter lock for a moment. A thread that gave it up for I/O (a writer in
    SQLite) waits, when it returns, until the holder offers it or the switch interval (5 ms)
    forces it: the background thread applying documents would otherwise cost a writer up to
    5 ms per statement. Measured at 20,000 x 384 on the clustered set, inserts into an
    indexed collection went from 1.07-1.55x to 0.81-1.18x the wall time of inserts without
    the index (six interleaved rounds, load average 18-20)."""
    time.sleep(0)


class Follower:
    def __init__(self, index_id: int, version: int) -> None:
        self.index_id = index_id
        self.version = version
        self.watermark = 0
        self.history: collections.deque[tuple[int, int]] = collections.deque(maxlen=HISTORY)
        self.history_floor = 0  # the history holds every change after this seq
        self.changes = 0  # applied since the last save
        self.saved = 0  # the watermark of the saved files (0: none)
        self.save_after = 0.0  # time.monotonic() before which the next save waits
        self.ready = False  # the initial build is done
        self.loaded = False  # restored from saved files (not built by a scan)
        self.lock = threading.RLock()

    def apply(self, rid: int, data: bytes | None) -> None:
        raise NotImplementedError

    def prepare(self, rows: Mapping[int, bytes]) -> Mapping[int, Any]:
        """What :meth:`apply_prepared` needs of each changed document, worked out before the
        lock is taken, so searches go on meanwhile (by default: the documents themselves)."""
        return rows

    def apply_prepared(self, rid: int, prepared: Any) -> None:
        """:meth:`apply` of what :meth:`prepare` gave for the document (None: deleted)."""
        self.apply(rid, prepared)

    def changed(self) -> None:
        """The index moved on (caches of what it answered go)."""

    def catch_up(
        self,
        entries: list[tuple[int, int]],
        prepared: Mapping[int, Any],
        newest: int,
        pause: Callable[[], object] | None = None,
    ) -> None:
        """Apply log ``entries`` ((seq, rid), in order), ``prepared`` being :meth:`prepare` of the
        changed documents as the snapshot holding ``newest`` has them; ``pause`` (the background
        thread's :func:`let_others_run`) is called every :data:`PAUSE_EVERY` documents. Entries
        at or below the watermark are skipped: another reader may have caught up since they
        were read (its versions of those documents are this snapshot's, unless changed again
        after, and then a later entry is here)."""
        entries = [entry for entry in entries if entry[0] > self.watermark]
        for n, rid in enumerate(dict.fromkeys(rid for _, rid in entries), 1):
            self.apply_prepared(rid, prepared.get(rid))
            if pause is not None and not n % PAUSE_EVERY:
                pause()
        self.history.extend(entries)
        if len(self.history) == HISTORY:
            self.history_floor = max(self.history_floor, self.history[0][0])
        if entries or newest > self.watermark:
            self.changed()
        self.watermark = max(self.watermark, newest)

    def changed_since(self, seq: int) -> set[int] | None:
        """The record ids changed after ``seq`` (up to the watermark); None when the history no
        longer reaches back that far."""
        if seq >= self.watermark:
            return set()
        if seq < self.history_floor:
            return None
        return {rid for s, rid in self.history if s > seq}

    def mark_saved(self, watermark: int, changes: int) -> None:
        """Files describing the index at ``watermark`` are written (``changes``: those applied
        before the copy they were written from was taken)."""
        with self.lock:
            self.saved = watermark
            self.changes -= changes


def write_atomically(path: str, write: Callable[..., object]) -> None:
    """Write a file whole or not at all: a temporary file, synced, renamed over ``path``."""
    with open(path + ".tmp", "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
