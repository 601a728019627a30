"""What a ``$search`` gathers besides its hits: the count, facets, the sort order.

* ``count``: ``{type: "lowerBound" (default) | "total", threshold}``; FolioDB always
  counts exactly, so a lower bound is the total (``{lowerBound: n}`` or ``{total: n}``).
* ``facet``: per facet, ``string`` (a ``token`` field's values, ``numBuckets`` most
  frequent, ties in value order), ``number`` and ``date`` (``boundaries``: bucket ``b[i]``
  holds ``b[i] <= value < b[i+1]``; ``default`` names a bucket for the values outside).
  A document counts once per bucket it has a value in.
* ``sort``: fields of numbers, dates, ``token`` strings, booleans, ObjectIds, UUIDs and
  ``{score: {$meta: "searchScore"}}``; ascending compares a document's smallest value,
  descending its largest; values of different types in BSON's type order; a document
  without a value (``noData``) is lowest unless ``noData: "highest"``. Ties: higher score,
  then record order.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bson import Int64

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import millis
from foliodb.engine.search.text.operators import number, search_error
from foliodb.engine.search.text.reader import Reader

MAX_BUCKETS = 1000


def count_document(spec: Mapping[str, Any] | None, total: int) -> dict[str, Any]:
    kind = "lowerBound" if spec is None else spec.get("type", "lowerBound")
    if kind not in ("lowerBound", "total"):
        raise search_error('"count.type" must be one of [lowerBound, total]')
    return {kind: Int64(total)}


def _string_facet(reader: Reader, path: str, spec: Mapping[str, Any], matched: Any, place: str) -> list[Any]:
    buckets = int(number(spec.get("numBuckets", 10), f"{place}.numBuckets"))
    if not 1 <= buckets <= MAX_BUCKETS:
        raise search_error(f'"{place}.numBuckets" must be between 1 and {MAX_BUCKETS}')
    key = path + "\x00tok"
    counts = []
    for term in reader.terms(key):
        ords = reader.postings(key, term)[0]
        n = int(np.isin(ords, matched, assume_unique=True).sum()) if len(ords) else 0
        if n:
            counts.append((-n, term))
    counts.sort()
    return [{"_id": term, "count": Int64(-n)} for n, term in counts[:buckets]]


def _range_facet(
    reader: Reader, path: str, spec: Mapping[str, Any], matched: Any, place: str, dates: bool
) -> list[Any]:
    raw = spec.get("boundaries")
    if not isinstance(raw, list) or len(raw) < 2:
        raise search_error(f'"{place}.boundaries" must be an array of at least 2 values')
    if dates:
        if not all(isinstance(b, datetime.datetime) for b in raw):
            raise search_error(f'"{place}.boundaries" must hold dates')
        bounds = [millis(b) for b in raw]
    else:
        bounds = [number(b, f"{place}.boundaries") for b in raw]
    if any(a >= b for a, b in itertools.pairwise(bounds)):
        raise search_error(f'"{place}.boundaries" must be in ascending order')
    ords, values = reader.column(path + ("\x00d" if dates else "\x00n"))
    keep = np.isin(ords, matched)
    ords, values = ords[keep], values[keep]
    slot = np.searchsorted(np.asarray(bounds), values, side="right") - 1
    slot[(values >= bounds[-1]) | (values < bounds[0])] = -1
    out = []
    for i, bound in enumerate(raw[:-1]):
        out.append({"_id": bound, "count": Int64(len(np.unique(ords[slot == i])))})
    if "default" in spec:
        out.append({"_id": spec["default"], "count": Int64(len(np.unique(ords[slot == -1])))})
    return out


def facet_document(reader: Reader, facets: Mapping[str, Any], matched: Any) -> dict[str, Any]:
    if not isinstance(facets, Mapping) or not facets:
        raise search_error('"facet.facets" must be a non-empty document')
    out: dict[str, Any] = {}
    for name, spec in facets.items():
        place = f"facet.facets.{name}"
        if not isinstance(spec, Mapping) or not isinstance(spec.get("path"), str):
            raise search_error(f'"{place}" must be a document with a path')
        kind = spec.get("type")
        if kind == "string":
            buckets = _string_facet(reader, spec["path"], spec, matched, place)
        elif kind in ("number", "date"):
            buckets = _range_facet(reader, spec["path"], spec, matched, place, kind == "date")
        else:
            raise search_error(f'"{place}.type" must be one of [date, number, string]')
        out[name] = {"buckets": buckets}
    return out


# -- sort ----------------------------------------------------------------------------------

# BSON's order of the types a search index sorts (missing lowest, or highest with noData).
_RANK = {"\x00n": 1, "\x00tok": 2, "\x00u": 3, "\x00o": 4, "\x00b": 5, "\x00d": 6}


def _column_extreme(ords: Any, values: Any, wanted: Any, descending: bool) -> tuple[Any, Any]:
    """(has a value, the smallest/largest value) per wanted ordinal."""
    has = np.zeros(len(wanted), dtype=bool)
    out = np.zeros(len(wanted))
    if not len(ords):
        return has, out
    order = np.lexsort((values, ords))
    ords, values = ords[order], values[order]
    starts = np.flatnonzero(np.r_[True, ords[1:] != ords[:-1]])
    ends = np.r_[starts[1:], len(ords)] - 1
    group_ords = ords[starts]
    extreme = values[ends] if descending else values[starts]
    at = np.searchsorted(group_ords, wanted)
    found = (at < len(group_ords)) & (group_ords[np.minimum(at, len(group_ords) - 1)] == wanted)
    has[found] = True
    out[found] = extreme[at[found]]
    return has, out


def _field_keys(reader: Reader, path: str, wanted: Any, descending: bool) -> tuple[Any, Any]:
    """(type rank, value) per ordinal for sorting by ``path`` (rank 0: no value)."""
    rank = np.zeros(len(wanted), dtype=np.int64)
    value = np.zeros(len(wanted))
    for suffix, r in _RANK.items():
        key = path + suffix
        if suffix in ("\x00n", "\x00d"):
            ords, values = reader.column(key)
        else:
            terms = reader.terms(key)
            parts = [(reader.postings(key, t)[0], i) for i, t in enumerate(terms)]
            parts = [(o, i) for o, i in parts if len(o)]
            if not parts:
                continue
            ords = np.concatenate([o for o, _ in parts])
            values = np.concatenate([np.full(len(o), float(i)) for o, i in parts])
        has, extreme = _column_extreme(ords, values, wanted, descending)
        better = has & ((rank == 0) | ((r > rank) if descending else (r < rank)))
        rank[better] = r
        value[better] = extreme[better]
    return rank, value


@dataclass(frozen=True, slots=True)
class SortField:
    """One field of a ``sort``: ``path`` ("" for ``{$meta: "searchScore"}``), ``order`` 1 or -1,
    and where documents without a value go (``no_data`` "lowest" or "highest")."""

    path: str
    order: int
    no_data: str = "lowest"


def sort_fields(spec: Any) -> list[SortField]:
    if not isinstance(spec, Mapping) or not spec:
        raise search_error('"sort" must be a non-empty document')
    out = []
    for path, how in spec.items():
        if isinstance(how, Mapping) and how.get("$meta") == "searchScore":
            out.append(SortField("", how.get("order", -1)))
            continue
        no_data = "lowest"
        if isinstance(how, Mapping):
            no_data = how.get("noData", "lowest")
            how = how.get("order")
        if how not in (1, -1) or no_data not in ("lowest", "highest"):
            raise search_error(f'"sort.{path}" must be 1, -1 or {{order, noData}}')
        out.append(SortField(path, how, no_data))
    return out


def sort_values(reader: Reader, fields: list[SortField], ords: Any, scores: Any) -> list[tuple[Any, Any]]:
    """Per field, (type rank, value) of each ordinal: the rank a key of :data:`_RANK` (0 when
    the document has no value), the value a number, a date's milliseconds, or the index of a
    term in ``reader.terms(path + suffix)``; the score field's rank is 0."""
    out = []
    for f in fields:
        if not f.path:
            out.append((np.zeros(len(ords), dtype=np.int64), scores))
        else:
            out.append(_field_keys(reader, f.path, ords, f.order == -1))
    return out


def order_keys(fields: list[SortField], values: list[tuple[Any, Any]]) -> list[Any]:
    """The ascending sort keys, most significant first, of :func:`sort_values`."""
    keys: list[Any] = []
    for f, (rank, value) in zip(fields, values, strict=True):
        if not f.path:
            keys.append(value if f.order == 1 else -value)
            continue
        rank = np.where(rank == 0, 99 if f.no_data == "highest" else -1, rank)
        keys += [-rank, -value] if f.order == -1 else [rank, value]
    return keys
