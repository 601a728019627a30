"""The server's loop: established connections wait for their next request in
one epoll set, and one thread at a time serves whichever is ready.

With a thread per connection, each request woke its connection's thread, and
with many connections busy the threads handed the interpreter lock and the
lane (foliodb/lane.py) to each other: several context switches a request,
which cost more than the request (64 clients: 170-230 µs of server CPU a
``find`` by ``_id``, against 70 µs for one client). Here the thread that
leads polls, reads a ready connection's request, runs it, writes the reply
and polls again; under load the next connection is ready at once, and
nothing switches.

The threads:

* the **leader** polls for one ready connection at a time (``EPOLLONESHOT``:
  a reported connection is reported to no one else until it is re-armed) and
  serves it: :meth:`Connection.serve_ready`, then re-arms it;
* **followers** wait to lead;
* a leader about to wait or to run long (:func:`foliodb.lane.leave`, or a
  wait for a turn in the lane: a lock, awaitData, an awaitable ``hello``, a
  slice used up, a reply the peer is slow to take, the rest of a message
  that came in part) first hands the lead to a follower, a new thread when
  none is idle (:meth:`Loop._resign`); it serves its connection to the end
  of that request beside the loop, re-arms it and follows again (or ends,
  when :data:`MAX_IDLE` already wait);
* the leader also sweeps, every :data:`_SWEEP_SECONDS`: a connection in the loop that
  no thread serves and that is past its time limit (no first message within the
  handshake limit, or a message begun and not finished within the frame limit) is
  closed; so a partial message waits in the loop, not on a thread;
* a leader that resigns or is passed while serving a connection leaves that connection
  in the epoll set watched for its peer's close only (EPOLLRDHUP): a client that goes
  away while its command runs long has its operations killed with
  ClientDisconnect (279), as mongod's since 4.2;
* a follower that sees the leader in one request for longer than
  :data:`foliodb.lane.HOLDER_SECONDS` (it blocks where nobody marked it)
  leads beside it; the old leader follows once its request is done.

Invariants: a connection in the loop is in the epoll set, armed, exactly when
no thread serves it; one thread leads, or two for a request's end after a
leader was passed; a thread leads only while no turn in the lane, lock or
wait can hold it for long.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from typing import TYPE_CHECKING

from foliodb import lane, threads

if TYPE_CHECKING:
    from foliodb.server.connection import Connection

log = logging.getLogger("foliodb.server")

SUPPORTED = hasattr(select, "epoll")
MAX_IDLE = 2  # followers kept waiting; more end
_ARMED = select.EPOLLIN | select.EPOLLONESHOT if SUPPORTED else 0
_WATCHED = select.EPOLLRDHUP | select.EPOLLONESHOT if SUPPORTED else 0  # a served connection: its peer's close
_POLL_SECONDS = 0.5  # a leader's poll wakes this often to see the loop stopped and sweep, whatever wakes it first
_SWEEP_SECONDS = 0.5  # how often the leader closes connections past their time limits


class Loop:
    def __init__(self) -> None:
        self._parked: dict[int, Connection] = {}  # fd -> connection, while the connection is in the loop
        self._cv = threading.Condition()
        self._arming = threading.Lock()  # a connection's epoll mask and busy flag change together
        self._leader: int | None = None  # the leading thread's ident
        # (leader, time.monotonic() its request began, the connection it serves)
        self._serving: tuple[int, float, Connection] | None = None
        self._idle = 0  # followers waiting
        self._threads: set[threading.Thread] = set()
        # Without epoll (systems other than Linux) the loop is closed from the start: park()
        # refuses, and every connection keeps its own thread.
        self._closed = not SUPPORTED
        if SUPPORTED:
            self._epoll = select.epoll()
            self._wake_read, self._wake_write = os.pipe()  # written once, by stop()
            self._epoll.register(self._wake_read, select.EPOLLIN)

    def park(self, connection: Connection) -> bool:
        """``connection`` (no unread bytes, TLS's own buffer included) waits in the loop for its
        next request; False when the loop has stopped (the caller closes it)."""
        fd = connection.sock.fileno()
        with self._cv:
            if self._closed:
                return False
            self._parked[fd] = connection
            spawn = self._leader is None and not self._idle
        self._epoll.register(fd, _ARMED)  # once: whoever serves it later re-arms it (_rearm)
        if spawn:  # the first connection, or the leader just resigned and its successor is starting
            self._spawn()
        return True

    @property
    def supported(self) -> bool:
        return SUPPORTED

    def rearm(self, connection: Connection) -> None:
        """Back in the epoll set, a connection that waited out of it (for the message budget)."""
        self._rearm(connection, connection.fd)

    def forget(self, connection: Connection, fd: int) -> None:
        """Before ``connection`` closes: out of the loop (its fd may be another's next)."""
        with self._cv:
            if self._parked.get(fd) is not connection:
                return
            del self._parked[fd]
        with contextlib.suppress(OSError, ValueError):
            self._epoll.unregister(fd)

    def stop(self) -> None:
        """Wake and end the loop's threads (at most 10 s each, none while the interpreter
        finalizes: foliodb/threads.py); close the connections still in it."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._cv.notify_all()
            running = list(self._threads)
            parked = list(self._parked.values())
            self._parked.clear()
        os.write(self._wake_write, b"x")
        for thread in running:
            # One still starting (ident None) sees the loop closed at once and ends by itself.
            if thread.ident is not None:
                threads.join(thread, timeout=10)
        for connection in parked:
            connection.close()
        self._epoll.close()
        os.close(self._wake_read)
        os.close(self._wake_write)

    # -- the threads -----------------------------------------------------------------------

    def _spawn(self) -> None:
        thread = threading.Thread(target=self._follow, name="foliodb-loop", daemon=True)
        with self._cv:
            if self._closed:
                return
            self._threads.add(thread)
        try:
            thread.start()
        except RuntimeError as exc:  # no thread to be had: a thread that resigned leads again when done
            with self._cv:
                self._threads.discard(thread)
            log.warning("cannot start a server loop thread: %s", exc)

    def _follow(self) -> None:
        me = threading.get_ident()
        returning = False
        try:
            while self._await_lead(me, returning):
                self._lead(me)
                returning = True
        finally:
            with self._cv:
                self._threads.discard(threading.current_thread())
                orphaned = self._leader == me  # an error in the loop itself: another thread leads
                if orphaned:
                    self._leader = None
                    self._cv.notify()
                spawn = orphaned and not self._idle
            if spawn:
                self._spawn()

    def _await_lead(self, me: int, returning: bool) -> bool:
        """Wait to lead; False once the loop stops, or when a thread ``returning`` from
        serving beside the loop finds MAX_IDLE followers waiting already (it ends)."""
        with self._cv:
            if returning and self._idle >= MAX_IDLE:
                return False
            self._idle += 1
            try:
                while not self._closed:
                    if self._leader is None or self._stuck():
                        if self._serving is not None:  # passed: its connection is served beside the loop
                            self._watch(self._serving[2])
                        self._leader, self._serving = me, None
                        break
                    self._cv.wait(lane.HOLDER_SECONDS)
                else:
                    return False
            finally:
                self._idle -= 1
            watched = self._idle > 0
        if not watched:  # a follower watches this leader (_stuck), and is there when it resigns
            self._spawn()
        return True

    def _stuck(self) -> bool:
        """Has the leader been in one request longer than a lane holder may be?"""
        serving = self._serving
        return (
            serving is not None and serving[0] == self._leader and time.monotonic() - serving[1] > lane.HOLDER_SECONDS
        )

    def _lead(self, me: int) -> None:
        """Serve ready connections until this thread resigns, is passed, or the loop stops."""
        poll, parked, wake = self._epoll.poll, self._parked, self._wake_read
        lane.on_wait(self._resign)
        next_sweep = time.monotonic() + _SWEEP_SECONDS
        try:
            while self._leader == me and not self._closed:
                for fd, _events in poll(_POLL_SECONDS, 1):
                    connection = parked.get(fd)
                    if fd == wake or connection is None:
                        continue  # stopping, or closed since it was reported
                    if connection.busy:  # watched while a thread serves it (_resign): the peer went away
                        connection.disconnected()
                        continue
                    self._serving = (me, time.monotonic(), connection)
                    connection.busy = True
                    if connection.serve_ready():
                        self._rearm(connection, fd)
                    else:
                        connection.busy = False  # closed, or out of the set until the budget has room
                    if self._leader == me:
                        self._serving = None
                now = time.monotonic()
                if now >= next_sweep and self._leader == me:
                    next_sweep = now + _SWEEP_SECONDS
                    self._sweep(now)
        finally:
            lane.on_wait(None)

    def _sweep(self, now: float) -> None:
        """Close the connections no thread serves that are past their time limits."""
        for connection in list(self._parked.values()):
            if not connection.busy and connection.expired(now):
                connection.time_out()

    def _rearm(self, connection: Connection, fd: int) -> None:
        if self._parked.get(fd) is not connection:
            return  # the loop stopped meanwhile and closed it
        try:
            with self._arming:
                connection.busy = False
                self._epoll.modify(fd, _ARMED)
        except (OSError, ValueError):  # the loop's epoll closed by stop()
            connection.close()

    def _watch(self, connection: Connection) -> None:
        """While a thread serves ``connection`` long, the loop hears of its peer closing
        (EPOLLRDHUP): its running operations are then killed (Connection.disconnected).
        Never once it is served no more: re-armed by then, it must stay armed."""
        with self._arming, contextlib.suppress(OSError, ValueError):
            if connection.busy:
                self._epoll.modify(connection.fd, _WATCHED)

    def _resign(self) -> None:
        """The leader is about to wait or run long (foliodb.lane's ``on_wait``): another thread leads."""
        me = threading.get_ident()
        with self._cv:
            if self._leader != me:
                return  # passed already (and watched by whoever passed it)
            if self._serving is not None:
                self._watch(self._serving[2])
            self._leader = self._serving = None
            if self._idle:
                self._cv.notify()
                return
        self._spawn()
