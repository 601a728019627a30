"""One search's view of a full-text index: the state as its snapshot sees it.

A :class:`Reader` is built under the state's lock for one ``$search``. It reads the
state's segments, less the entries of *excluded* documents (changed after the reader's
snapshot, or written by its transaction), plus an *overlay* segment holding those
documents as the reader's own view has them (ordinals past the state's). So it answers
as an index built from the reader's documents would, statistics included:

* :meth:`postings`: a term's live (ordinal, tf) pairs, ordinals ascending;
* :meth:`stats`: (documents holding the key, their total length), Lucene's ``docCount``
  and ``sumTotalTermFreq``, for BM25's average length;
* :meth:`lengths`: the field lengths of given ordinals;
* :meth:`column`: a numeric key's live (ordinal, value) pairs.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.index import TextState
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.norms import decoded_length
from foliodb.engine.search.text.segments import MutableSegment


def _empty(dtype: Any) -> Any:
    return np.zeros(0, dtype=dtype)


class Reader:
    def __init__(
        self, state: TextState, excluded: Iterable[int] = (), overlay: Mapping[int, Any] | None = None
    ) -> None:
        self.state = state
        self.definition: TextDefinition = state.definition
        n = state.next_ord
        live, rid_at, parent_at = state.live[:n], state.rid_at[:n], state.parent_at[:n]
        self.private = False  # whether this view differs from the state's (no shared caches)
        excluded = list(excluded)
        if excluded:
            live = live.copy()
            for rid in excluded:
                ord_ = state.ord_of.get(rid)
                if ord_ is not None:
                    live[ord_] = False
                    live[state.children.get(rid, [])] = False
            self.private = True
        self.segments: list[Any] = [*state.segments, state.mutable]
        if overlay:
            extra = MutableSegment(n)
            rids: list[int] = []
            parents: list[int] = []
            for rid, doc in overlay.items():
                first = n + len(rids)
                for entry in self.definition.analyze(doc):
                    ord_ = n + len(rids)
                    extra.add(ord_, entry.terms, entry.numbers, entry.grams)
                    rids.append(rid)
                    parents.append(-1 if entry.parent < 0 else first + entry.parent)
            self.segments.append(extra)
            live = np.concatenate([live, np.ones(len(rids), dtype=bool)])
            rid_at = np.concatenate([rid_at, np.asarray(rids, dtype=np.int64)])
            parent_at = np.concatenate([parent_at, np.asarray(parents, dtype=np.int64)])
            self.private = True
        self.live, self.rid_at, self.parent_at = live, rid_at, parent_at
        # Shortcuts of the common case: no entry of the view has died (postings need no live
        # mask), none is an embedded document's (every entry is a document's).
        self.all_live = state.died == 0 and not excluded
        self.nested = state.nested > 0 or bool(overlay and any(p >= 0 for p in parent_at[n:].tolist()))
        self.size = len(live)
        self._terms: dict[str, list[str]] = {}
        self._lengths: dict[str, Any] = {}
        self._norms: dict[str, Any] = {}
        self._factors: dict[str, Any] = {}

    def _cached(self, key: Any, make: Any) -> Any:
        if self.private:
            return make()
        cache = self.state.cache
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def roots(self) -> Any:
        """The live documents' ordinals."""
        return self._cached("roots", lambda: np.flatnonzero(self.live & (self.parent_at < 0)))

    def postings(self, key: str, term: str) -> tuple[Any, Any]:
        ords, tfs = [], []
        for segment in self.segments:
            o, t = segment.lookup(key, term)
            if len(o) and self.all_live:
                ords.append(o)
                tfs.append(t)
            elif len(o):
                keep = self.live[o]
                ords.append(o[keep])
                tfs.append(t[keep])
        if not ords:
            return _empty(np.int64), _empty(np.int64)
        return np.concatenate(ords).astype(np.int64), np.concatenate(tfs).astype(np.int64)

    def positions(self, key: str, term: str) -> dict[int, tuple[int, ...]]:
        """ordinal -> the term's positions there, for live ordinals."""
        out: dict[int, tuple[int, ...]] = {}
        for segment in self.segments:
            o, _ = segment.lookup(key, term)
            if len(o):
                for ord_, positions in zip(o.tolist(), segment.positions(key, term), strict=True):
                    if self.live[ord_]:
                        out[ord_] = positions
        return out

    def terms(self, key: str) -> list[str]:
        """Every term of the key (live or not: a term with no live posting matches nothing), sorted."""
        if key not in self._terms:
            merged: set[str] = set()
            for segment in self.segments:
                merged.update(segment.terms(key))
            self._terms[key] = sorted(merged)
        return self._terms[key]

    def terms_between(self, key: str, low: str, high: str | None) -> Sequence[str]:
        terms = self.terms(key)
        i = bisect.bisect_left(terms, low)
        j = len(terms) if high is None else bisect.bisect_left(terms, high)
        return terms[i:j]

    def _dense_lengths(self, key: str) -> Any:
        def make() -> Any:
            dense = np.zeros(self.size, dtype=np.int64)
            for segment in self.segments:
                o, lens = segment.key_lengths(key)
                dense[o] = lens
            return dense

        if key not in self._lengths:
            self._lengths[key] = self._cached(("lengths", key), make)
        return self._lengths[key]

    def lengths(self, key: str, ords: Any) -> Any:
        return self._dense_lengths(key)[ords]

    def norm_lengths(self, key: str, ords: Any) -> Any:
        """The lengths Lucene's one-byte norms keep (see :mod:`.scoring`), of given ordinals."""
        if key not in self._norms:
            self._norms[key] = self._cached(("norms", key), lambda: decoded_length(self._dense_lengths(key)))
        return self._norms[key][ords]

    def norm_factors(self, key: str, ords: Any) -> Any:
        """BM25's length normalisation (:func:`.scoring.norm_factors`) of given ordinals, from one
        array per key computed once per contents (as :meth:`norm_lengths`)."""
        from foliodb.engine.search.text.scoring import norm_factors

        if key not in self._factors:
            self._factors[key] = self._cached(
                ("factors", key), lambda: norm_factors(self.norm_lengths(key, slice(None)), *self.stats(key))
            )
        return self._factors[key][ords]

    def stats(self, key: str) -> tuple[int, int]:
        def make() -> tuple[int, int]:
            dense = self._dense_lengths(key)
            held = self.live & (dense > 0)
            return int(held.sum()), int(dense[held].sum())

        result: tuple[int, int] = self._cached(("stats", key), make)
        return result

    def column(self, key: str) -> tuple[Any, Any]:
        ords, values = [], []
        for segment in self.segments:
            o, v = segment.column(key)
            if len(o):
                keep = self.live[o]
                ords.append(o[keep])
                values.append(v[keep])
        if not ords:
            return _empty(np.int64), _empty(np.float64)
        return np.concatenate(ords).astype(np.int64), np.concatenate(values)
