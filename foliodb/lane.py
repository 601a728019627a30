"""The lane: server connections take turns running short commands.

CPython runs one thread's Python at a time (the interpreter lock). A command
lets go of that lock at each SQLite and socket call, and whenever another
thread is waiting for it, the lock changes hands: a context switch. With many
connections busy at once those switches cost more than the commands do (16
clients reading by ``_id``: 25 switches per ``find``, a third of the
throughput of one connection at a time). So a connection thread runs each
command in the lane, one thread at a time: the others wait on the lane's own
lock, asleep, and the one running has the interpreter to itself.

Invariants:

* nothing waits in the lane: code about to block (the writer lock, awaitData,
  a transaction's end, a sleep, a slow regular expression match) calls
  :func:`leave` first, and a command
  that has been in the lane for :data:`SLICE_SECONDS` leaves it at its next
  interrupt check (:mod:`foliodb.interrupt`), every few milliseconds of any
  long loop. A long command then runs beside the lane, as every command did
  without it, and a point read never waits long behind it;
* a holder that blocks where no one thought to leave (a long SQLite
  statement) delays the others by :data:`HOLDER_SECONDS` at most, never
  stops them: they run beside the lane; and no thread waits more than
  :data:`WAIT_SECONDS` for its turn, however long the line;
* leaving is idempotent, and a thread holds at most one turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SLICE_SECONDS = 0.002  # a command's time in the lane before its next check sends it out
# A turn this long means its holder blocks: the others stop waiting for it. Not less: with more
# runnable processes than cores the system preempts holders for milliseconds, and running beside
# a preempted holder only brings back the contention the lane exists to avoid.
HOLDER_SECONDS = 0.02
WAIT_SECONDS = 0.5  # the longest wait for a turn, however long the line


class _Turn(threading.local):
    lane: Lane | None = None  # the lane this thread holds a turn in
    until = 0.0  # time.monotonic() when this turn's slice ends
    # What this thread does before it waits or runs long, besides leaving the lane: the server
    # loop's leader hands the loop to another thread (foliodb/server/loop.py). Called once.
    on_wait: Callable[[], None] | None = None


_turn = _Turn()


class Lane:
    """One lane (a server's): a lock, and when its holder took it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since = 0.0  # time.monotonic() when the holder took it

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Run the block in the lane (or beside it: see :meth:`_enter`); out of it at the end."""
        if _turn.lane is not None or not self._enter():
            yield  # already in a lane, or beside it
            return
        now = time.monotonic()
        self._since = now
        _turn.lane = self
        _turn.until = now + SLICE_SECONDS
        try:
            yield
        finally:
            if _turn.lane is self:  # not left early
                _turn.lane = None
                self._lock.release()

    def _enter(self) -> bool:
        """Take the lane; False (run beside it) once its holder has kept it for
        HOLDER_SECONDS (it blocks where it did not leave), or after WAIT_SECONDS
        of waiting (a long line: no one starves); at once when this thread has
        something others wait for it to give up (``on_wait``)."""
        lock = self._lock
        if lock.acquire(blocking=False):
            return True
        if _waiting():
            # A server loop's leader hands the loop on and runs beside: waiting for its turn, it
            # would hold the lane once it had it, and the next leader would then wait for it.
            return False
        started = now = time.monotonic()
        while True:
            held = now - self._since  # by the holder now: holders change while the line moves
            if held >= HOLDER_SECONDS or now - started >= WAIT_SECONDS:
                return False
            if lock.acquire(timeout=HOLDER_SECONDS - held):
                return True
            now = time.monotonic()


def in_lane() -> bool:
    """Does this thread hold a turn?"""
    return _turn.lane is not None


def on_wait(callback: Callable[[], None] | None) -> None:
    """What this thread does at its next :func:`leave` or wait for a turn (None: nothing)."""
    _turn.on_wait = callback


def _waiting() -> bool:
    """Run this thread's ``on_wait``; was there one?"""
    callback = _turn.on_wait
    if callback is None:
        return False
    _turn.on_wait = None
    callback()
    return True


def leave() -> None:
    """Out of the lane, if this thread is in it, and out of whatever else others wait
    for it to give up (``on_wait``): before a wait, or when the slice is over."""
    held = _turn.lane
    if held is not None:
        _turn.lane = None
        held._lock.release()
    _waiting()


def leave_if_overdue() -> None:
    """Out of the lane once this thread's slice is over (called by interrupt checks)."""
    if _turn.lane is not None and time.monotonic() > _turn.until:
        leave()
