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
from collections.abc import Mapping
from typing import Any

import bson

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.collect import _RANK, SortField, order_keys, sort_fields, sort_values
from foliodb.engine.search.text.operators import search_error
from foliodb.engine.search.text.reader import Reader

_SUFFIX = {rank: suffix for suffix, rank in _RANK.items()}
_NUMERIC = {_RANK["\x00n"], _RANK["\x00d"]}


class Pager:
    """A search's order (its ``sort``, else score; ties by higher score, then record order)
    over its matches, with their tokens."""

    def __init__(self, reader: Reader, sort: Mapping[str, Any] | None, ords: Any, scores: Any, rids: Any) -> None:
        self.reader = reader
        self.fields: list[SortField] = sort_fields(sort) if sort is not None else []
        self.values = sort_values(reader, self.fields, ords, scores)
        self.scores, self.rids = scores, rids
        self.keys = [*order_keys(self.fields, self.values), -scores, rids]

    def order(self) -> Any:
        """The positions of the matches in the search's order."""
        return np.lexsort(tuple(reversed(self.keys)))

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
            "c": float(self.scores[i]),
            "r": int(self.rids[i]),
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
