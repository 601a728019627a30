"""Server-side cursors: open result streams, their ids, batches and timeouts.

A cursor is a Python iterator of result documents plus its namespace. The
first batch is produced by the command that opened it; ``getMore`` pulls the
next batches. A cursor idle for 10 minutes (MongoDB's
``cursorTimeoutMillis``) is closed unless it was opened with
``noCursorTimeout``.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson import Int64
from bson.raw_bson import RawBSONDocument

from foliodb.commands import params
from foliodb.commands.registry import COMMANDS
from foliodb.engine.catalog import CODEC
from foliodb.errors import CommandError, ErrorCode

# The reply batch limit: MongoDB stops a batch at 16 MiB of documents; the
# default first batch of find/aggregate is 101 documents.
DEFAULT_FIRST_BATCH = 101
CURSOR_TIMEOUT_SECONDS = 600.0
MAX_BATCH_BYTES = 16 * 1024 * 1024
RAW = bson.CodecOptions(document_class=RawBSONDocument)


class Lookahead(Iterator[dict[str, Any]]):
    """A result stream that can tell it is exhausted without losing a document.

    A batch that fills up exactly at the last result would otherwise leave a
    cursor open that only the next getMore finds empty; MongoDB's plans know
    their end (a limit reached, a sort drained) and answer cursor id 0 at once.
    """

    def __init__(self, source: Iterator[dict[str, Any]]) -> None:
        self.source = source
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
        try:
            self.pending.append(next(self.source))
        except StopIteration:
            return True
        return False

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
    lsid: Any = None


class CursorManager:
    def __init__(self) -> None:
        self._cursors: dict[int, Cursor] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(random.randrange(1 << 40, 1 << 50))

    def open(self, ns: str, source: Iterator[dict[str, Any]], **options: Any) -> Cursor:
        lookahead = source if isinstance(source, Lookahead) else Lookahead(source)
        cursor = Cursor(next(self._ids), ns, lookahead, last_used=time.monotonic(), **options)
        with self._lock:
            self._reap()
            self._cursors[cursor.id] = cursor
        return cursor

    def get(self, cursor_id: int, ns: str) -> Cursor:
        with self._lock:
            cursor = self._cursors.get(cursor_id)
        if cursor is None:
            raise CommandError(ErrorCode.CursorNotFound, f"cursor id {cursor_id} not found")
        if cursor.ns != ns:
            raise CommandError(
                ErrorCode.Unauthorized,
                f"Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {cursor.ns}",
            )
        cursor.last_used = time.monotonic()
        return cursor

    def kill(self, cursor_id: int) -> bool:
        with self._lock:
            cursor = self._cursors.pop(cursor_id, None)
        if cursor is None:
            return False
        cursor.source.close()
        return True

    def kill_all(self) -> None:
        for cursor_id in list(self._cursors):
            self.kill(cursor_id)

    def _reap(self) -> None:
        now = time.monotonic()
        for cursor in list(self._cursors.values()):
            if not cursor.no_timeout and now - cursor.last_used > CURSOR_TIMEOUT_SECONDS:
                self._cursors.pop(cursor.id, None)

    def __len__(self) -> int:
        return len(self._cursors)


def take_batch(source: Lookahead, size: int | None, measure: bool = False) -> tuple[list[Any], bool]:
    """Up to ``size`` documents (None: no count limit) and whether the
    source is exhausted. With ``measure`` (replies that go over the wire) the
    documents are encoded here, once, and a batch stops before 16 MiB, as
    MongoDB's do: a reply must fit the 48 MB message limit."""
    if size is not None and size <= 0:
        size = None
    if measure:
        return _take_measured(source, size)
    batch: list[Any] = []
    append = batch.append
    if size is None:
        # Without a count limit, stop at the reply size limit instead.
        total = 0
        for doc in source:
            append(doc)
            total += 200  # an estimate: in-process replies are not bound by the message limit
            if total >= MAX_BATCH_BYTES:
                return batch, source.exhausted()
        return batch, source.ran_out()
    for doc in itertools.islice(source, size):
        append(doc)
    if len(batch) < size:
        return batch, source.ran_out()
    return batch, source.exhausted()


def _take_measured(source: Lookahead, size: int | None) -> tuple[list[Any], bool]:
    batch: list[Any] = []
    total = 0
    for doc in source:
        data = bson.encode(doc, codec_options=CODEC)
        if batch and total + len(data) > MAX_BATCH_BYTES:
            source.pending.append(doc)  # the next batch starts with it
            return batch, False
        batch.append(RawBSONDocument(data, RAW))
        total += len(data)
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
    lookahead = Lookahead(source)
    batch, done = take_batch(lookahead, batch_size, measure=over_the_wire(request))
    cursor_id = 0
    if not done and not single_batch:
        cursor_id = request.cursors.open(ns, lookahead, **options).id
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
    cursor = request.cursors.get(int(cursor_id), ns)
    try:
        batch, done = take_batch(cursor.source, batch_size, measure=over_the_wire(request))
    except BaseException:
        request.cursors.kill(cursor.id)
        raise
    if done:
        request.cursors.kill(cursor.id)
    return {"cursor": {"nextBatch": batch, "id": Int64(0 if done else cursor.id), "ns": ns}, "ok": 1.0}


@COMMANDS.register("killCursors")
def cmd_killCursors(request: Any, cmd: Mapping[str, Any]) -> dict[str, Any]:
    ids = params.field(cmd, "cursors", "array", "killCursors", default=[])
    killed: list[Int64] = []
    not_found: list[Int64] = []
    for cursor_id in ids:
        (killed if request.cursors.kill(int(cursor_id)) else not_found).append(Int64(cursor_id))
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}
