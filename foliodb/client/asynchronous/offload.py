"""Running the sync facade's calls off the event loop, and stopping them when their task is cancelled.

Every operation of the async client is one call of the sync facade
(:mod:`foliodb.client`), run on a worker thread of the client's pool
(:class:`Offload`): the event loop only waits for it, so a long query stalls
no other coroutine. The thread is the operation's "connection": the pool has
as many threads as pymongo's pool has connections (``maxPoolSize``).

Cancellation. A call runs as a :class:`Call`, which sees every command the
facade sends for it: the facade's client hands each command to its ``_run``
(``MongoClient._run``, the one path to the executor), which :func:`track`
wraps. When the awaiting task is cancelled, the call is marked cancelled: a
command not yet sent answers Interrupted (11601) without running, and the one
running is stopped with ``killOp``, exactly as an operator's ``killOp`` stops
it (:mod:`foliodb.interrupt`: its next interruption check raises). The task
ends only once the worker thread has come back, so when a cancelled task is
done its operation no longer runs (``currentOp`` no longer lists it).

Invariant: a command reaches the executor only through a live call's
:meth:`Call.run` (or outside any call, from synchronous code), and a
cancelled call sends nothing more.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pymongo.asynchronous.client_session import _SESSION as ASYNC_BOUND_SESSION
from pymongo.synchronous.client_session import _SESSION as SYNC_BOUND_SESSION

from foliodb.errors import CommandError, ErrorCode

_T = TypeVar("_T")
Run = Callable[[str, Mapping[str, Any]], dict[str, Any]]

# How often a cancelled call's command is looked for again: it may be sent after the first look.
KILL_RETRY_SECONDS = 0.01


class Call:
    """One offloaded call: the command it is running, and whether its task was cancelled."""

    __slots__ = ("cancelled", "command", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cancelled = False
        self.command: Mapping[str, Any] | None = None

    def run(self, inner: Run, db: str, command: Mapping[str, Any]) -> dict[str, Any]:
        """Send ``command`` through ``inner`` unless the call was cancelled."""
        with self.lock:
            if self.cancelled:
                return CommandError(ErrorCode.Interrupted, "operation was interrupted").to_reply()
            self.command = command
        try:
            return inner(db, command)
        finally:
            with self.lock:
                self.command = None

    def cancel(self) -> Mapping[str, Any] | None:
        """Mark the call cancelled; the command it is running, if any."""
        with self.lock:
            self.cancelled = True
            return self.command


class _Working(threading.local):
    call: Call | None = None  # the call this thread is running, if it is a pool thread at work


_working = _Working()


def track(inner: Run) -> Run:
    """``inner`` (a client's ``_run``), sending each command as part of the thread's call, if any."""

    def run(db: str, command: Mapping[str, Any]) -> dict[str, Any]:
        call = _working.call
        if call is None:
            return inner(db, command)
        return call.run(inner, db, command)

    return run


def _work(call: Call, bound: Any, fn: Callable[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _T:
    """On a pool thread, in a copy of the caller's context: ``fn(*args, **kwargs)`` as ``call``."""
    if call.cancelled:
        raise asyncio.CancelledError
    # A session bound with ``async with session.bind()`` is the sync facade's bound session here.
    if bound is not None:
        SYNC_BOUND_SESSION.set(bound._delegate)
    _working.call = call
    try:
        return fn(*args, **kwargs)
    finally:
        _working.call = None


class Offload:
    """A client's worker threads, and the way to stop what they run (see the module docstring)."""

    def __init__(self, workers: int, kill: Callable[[Mapping[str, Any]], None]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="foliodb-async")
        self._kill = kill  # killOp of the operation running a command, if it runs in this process
        self._closed = False

    async def run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``fn(*args, **kwargs)`` on a worker thread; cancelling the awaiting task stops it."""
        if self._closed:
            return fn(*args, **kwargs)  # the closed client's refusal (InvalidOperation): no I/O
        call = Call()
        context = contextvars.copy_context()
        bound = ASYNC_BOUND_SESSION.get()
        future = asyncio.wrap_future(self._pool.submit(context.run, _work, call, bound, fn, args, kwargs))
        try:
            # asyncio.wait, unlike awaiting the future, leaves it running when this task is cancelled.
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            await self._stop(call, future)
            raise
        return future.result()

    async def _stop(self, call: Call, future: asyncio.Future[Any]) -> None:
        """Stop a cancelled call and wait until its thread is back; its outcome is dropped."""
        while not future.done():
            command = call.cancel()
            if command is not None:
                self._kill(command)
            await asyncio.wait((future,), timeout=KILL_RETRY_SECONDS)
        if not future.cancelled():
            future.exception()  # retrieved, so asyncio does not log it as never retrieved

    def close(self) -> None:
        """No more threads: the client is closed, later calls only raise its error. Threads still at
        work finish theirs."""
        self._closed = True
        self._pool.shutdown(wait=False)
