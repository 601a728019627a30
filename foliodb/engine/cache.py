"""The decoded-document cache: whole collections kept decoded for scans.

A collection scan spends most of its time decoding BSON into dicts that its
filter then mostly rejects. As WiredTiger keeps recently read data in its
cache, this cache keeps a collection's documents decoded: a scan that finds
its collection here evaluates its compiled filter (and a sort its keys) on
documents decoded once, and decodes afresh, from the BSON kept beside each
document, only what it hands to a caller, so no caller ever holds (or
changes) the cache's own dicts.

An entry is one collection's whole content in one snapshot::

    collection id -> Entry(since, rows, size, haystack)
    rows: [(record id, BSON bytes, decoded document)] in record-id order
    haystack: the rows' BSON end to end (Haystack), where a scan with needles
      finds its candidate rows with one search of the bytes

``since`` is a commit count (:attr:`Storage.commits`): the entry holds the
collection as every snapshot stamped ``since`` or later sees it. Invariants,
with a view's stamp the commit count read before its read transaction began
(so a snapshot holds at least the commits up to its stamp):

* when a write changes a record of a collection (inside its SQLite
  transaction, so before its commit), :meth:`writing` marks the collection
  as being written and notes the record's id; after the write ends,
  :meth:`write_ended` records the commit count as the collection's last
  write (after a rollback or a failed commit, one more: newer than any
  stamp yet) and clears the mark. A committed write leaves the entry in
  place with one more *delta* (its commit count, the ids of the records it
  changed); a rolled back one, a change of unknown records (a truncation)
  or more changed records pending than :func:`patch_limit` drop the entry;
* every write committed after an entry's ``since`` is one of its deltas:
  a reader stamped ``S`` uses an entry with ``since <= S`` unless a write
  to the collection is committing (between its COMMIT and its
  :meth:`write_ended`: the reader's snapshot may hold it, and its delta is
  not there yet); a write that has not begun to commit is in no snapshot a
  reader holds. The reader reads the records the deltas name from its own
  snapshot (:meth:`Entry.patched`: whatever a record is there - changed,
  gone, back after a rolled back savepoint - is what the reader sees, so a
  delta the snapshot does not hold changes nothing) and puts the patched
  rows back as of ``S``, the deltas newer than ``S`` (which its snapshot
  may hold or not) and those that came since still pending;
* rows read from a snapshot stamped ``S`` go in (as ``since = S``) only if
  the collection is not being written and its last write is at most ``S``:
  otherwise a write landed between the stamp and the snapshot the rows came
  from, and a reader stamped in between would see it (only an entry keeps
  writes' deltas). A write's own view (inside :meth:`Storage.write`) uses
  and fills the cache only for a collection that write has not changed,
  stamped with the newest commit (it holds the writer lock: its view is the
  newest committed state); a transaction that wrote the collection (its
  reads go through its overlay) never does.
* a scan with *needles* (equalities SQLite tests on the raw BSON, skipping
  most records undecoded) builds an entry only when it is the
  :data:`NEEDLE_SCANS_BEFORE_BUILD`-th such scan of the collection without
  an entry (:meth:`needle_scan_due`): a build decodes every document, about
  what that many needle scans cost, and a warm entry (the needles then tested
  on the bytes in Python) saves about half of each later one, so a
  collection pays for its entry only when it is read far more than written.
* a build that a write overtook (refused by :meth:`put`) marks the
  collection busy: scans build no entry for it until one finds no write
  since the scan before it (:meth:`room_for`), so a collection written
  faster than it is scanned costs its readers no second decoding of every
  document, nor the collector a heap of dicts thrown away.

Memory: an entry counts its BSON bytes, :data:`DECODED_FACTOR` times them
for the documents (measured: an order of the benchmarks' is 7.0 times its
BSON size decoded) and :data:`ROW_OVERHEAD` a record. The total stays under
``max_bytes`` (the ``documentCacheSizeMB`` parameter; 0 switches the cache
off): the least recently used entries are evicted first, and a collection
too large for the cache is not cached (its scans read SQLite as without a
cache) until the size changes.

Admission (as TinyLFU's): a build that fits in the free room goes ahead; one
that would evict entries goes ahead only if its collection was scanned more
often, lately, than each entry it would evict (:meth:`admits`; the scan
counts halve every :data:`SCANS_PER_AGE` scans or more, so the past fades). Scans
that cycle over more collections than fit would otherwise evict every entry
before its next use, each scan paying a build (about twice a plain scan)
for nothing; refused, the first collections stay cached and the others read
SQLite as without a cache. The price: a collection newly in use waits until its
scans outnumber, as they fade, those of the entry it would replace - at worst
scanned as without a cache, where eviction alone at worst builds at every scan
(measured at 1M orders in 50 collections: 3.5 filter scans a second where
SQLite alone gives 8.1).
"""

from __future__ import annotations

import contextlib
import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import Any

import bson

from foliodb.engine.catalog import CODEC

DEFAULT_SIZE_MB = 256
DECODED_FACTOR = 7
ROW_OVERHEAD = 160  # the row's tuple, its slot in the list, the record id
NEEDLE_SCANS_BEFORE_BUILD = 32
# Scans between two halvings of every collection's scan count: at least this many, and
# AGE_SCANS_PER_COLLECTION for each collection counted, so that a cycle of scans over many
# collections sees each one's count halved only after several visits to it (halved between
# two visits, all counts stay near 1 and every visit outnumbers some entry: the churn again).
SCANS_PER_AGE = 256
AGE_SCANS_PER_COLLECTION = 8

# Records changed since an entry went in, beyond which a write drops the entry instead: at
# least this many, or 1/PATCH_SHARE of the entry's rows. Patching reads and decodes each one
# where a build decodes them all; the ids wait in memory, a few dozen bytes each.
PATCH_MIN = 64
PATCH_SHARE = 2

Row = tuple[int, bytes, dict[str, Any]]
Delta = tuple[int, frozenset[int]]  # a committed write: (its commit count, the record ids it changed)
_rid = itemgetter(0)


def patch_limit(rows: int) -> int:
    """How many changed records an entry of ``rows`` rows may wait to be patched with."""
    return max(PATCH_MIN, rows // PATCH_SHARE)


@dataclass(frozen=True)
class Haystack:
    """Rows' BSON end to end: row ``i``'s bytes are ``blob[starts[i]:starts[i + 1]]``."""

    blob: bytes
    starts: list[int]

    @classmethod
    def of(cls, rows: list[Row]) -> Haystack:
        sizes = (len(data) for _, data, _ in rows)
        return cls(b"".join([data for _, data, _ in rows]), list(accumulate(sizes, initial=0)))

    def size(self) -> int:
        """What it holds, counted as the cache counts: the bytes, and an int and a slot a row."""
        return len(self.blob) + HAYSTACK_ROW * len(self.starts)

    def rows_holding(self, needles: list[bytes]) -> list[int]:
        """The indices, in order, of every row whose bytes hold one of ``needles`` - and
        perhaps of a row that a needle straddles into the next: callers test each row's own
        bytes. One search of the bytes, jumping to the next row at each hit."""
        blob, starts = self.blob, self.starts
        find = blob.find
        found: set[int] = set()
        for needle in needles:
            at = find(needle)
            while at >= 0:
                row = bisect_right(starts, at) - 1
                found.add(row)
                at = find(needle, starts[row + 1])
        return sorted(found)


class Entry:
    """A collection's rows as of ``since``, with the writes committed since (``pending``,
    oldest first, appended under the cache's lock while the entry is current; a reader works
    with the ones it saw in :meth:`DocumentCache.get`); ``haystack`` is built when a scan
    first needs it."""

    __slots__ = ("haystack", "pending", "pending_rids", "rows", "since", "size")

    def __init__(
        self, since: int, rows: list[Row], size: int, haystack: Haystack | None, pending: Iterable[Delta] = ()
    ) -> None:
        self.since = since
        self.rows = rows
        self.size = size
        self.haystack = haystack
        self.pending: list[Delta] = list(pending)
        self.pending_rids = sum(len(rids) for _, rids in self.pending)

    def patched(self, deltas: tuple[Delta, ...], fresh: Mapping[int, bytes]) -> tuple[list[Row], int]:
        """The rows with each record ``deltas`` changed as ``fresh`` has it (read from a
        snapshot holding every delta; a record absent from it is gone), and their size."""
        rows = list(self.rows)
        size = self.size
        decode = bson.decode
        for rid in changed(deltas):  # in order: records added past the end are appended
            at = bisect_left(rows, rid, key=_rid)
            old = rows[at][1] if at < len(rows) and rows[at][0] == rid else None
            data = fresh.get(rid)
            if data == old:
                continue
            if old is not None:
                size -= _counted(old)
                if data is None:
                    del rows[at]
                    continue
            if data is None:
                continue
            size += _counted(data)
            row = (rid, data, decode(data, CODEC))
            if old is None:
                rows.insert(at, row)
            else:
                rows[at] = row
        return rows, size


def changed(deltas: tuple[Delta, ...]) -> list[int]:
    """The ids of the records ``deltas`` changed, in order."""
    return sorted(frozenset().union(*(rids for _, rids in deltas)))


def _counted(data: bytes) -> int:
    """What one row adds to an entry's size, its share of the haystack included."""
    return entry_size(1, len(data)) - HAYSTACK_ROW


def row_size(data: bytes) -> int:
    """What one cached record is counted as holding."""
    return len(data) * (1 + DECODED_FACTOR) + ROW_OVERHEAD


HAYSTACK_ROW = 40  # a row's start in the haystack: an int and a list slot


def entry_size(records: int, total_bytes: int) -> int:
    """What an entry of ``records`` rows of ``total_bytes`` of BSON is counted as holding:
    their :func:`row_size`, and the haystack's copy of the bytes and starts."""
    return total_bytes * (2 + DECODED_FACTOR) + records * (ROW_OVERHEAD + HAYSTACK_ROW) + HAYSTACK_ROW


class DocumentCache:
    """One storage's cache (see the module docstring)."""

    def __init__(self, max_bytes: int = DEFAULT_SIZE_MB * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._lock = threading.Lock()  # guards every change below; lookups read without it
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._writing: set[int] = set()  # collections the open write has changed
        self._last_write: dict[int, int] = {}
        self._too_big: set[int] = set()  # collections found larger than the cache
        # Collections whose last build was wasted (a write landed while it ran): the last write
        # each build attempt saw (see room_for).
        self._busy: dict[int, int] = {}
        self._needle_scans: dict[int, int] = {}  # needle scans without an entry since the last build's turn
        self._scans: dict[int, int] = {}  # scans of each collection lately (halved every SCANS_PER_AGE)
        self._scans_to_age = SCANS_PER_AGE
        # The records the open write changed in each collection it found an entry of (and has
        # not dropped it since).
        self._touched: dict[int, set[int]] = {}
        # Set by the storage just before the open write's COMMIT: a reader whose snapshot began
        # before then does not see the write, a later one may.
        self.committing = False
        self.hits = self.misses = self.builds = self.evictions = self.refusals = self.patches = 0

    def get(self, collection_id: int, stamp: int) -> tuple[Entry, tuple[Delta, ...]] | None:
        """The collection's entry for a reader stamped ``stamp`` and the writes since its rows
        that the reader patches them with (:meth:`Entry.patched`), or None."""
        self._count_scan(collection_id)
        # A write to the collection that has not begun to commit is in no reader's snapshot (each
        # began before this call). In this order: a write that ends meanwhile has its delta in the
        # entry read after, and the delta's commit is newer than the stamp of any snapshot that
        # could have missed it.
        if collection_id in self._writing and self.committing:
            self.misses += 1
            return None
        entry = self._entries.get(collection_id)
        if entry is None or entry.since > stamp:
            self.misses += 1
            return None
        deltas = tuple(entry.pending)
        self.hits += 1
        with contextlib.suppress(KeyError):  # dropped meanwhile by a write: still this reader's snapshot
            self._entries.move_to_end(collection_id)
        return entry, deltas

    def patched(self, collection_id: int, entry: Entry, done: int, rows: list[Row], size: int, stamp: int) -> None:
        """``rows`` (of ``size``) are ``entry`` patched with its first ``done`` pending writes
        by a reader stamped ``stamp``: they replace it, as of the stamp, unless the entry went
        meanwhile. Those writes newer than the stamp stay pending (the reader's snapshot may
        hold them or not), with the writes that came since."""
        with self._lock:
            if self._entries.get(collection_id) is not entry:
                return
            self.bytes += size - entry.size
            pending = [delta for delta in entry.pending[:done] if delta[0] > stamp] + entry.pending[done:]
            self._entries[collection_id] = Entry(max(entry.since, stamp), rows, size, None, pending)
            self.patches += 1
            self._evict()

    def room_for(self, collection_id: int) -> int:
        """How many bytes a new entry of the collection may take; 0: do not build one.

        Not while the collection is written faster than it is scanned: once a build was
        wasted (a write landed while it ran), the next builds wait for a scan that finds no
        write since the one before it. A wasted build decodes the whole collection twice over
        (once for the cache, once for the caller) and leaves tens of thousands of dicts to the
        cyclic collector, whose full collections stop every thread."""
        if collection_id in self._too_big or collection_id in self._writing:
            return 0
        busy = self._busy.get(collection_id)
        if busy is not None:
            last = self._last_write.get(collection_id, 0)
            with self._lock:
                if last != busy:
                    self._busy[collection_id] = last
                    return 0
                self._busy.pop(collection_id, None)
        return self.max_bytes

    def _count_scan(self, collection_id: int) -> None:
        with self._lock:
            scans = self._scans
            scans[collection_id] = scans.get(collection_id, 0) + 1
            self._scans_to_age -= 1
            if not self._scans_to_age:
                self._scans = {cid: n >> 1 for cid, n in scans.items() if n > 1}
                self._scans_to_age = max(SCANS_PER_AGE, AGE_SCANS_PER_COLLECTION * len(scans))

    def admits(self, collection_id: int, size: int) -> bool:
        """May a build of about ``size`` bytes go ahead? Yes when it fits in the free room,
        or when the collection was scanned more often lately than each entry it would evict
        (see the module docstring); a refusal is counted."""
        with self._lock:
            need = min(size, self.max_bytes) - (self.max_bytes - self.bytes)
            if need <= 0:
                return True
            scans = self._scans.get(collection_id, 0)
            for cid, entry in self._entries.items():  # least recently used first: put()'s victims
                if cid == collection_id:
                    continue
                if self._scans.get(cid, 0) >= scans:
                    self.refusals += 1
                    return False
                need -= entry.size
                if need <= 0:
                    break
            return True

    def needle_scan_due(self, collection_id: int) -> bool:
        """A scan with needles found no entry: may it build one? Yes for every
        :data:`NEEDLE_SCANS_BEFORE_BUILD`-th (an entry outlives writes: see the deltas)."""
        with self._lock:
            scans = self._needle_scans.get(collection_id, 0) + 1
            if scans < NEEDLE_SCANS_BEFORE_BUILD:
                self._needle_scans[collection_id] = scans
                return False
            self._needle_scans.pop(collection_id, None)
            return True

    def haystack(self, collection_id: int, rows: list[Row]) -> Haystack | None:
        """The haystack of the entry ``rows`` (from :meth:`get`) belong to, while it is cached."""
        entry = self._entries.get(collection_id)
        if entry is None or entry.rows is not rows:
            return None
        if entry.haystack is not None:
            return entry.haystack
        haystack = Haystack.of(rows)  # a patched entry's: built at the first scan that needs it
        entry.haystack = haystack  # the same bytes whoever sets it
        return haystack

    def put(self, collection_id: int, rows: list[Row], size: int, stamp: int, haystack: Haystack) -> None:
        """Keep rows read from a snapshot stamped ``stamp`` (``size`` counting their
        ``haystack`` too), when they may be (see the module docstring)."""
        with self._lock:
            last = self._last_write.get(collection_id, 0)
            if collection_id in self._writing or last > stamp:
                self._busy[collection_id] = last
                return
            self._drop(collection_id)
            self._entries[collection_id] = Entry(stamp, rows, size, haystack)
            self.bytes += size
            self.builds += 1
            self._evict()

    def too_big(self, collection_id: int) -> None:
        """A build gave up: the collection does not fit (until the size changes)."""
        with self._lock:
            self._too_big.add(collection_id)

    def writing(self, collection_id: int, rids: Iterable[int] | None) -> None:
        """The open write changes (or has just changed, before its commit) the records
        ``rids`` of the collection; None: records it does not name (the entry goes)."""
        touched = self._touched.get(collection_id)
        if touched is not None:
            if rids is not None:
                touched.update(rids)
                return
        elif collection_id in self._writing:
            return  # marked by this write already, with no entry to keep (none can come back meanwhile)
        with self._lock:
            first = collection_id not in self._writing
            self._writing.add(collection_id)
            if first and rids is not None and collection_id in self._entries:
                self._touched[collection_id] = set(rids)  # the entry stays: its delta at the write's end
                return
            self._touched.pop(collection_id, None)
            self._drop(collection_id)

    def write_ended(self, commits: int, committed: bool) -> None:
        """The write ended: committed as commit number ``commits``, or rolled back
        (``committed`` False: nothing changed, or a failed commit, of unknown outcome)."""
        if not self._writing:
            self.committing = False
            return
        with self._lock:
            for collection_id in self._writing:
                self._last_write[collection_id] = commits if committed else commits + 1
                if not committed:
                    self._drop(collection_id)
                    continue
                rids = self._touched.get(collection_id)  # None: the write found no entry, or dropped it
                entry = self._entries.get(collection_id)
                if rids is not None and entry is not None:
                    entry.pending.append((commits, frozenset(rids)))
                    entry.pending_rids += len(rids)
                    if entry.pending_rids > patch_limit(len(entry.rows)):
                        self._drop(collection_id)
            self._touched.clear()
            self._writing.clear()
            self.committing = False  # after the marks go (see get)

    def is_written(self, collection_id: int) -> bool:
        """Has the open write changed the collection?"""
        return collection_id in self._writing

    def _drop(self, collection_id: int) -> None:
        entry = self._entries.pop(collection_id, None)
        if entry is not None:
            self.bytes -= entry.size

    def forget(self, collection_id: int) -> None:
        """The collection is gone (dropped): its entry goes."""
        with self._lock:
            self._drop(collection_id)
            self._too_big.discard(collection_id)
            self._busy.pop(collection_id, None)
            self._needle_scans.pop(collection_id, None)
            self._scans.pop(collection_id, None)

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = max_bytes
            self._too_big.clear()
            self._evict()

    def _evict(self) -> None:
        while self.bytes > self.max_bytes and self._entries:
            _, entry = self._entries.popitem(last=False)
            self.bytes -= entry.size
            self.evictions += 1

    def status(self) -> dict[str, Any]:
        """serverStatus' ``documentCache``."""
        entries = list(self._entries.values())
        return {
            "maxBytes": self.max_bytes,
            "bytes": self.bytes,
            "collections": len(entries),
            "documents": sum(len(entry.rows) for entry in entries),
            "hits": self.hits,
            "misses": self.misses,
            "builds": self.builds,
            "evictions": self.evictions,
            "refusals": self.refusals,
            "patches": self.patches,
        }
