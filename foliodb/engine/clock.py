"""Cluster time: a BSON Timestamp for every commit, strictly increasing, across restarts too.

A cluster time is (seconds, increment), as a replica set's optime: the wall
clock's seconds, and a counter within the second. Each commit of the writer
takes the next ones, one per entry it records, in one call (:meth:`ClusterClock.tick`,
inside its SQLite transaction).
The seconds part is persisted (``catalog_meta.cluster_time_seconds``) in the
same transaction whenever it moves, so after a restart the clock starts in a
later second than any time it gave out: strictly increasing even if the
process restarts within the second, or the wall clock steps back.
"""

from __future__ import annotations

import sqlite3
import time

from bson import Timestamp

_KEY = "cluster_time_seconds"


class ClusterClock:
    def __init__(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT value FROM catalog_meta WHERE key = ?", (_KEY,)).fetchone()
        self._persisted = int(row[0]) if row else 0  # every time given out has seconds <= this
        self._unconfirmed = self._persisted
        # The newest cluster time as plain ints (a commit's hot path builds no Timestamp); (s, 0): none given
        # out since opening.
        self.seconds = max(int(time.time()), self._persisted + 1 if row else 0)
        self.inc = 0

    @property
    def last(self) -> Timestamp:
        return Timestamp(self.seconds, self.inc)

    def tick(self, conn: sqlite3.Connection, count: int = 1) -> tuple[int, int]:
        """The first of the next ``count`` cluster times (seconds, increment; the rest follow it in
        increments of the same second), inside the writer's transaction (which it may write to)."""
        now = int(time.time())
        if now > self.seconds:
            seconds, inc = now, 1
        else:
            seconds, inc = self.seconds, self.inc + 1
        if seconds > self._persisted:
            conn.execute("INSERT OR REPLACE INTO catalog_meta (key, value) VALUES (?, ?)", (_KEY, seconds))
            self._unconfirmed, self._persisted = self._persisted, seconds
        self.seconds, self.inc = seconds, inc + count - 1
        return seconds, inc

    def rolled_back(self) -> None:
        """The commit that ticked failed: its persisted seconds did not land."""
        self._persisted = self._unconfirmed
