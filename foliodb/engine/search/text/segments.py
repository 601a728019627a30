"""Segments: the inverted lists of a range of entry ordinals, mutable or frozen.

Every indexed entry (a document, or one element of an ``embeddedDocuments`` array) has an
*ordinal*: an integer given once, in the order entries are added, never reused. A segment
holds the entries of one range of ordinals ``[first, end)``, and per key (see
:mod:`.mapping`):

* **postings**: per term, the ordinals holding it (ascending), how often (``tf``), and at
  which positions;
* **lengths**: per ordinal holding the key, its number of distinct positions (Lucene's field
  length, what BM25's norm encodes);
* **columns**: per numeric key, (ordinal, value) pairs in ordinal order.

:class:`MutableSegment` takes new entries (dicts of lists; an autocomplete key's grams, fifty
a title, in flat arrays of numbered grams: :class:`_GramPostings`);
:meth:`MutableSegment.freeze` turns it into a :class:`FrozenSegment` of numpy arrays (a CSR
layout per key: ``starts`` into ``ords``/``tfs``, ``pos_starts`` into ``positions``), and
:func:`merge` joins adjacent frozen segments, leaving out ordinals no longer live. A segment
never changes once frozen, so a merge runs without the index's lock and searches go on
meanwhile. Whether an ordinal is live is not the segment's business: the index keeps one
mask.
"""

from __future__ import annotations

import array
import bisect
import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from foliodb.engine.search.numeric import np


def _empty(dtype: Any) -> Any:
    return np.zeros(0, dtype=dtype)


def positional(key: str) -> bool:
    """Whether a key keeps term positions: analyzed strings do (phrases read them); grams,
    tokens and the other exact values do not (nothing reads them)."""
    return "\x00" not in key or "\x00m:" in key


class MutableSegment:
    def __init__(self, first: int) -> None:
        self.first = self.end = first
        # key -> term -> (ords, tfs, positions per posting: only for positional keys)
        self.postings: dict[str, dict[str, tuple[list[int], list[int], list[tuple[int, ...]]]]] = {}
        self.lengths: dict[str, dict[int, int]] = {}
        self.columns: dict[str, tuple[list[int], list[float]]] = {}
        self.grams: dict[str, _GramPostings] = {}  # autocomplete keys (never in ``postings``)

    def __len__(self) -> int:
        return self.end - self.first

    def add(
        self,
        ord_: int,
        terms: dict[str, list[tuple[str, int]]],
        numbers: dict[str, list[float]],
        grams: dict[str, list[str]],
    ) -> None:
        self.end = ord_ + 1
        for key, made in grams.items():
            gram_postings = self.grams.get(key)
            if gram_postings is None:
                gram_postings = self.grams[key] = _GramPostings()
            gram_postings.add(ord_, made)
        for key, pairs in terms.items():
            postings = self.postings.get(key)
            if postings is None:
                postings = self.postings[key] = {}
                self.lengths[key] = {}
            if len(pairs) == 1:  # most often: one term (``exists``, a token, a one-word string)
                term, position = pairs[0]
                entry = postings.get(term)
                if entry is None:
                    postings[term] = entry = ([], [], [])
                entry[0].append(ord_)
                entry[1].append(1)
                if positional(key):
                    entry[2].append((position,))
                self.lengths[key][ord_] = 1
                continue
            if positional(key):
                by_term: dict[str, list[int]] = {}
                for term, position in pairs:
                    found = by_term.get(term)
                    if found is None:
                        by_term[term] = [position]
                    else:
                        found.append(position)
                for term, positions in by_term.items():
                    entry = postings.get(term)
                    if entry is None:
                        postings[term] = ([ord_], [len(positions)], [tuple(positions)])
                    else:
                        entry[0].append(ord_)
                        entry[1].append(len(positions))
                        entry[2].append(tuple(positions))
            else:
                for term, tf in Counter(term for term, _ in pairs).items():
                    entry = postings.get(term)
                    if entry is None:
                        postings[term] = ([ord_], [tf], [])
                    else:
                        entry[0].append(ord_)
                        entry[1].append(tf)
            self.lengths[key][ord_] = len({p for _, p in pairs})
        for key, values in numbers.items():
            column = self.columns.setdefault(key, ([], []))
            column[0].extend([ord_] * len(values))
            column[1].extend(values)

    # -- reading (the same methods as FrozenSegment) ---------------------------------------

    def key_names(self) -> Iterable[str]:
        return [*self.postings, *self.grams]

    def terms(self, key: str) -> Sequence[str]:
        grams = self.grams.get(key)
        if grams is not None:
            return sorted(grams.ids)
        return sorted(self.postings.get(key, {}))

    def lookup(self, key: str, term: str) -> tuple[Any, Any]:
        grams = self.grams.get(key)
        if grams is not None:
            return grams.lookup(term)
        entry = self.postings.get(key, {}).get(term)
        if entry is None:
            return _empty(np.int64), _empty(np.int64)
        return np.asarray(entry[0], dtype=np.int64), np.asarray(entry[1], dtype=np.int64)

    def positions(self, key: str, term: str) -> list[tuple[int, ...]]:
        grams = self.grams.get(key)
        if grams is not None:
            return [()] * len(grams.lookup(term)[0])
        entry = self.postings.get(key, {}).get(term)
        if entry is None:
            return []
        return entry[2] if positional(key) else [()] * len(entry[0])

    def key_lengths(self, key: str) -> tuple[Any, Any]:
        grams = self.grams.get(key)
        lengths = grams.lengths if grams is not None else self.lengths.get(key)
        if not lengths:
            return _empty(np.int64), _empty(np.int64)
        return np.fromiter(lengths.keys(), np.int64, len(lengths)), np.fromiter(
            lengths.values(), np.int64, len(lengths)
        )

    def column(self, key: str) -> tuple[Any, Any]:
        column = self.columns.get(key)
        if column is None:
            return _empty(np.int64), _empty(np.float64)
        return np.asarray(column[0], dtype=np.int64), np.asarray(column[1], dtype=np.float64)

    def freeze(self) -> FrozenSegment:
        keys: dict[str, Any] = {}
        for key, postings in self.postings.items():
            terms = sorted(postings)
            entries = [postings[t] for t in terms]
            starts = np.zeros(len(terms) + 1, dtype=np.int64)
            np.cumsum([len(e[0]) for e in entries], out=starts[1:])
            total = int(starts[-1])
            runs = chain.from_iterable(e[2] for e in entries)
            positions = np.fromiter(chain.from_iterable(runs), np.int32)
            lengths = self.lengths[key]
            keys[key] = _KeyArrays(
                terms,
                starts,
                np.fromiter(chain.from_iterable(e[0] for e in entries), np.int32, total),
                np.fromiter(chain.from_iterable(e[1] for e in entries), np.int32, total),
                positions,
                np.fromiter(lengths.keys(), np.int32, len(lengths)),  # added in ascending order
                np.fromiter(lengths.values(), np.int32, len(lengths)),
            )
        for key, grams in self.grams.items():
            keys[key] = grams.frozen()
        columns = {
            key: (np.asarray(o, dtype=np.int32), np.asarray(v, dtype=np.float64))
            for key, (o, v) in self.columns.items()
        }
        return FrozenSegment(self.first, self.end, keys, columns)


class _GramPostings:
    """An autocomplete key's postings in the mutable segment: its grams numbered (``ids``), the
    number of each gram added in one flat integer array (``tids``), and per ordinal how many
    (``lengths``: an entry's grams come in one :meth:`add`, ordinals ascending, so the pairs'
    ordinals are ``lengths`` repeated). Adding a title's fifty-odd grams so runs in C (no
    Python call per gram) rather than as fifty dict operations: a new gram is numbered by
    the count of grams added before it (``setdefault`` with a counter: numbers are unique,
    not dense). A gram repeated in one entry is its ``tf``. Read by scanning those arrays (a
    search right after a write must not pay a sort of the whole segment), or, after
    ``SCANS`` lookups since the last change, through one sort by gram; frozen by the same
    sort."""

    __slots__ = ("_arrays", "_by_gram", "_scans", "ids", "lengths", "tids")

    SCANS = 8

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.tids = array.array("i")
        self.lengths: dict[int, int] = {}  # ordinal -> its grams (each one towards the length)
        self._arrays: tuple[Any, Any] | None = None
        self._by_gram: tuple[Any, Any, Any] | None = None
        self._scans = 0

    def add(self, ord_: int, grams: list[str]) -> None:
        self.tids.extend(map(self.ids.setdefault, grams, itertools.count(len(self.tids))))
        self.lengths[ord_] = len(grams)
        self._arrays = self._by_gram = None
        self._scans = 0

    def arrays(self) -> tuple[Any, Any]:
        """The (gram number, ordinal) pairs as numpy arrays (``tobytes`` copies: no buffer stays
        exported from ``tids``, which must stay free to grow)."""
        if self._arrays is None:
            lengths = self.lengths
            ords = np.fromiter(lengths.keys(), np.int32, len(lengths))
            counts = np.fromiter(lengths.values(), np.int64, len(lengths))
            self._arrays = (np.frombuffer(self.tids.tobytes(), dtype=np.int32), np.repeat(ords, counts))
        return self._arrays

    def _sorted(self, tids: Any, ords: Any) -> tuple[Any, Any, Any]:
        """(gram numbers, ordinals, tfs) of the distinct pairs, by gram number then ordinal
        (ordinals were added ascending, and the sort is stable)."""
        order = np.argsort(tids, kind="stable")
        tids, ords = tids[order], ords[order]
        new = np.ones(len(tids), dtype=bool)
        new[1:] = (tids[1:] != tids[:-1]) | (ords[1:] != ords[:-1])
        heads = np.flatnonzero(new)
        tfs = np.diff(np.append(heads, len(tids))).astype(np.int32)
        return tids[heads], ords[heads], tfs

    def lookup(self, term: str) -> tuple[Any, Any]:
        tid = self.ids.get(term)
        if tid is None:
            return _empty(np.int64), _empty(np.int64)
        tids, ords = self.arrays()
        if self._by_gram is None and self._scans < self.SCANS:
            self._scans += 1
            mine = ords[tids == tid]
            if len(mine) > 1 and not (mine[1:] != mine[:-1]).all():  # a gram repeated in an entry
                heads = np.flatnonzero(np.append(True, mine[1:] != mine[:-1]))
                return mine[heads].astype(np.int64), np.diff(np.append(heads, len(mine)))
            return mine.astype(np.int64), np.ones(len(mine), dtype=np.int64)
        if self._by_gram is None:
            g, o, t = self._sorted(tids, ords)
            starts = np.zeros(len(tids) + 1, dtype=np.int64)  # numbers are below the pairs' count
            np.cumsum(np.bincount(g, minlength=len(tids)), out=starts[1:])
            self._by_gram = (starts, o, t)
        starts, o, t = self._by_gram
        a, b = int(starts[tid]), int(starts[tid + 1])
        return o[a:b].astype(np.int64), t[a:b].astype(np.int64)

    def frozen(self) -> _KeyArrays:
        """The key's arrays in a frozen segment: grams sorted (every numbered gram has a
        posting), the pairs by gram then ordinal, no positions, the lengths by ordinal."""
        names = list(self.ids)
        by_name = sorted(range(len(names)), key=names.__getitem__)
        tids, ords = self.arrays()
        rank = np.zeros(len(tids), dtype=np.int64)  # gram number -> its place among the sorted grams
        numbers = np.fromiter(self.ids.values(), np.int64, len(names))
        rank[numbers[by_name]] = np.arange(len(names), dtype=np.int64)
        g, o, t = self._sorted(rank[tids], ords)
        starts = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(np.bincount(g, minlength=len(names)), out=starts[1:])
        lengths = self.lengths
        return _KeyArrays(
            [names[i] for i in by_name],
            starts,
            o.astype(np.int32),
            t,
            _empty(np.int32),
            np.fromiter(lengths.keys(), np.int32, len(lengths)),  # added in ascending order
            np.fromiter(lengths.values(), np.int32, len(lengths)),
        )


class _KeyArrays:
    """One key's postings in a frozen segment. A posting's positions, when kept, are as many as
    its ``tf`` (one per occurrence), so ``pos_starts`` is derived (``tfs``' running sum), not
    stored; a key keeping no positions has an empty ``positions`` and every run empty."""

    __slots__ = ("_pos_starts", "index", "len_ords", "lens", "ords", "positions", "starts", "terms", "tfs")

    def __init__(
        self, terms: list[str], starts: Any, ords: Any, tfs: Any, positions: Any, len_ords: Any, lens: Any
    ) -> None:
        self.terms = terms
        self.index = dict(zip(terms, range(len(terms)), strict=True))
        self.starts, self.ords, self.tfs, self.positions = starts, ords, tfs, positions
        self.len_ords, self.lens = len_ords, lens
        self._pos_starts: Any = None

    @property
    def pos_starts(self) -> Any:
        if self._pos_starts is None:
            starts = np.zeros(len(self.ords) + 1, dtype=np.int64)
            if len(self.positions):
                np.cumsum(self.tfs, out=starts[1:])
            self._pos_starts = starts
        return self._pos_starts


class FrozenSegment:
    def __init__(self, first: int, end: int, keys: dict[str, _KeyArrays], columns: dict[str, tuple[Any, Any]]) -> None:
        self.first, self.end = first, end
        self.key_arrays = keys
        self.columns = columns

    def __len__(self) -> int:
        return self.end - self.first

    def key_names(self) -> Iterable[str]:
        return self.key_arrays.keys()

    def terms(self, key: str) -> Sequence[str]:
        arrays = self.key_arrays.get(key)
        return [] if arrays is None else arrays.terms

    def terms_between(self, key: str, low: str, high: str | None) -> Sequence[str]:
        """The terms t with low <= t < high (high None: no bound), sorted."""
        terms = self.terms(key)
        i = bisect.bisect_left(terms, low)
        j = len(terms) if high is None else bisect.bisect_left(terms, high)
        return terms[i:j]

    def _slice(self, key: str, term: str) -> tuple[_KeyArrays, int, int] | None:
        arrays = self.key_arrays.get(key)
        if arrays is None:
            return None
        i = arrays.index.get(term)
        if i is None:
            return None
        return arrays, int(arrays.starts[i]), int(arrays.starts[i + 1])

    def lookup(self, key: str, term: str) -> tuple[Any, Any]:
        found = self._slice(key, term)
        if found is None:
            return _empty(np.int64), _empty(np.int64)
        arrays, a, b = found
        return arrays.ords[a:b], arrays.tfs[a:b]

    def positions(self, key: str, term: str) -> list[Any]:
        found = self._slice(key, term)
        if found is None:
            return []
        arrays, a, b = found
        bounds = arrays.pos_starts[a : b + 1].tolist()
        flat = arrays.positions[bounds[0] : bounds[-1]].tolist()
        base = bounds[0]
        return [tuple(flat[s - base : e - base]) for s, e in itertools.pairwise(bounds)]

    def key_lengths(self, key: str) -> tuple[Any, Any]:
        arrays = self.key_arrays.get(key)
        if arrays is None:
            return _empty(np.int64), _empty(np.int64)
        return arrays.len_ords, arrays.lens

    def column(self, key: str) -> tuple[Any, Any]:
        column = self.columns.get(key)
        if column is None:
            return _empty(np.int64), _empty(np.float64)
        return column

    # -- saving -------------------------------------------------------------------------------

    def arrays(self) -> dict[str, Any]:
        """Everything in named arrays (np.savez), terms as one \\x01-joined UTF-8 blob per key and
        the postings' integers :func:`_pack` ed: per term its count, per posting the gap from the
        term's previous ordinal (the first: the ordinal) and its tf, the positions, per length
        the gap from the previous ordinal and the length."""
        out: dict[str, Any] = {"range": np.asarray([self.first, self.end], dtype=np.int64)}
        names = list(self.key_arrays)
        out["keys"] = np.frombuffer("\x01".join(names).encode(), dtype=np.uint8)
        for n, key in enumerate(names):
            a = self.key_arrays[key]
            out[f"k{n}_terms"] = np.frombuffer("\x01".join(a.terms).encode(), dtype=np.uint8)
            gaps = np.diff(a.ords.astype(np.int64), prepend=0)
            heads = a.starts[:-1]
            gaps[heads] = a.ords[heads]
            packed = {
                "counts": np.diff(a.starts),
                "gaps": gaps,
                "tfs": a.tfs,
                "positions": a.positions,
                "len_gaps": np.diff(a.len_ords.astype(np.int64), prepend=0),
                "lens": a.lens,
            }
            for field, values in packed.items():
                out[f"k{n}_{field}"], out[f"k{n}_{field}_wide"] = _pack(values)
        columns = list(self.columns)
        out["columns"] = np.frombuffer("\x01".join(columns).encode(), dtype=np.uint8)
        for n, key in enumerate(columns):
            out[f"c{n}_ords"], out[f"c{n}_values"] = self.columns[key]
        return out

    @classmethod
    def from_arrays(cls, saved: Any) -> FrozenSegment:
        first, end = (int(x) for x in saved["range"])
        names = _split(saved["keys"])
        keys = {}
        for n, key in enumerate(names):
            f = {
                name: _unpack(saved, f"k{n}_{name}")
                for name in ("counts", "gaps", "tfs", "positions", "len_gaps", "lens")
            }
            starts = np.zeros(len(f["counts"]) + 1, dtype=np.int64)
            np.cumsum(f["counts"], out=starts[1:])
            total = np.cumsum(f["gaps"])
            before = np.concatenate([np.zeros(1, dtype=np.int64), total])[starts[:-1]]
            ords = (total - np.repeat(before, f["counts"])).astype(np.int32)
            keys[key] = _KeyArrays(
                _split(saved[f"k{n}_terms"]),
                starts,
                ords,
                f["tfs"],
                f["positions"],
                np.cumsum(f["len_gaps"]).astype(np.int32),
                f["lens"],
            )
        columns = {key: (saved[f"c{n}_ords"], saved[f"c{n}_values"]) for n, key in enumerate(_split(saved["columns"]))}
        return cls(first, end, keys, columns)


def _pack(values: Any) -> tuple[Any, Any]:
    """Non-negative integers (below 2**31) as one byte each, 255 meaning "the next of ``wide``":
    the postings' gaps, tfs, positions and lengths are mostly small, so most take one byte."""
    values = np.asarray(values, dtype=np.int64)
    return np.minimum(values, 255).astype(np.uint8), values[values >= 255].astype(np.uint32)


def _unpack(saved: Any, name: str) -> Any:
    """The int32 values :func:`_pack` saved as ``name`` and ``name_wide``."""
    low = saved[name]
    out = low.astype(np.int32)
    out[low == 255] = saved[f"{name}_wide"]
    return out


def _split(blob: Any) -> list[str]:
    text = bytes(blob).decode()
    return text.split("\x01") if text else []


def _reordered(positions: Any, runs: Any, order: Any) -> tuple[Any, Any]:
    """(run lengths, positions) of postings taken in ``order``: each posting's run of positions
    (``runs[i]`` long) moved along."""
    starts = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum(runs, out=starts[1:])
    lengths = runs[order].astype(np.int64)
    new_starts = np.cumsum(lengths) - lengths
    index = np.repeat(starts[:-1][order] - new_starts, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
    return lengths, positions[index]


def _union(term_lists: list[list[str]]) -> tuple[Any, list[Any]]:
    """The sorted union of sorted term lists (an object array) and, per list, each term's
    number in it: one sort of them all (runs, merged), equal terms then adjacent, and the
    rest numpy - no hash of a term (an autocomplete key merges millions)."""
    concat = list(chain.from_iterable(term_lists))
    order = np.asarray(sorted(range(len(concat)), key=concat.__getitem__), dtype=np.int64)
    ordered = np.asarray(concat, dtype=object)[order]
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    number = np.empty(len(concat), dtype=np.int64)
    number[order] = np.cumsum(new) - 1
    bounds = np.cumsum([0, *(len(t) for t in term_lists)]).tolist()
    return ordered[new], [number[a:b] for a, b in itertools.pairwise(bounds)]


def merge(segments: list[FrozenSegment], live: Any) -> FrozenSegment:
    """One frozen segment holding what the adjacent ``segments`` hold for live ordinals.

    Per key: every segment's postings of live ordinals, tagged with their term's number in the
    union of the segments' terms, then stably sorted by it (segments are in ordinal order, so
    each term's ordinals stay ascending); the positions move with their postings."""
    first, end = segments[0].first, segments[-1].end
    keys: dict[str, _KeyArrays] = {}
    for key in dict.fromkeys(k for s in segments for k in s.key_arrays):
        present = [s.key_arrays[key] for s in segments if key in s.key_arrays]
        union, numbers = _union([a.terms for a in present])
        tids, ords, tfs, runs, positions, len_ords, lens = [], [], [], [], [], [], []
        for arrays, mapped in zip(present, numbers, strict=True):
            keep = live[arrays.ords]
            tids.append(np.repeat(mapped, np.diff(arrays.starts))[keep])
            ords.append(arrays.ords[keep])
            tfs.append(arrays.tfs[keep])
            run = arrays.tfs if len(arrays.positions) else np.zeros(len(arrays.tfs), dtype=np.int32)  # positions each
            runs.append(run[keep])
            positions.append(arrays.positions[np.repeat(keep, run)])
            keep_len = live[arrays.len_ords]
            len_ords.append(arrays.len_ords[keep_len])
            lens.append(arrays.lens[keep_len])
        tid = np.concatenate(tids)
        order = np.argsort(tid, kind="stable")
        if any(len(a.positions) for a in present):
            _, new_positions = _reordered(np.concatenate(positions), np.concatenate(runs), order)
        else:  # a key keeping no positions (autocomplete: most postings of all)
            new_positions = _empty(np.int32)
        new_tfs = np.concatenate(tfs)[order]
        counts = np.bincount(tid, minlength=len(union))
        used = counts > 0
        starts = np.zeros(int(used.sum()) + 1, dtype=np.int64)
        np.cumsum(counts[used], out=starts[1:])
        keys[key] = _KeyArrays(
            union[used].tolist(),
            starts,
            np.concatenate(ords)[order].astype(np.int32),
            new_tfs.astype(np.int32),
            new_positions.astype(np.int32),
            np.concatenate(len_ords).astype(np.int32),
            np.concatenate(lens).astype(np.int32),
        )
    columns: dict[str, tuple[Any, Any]] = {}
    for key in dict.fromkeys(k for s in segments for k in s.columns):
        parts_o, parts_v = [], []
        for segment in segments:
            if key in segment.columns:
                o, v = segment.columns[key]
                mask = live[o]
                parts_o.append(o[mask])
                parts_v.append(v[mask])
        columns[key] = (np.concatenate(parts_o).astype(np.int32), np.concatenate(parts_v))
    return FrozenSegment(first, end, keys, columns)
