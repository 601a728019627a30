"""A full-text (``search``) index in memory, derived from its collection, with a watermark.

:class:`TextState` is what one version of one ``search`` index definition knows: the
entries of every document (see :mod:`.mapping`) in segments (:mod:`.segments`) - frozen
ones, then one mutable segment taking new entries - and, per entry ordinal, the record id
it belongs to (``rid_at``), its parent entry (``parent_at``, -1 for a document) and whether
it is live (``live``). A changed document's entries die and new ones are added at the end
(so ordinals follow the order of writes, as Lucene's doc ids do). It follows the change log
as every search index does (:class:`~foliodb.engine.search.follow.Follower`).

* the mutable segment is frozen once it holds :data:`FREEZE_AT` entries;
* :meth:`absorb` (the background thread) merges :data:`MERGE_FACTOR` adjacent frozen
  segments of one tier (:func:`merge_run`: a tier spans a factor of MERGE_FACTOR in size),
  dropping dead entries, as Lucene's log merge policy: an entry is merged once per tier it
  climbs, so building costs O(n log n) and a search looks at a few segments per tier (a cap
  on the segment count instead merges a growing segment again every few freezes, which
  made building quadratic);
* **saved** (:meth:`copy`, :meth:`SavedText.write`, :func:`load`): each frozen segment in a
  file named by its ordinal range and format
  (``<id>-v<version>-seg<first>-<end>-f<format>.npz``, written once),
  the per-ordinal arrays in ``<id>-v<version>-w<watermark>.ords.npz``, then the meta file
  ``<id>-v<version>.meta`` naming the watermark and the segments, written whole and renamed
  over the old one; then the files it no longer names go. The ``.npz`` files are
  compressed (zlib): the packed postings' bytes are mostly 1s and small gaps, and the
  record ids ascend, so they shrink several times over. A restart loads them and replays
  the log from the watermark.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.search.follow import Follower, write_atomically
from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.segments import FrozenSegment, MutableSegment, merge

FREEZE_AT = 4096  # entries in the mutable segment before it is frozen
MERGE_FACTOR = 8
FORMAT = 2  # of the saved files (1: before the postings were packed; such files are rebuilt)


def segment_file(directory: str, index_id: int, version: int, first: int, end: int) -> str:
    """A frozen segment's file, named by its format too: a rebuild after a format change
    writes the same ordinal ranges again, and must not take an old file for a new one."""
    return os.path.join(directory, f"{index_id}-v{version}-seg{first}-{end}-f{FORMAT}.npz")


def level(size: int) -> int:
    """A segment's tier: 0 up to :data:`MERGE_FACTOR` frozen segments' worth of entries, then
    one more per further factor."""
    tier, bound = 0, FREEZE_AT * MERGE_FACTOR
    while size >= bound:
        tier, bound = tier + 1, bound * MERGE_FACTOR
    return tier


def merge_run(sizes: list[int]) -> tuple[int, int] | None:
    """The segments to merge next, as a slice ``(first, end)`` of the list, or None: the first
    :data:`MERGE_FACTOR` adjacent segments of one tier. Each entry is then merged once per
    tier it climbs (a logarithmic number of times), and at most ``MERGE_FACTOR - 1`` segments
    wait per tier."""
    tiers = [level(size) for size in sizes]
    for i in range(len(tiers) - MERGE_FACTOR + 1):
        if len(set(tiers[i : i + MERGE_FACTOR])) == 1:
            return i, i + MERGE_FACTOR
    return None


class TextState(Follower):
    def __init__(self, index_id: int, version: int, definition: TextDefinition) -> None:
        super().__init__(index_id, version)
        self.definition = definition
        self.segments: list[FrozenSegment] = []
        self.mutable = MutableSegment(0)
        self.next_ord = 0
        self.rid_at = np.full(64, -1, dtype=np.int64)
        self.parent_at = np.full(64, -1, dtype=np.int64)
        self.live = np.zeros(64, dtype=bool)
        self.ord_of: dict[int, int] = {}  # rid -> its document's ordinal
        self.children: dict[int, list[int]] = {}  # rid -> its embedded entries' ordinals
        self.cache: dict[Any, Any] = {}  # what searches derived from the current contents
        self.died = 0  # entries that stopped being live (merges drop them, this never goes down)
        self.nested = 0  # embedded documents' entries ever added

    # -- changes -------------------------------------------------------------------------

    def changed(self) -> None:
        self.cache.clear()

    def apply(self, rid: int, data: bytes | None) -> None:
        """The document ``rid`` is now ``data`` (None: deleted)."""
        self.apply_prepared(rid, None if data is None else self._analyze(data))

    def _analyze(self, data: bytes) -> list[Any]:
        return self.definition.analyze(bson.decode(data, CODEC))  # type: ignore[arg-type]

    def prepare(self, rows: Mapping[int, bytes]) -> dict[int, list[Any]]:
        """The changed documents' entries (analysis needs no lock)."""
        return {rid: self._analyze(data) for rid, data in rows.items()}

    def apply_prepared(self, rid: int, prepared: list[Any] | None) -> None:
        """The document ``rid`` now has the entries ``prepared`` (None: deleted)."""
        old = self.ord_of.pop(rid, None)
        if old is not None:
            self.live[old] = False
            self.died += 1
            for child in self.children.pop(rid, ()):
                self.live[child] = False
                self.died += 1
        if prepared is not None:
            ords = self.add(rid, prepared)
            self.ord_of[rid] = ords[0]
            if len(ords) > 1:
                self.children[rid] = ords[1:]
                self.nested += len(ords) - 1
        self.changes += 1
        self.cache.clear()

    def add(self, rid: int, entries: list[Any]) -> list[int]:
        """Add a document's entries (new ordinals, at the end); their ordinals."""
        ords: list[int] = []
        for entry in entries:
            ord_ = self.next_ord
            if ord_ == len(self.rid_at):
                self._grow()
            self.next_ord += 1
            self.rid_at[ord_] = rid
            self.parent_at[ord_] = ords[entry.parent] if entry.parent >= 0 else -1
            self.live[ord_] = True
            self.mutable.add(ord_, entry.terms, entry.numbers, entry.grams)
            ords.append(ord_)
        if len(self.mutable) >= FREEZE_AT:
            self.freeze()
        return ords

    def _grow(self) -> None:
        size = len(self.rid_at) * 2
        for name, fill in (("rid_at", -1), ("parent_at", -1), ("live", False)):
            old = getattr(self, name)
            new = np.full(size, fill, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def freeze(self) -> None:
        if len(self.mutable):
            self.segments.append(self.mutable.freeze())
        self.mutable = MutableSegment(self.next_ord)

    def __len__(self) -> int:
        """The documents the index holds."""
        return len(self.ord_of)

    def pending(self) -> int:
        """The entries of the next merge the background thread has to do (new entries are
        searchable as soon as they are added: only merges wait)."""
        with self.lock:
            run = merge_run([len(s) for s in self.segments])
            return 0 if run is None else sum(len(s) for s in self.segments[run[0] : run[1]])

    def absorb(self) -> int:
        """Merge one run of segments (see the module docstring); the entries merged. The lock
        is held only to choose the run and to swap the merged segment in: the merge reads
        frozen segments and a copy of the live mask, so searches go on meanwhile (an entry
        dying during the merge is kept in it, dead: a search masks it as in any segment)."""
        with self.lock:
            run = merge_run([len(s) for s in self.segments])
            if run is None:
                return 0
            first, end = run
            merging = self.segments[first:end]
            live = self.live[: self.next_ord].copy()
        merged = merge(merging, live)
        with self.lock:
            # Only this method takes segments out (freezing appends after them), so the run
            # is where it was.
            self.segments[first:end] = [merged]
            self.cache.clear()
        return sum(len(s) for s in merging)

    # -- saving --------------------------------------------------------------------------

    def _meta(self, directory: str) -> str:
        return os.path.join(directory, f"{self.index_id}-v{self.version}.meta")

    def _segment_file(self, directory: str, segment: FrozenSegment) -> str:
        return segment_file(directory, self.index_id, self.version, segment.first, segment.end)

    def _ords_file(self, directory: str, watermark: int) -> str:
        return os.path.join(directory, f"{self.index_id}-v{self.version}-w{watermark}.ords.npz")

    def copy(self) -> SavedText:
        """Under the lock: the frozen segments (the mutable one frozen first) and the per-ordinal
        arrays, so the files are written without holding the lock. Only the live mask is
        copied: an ordinal's record id and parent never change once given (new ones go past
        ``next_ord``, and growing makes new arrays), so views of those stay as they are."""
        self.freeze()
        n = self.next_ord
        arrays = (self.rid_at[:n], self.parent_at[:n], self.live[:n].copy())
        return SavedText(self, self.watermark, self.changes, list(self.segments), arrays)


class SavedText:
    """A state's contents at one watermark, being written to its files."""

    def __init__(
        self, state: TextState, watermark: int, changes: int, segments: list[FrozenSegment], arrays: tuple[Any, ...]
    ) -> None:
        self.state, self.watermark, self.changes = state, watermark, changes
        self.segments, self.arrays = segments, arrays

    def write(self, directory: str) -> None:
        """Segment files not yet written, the ordinals file, then the meta file naming them (a
        crash at any point leaves the meta file naming complete files); then stale files go."""
        state = self.state
        os.makedirs(directory, mode=0o700, exist_ok=True)
        keep = {os.path.basename(state._meta(directory))}
        for segment in self.segments:
            path = state._segment_file(directory, segment)
            keep.add(os.path.basename(path))
            if not os.path.exists(path):
                write_atomically(path, lambda f, s=segment: np.savez_compressed(f, **s.arrays()))
        ords = state._ords_file(directory, self.watermark)
        keep.add(os.path.basename(ords))
        rid_at, parent_at, live = self.arrays
        write_atomically(ords, lambda f: np.savez_compressed(f, rid_at=rid_at, parent_at=parent_at, live=live))
        ranges = [[s.first, s.end] for s in self.segments]
        meta = bson.encode({"format": FORMAT, "type": "search", "watermark": self.watermark, "segments": ranges})
        write_atomically(state._meta(directory), lambda f: f.write(meta))
        prefix = f"{state.index_id}-v{state.version}"
        for name in os.listdir(directory):
            if name.startswith(prefix + "-") and name not in keep:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))
        state.mark_saved(self.watermark, self.changes)


def load(directory: str, index_id: int, version: int, definition: TextDefinition) -> TextState | None:
    """The state saved for this index version, or None (no files, or unreadable ones)."""
    state = TextState(index_id, version, definition)
    try:
        with open(state._meta(directory), "rb") as f:
            meta = bson.decode(f.read())
        if meta.get("format") != FORMAT or meta.get("type") != "search":
            return None
        watermark = int(meta["watermark"])
        for first, end in meta["segments"]:
            path = segment_file(directory, index_id, version, first, end)
            with np.load(path) as saved:
                state.segments.append(FrozenSegment.from_arrays({k: saved[k] for k in saved.files}))
        with np.load(state._ords_file(directory, watermark)) as saved:
            rid_at, parent_at, live = saved["rid_at"], saved["parent_at"], saved["live"]
    except (OSError, ValueError, KeyError, TypeError, bson.errors.BSONError):
        return None
    n = len(rid_at)
    size = max(64, 1 << max(n, 1).bit_length())
    state.rid_at = np.full(size, -1, dtype=np.int64)
    state.parent_at = np.full(size, -1, dtype=np.int64)
    state.live = np.zeros(size, dtype=bool)
    state.rid_at[:n], state.parent_at[:n], state.live[:n] = rid_at, parent_at, live
    state.next_ord = n
    state.died = n - int(live.sum())
    state.nested = int((parent_at >= 0).sum())
    state.mutable = MutableSegment(n)
    for ord_ in np.flatnonzero(live).tolist():
        rid, parent = int(rid_at[ord_]), int(parent_at[ord_])
        if parent < 0:
            state.ord_of[rid] = ord_
        else:
            state.children.setdefault(rid, []).append(ord_)
    state.watermark = state.saved = state.history_floor = watermark
    state.ready = state.loaded = True
    return state
