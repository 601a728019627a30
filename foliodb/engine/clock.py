"""Cluster time: a BSON Timestamp for every commit, strictly increasing, across restarts too.

A cluster time is (seconds, increment), as a replica set's optime: the wall
clock's seconds, and a counter within the second. Each commit of the writer
takes the next one (:meth:`ClusterClock.tick`, inside its SQLite transaction).
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
        start = max(int(time.time()), self._persisted + 1 if row else 0)
        self.last = Timestamp(start, 0)  # the newest cluster time (0: none given out since opening)

    def tick(self, conn: sqlite3.Connection) -> Timestamp:
        """The next cluster time, inside the writer's transaction (which it may write to)."""
        now = int(time.time())
        last = self.last
        ts = Timestamp(now, 1) if now > last.time else Timestamp(last.time, last.inc + 1)
        if ts.time > self._persisted:
            conn.execute("INSERT OR REPLACE INTO catalog_meta (key, value) VALUES (?, ?)", (_KEY, ts.time))
            self._unconfirmed, self._persisted = self._persisted, ts.time
        self.last = ts
        return ts

    def rolled_back(self) -> None:
        """The commit that ticked failed: its persisted seconds did not land."""
        self._persisted = self._unconfirmed
