"""The memory budget for messages being read: bytes held for messages not yet answered,
across every connection of a server.

A connection's first :data:`FREE_BYTES` of buffered input need no budget (a
command or a ping almost always fits, so small requests never wait behind
large ones); every byte past them is taken from the budget before it is read
and given back once the message it belongs to is answered (or the connection
closes). When the budget is spent a read waits: a thread for at most its
connection's deadline (:meth:`Budget.wait`), a connection in the server's loop
out of the epoll set until bytes come back (:meth:`Budget.take_or_notify`).

Invariant: ``used`` is the sum of what the connections hold, never more than
``limit`` (the limit is at least one whole message, so any single message can
always be read to its end once the others are answered).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

FREE_BYTES = 1 << 16  # buffered input a connection holds without taking from the budget
DEFAULT_LIMIT = 256 * 1024 * 1024  # bytes; more than five 48 MB messages at once


class Budget:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.used = 0
        self._cv = threading.Condition()
        self._waiters: list[Callable[[], None]] = []  # connections in the loop waiting for bytes

    def take_or_notify(self, size: int, notify: Callable[[], None]) -> bool:
        """Take ``size`` bytes; or, when they are not free, call ``notify`` (once, on any
        thread) after bytes come back, and return False."""
        with self._cv:
            if self.used + size <= self.limit:
                self.used += size
                return True
            self._waiters.append(notify)
            return False

    def wait(self, size: int, deadline: float | None) -> bool:
        """Take ``size`` bytes, waiting for them until ``deadline`` (None: for ever); False at the deadline."""
        with self._cv:
            while self.used + size > self.limit:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cv.wait(remaining)
            self.used += size
            return True

    def give(self, size: int) -> None:
        """Give back ``size`` bytes taken; wakes the reads waiting for them."""
        if size <= 0:
            return
        with self._cv:
            self.used -= size
            self._cv.notify_all()
            waiters, self._waiters = self._waiters, []
        for notify in waiters:
            notify()
