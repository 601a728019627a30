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

:class:`FairLane`, an embedded engine's (taken by ``Executor.execute`` for
the embedded client's threads), differs in two ways. Turns are handed over in
arrival order: a thread looping over short commands would otherwise take the
lock back before a woken waiter runs. And a command past its slice hands its
turn to the next waiting thread and waits for another, instead of running
beside the lane: a server sets a 1 ms interpreter switch interval, so what
runs beside its lane gives up the interpreter often, but an application's
process keeps Python's 5 ms, and a reader running beside would make every
writer wait up to 5 ms at each of its SQLite calls (8 writers beside 2
scanning readers: a few hundred writes a second, p99 0.4 s). A command of a
fair lane that runs beside it (it waited past :data:`HOLDER_SECONDS`, or left
to wait) asks for a turn again at its first check after a slice.

What a fair lane bounds, and what it cannot. A waiting command gets its turn
behind at most four slices of long commands (the balance is bounded by four
slices; tests/unit/test_fair_lane.py counts them). Between two checks nothing
is bounded: one C call (a SQLite step, a document's decoding, freeing a list)
runs to its end, and a full pass of the cyclic garbage collector stops every
thread for a time in proportion to every object the process holds (an order
decoded is about 20 of them, its ObjectIds included). Work outside any command
(a client taking documents out of its batch, the application's own code)
holds the interpreter for switch intervals while the holder's SQLite calls
wait to get it back. So the engine keeps its own work between checks short
and makes no garbage it will throw away (a document cache build that a write
overtakes stops further builds: engine/cache.py), and what holds the writer
lock outside any turn holds it only for what it can do (a checkpoint that
readers' snapshots hold back: engine/checkpoint.py); the rest is the
application's. The engine leaves the interpreter's switch interval alone (a
server sets 1 ms): it is the whole process's, the application's to choose.
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
# A long command's lane time counts this many times a short one's (FairLane): short commands
# keep two thirds of the lane beside long ones.
LONG_WEIGHT = 2.0


class _Turn:
    """One thread's place in the lanes. A plain object behind one thread-local lookup
    (``_turns.turn``): each attribute of a ``threading.local`` costs a lookup of the thread's
    dictionary, and a command's turn reads and sets several."""

    __slots__ = ("command", "lane", "on_wait", "until")

    def __init__(self) -> None:
        self.lane: Lane | None = None  # the lane this thread holds a turn in
        self.command: FairLane | None = None  # the fair lane whose command this thread runs, in it or beside it
        self.until = 0.0  # time.monotonic() when this turn's slice ends
        # What this thread does before it waits or runs long, besides leaving the lane: the server
        # loop's leader hands the loop to another thread (foliodb/server/loop.py). Called once.
        self.on_wait: Callable[[], None] | None = None


class _Turns(threading.local):
    def __init__(self) -> None:
        self.turn = _Turn()


_turns = _Turns()


class Lane:
    """One lane (a server's): a lock, and when its holder took it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since = 0.0  # time.monotonic() when the holder took it

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Run the block in the lane (or beside it: see :meth:`_enter`); out of it at the end."""
        if not self.take_turn():
            yield  # already in a lane, or beside it
            return
        try:
            yield
        finally:
            self.end_turn()

    def take_turn(self) -> bool:
        """:meth:`turn`'s start, for a caller on every request (a server connection's): True when
        this thread took the lane, and must then call :meth:`end_turn`; False when it runs beside
        it, or holds a lane already."""
        turn = _turns.turn
        if turn.lane is not None or not self._enter():
            return False
        now = time.monotonic()
        self._since = now
        turn.lane = self
        turn.until = now + SLICE_SECONDS
        return True

    def end_turn(self) -> None:
        """:meth:`turn`'s end: out of the lane, unless this thread left it early."""
        turn = _turns.turn
        if turn.lane is self:
            turn.lane = None
            self._release()

    def _release(self) -> None:
        self._lock.release()

    def _enter(self) -> bool:
        """Take the lane; False (run beside it) once its holder has kept it for
        HOLDER_SECONDS (it blocks where it did not leave), or after WAIT_SECONDS
        of waiting (a long line: no one starves); at once when this thread has
        something others wait for it to give up (``on_wait``)."""
        lock = self._lock
        if lock.acquire(blocking=False):
            return True
        if _waiting(_turns.turn):
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


class FairLane(Lane):
    """An embedded engine's lane (see the module docstring): turns in arrival order, handed on
    after a slice, and shared between short commands and long ones: a long command (one
    past its first slice) waits while the short ones have had less of the lane lately than
    :data:`LONG_WEIGHT` times the long ones, so writers beside busy readers keep two thirds
    of the lane at least (with half, readers returning 5,000 documents each cut 8 writers to
    0.38 of their rate alone: the readers' collector passes and their work outside the lane
    take the writers' time besides). ``_waiting``
    holds each waiting thread's own lock (released to hand it the turn) and whether its
    command is long.

    The lane is held while ``_lock`` is: a free lane with no one in line is taken with one
    ``acquire`` and let go with one ``release``, the path of nearly every command. A turn
    handed to a waiting thread passes without ``_lock`` being let go. ``_mutex`` guards the
    line: a thread joins it, or a holder hands the lane on, only under it; and a thread that
    joins the line tries ``_lock`` once more after joining, so a holder that let go just
    before it joined (seeing no one in line) leaves no one waiting for a free lane."""

    def __init__(self) -> None:
        super().__init__()
        self._mutex = threading.Lock()  # guards the line and hand-overs
        self._holder_long = False
        self._waiting: list[tuple[threading.Lock, bool]] = []
        # Lane seconds of long commands less those of short ones, while both wanted it (bounded:
        # the recent past only).
        self._balance = 0.0

    def take(self) -> bool:
        """A command's turn, without a context manager (the executor's path, run for every
        command): True when the command runs in this lane, or beside it to ask again after a
        slice; then :meth:`done` ends it. False inside another turn or command (a server's
        connection holds the server's lane; a command run inside another)."""
        turn = _turns.turn
        if turn.lane is not None or turn.command is not None:
            return False
        turn.command = self
        if not self._waiting and self._lock.acquire(False):  # a free lane, no one in line
            self._holder_long = False
            self._since = now = time.monotonic()
            turn.lane = self
            turn.until = now + SLICE_SECONDS
        else:
            self._wait(turn, long=False)
        return True

    def done(self) -> None:
        """The end of a command that :meth:`take` admitted."""
        turn = _turns.turn
        turn.command = None
        if turn.lane is self:
            turn.lane = None
            self._release()

    def rejoin(self) -> None:
        """A long command running beside the lane (past its slice): wait for a turn."""
        self._wait(_turns.turn, long=True)

    def pass_turn(self) -> None:
        """The holder's slice is over: the next waiting thread's turn (see the class
        docstring), this one's later; a new slice at once when no one waits."""
        if self._waiting:
            leave()
            self._wait(_turns.turn, long=True)
        else:
            # A holder that checks is not blocked: no one who comes to wait now should run beside it.
            self._since = time.monotonic()
            _turns.turn.until = self._since + SLICE_SECONDS

    def _wait(self, turn: _Turn, long: bool) -> None:
        if self._enter_as(long):
            turn.lane = self
        turn.until = time.monotonic() + SLICE_SECONDS

    def _enter(self) -> bool:
        return self._enter_as(False)

    def _enter_as(self, long: bool) -> bool:
        with self._mutex:
            if not self._waiting and self._lock.acquire(False):
                self._holder_long = long
                self._since = time.monotonic()
                return True
            mine = threading.Lock()
            mine.acquire()
            entry = (mine, long)
            self._waiting.append(entry)
            if self._lock.acquire(False):  # let go as this thread joined the line: the first in line's
                self._hand_over()
        started = now = time.monotonic()
        while True:
            held = now - self._since
            if held >= HOLDER_SECONDS or now - started >= WAIT_SECONDS:
                with self._mutex:
                    if entry in self._waiting:  # not handed the turn meanwhile: run beside
                        self._waiting.remove(entry)
                        return False
                return True
            if mine.acquire(timeout=HOLDER_SECONDS - held):
                return True
            now = time.monotonic()

    def _release(self) -> None:
        if not self._waiting:
            self._lock.release()
            if not self._waiting:
                return
            # A thread joined the line as this one let go: the lane is the first in line's,
            # unless a newcomer took it meanwhile (and will hand it on).
            with self._mutex:
                if self._waiting and self._lock.acquire(False):
                    self._hand_over()
            return
        with self._mutex:
            if self._waiting:
                self._hand_over()
            else:  # the line gave up waiting meanwhile
                self._lock.release()

    def _hand_over(self) -> None:
        """Under ``_mutex``, the lane held and someone in line: give the turn to the next."""
        waiting = self._waiting
        now = time.monotonic()
        spent = now - self._since
        # A turn that outlasted its slice was a long command's, even as its first.
        long = self._holder_long or spent >= SLICE_SECONDS
        balance = self._balance + (spent * LONG_WEIGHT if long else -spent)
        self._balance = min(max(balance, -4 * SLICE_SECONDS), 4 * SLICE_SECONDS)
        want_long = self._balance <= 0
        chosen = next((entry for entry in waiting if entry[1] == want_long), waiting[0])
        waiting.remove(chosen)
        self._holder_long = chosen[1]
        self._since = now  # the next holder's turn starts (the lane stays held)
        chosen[0].release()


def in_lane() -> bool:
    """Does this thread hold a turn?"""
    return _turns.turn.lane is not None


def on_wait(callback: Callable[[], None] | None) -> None:
    """What this thread does at its next :func:`leave` or wait for a turn (None: nothing)."""
    _turns.turn.on_wait = callback


def _waiting(turn: _Turn) -> bool:
    """Run this thread's ``on_wait``; was there one?"""
    callback = turn.on_wait
    if callback is None:
        return False
    turn.on_wait = None
    callback()
    return True


def leave() -> None:
    """Out of the lane, if this thread is in it, and out of whatever else others wait
    for it to give up (``on_wait``): before a wait, or when the slice is over."""
    turn = _turns.turn
    held = turn.lane
    if held is not None:
        turn.lane = None
        held._release()
    if turn.on_wait is not None:
        _waiting(turn)


def leave_if_overdue() -> None:
    """Out of the lane once this thread's slice is over (called by interrupt checks); in a fair
    lane, the turn passes to the next waiting thread, and a command beside asks for one again."""
    turn = _turns.turn
    held = turn.lane
    if held is not None:
        if time.monotonic() > turn.until:
            if isinstance(held, FairLane):
                held.pass_turn()
            else:
                leave()
    elif turn.command is not None and time.monotonic() > turn.until:
        turn.command.rejoin()
