"""The storage's writer lock: one writer at a time, handed over in arrival order.

Every write transaction (:meth:`foliodb.engine.storage.Storage.write`), the
checkpointer's catch-up checkpoints and fsyncLock hold it. A wait for it ends
at the waiting operation's deadline (maxTimeMS) or killOp, and shows in
currentOp (``waitingForLock``).
"""

from __future__ import annotations

import collections
import threading
import time

from foliodb import interrupt, lane


class WriterLock:
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
