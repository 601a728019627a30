"""Sort documents by key bytes, in bounded memory: spill to SQLite, then merge.

``sort_documents(docs, key, limit=..., skip=..., max_memory_bytes=...)``
yields ``docs`` ordered by ``key(doc)`` (plain ``bytes`` order), ties in input
order (every entry carries its input sequence number, so the sort is stable
and merging never compares documents).

Memory: the sorter holds each document as its BSON encoding, and counts
what it holds as the allocator gives it out (:func:`_held_size`): the two
bytes objects (encoding and key) rounded up to the allocator's blocks, the
tuple, the sequence number and the list slot. Holding decoded documents
instead would cost several times their BSON size, uncounted. The spill's
own SQLite page cache is kept small (:data:`SPILL_CACHE_KIB`): a run is
written once and read once, in order, so a page is never wanted again. When the count exceeds
``max_memory_bytes`` the held entries are sorted and written as a *run* (one
table, rows in order) to a private temporary SQLite database; at the end the
runs and what is still held are merged with ``heapq.merge``, reading each run
row by row. At most :data:`FAN_IN` runs are kept: reaching it merges them
into one. So memory stays near ``max_memory_bytes`` whatever the input size.
Without ``allow_disk_use`` the first spill is MongoDB's error 292 instead. The
runs live in a SQLite *temporary database* (``sqlite3.connect("")``): SQLite
unlinks its file as soon as it creates it, so no spill outlives its sort,
whether the sort ends, fails, is killed or its process dies (kill -9
included); the file's space goes back when the connection closes, which the
iterator does when it finishes or is closed. The connection may be used from
any thread, one at a time: a cursor's getMores run on whichever thread serves
them. Documents come back decoded as documents read from
storage are (the engine's codec). The loops check for interruption.

With a ``limit``, only the best ``skip + limit`` entries are held (a heap);
a spilled run is then a full top-k set, and any later key at or beyond its
worst key can never make the cut, so it is dropped on arrival. When the key is
one top-level field's value alone (``numeric``: the field and its direction),
a document whose value and the held worst's are both plain numbers (int,
Int64 or float, not NaN) strictly beyond it is dropped without building its
key: keys order numbers as their values do, so that key would lose too.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

import bson
from bson.int64 import Int64

from foliodb import interrupt
from foliodb.engine.catalog import CODEC
from foliodb.errors import CommandError, ErrorCode

DEFAULT_MAX_MEMORY_BYTES = 100 * 1024 * 1024
FAN_IN = 64  # runs merged at once; more are first merged into one

SPILL_CACHE_KIB = 512  # the spill connection's page cache (SQLite's default: 2,000 KiB)

_Entry = tuple[bytes, int, bytes]  # (key, input sequence, the document's BSON)
# What one held entry costs beyond its two bytes objects: the 3-tuple (64 bytes with its
# collector header), the sequence int (28, in a 32-byte block) and its slot in the list (8).
ENTRY_OVERHEAD = 64 + 32 + 8
# A top-k entry: the _Worst (five slots: 72 bytes), its size int, its heap slot, and the
# entry a spill makes of it (the sequence int shared).
WORST_OVERHEAD = 72 + 32 + 8 + ENTRY_OVERHEAD
# The types whose values order exactly as Python compares them (bool is a type of its own in BSON).
_PLAIN_NUMBERS = frozenset({int, float, Int64})
_BYTES_HEADER = 33  # sys.getsizeof(b"")
_SMALL_REQUEST = 512  # pymalloc's largest block; larger requests go to malloc (8 bytes of header)


def _allocated(size: int) -> int:
    """What an object of ``size`` bytes takes: pymalloc's 16-byte blocks, or malloc's chunk."""
    if size > _SMALL_REQUEST:
        size += 8
    return (size + 15) & ~15


def _held_size(key: bytes, data: bytes, overhead: int = ENTRY_OVERHEAD) -> int:
    """The memory one held entry takes (see the module docstring)."""
    return _allocated(_BYTES_HEADER + len(key)) + _allocated(_BYTES_HEADER + len(data)) + overhead


class _Worst:
    """A heap item ordered worst-first, so a min-heap's top is the entry to evict."""

    __slots__ = ("doc", "key", "seq", "size", "value")

    def __init__(self, key: bytes, seq: int, doc: bytes, size: int, value: int | float | None) -> None:
        self.key = key
        self.seq = seq
        self.doc = doc
        self.size = size
        self.value = value  # the sort field's value when a plain number (see _plain_number)

    def __lt__(self, other: _Worst) -> bool:
        return self.key > other.key or (self.key == other.key and self.seq > other.seq)


class _Spill:
    """Sorted runs in a temporary SQLite database (see the module docstring), opened by the
    first run: every sort has one, so its ``finally`` closes whatever was opened, however
    the sort ends (an input that fails mid-run included)."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None
        self.runs: list[str] = []
        self.next_run = 0

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=OFF")
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute(f"PRAGMA cache_size=-{SPILL_CACHE_KIB}")
        return self._db

    def write(self, entries: Iterable[_Entry]) -> None:
        name = f"run{self.next_run}"
        self.next_run += 1
        self.db.execute(f"CREATE TABLE {name} (key BLOB, seq INTEGER, doc BLOB)")
        self.db.execute("BEGIN")
        self.db.executemany(
            f"INSERT INTO {name} VALUES (?, ?, ?)",
            entries,
        )
        self.db.execute("COMMIT")
        self.runs.append(name)
        if len(self.runs) >= FAN_IN:
            old = self.runs
            self.runs = []
            self.write(self.merged(old))
            for table in old:
                self.db.execute(f"DROP TABLE {table}")

    def read(self, name: str) -> Iterator[_Entry]:
        # Row by row: the cursor steps its statement as the merge asks. (A
        # plain loop, not ``yield from``: closing this generator after the
        # database must not close the cursor.)
        for row in self.db.execute(f"SELECT key, seq, doc FROM {name} ORDER BY rowid"):  # noqa: UP028
            yield row

    def merged(self, names: list[str]) -> Iterator[_Entry]:
        return heapq.merge(*(self.read(name) for name in names))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def _encode(doc: dict[str, Any]) -> bytes:
    return bson.encode(doc, codec_options=CODEC)


def _plain_number(value: Any) -> int | float | None:
    """``value`` if it is an int, Int64 or float other than NaN, else None."""
    if type(value) in _PLAIN_NUMBERS and value == value:
        return value
    return None


def _too_much(max_memory_bytes: int) -> CommandError:
    return CommandError(
        ErrorCode.QueryExceededMemoryLimitNoDiskUseAllowed,
        f"Sort exceeded memory limit of {max_memory_bytes} bytes, but did not opt in to external sorting.",
    )


def sort_documents(
    docs: Iterable[dict[str, Any]],
    key: Callable[[dict[str, Any]], bytes],
    *,
    limit: int | None = None,
    skip: int = 0,
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    allow_disk_use: bool = True,
    numeric: tuple[str, bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """``docs`` in ``key`` order (stable), ``skip`` of them skipped and at most
    ``limit`` returned (None: no limit). Lazy: nothing is read before the
    first ``next``. ``numeric``: (field, descending) when ``key`` is that
    top-level field's value alone (``Sort.plain_field``), for the top-k's
    shortcut (see the module docstring)."""
    if skip < 0 or (limit is not None and limit < 0):
        raise ValueError("skip and limit must not be negative")
    keep = None if limit is None else skip + limit
    spill = _Spill()
    try:
        held: list[_Entry] = []
        if keep is None:
            held = _gather_all(docs, key, max_memory_bytes, allow_disk_use, spill)
        elif keep:
            held = _gather_top(docs, key, keep, max_memory_bytes, allow_disk_use, spill, numeric)
        held.sort()  # sequence numbers are unique: documents are never compared
        merged: Iterator[_Entry] = heapq.merge(spill.merged(spill.runs), held) if spill.runs else iter(held)
        stop = None if limit is None else skip + limit
        for n, (_, _, data) in enumerate(islice(merged, skip, stop)):
            if not n & 255:
                interrupt.check()
            yield bson.decode(data, CODEC)
    finally:
        spill.close()


def _gather_all(
    docs: Iterable[dict[str, Any]],
    key: Callable[[dict[str, Any]], bytes],
    max_memory: int,
    allow_disk: bool,
    spill: _Spill,
) -> list[_Entry]:
    held: list[_Entry] = []
    used = 0
    for seq, doc in enumerate(docs):
        if not seq & 255:
            interrupt.check()
        k = key(doc)
        data = _encode(doc)
        held.append((k, seq, data))
        used += _held_size(k, data)
        if used > max_memory:
            if not allow_disk:
                raise _too_much(max_memory)
            held.sort()
            spill.write(held)
            held = []
            used = 0
    return held


def _gather_top(
    docs: Iterable[dict[str, Any]],
    key: Callable[[dict[str, Any]], bytes],
    keep: int,
    max_memory: int,
    allow_disk: bool,
    spill: _Spill,
    numeric: tuple[str, bool] | None = None,
) -> list[_Entry]:
    heap: list[_Worst] = []
    used = 0
    cutoff: bytes | None = None  # keys >= this cannot make the top ``keep``
    field, descending = numeric if numeric is not None else ("", False)
    for seq, doc in enumerate(docs):
        if not seq & 255:
            interrupt.check()
        value: Any = doc.get(field) if numeric is not None else None
        if value is not None and len(heap) == keep:
            bound: float | None = heap[0].value
            # Strictly beyond the worst held number: its key would be too (ties go to the keys).
            if bound is not None and type(value) in _PLAIN_NUMBERS and (bound > value if descending else bound < value):
                continue
        k = key(doc)
        if cutoff is not None and k >= cutoff:
            continue
        if len(heap) == keep:
            worst = heap[0]
            # A later entry with an equal key loses the tie.
            if k >= worst.key:
                continue
            data = _encode(doc)
            size = _held_size(k, data, WORST_OVERHEAD)
            heapq.heapreplace(heap, _Worst(k, seq, data, size, _plain_number(value)))
            used += size - worst.size
        else:
            data = _encode(doc)
            size = _held_size(k, data, WORST_OVERHEAD)
            heapq.heappush(heap, _Worst(k, seq, data, size, _plain_number(value)))
            used += size
        if used > max_memory:
            if not allow_disk:
                raise _too_much(max_memory)
            if len(heap) == keep:
                cutoff = heap[0].key  # every held key is below the previous cutoff
            spill.write(sorted((e.key, e.seq, e.doc) for e in heap))
            heap = []
            used = 0
    return [(e.key, e.seq, e.doc) for e in heap]
