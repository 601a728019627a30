"""``searchAfter`` / ``searchBefore``: paging through a search's order with sequence tokens.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/paginate-results/

Each document a ``$search`` returns carries ``{$meta: "searchSequenceToken"}``: its
position in the search's order, so a later ``$search`` with the same operator and ``sort``
can continue after it (``searchAfter``: the documents that come after it, in order) or
before it (``searchBefore``: the documents that come before it, closest first, so in
reverse order, as Atlas returns them). A token stays meaningful while the collection
changes: it names a position, not a document.

A token is the standard base64 of a BSON document::

    {s: [[path, order, noData], ...],   the sort it was made under ([] for score order)
     k: [[rank, value], ...],           per sort field: the value's type rank (collect._RANK,
                                        0 for none) and the value (a number, or the term)
     c: score, r: record id}            the ties' order: higher score, then record order

A token that does not decode, or was made under another ``sort``, is rejected
(UnknownError, 8, as mongot's query errors).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
from collections.abc import Iterator, Mapping
from typing import Any

import bson

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.collect import _RANK, SortField, order_keys, sort_fields, sort_values
from foliodb.engine.search.text.operators import search_error
from foliodb.engine.search.text.reader import Reader

_SUFFIX = {rank: suffix for suffix, rank in _RANK.items()}
_NUMERIC = {_RANK["\x00n"], _RANK["\x00d"]}
FIRST_SORT = 256  # the best matches ordered first; the rest only if the cursor reads that far


class Pager:
    """A search's order (its ``sort``, else score; ties by higher score, then record order)
    over its matches, with their tokens.

    ``raw`` are the matches' scores as computed (float64); a search reports and orders them
    rounded to float32, as Lucene's (:meth:`scores_of`). The rounded scores, the record ids
    and the sort keys of every match are derived only when an order over all of them is asked
    (:meth:`order`, :meth:`page`): the score order's first page (:meth:`best_first`) and the
    tokens look at a few matches only."""

    def __init__(self, reader: Reader, sort: Mapping[str, Any] | None, ords: Any, raw: Any) -> None:
        self.reader = reader
        self.fields: list[SortField] = sort_fields(sort) if sort is not None else []
        self.ords, self.raw = ords, raw

    def scores_of(self, at: Any) -> Any:
        """The reported (float32) scores of the matches at positions ``at``."""
        return self.raw[at].astype(np.float32).astype(np.float64)

    def rids_of(self, at: Any) -> Any:
        return self.reader.rid_at[self.ords[at]]

    @functools.cached_property
    def scores(self) -> Any:
        return self.scores_of(slice(None))

    @functools.cached_property
    def rids(self) -> Any:
        return self.rids_of(slice(None))

    @functools.cached_property
    def values(self) -> list[tuple[Any, Any]]:
        if not self.fields:
            return []  # the score order: no pass over the matches
        return sort_values(self.reader, self.fields, self.ords, self.scores)

    @functools.cached_property
    def keys(self) -> list[Any]:
        return [*order_keys(self.fields, self.values), -self.scores, self.rids]

    def order(self) -> Any:
        """The positions of the matches in the search's order."""
        return np.lexsort(tuple(reversed(self.keys)))

    def best_first(self) -> Iterator[Any]:
        """:meth:`order` without a ``sort``, in pieces: the best :data:`FIRST_SORT` positions
        found and ordered at once (no pass over the matches but a partition and a comparison),
        the others ordered only if the cursor reads past them (a ``$limit`` usually stops it)."""
        n = len(self.raw)
        if n <= FIRST_SORT:
            yield self.order()
            return
        # Rounding to float32 keeps the order (ties aside), so the FIRST_SORT-th best reported
        # score is the FIRST_SORT-th best raw score, rounded; every match reported at least as
        # high has a raw score above the float32 just below it.
        kth = np.float32(np.partition(self.raw, n - FIRST_SORT)[n - FIRST_SORT])
        floor = float(np.nextafter(kth, np.float32(-np.inf)))
        near = np.flatnonzero(self.raw > floor)
        rounded = self.scores_of(near)
        better = near[rounded > kth]
        tied = near[rounded == kth]
        room = FIRST_SORT - len(better)
        if 0 < room < len(tied):
            # Of the ties, the ``room`` first in record order (then in match order, as the
            # stable sort of :meth:`order`).
            rids = self.rids_of(tied)
            last = np.partition(rids, room - 1)[room - 1]
            before = tied[rids < last]
            tied = np.concatenate([before, tied[rids == last][: room - len(before)]])
        elif room <= 0:
            tied = tied[:0]
        first = np.sort(np.concatenate([better, tied]))
        first = first[np.lexsort((self.rids_of(first), -self.scores_of(first)))]
        yield first
        left = np.ones(n, dtype=bool)
        left[first] = False
        rest = np.flatnonzero(left)
        yield rest[np.lexsort((self.rids[rest], -self.scores[rest]))]

    def page(self, after: Any, before: Any) -> Any:
        """The positions after (in order) or before (closest first) the token given."""
        if after is not None and before is not None:
            raise search_error('"searchAfter" and "searchBefore" cannot both be specified')
        name, token = ("searchAfter", after) if after is not None else ("searchBefore", before)
        bound = self._decode(token, name)
        greater = np.zeros(len(self.rids), dtype=bool)
        less = np.zeros(len(self.rids), dtype=bool)
        equal = np.ones(len(self.rids), dtype=bool)
        for key, value in zip(self.keys, bound, strict=True):
            greater |= equal & (key > value)
            less |= equal & (key < value)
            equal &= key == value
        order = self.order()
        if after is not None:
            return order[greater[order]]
        return order[less[order]][::-1]

    def token(self, i: int) -> str:
        """The sequence token of the ``i``-th match (in the order the matches were found)."""
        keys = []
        for f, (rank, value) in zip(self.fields, self.values, strict=True):
            r = int(rank[i])
            if f.path and r and r not in _NUMERIC:
                keys.append([r, self.reader.terms(f.path + _SUFFIX[r])[int(value[i])]])
            else:
                keys.append([r, float(value[i])])
        doc = {
            "s": [[f.path, f.order, f.no_data] for f in self.fields],
            "k": keys,
            "c": float(np.float32(self.raw[i])),
            "r": int(self.reader.rid_at[self.ords[i]]),
        }
        return base64.b64encode(bson.encode(doc)).decode("ascii")

    def _decode(self, token: Any, name: str) -> list[Any]:
        """The token's position as the values of :attr:`keys` it sorts at."""
        if not isinstance(token, str):
            raise search_error(f'"{name}" must be a string')
        invalid = search_error(f'"{name}" is not a valid searchSequenceToken for this query')
        try:
            doc = bson.decode(base64.b64decode(token, validate=True))
        except (binascii.Error, ValueError, bson.errors.BSONError):
            raise invalid from None
        fields = [[f.path, f.order, f.no_data] for f in self.fields]
        keys, score, rid = doc.get("k"), doc.get("c"), doc.get("r")
        if doc.get("s") != fields or not isinstance(keys, list) or len(keys) != len(fields):
            raise invalid
        if not isinstance(score, float) or not isinstance(rid, int) or isinstance(rid, bool):
            raise invalid
        values = []
        for f, key in zip(self.fields, keys, strict=True):
            values.append(self._position(f, key, invalid))
        return [float(k[0]) for k in order_keys(self.fields, values)] + [-score, rid]

    def _position(self, f: SortField, key: Any, invalid: Exception) -> tuple[Any, Any]:
        """A token's (rank, value) of one field, as :func:`sort_values` gives them for this reader:
        a term becomes its place among the reader's terms (between two when it is gone)."""
        if not isinstance(key, list) or len(key) != 2 or not isinstance(key[0], int):
            raise invalid
        rank, value = key
        if f.path and rank and rank not in _NUMERIC:
            if rank not in _SUFFIX or not isinstance(value, str):
                raise invalid
            terms = self.reader.terms(f.path + _SUFFIX[rank])
            at = bisect.bisect_left(terms, value)
            value = at if at < len(terms) and terms[at] == value else at - 0.5
        elif not isinstance(value, float) or (rank and rank not in _SUFFIX):
            raise invalid
        return np.asarray([rank]), np.asarray([float(value)])
