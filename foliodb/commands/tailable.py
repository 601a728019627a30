"""Tailable cursors on capped collections: like ``tail -f``, a cursor that
stays open at its last document and returns the documents inserted after it.

The source remembers the record id it reached; each batch reads the records
after it. It runs out without ending (the cursor stays open, as mongod's does)
and ends only when its position was evicted from the capped collection
(CappedPositionLost) or the collection went away. With ``awaitData`` a
getMore with nothing new waits for the next commit, up to its ``maxTimeMS``
(one second by default), holding no snapshot (see ``cmd_getMore``).

Manual: https://www.mongodb.com/docs/manual/core/tailable-cursors/
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.query import FindSpec
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter
from foliodb.query.projection import compile_projection

BATCH = 256


class PositionedRows(Iterator[dict[str, Any]]):
    """Documents read in batches of (position, BSON) rows after the position
    reached, through a find's filter, skip, limit and projection; running out
    is not the end (a tailable cursor reads again later). Subclasses say how
    rows are read (:meth:`_more`) and decoded (:meth:`_document`)."""

    tailable = False
    last: int  # the position of the last row taken

    def __init__(self, spec: FindSpec, ctx: Context) -> None:
        self.matcher = compile_filter(spec.filter, ctx) if spec.filter else None
        self.projection = compile_projection(spec.projection, ctx, find=True) if spec.projection else None
        self.skip = spec.skip
        self.remaining = spec.limit  # None: no limit
        self.pending: deque[tuple[int, bytes]] = deque()

    def _more(self) -> list[tuple[int, bytes]]:
        """The next rows after ``last``."""
        raise NotImplementedError

    def _document(self, data: bytes) -> dict[str, Any]:
        return bson.decode(data, CODEC)

    def __next__(self) -> dict[str, Any]:
        while self.remaining is None or self.remaining > 0:
            if not self.pending:
                self.pending.extend(self._more())
                if not self.pending:
                    raise StopIteration  # nothing new yet; a tailable cursor stays open
            self.last, data = self.pending.popleft()
            doc = self._document(data)
            if self.matcher is not None and not self.matcher(doc):
                continue
            if self.skip:
                self.skip -= 1
                continue
            if self.remaining is not None:
                self.remaining -= 1
            return self.projection.apply(doc) if self.projection is not None else doc
        raise StopIteration

    @property
    def finished(self) -> bool:
        """A limit reached: unlike running out, this ends a tailable cursor."""
        return self.remaining is not None and self.remaining <= 0


class TailSource(PositionedRows):
    """The documents of a capped collection after a position, again and again."""

    tailable = True  # the cursor layer keeps such a source open when it runs out

    def __init__(self, store_now: Callable[[], CollectionStore | None], spec: FindSpec, ctx: Context) -> None:
        super().__init__(spec, ctx)
        self.store_now = store_now
        self.last = 0  # the record id reached; 0 before the first

    def _more(self) -> list[tuple[int, bytes]]:
        store = self.store_now()
        if store is None:
            raise CommandError(ErrorCode.QueryPlanKilled, "collection dropped while a tailable cursor was open")
        rows = store.rows_from(self.last, BATCH)
        if self.last and (not rows or rows[0][0] != self.last):
            raise CommandError(
                ErrorCode.CappedPositionLost,
                "CollectionScan died due to position in capped collection being deleted. "
                f"Last seen record id: {self.last}",
            )
        return [row for row in rows if row[0] != self.last]


def tail_source(store_now: Callable[[], CollectionStore | None], ns: str, spec: FindSpec, ctx: Context) -> TailSource:
    """A tailable find's source, after MongoDB's checks: a capped collection, natural order."""
    store = store_now()
    if store is None or store.cap_size is None:
        raise CommandError(
            ErrorCode.BadValue, f"error processing query: ns={ns} tailable cursor requested on non capped collection"
        )
    if spec.sort and dict(spec.sort) != {"$natural": 1}:
        raise CommandError(ErrorCode.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
    if spec.hint is not None and not (isinstance(spec.hint, Mapping) and dict(spec.hint) == {"$natural": 1}):
        raise CommandError(ErrorCode.BadValue, "cannot use tailable option with a hint other than {$natural: 1}")
    return TailSource(store_now, spec, ctx)
