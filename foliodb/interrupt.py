"""The running operation of each thread: its deadline and its kill flag.

Every command runs as an :class:`Operation` bound to the thread that runs it
(:func:`bind`). Code that can run long - scans, sorts, ``$group``, expression
loops, index builds, spills, lock waits - calls :func:`check` every so often;
it raises MaxTimeMSExpired (50) once the operation's ``maxTimeMS`` deadline
has passed, and Interrupted (11601) once ``killOp`` has marked it. Nothing
else stops an operation: a check is the only place one can end early, so
every long loop must reach one within a few milliseconds.

This module sits beside :mod:`foliodb.errors` at the bottom of the package:
``query/`` may use it, which keeps the expression and filter compilers free
of any knowledge of commands or storage.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from foliodb import lane
from foliodb.errors import CommandError, ErrorCode

# mongod's default jsHeapLimitMB (https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.jsHeapLimitMB).
DEFAULT_JS_HEAP_LIMIT_MB = 1100
# FolioDB's own bound (mongod has none): the JavaScript heap of all the scripts running at once in a
# process (foliodb/javascript/runtime.py lends each context its jsHeapLimitMB out of it).
DEFAULT_JS_HEAP_TOTAL_MB = 2 * DEFAULT_JS_HEAP_LIMIT_MB


# What a killed operation reports, by the code it was killed with (mongod's wording).
_KILL_MESSAGES: dict[int, str] = {ErrorCode.ClientDisconnect: "operation was interrupted because a client disconnected"}


class Operation:
    """One command being run: what ``currentOp`` shows and ``killOp`` marks.

    What most operations leave as it was (no kill, no lock waits, no cursor...) is a class
    attribute, set on the instance only when it changes: an operation is made for every
    command, and setting twenty attributes was a sixth of a point read's own bookkeeping."""

    deadline: float | None = None  # time.monotonic() value from maxTimeMS; None: no limit
    connection_id: int | None = None  # None: an embedded client's operation
    owner: int | None = None  # the embedded client running it (its id): it stops when the client closes
    client = ""
    killed = False
    kill_code: int = ErrorCode.Interrupted  # what a check raises once killed (CursorKilled: its cursor was)
    waiting_for_lock = False
    # currentOp's locks and lockStats, as mongod names them: the writer is the Global lock in
    # mode "w" (intent exclusive), held or waited for. (acquisitions, waits, microseconds waited)
    locks: Mapping[str, str] = types.MappingProxyType({})
    lock_waits = (0, 0, 0)
    plan_summary: str | None = None
    progress: tuple[int, int] | None = None  # (done, total) of an index build
    cursor: Any = None  # the cursor a getMore takes a batch from (commands.cursors.Cursor)
    session: bytes | None = None  # the lsid id of the session it runs in
    # The (db, user) pairs authenticated on the connection that runs it; None without access
    # control (the embedded client, a server without --auth): whose it is, for currentOp and killOp.
    users: frozenset[tuple[str, str]] | None = None
    # Server-side JavaScript ($where, $function, mapReduce): off under --noscripting; its heap bound.
    javascript = True
    js_heap_limit_mb = DEFAULT_JS_HEAP_LIMIT_MB
    js_heap_total_mb = DEFAULT_JS_HEAP_TOTAL_MB
    # The documents of a database's system.js as this operation reads them (its snapshot, its
    # transaction): set by whoever can read storage, called only when a context is made.
    stored_javascript: Callable[[str], Sequence[Mapping[str, Any]]] | None = None

    def __init__(
        self,
        opid: int,
        db: str,
        command: Any,
        deadline: float | None = None,
        connection_id: int | None = None,
        client: str = "",
    ) -> None:
        self.opid = opid
        self.db = db
        self.command = command
        self.started = time.monotonic()
        if deadline is not None:
            self.deadline = deadline
        if connection_id is not None:
            self.connection_id = connection_id
        if client:
            self.client = client

    def check(self) -> None:
        lane.leave_if_overdue()  # a command long enough to check runs beside the lane after its slice
        if self.killed:
            raise CommandError(self.kill_code, _KILL_MESSAGES.get(self.kill_code, "operation was interrupted"))
        deadline = self.deadline
        if deadline is not None and time.monotonic() > deadline:
            raise CommandError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")

    def kill(self, code: int = ErrorCode.Interrupted) -> None:
        """Mark it killed: its next check raises ``code``."""
        self.kill_code = code
        self.killed = True

    def wants_writer(self) -> None:
        """It takes (or waits for) the writer: mongod's global, replication-state and FCV locks in mode w."""
        self.locks = _WRITER_LOCKS
        acquired, waits, micros = self.lock_waits
        self.lock_waits = (acquired + 1, waits, micros)

    def waited_for_writer(self, seconds: float) -> None:
        acquired, waits, micros = self.lock_waits
        self.lock_waits = (acquired, waits + 1, micros + int(seconds * 1_000_000))

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never negative); None without one."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.monotonic(), 0.0)


_WRITER_LOCKS: Mapping[str, str] = types.MappingProxyType(
    dict.fromkeys(("FeatureCompatibilityVersion", "ReplicationStateTransition", "Global"), "w")
)


class _Slot:
    """This thread's operation, behind one thread-local lookup (``_Bound.slot``): binding
    reads and sets it, and each attribute of a ``threading.local`` costs a dictionary lookup."""

    __slots__ = ("op",)

    def __init__(self) -> None:
        self.op: Operation | None = None


class _Bound(threading.local):
    def __init__(self) -> None:
        self.slot = _Slot()


_bound = _Bound()


def bind(op: Operation | None) -> Operation | None:
    """Make ``op`` this thread's operation; returns the one it replaces."""
    slot = _bound.slot
    previous = slot.op
    slot.op = op
    return previous


def current() -> Operation | None:
    return _bound.slot.op


def check() -> None:
    """Stop here if this thread's operation was killed or ran out of time."""
    op = _bound.slot.op
    if op is not None:
        op.check()


def wait_until(until: float) -> None:
    """Wait until ``time.monotonic()`` reaches ``until``, out of the lane, stopping at the
    operation's deadline or kill (checked every 50 ms)."""
    lane.leave()
    while (left := until - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))
        check()
