"""Checkpoints of the write-ahead log, run beside the writer instead of inside its commits.

SQLite's automatic checkpoint runs inside the commit that takes the log past
1,000 frames. That commit copies the frames into the database file and, at
``synchronous=NORMAL``, fsyncs the log before and the file after: a few
milliseconds, paid by one write in a few hundred. Measured on a VM disk with
three frames a write (record, index entry, oplog entry), that was 59% of all
commit time, about 10 µs a write on average.

Here the writer's automatic checkpoint is off and :class:`Checkpointer`, a
thread with its own connection, runs ``PASSIVE`` checkpoints once the writes
since the last one changed :data:`ROWS_PER_CHECKPOINT` rows (about as often as
SQLite's 1,000 frames). A passive checkpoint waits for no one: writers go on
appending and readers go on reading while it copies.

SQLite starts the log over from its beginning (so it stops growing) at the
first write after a checkpoint that copied every frame. Under steady writes a
passive checkpoint never copies the newest frames, so once the log holds
:data:`CATCH_UP_FRAMES` frames the checkpointer runs one checkpoint holding the
writer lock, which copies what is left; a reader's old snapshot can still keep
frames from being copied, as it does with SQLite's own checkpoints. While one
does, the log cannot start over, however long the lock is held: a catch-up
that left frames behind is not tried again until the log has grown by
another :data:`CATCH_UP_FRAMES` (or started over). Readers running back to
back (each find's snapshot older than the log's end) otherwise made every
checkpoint a catch-up: every few hundred writes, every writer stopped for a
copy and its fsyncs (8 writers beside 2 scanning readers: 48 checkpoints in
4 s, up to 100 ms each).

Durability is unchanged: a commit is in the log before the write is
acknowledged, whoever copies it into the file later, and the checkpointer's
connection fsyncs as the writer's would (``synchronous`` is the same).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("foliodb")

# Rows changed by commits since the last checkpoint that start the next one. A
# single-document write changes three (record, _id entry, oplog entry) and
# writes about three log frames: this is about SQLite's default of 1,000 frames.
ROWS_PER_CHECKPOINT = 1000
# Frames in the log past which a checkpoint runs under the writer lock, so the
# log can start over (64 MiB of 4 KiB pages). That checkpoint's fsyncs make the
# next write wait a few milliseconds: once in about 5,000 single-document writes.
CATCH_UP_FRAMES = 16384
# How long the thread sleeps when nothing asks for a checkpoint: an idle
# database's last writes reach the file within this time.
IDLE_SECONDS = 1.0
# How long stopping waits for a checkpoint under way.
STOP_SECONDS = 10.0


class Lock(Protocol):
    def acquire(self) -> None: ...
    def release(self) -> None: ...


class Checkpointer:
    """The WAL checkpoint thread of one storage; the writer reports its commits."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        writer: sqlite3.Connection,
        writer_lock: Lock,
        name: str = "foliodb-checkpoint",
    ) -> None:
        self._writer = writer
        self._writer_lock = writer_lock
        self.conn = connect()
        self._wake = threading.Event()
        self._stopping = False
        self._rows_checkpointed = writer.total_changes  # the writer's changed rows at the last request
        self._pending = False  # commits since the last checkpoint
        self.checkpoints = 0  # completed checkpoints, for tests
        self.catch_ups = 0  # checkpoints under the writer lock, for tests
        self._held_back_at = 0  # the log's frames after a catch-up that left some behind
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """The writer committed (under its lock): wake the thread once enough rows changed."""
        self._pending = True
        if self._writer.total_changes - self._rows_checkpointed >= ROWS_PER_CHECKPOINT:
            self._rows_checkpointed = self._writer.total_changes
            self._wake.set()

    def stop(self) -> None:
        """End the thread (after a checkpoint it is running) and close its connection."""
        self._stopping = True
        self._wake.set()
        if threading.current_thread() is not self._thread:
            # Bounded: at interpreter exit a catch-up may wait for a writer that never ends.
            self._thread.join(STOP_SECONDS)
            if self._thread.is_alive():
                return  # still checkpointing: its connection stays open for it
        self.conn.close()

    def _run(self) -> None:
        while True:
            asked = self._wake.wait(IDLE_SECONDS)
            if self._stopping:
                return
            if not asked and not self._pending:
                continue
            self._wake.clear()
            self._pending = False
            try:
                self._checkpoint()
            except sqlite3.Error as exc:  # a busy or failing file: the next request tries again
                log.warning("WAL checkpoint deferred: %s", exc)

    def _checkpoint(self) -> None:
        _busy, frames, _copied = self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if frames < CATCH_UP_FRAMES:
            self._held_back_at = 0  # the log started over
        elif frames >= self._held_back_at + CATCH_UP_FRAMES and not self._stopping:
            self._writer_lock.acquire()
            try:
                # No write can land meanwhile: this copies every frame no snapshot still needs,
                # and the next write starts the log over.
                _busy, frames, copied = self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            finally:
                self._writer_lock.release()
            self.catch_ups += 1
            if copied < frames:  # a snapshot holds frames back (see the module docstring)
                self._held_back_at = frames
        self.checkpoints += 1
