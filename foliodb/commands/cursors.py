"""Server-side cursors: open result streams, their ids, owners, batches and timeouts.

A cursor is a Python iterator of result documents plus its namespace. The
first batch is produced by the command that opened it; ``getMore`` pulls the
next batches. Invariants:

* ids are random 63-bit numbers (as mongod's), so one client cannot guess
  another's cursor;
* under ``--auth`` a cursor belongs to the users that opened it
  (:data:`foliodb.auth.caller.CALLER`) and keeps the privileges its command
  needed: a getMore from other users, or from users who have since lost those
  privileges, is Unauthorized (13), and killCursors of another user's cursor
  needs ``killAnyCursor``, as with mongod;
* a cursor idle longer than ``cursorTimeoutMillis`` (10 minutes; setParameter
  changes it) is closed by a reaper thread, unless it was opened with
  ``noCursorTimeout``; a cursor in use by a getMore is never closed under it:
  a kill marks it, and the getMore closes it when its batch is done;
* a server connection holds at most ``max_per_connection`` open cursors, and a
  user (under ``--auth``) at most ``max_per_user`` across connections
  (FolioDB's own bounds, settable as ``maxOpenCursorsPerConnection`` and
  ``maxOpenCursorsPerUser``; mongod has none): a command that would open one
  more fails with OperationFailed (96) saying which bound and how to free
  cursors. An idle cursor costs a few KiB (its scan's position), so the
  defaults bound them to some hundreds of MB.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson import Int64
from bson.errors import InvalidDocument
from bson.raw_bson import RawBSONDocument

from foliodb import collector, interrupt, threads
from foliodb.auth.caller import CALLER
from foliodb.auth.privileges import Privilege, namespace, privilege
from foliodb.commands import failpoints, params
from foliodb.commands.registry import COMMANDS
from foliodb.engine.catalog import CODEC, RAW
from foliodb.errors import CommandError, ErrorCode

# The reply batch limit: MongoDB stops a batch at 16 MiB of documents; the
# default first batch of find/aggregate is 101 documents.
DEFAULT_FIRST_BATCH = 101
CURSOR_TIMEOUT_MILLIS = 600_000  # mongod's cursorTimeoutMillis default
MAX_CURSORS_PER_CONNECTION = 20_000
MAX_CURSORS_PER_USER = 50_000
REAPER_PERIOD_SECONDS = 4.0  # mongod's clientCursorMonitorFrequencySecs
AWAIT_SECONDS = 1.0  # how long an awaitData getMore waits without maxTimeMS, as mongod
MAX_BATCH_BYTES = 16 * 1024 * 1024


class Lookahead(Iterator[dict[str, Any]]):
    """A result stream, and whether it has ended, known without reading past a full batch.

    As mongod's plans, a stream knows its end only where that costs nothing: a
    batch that ran short, a find whose limit is reached (``ended``), an
    invalidated change stream. Otherwise a batch that fills up exactly at
    the last result leaves the cursor open and the next getMore finds it empty,
    as mongod's does: looking one result ahead could cost a scan of the rest
    of the collection before the first batch is answered.
    """

    def __init__(self, source: Iterator[dict[str, Any]], ended: Callable[[], bool] | None = None) -> None:
        self.source = source
        self.ended = ended  # whether the source has ended, without reading on (None: unknown until it runs out)
        self.pending: list[dict[str, Any]] = []
        # A tailable source (commands/tailable.py) that runs out waits for inserts; only a reached limit ends it.
        self.tailable = bool(getattr(source, "tailable", False))

    def __next__(self) -> dict[str, Any]:
        if self.pending:
            return self.pending.pop()
        return next(self.source)

    def exhausted(self) -> bool:
        if self.tailable:
            return bool(getattr(self.source, "finished", False))
        if self.pending:
            return False
        return self.ended is not None and self.ended()

    def give_back(self, doc: dict[str, Any]) -> None:
        """A document taken that its reply could not hold: the next batch starts with it."""
        give_back = getattr(self.source, "give_back", None)
        if give_back is not None:
            give_back(doc)  # a change stream: its resume token must stay before the document
        else:
            self.pending.append(doc)

    def ran_out(self) -> bool:
        """Whether a source that just stopped yielding has ended (a tailable one may not have)."""
        return self.exhausted() if self.tailable else True

    def close(self) -> None:
        close = getattr(self.source, "close", None)
        if close is not None:
            close()


@dataclass
class Cursor:
    id: int
    ns: str
    source: Lookahead
    no_timeout: bool = False
    last_used: float = 0.0
    lsid: bytes | None = None  # the session that opened it (its lsid's id), for killSessions
    snapshot: Any = None  # the pinned snapshot of a readConcern snapshot read its getMores read
    stream: Any = None  # a change stream's source: getMores wait on it and report its resume token
    await_data: bool = False  # a tailable awaitData cursor: getMore may carry maxTimeMS
    # What is left of the opening command's maxTimeMS (seconds; None: no limit): as mongod, the
    # limit bounds the time the cursor's getMores spend working, not the time it sits idle.
    time_left: float | None = None
    owners: frozenset[tuple[str, str]] | None = None  # (db, user); None: opened without authorization
    connection_id: int | None = None  # the server connection that opened it (None: an embedded client)
    privileges: tuple[Privilege, ...] = ()  # what the opening command needed
    in_use: bool = False  # a getMore is taking a batch from it
    operation: Any = None  # that getMore's Operation (killCursors interrupts it)
    killed: bool = False  # killed while in use: the getMore closes it
    # What currentOp shows of it (mongod's GenericCursor): the command that opened it, its plan,
    # when it was opened and last used (wall clock), the documents and batches it returned.
    tailable: bool = False
    originating: Mapping[str, Any] | None = None
    plan_summary: str | None = None
    created: datetime.datetime | None = None
    last_access: datetime.datetime | None = None
    docs_returned: int = 0
    batches_returned: int = 0

    def returned(self, batch: int) -> None:
        """Count a batch of ``batch`` documents handed to the client."""
        self.docs_returned += batch
        self.batches_returned += 1
        self.last_access = datetime.datetime.now(datetime.UTC)

    def describe(self) -> dict[str, Any]:
        """The ``cursor`` document of currentOp (mongod's GenericCursor)."""
        shown: dict[str, Any] = {
            "cursorId": Int64(self.id),
            "createdDate": self.created,
            "lastAccessDate": self.last_access,
            "nDocsReturned": Int64(self.docs_returned),
            "nBatchesReturned": Int64(self.batches_returned),
            "noCursorTimeout": self.no_timeout,
            "tailable": self.tailable,
            "awaitData": self.await_data,
        }
        if self.originating is not None:
            shown["originatingCommand"] = dict(self.originating)
        return shown


class CursorManager:
    def __init__(self) -> None:
        self._cursors: dict[int, Cursor] = {}
        self._lock = threading.Lock()
        self.timeout_millis = CURSOR_TIMEOUT_MILLIS
        self.max_per_connection = MAX_CURSORS_PER_CONNECTION
        self.max_per_user = MAX_CURSORS_PER_USER
        self._held: collections.Counter[Any] = collections.Counter()  # open cursors by connection and by user
        self._reaper: threading.Thread | None = None
        self._stopped = threading.Event()

    def _new_id(self) -> int:
        while True:
            cursor_id = secrets.randbits(63)
            if cursor_id and cursor_id not in self._cursors:
                return cursor_id

    def open(self, ns: str, source: Iterator[dict[str, Any]], returned: int = 0, **options: Any) -> Cursor:
        """A new cursor over ``source``, its first batch of ``returned`` documents already taken."""
        lookahead = source if isinstance(source, Lookahead) else Lookahead(source)
        op = interrupt.current()
        if op is not None and op.session is not None:
            options.setdefault("lsid", op.session)
        if op is not None:
            options.setdefault("connection_id", op.connection_id)
            if op.deadline is not None and not options.get("await_data"):
                options.setdefault("time_left", op.remaining())
            options.setdefault("originating", op.command)
            options.setdefault("plan_summary", op.plan_summary)
        caller = CALLER.get()
        if caller is not None:
            options.setdefault("owners", caller.users)
            options.setdefault("privileges", caller.needed)
        with self._lock:
            cursor = Cursor(self._new_id(), ns, lookahead, last_used=time.monotonic(), **options)
            self._check_caps(cursor)
            cursor.created = datetime.datetime.now(datetime.UTC)
            cursor.returned(returned)
            self._cursors[cursor.id] = cursor
            self._held.update(_holders(cursor))
            if self._reaper is None and not self._stopped.is_set():
                self._reaper = threading.Thread(target=self._reap_loop, name="foliodb-cursor-reaper", daemon=True)
                self._reaper.start()
        return cursor

    def _check_caps(self, cursor: Cursor) -> None:
        """OperationFailed when ``cursor`` would be one too many for its connection or a user of it."""
        what = None
        for holder in _holders(cursor):
            cap = self.max_per_connection if holder[0] == "connection" else self.max_per_user
            if self._held[holder] >= cap:
                what = (
                    f"this connection holds {cap}" if holder[0] == "connection" else f"user {holder[1][1]} holds {cap}"
                )
                break
        if what is not None:
            cursor.source.close()
            raise CommandError(
                ErrorCode.OperationFailed,
                f"too many open cursors: {what} (close them with killCursors, read them to the end, or let "
                "cursorTimeoutMillis close the idle ones)",
            )

    def _forget(self, cursor: Cursor) -> None:
        self._held.subtract(_holders(cursor))
        for holder in _holders(cursor):
            if self._held[holder] <= 0:
                del self._held[holder]

    def get(self, cursor_id: int, ns: str) -> Cursor:
        """The cursor, pinned for a getMore (:meth:`release` unpins it)."""
        with self._lock:
            cursor = self._cursors.get(cursor_id)
            if cursor is None:
                raise CommandError(ErrorCode.CursorNotFound, f"cursor id {cursor_id} not found")
            _check_owner(cursor)
            if cursor.ns != ns:
                raise CommandError(
                    ErrorCode.Unauthorized,
                    f"Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {cursor.ns}",
                )
            caller = CALLER.get()
            if caller is not None and cursor.owners is not None and not caller.subject.allows(cursor.privileges):
                raise CommandError(ErrorCode.Unauthorized, f"not authorized for getMore with cursor id {cursor_id}")
            if cursor.in_use:
                raise CommandError(ErrorCode.OperationFailed, f"cursor id {cursor_id} is already in use")
            cursor.in_use = True
            cursor.last_used = time.monotonic()
        return cursor

    def release(self, cursor: Cursor) -> None:
        """Unpin a cursor after its getMore; one killed meanwhile is closed now."""
        with self._lock:
            cursor.in_use = False
            cursor.operation = None
            cursor.last_used = time.monotonic()
            killed = cursor.killed
        if killed:
            cursor.source.close()

    def owner_check(self, cursor_id: int) -> Cursor | None:
        """The cursor ``cursor_id`` if it exists, after checking the caller may kill it."""
        with self._lock:
            cursor = self._cursors.get(cursor_id)
        if cursor is not None:
            caller = CALLER.get()
            if (
                caller is not None
                and cursor.owners is not None
                and not caller.users & cursor.owners
                and not caller.subject.allows([privilege(namespace(*cursor.ns.split(".", 1)), "killAnyCursor")])
            ):
                raise CommandError(ErrorCode.Unauthorized, f"not authorized to kill cursor on {cursor.ns}")
        return cursor

    def idle(self) -> list[Cursor]:
        """The open cursors no getMore is using (``$currentOp``'s ``idleCursors``)."""
        with self._lock:
            return [c for c in self._cursors.values() if not c.in_use]

    def kill(self, cursor_id: int) -> bool:
        with self._lock:
            cursor = self._cursors.pop(cursor_id, None)
            if cursor is not None:
                self._forget(cursor)
            if cursor is not None and cursor.in_use:
                cursor.killed = True
                if cursor.operation is not None:  # as mongod: the getMore using it stops, CursorKilled
                    cursor.operation.kill(ErrorCode.CursorKilled)
                return True
        if cursor is None:
            return False
        cursor.source.close()
        return True

    def attach_snapshot(self, cursor_id: int, snapshot: Any) -> None:
        """The cursor's getMores read ``snapshot`` (a pinned reader)."""
        with self._lock:
            cursor = self._cursors.get(cursor_id)
            if cursor is not None:
                cursor.snapshot = snapshot

    def kill_sessions(self, keys: list[bytes] | None) -> None:
        """Close the cursors opened in these sessions (None: in any session): killSessions."""
        with self._lock:
            chosen = [c.id for c in self._cursors.values() if c.lsid is not None and (keys is None or c.lsid in keys)]
        for cursor_id in chosen:
            self.kill(cursor_id)

    def kill_all(self) -> None:
        """Close every cursor and stop the reaper (the executor is closing)."""
        self._stopped.set()
        for cursor_id in list(self._cursors):
            self.kill(cursor_id)
        reaper = self._reaper
        if reaper is not None:
            threads.join(reaper, timeout=10)

    def reap(self) -> int:
        """Close the cursors idle longer than ``timeout_millis``; how many."""
        deadline = time.monotonic() - self.timeout_millis / 1000.0
        with self._lock:
            expired = [
                c for c in self._cursors.values() if not c.no_timeout and not c.in_use and c.last_used < deadline
            ]
            for cursor in expired:
                del self._cursors[cursor.id]
                self._forget(cursor)
        for cursor in expired:
            cursor.source.close()
        return len(expired)

    def _reap_loop(self) -> None:
        while not self._stopped.wait(min(REAPER_PERIOD_SECONDS, max(0.05, self.timeout_millis / 4000.0))):
            self.reap()

    def __len__(self) -> int:
        return len(self._cursors)


def _holders(cursor: Cursor) -> list[tuple[str, Any]]:
    """What a cursor counts against: its server connection and its users."""
    holders: list[tuple[str, Any]] = []
    if cursor.connection_id is not None:
        holders.append(("connection", cursor.connection_id))
    holders.extend(("user", user) for user in cursor.owners or ())
    return holders


def _check_owner(cursor: Cursor) -> None:
    caller = CALLER.get()
    if caller is not None and cursor.owners is not None and not caller.users & cursor.owners:
        raise CommandError(ErrorCode.Unauthorized, f"cursor id {cursor.id} was not created by the authenticated user")


def take_batch(source: Lookahead, size: int | None, measure: bool = False) -> tuple[list[Any], bool]:
    """Up to ``size`` documents (None: no count limit) and whether the
    source is exhausted. With ``measure`` (replies that go over the wire) the
    documents are encoded here, once, and a batch stops before 16 MiB, as
    MongoDB's do: a reply must fit the 48 MB message limit."""
    if size is not None and size <= 0:
        size = None
    with collector.PAUSED:  # a batch's new documents hold no cycles (foliodb/collector.py)
        if measure:
            return _take_measured(source, size)
        return _take(source, size)


def _take(source: Lookahead, size: int | None) -> tuple[list[Any], bool]:
    batch: list[Any] = []
    append = batch.append
    if size is None:
        # Without a count limit, stop at the reply size limit instead.
        total = 0
        for doc in source:
            if not len(batch) & 255:
                interrupt.check()  # a batch of 16 MiB takes a while to gather
            append(doc)
            total += 200  # an estimate: in-process replies are not bound by the message limit
            if total >= MAX_BATCH_BYTES:
                return batch, source.exhausted()
        return batch, source.ran_out()
    for doc in itertools.islice(source, size):
        if not len(batch) & 255:
            interrupt.check()
        append(doc)
    if len(batch) < size:
        return batch, source.ran_out()
    return batch, source.exhausted()


def _take_measured(source: Lookahead, size: int | None) -> tuple[list[Any], bool]:
    batch: list[Any] = []
    total = 0
    kept: RawBSONDocument
    for doc in source:
        if not len(batch) & 255:
            interrupt.check()  # encoding up to 16 MiB of documents takes tens of milliseconds
        if isinstance(doc, RawBSONDocument):  # a stored document as it is (FindSpec.raw): nothing to encode
            kept, length = doc, len(doc.raw)
        else:
            try:
                data = bson.encode(doc, codec_options=CODEC)
            except InvalidDocument as exc:  # a key with a NUL byte, say, that a stage let through
                raise CommandError(ErrorCode.BadValue, f"a result document cannot be returned as BSON: {exc}") from None
            kept, length = RawBSONDocument(data, RAW), len(data)
        if batch and total + length > MAX_BATCH_BYTES:
            source.give_back(doc)
            return batch, False
        batch.append(kept)
        total += length
        if size is not None and len(batch) >= size:
            return batch, source.exhausted()
    return batch, source.ran_out()


def over_the_wire(request: Any) -> bool:
    """Whether the reply goes to a client over the wire (the server passes its connection id)."""
    return request.extra.get("connection_id") is not None


def cursor_reply(
    request: Any,
    ns: str,
    source: Iterator[dict[str, Any]],
    batch_size: int | None,
    single_batch: bool = False,
    first: str = "firstBatch",
    **options: Any,
) -> dict[str, Any]:
    """Reply with the first batch, opening a cursor for the rest."""
    if single_batch and batch_size and (batch_size == 1 or not over_the_wire(request)):
        # No cursor either way, so no need to know whether more would follow (find_one's path);
        # over the wire only for one document, which always fits a reply.
        batch = list(itertools.islice(source, batch_size))
        close = getattr(source, "close", None)
        if close is not None:
            close()
        return {"cursor": {first: batch, "id": Int64(0), "ns": ns}, "ok": 1.0}
    lookahead = source if isinstance(source, Lookahead) else Lookahead(source)
    batch, done = take_batch(lookahead, batch_size, measure=over_the_wire(request))
    cursor_id = 0
    if not done and not single_batch:
        cursor_id = request.cursors.open(ns, lookahead, len(batch), **options).id
    elif not done:
        lookahead.close()
    return {"cursor": {first: batch, "id": Int64(cursor_id), "ns": ns}, "ok": 1.0}


@COMMANDS.register("getMore")
def cmd_getMore(request: Any, cmd: Mapping[str, Any]) -> dict[str, Any]:
    cursor_id = cmd["getMore"]
    if not isinstance(cursor_id, int) or isinstance(cursor_id, bool):
        raise CommandError(
            ErrorCode.TypeMismatch, "BSON field 'getMore.getMore' is the wrong type, expected type 'long'"
        )
    coll = params.field(cmd, "collection", "string", "getMore")
    if coll is None:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'getMore.collection' is missing but a required field")
    ns = f"{request.db}.{coll}"
    batch_size = params.field(cmd, "batchSize", "integer", "getMore")
    cursors: CursorManager = request.cursors
    cursor = cursors.get(int(cursor_id), ns)
    try:
        failpoints.after_cursor_checkout(request, cmd, ns)
        if "maxTimeMS" in cmd and not cursor.await_data:
            raise CommandError(ErrorCode.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
        op = interrupt.current()
        if op is not None:
            op.cursor = cursor
            cursor.operation = op
            if cursor.time_left is not None:
                op.deadline = time.monotonic() + cursor.time_left
                failpoints.deadline_set(request, op)
        storage = request.engine.storage
        if cursor.snapshot is not None:  # a readConcern snapshot cursor goes on reading its snapshot
            storage.bind_transaction(cursor.snapshot)
        try:
            mark = storage.cluster_time  # what the batch below can see at least
            batch, done = take_batch(cursor.source, batch_size, measure=over_the_wire(request))
            if not batch and not done and cursor.await_data:
                # A change stream or tailable awaitData cursor with nothing new: wait for a commit
                # (the getMore's maxTimeMS is the await time, one second by default), then look again.
                max_time = cmd.get("maxTimeMS")
                seconds = max_time / 1000.0 if isinstance(max_time, int) and max_time > 0 else AWAIT_SECONDS
                if cursor.stream is not None:
                    cursor.stream.wait(seconds)
                else:
                    storage.end_view()
                    storage.wait_for_entries(mark, seconds)
                batch, done = take_batch(cursor.source, batch_size, measure=over_the_wire(request))
            if op is not None and cursor.time_left is not None:
                cursor.time_left = op.remaining()
        finally:
            if cursor.snapshot is not None:
                storage.bind_transaction(None)
    except BaseException as exc:
        cursors.release(cursor)
        cursors.kill(cursor.id)
        if cursor.stream is not None and isinstance(exc, CommandError):
            cursor.stream.label(exc)  # the change stream error labels, as mongod gives them
        raise
    cursor.returned(len(batch))
    cursors.release(cursor)
    if done or cursor.killed:
        cursors.kill(cursor.id)
    reply: dict[str, Any] = {"nextBatch": batch}
    if cursor.stream is not None:
        reply["postBatchResumeToken"] = cursor.stream.post_batch_token()
    reply.update(id=Int64(0 if done or cursor.killed else cursor.id), ns=ns)
    return {"cursor": reply, "ok": 1.0}


@COMMANDS.register("killCursors")
def cmd_killCursors(request: Any, cmd: Mapping[str, Any]) -> dict[str, Any]:
    ids = params.field(cmd, "cursors", "array", "killCursors", default=[])
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise CommandError(
            ErrorCode.TypeMismatch, "BSON field 'killCursors.cursors' is the wrong type, expected 'long'"
        )
    cursors: CursorManager = request.cursors
    for cursor_id in ids:  # as mongod: the whole command fails if one cursor may not be killed
        cursors.owner_check(int(cursor_id))
    killed: list[Int64] = []
    not_found: list[Int64] = []
    for cursor_id in ids:
        (killed if cursors.kill(int(cursor_id)) else not_found).append(Int64(cursor_id))
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}
