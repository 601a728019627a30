"""A transaction's writes, laid over its snapshot.

A multi-document transaction reads one pinned SQLite snapshot and keeps its
own writes here, in memory, until it commits: for each collection it wrote,
the new version of each changed record (or a tombstone). The store's read
methods (:mod:`foliodb.engine.records`, the engine's one read interface)
merge this over what the snapshot holds, so every read path - finds,
aggregations and their ``$lookup``s, counts, distincts, text search - sees
the snapshot plus the transaction's own writes, and no operator knows it is
in a transaction. Nobody else sees these writes before the commit replays
them through the writer (:mod:`foliodb.engine.transactions`).

Invariants:

* ``rows[rid]`` is the record's BSON as the transaction left it, or None
  for a record it deleted; a rid missing from ``rows`` reads from the
  snapshot. Records the transaction inserted have rids from
  :data:`FIRST_NEW_RID` on (above every stored rid, so scans meet them last,
  as new records come last in natural order); commit gives them real rids.
* ``docs[rid]`` is the decoded document of every live changed record, and
  ``entries`` caches, per index, the sorted (key, rid) entries those
  documents yield: the overlay's side of an index scan.
* A collection created inside the transaction (``pending``) has no table
  yet: everything it holds is here.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterator
from typing import Any

from foliodb.engine.catalog import CollectionInfo, IndexInfo
from foliodb.engine.index_keys import with_rid

FIRST_NEW_RID = 1 << 60

Row = tuple[bytes, int, bytes | None]


class CollectionOverlay:
    """One collection's writes in one transaction."""

    def __init__(self, info: CollectionInfo, pending: bool) -> None:
        self.info = info
        self.pending = pending
        self.rows: dict[int, bytes | None] = {}
        self.docs: dict[int, dict[str, Any]] = {}
        self.inserted: set[int] = set()
        self.replaced: set[int] = set()  # records changed by a replacement (the oplog tells replace from update)
        self.next_rid = FIRST_NEW_RID
        self._entries: dict[int, list[tuple[bytes, int]]] = {}

    # -- writes -------------------------------------------------------------------

    def put(self, rid: int | None, doc: dict[str, Any], data: bytes) -> int:
        """Record a new version of a record (a new record when ``rid`` is None)."""
        if rid is None:
            rid = self.next_rid
            self.next_rid += 1
            self.inserted.add(rid)
        self.rows[rid] = data
        self.docs[rid] = doc
        self._entries.clear()
        return rid

    def remove(self, rid: int) -> None:
        if rid in self.inserted:
            self.inserted.discard(rid)
            del self.rows[rid]
        else:
            self.rows[rid] = None
        self.docs.pop(rid, None)
        self._entries.clear()

    # -- what reads merge -------------------------------------------------------------

    def entries(
        self, index: IndexInfo, keys: Callable[[dict[str, Any]], dict[bytes, Any]], unique: bool
    ) -> list[tuple[bytes, int]]:
        """The sorted (key, rid) entries the live changed documents give ``index``
        (``keys``: its writer's key function; a non-unique key carries its rid)."""
        found = self._entries.get(index.id)
        if found is None:
            found = sorted(
                (key if unique else with_rid(key, rid), rid) for rid, doc in self.docs.items() for key in keys(doc)
            )
            self._entries[index.id] = found
        return found

    def shadows(self, rid: int) -> bool:
        """Does the transaction's version of ``rid`` replace the snapshot's?"""
        return rid in self.rows

    def live_rows(self, reverse: bool) -> list[tuple[int, bytes]]:
        return sorted(((rid, data) for rid, data in self.rows.items() if data is not None), reverse=reverse)

    def count_change(self) -> int:
        """Records added minus snapshot records deleted."""
        deleted = sum(1 for rid, data in self.rows.items() if data is None)
        return len(self.inserted) - deleted


def merge_scan(
    main: Iterator[tuple[int, bytes]], overlay: CollectionOverlay, reverse: bool, keep: Callable[[bytes], bool]
) -> Iterator[tuple[int, bytes]]:
    """A record-id-order scan of the snapshot (``main``) with the overlay's records laid over it."""
    mine = [(rid, data) for rid, data in overlay.live_rows(reverse) if keep(data)]
    theirs = ((rid, data) for rid, data in main if not overlay.shadows(rid))
    key: Callable[[tuple[int, bytes]], int] = (lambda row: -row[0]) if reverse else (lambda row: row[0])
    yield from heapq.merge(theirs, mine, key=key)


def in_range(entries: list[tuple[bytes, int]], start: bytes, stop: bytes | None) -> list[tuple[bytes, int]]:
    """The entries with start <= key < stop (stop None: to the end), in key order."""
    lo = bisect.bisect_left(entries, (start,))
    hi = len(entries) if stop is None else bisect.bisect_left(entries, (stop,))
    return entries[lo:hi]


def merge_index_rows(
    main: list[Row],
    mine: list[tuple[bytes, int]],
    overlay: CollectionOverlay,
    forward: bool,
    keys_only: bool,
    limit: int,
) -> list[Row]:
    """Up to ``limit`` index rows in key order (or its reverse): the snapshot's
    (``main``, those of records the overlay shadows left out) and the overlay's."""
    theirs = [row for row in main if not overlay.shadows(row[1])]
    ours: list[Row] = [(key, rid, None if keys_only else overlay.rows[rid]) for key, rid in mine]
    if not forward:
        ours.reverse()
    merged = heapq.merge(theirs, ours, key=lambda row: row[0], reverse=not forward)
    out: list[Row] = []
    for row in merged:
        out.append(row)
        if len(out) == limit:
            break
    return out
