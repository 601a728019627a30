"""Counts from index keys: when a key count is the document count.

An index scan reads a superset of a filter's matches (see :mod:`.bounds`);
for some filters it reads exactly them - equalities, ``$in`` lists and ranges
of plain scalars on indexed fields, every bound enforced by the scan (the
key ranges, and the key check for later compound fields). Then the number of
entries read, or of distinct records on a multikey index, is the count
(MongoDB's COUNT_SCAN when the bounds are one interval of the index's order,
a keys-only IXSCAN under COUNT otherwise).

Exact values: null (not on a multikey index, where ``null`` keys also stand
for array elements that lack a path), bools, strings, ObjectIds, numbers but
NaN, and dates without a time zone. Anything else is not exact, and the count
reads documents.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from bson import Int64, MaxKey, MinKey, ObjectId

from foliodb.engine.planner.bounds import ALL, Interval, condition_intervals, whole_value
from foliodb.engine.planner.plans import IndexScan
from foliodb.query.filter import is_operator_doc
from foliodb.query.paths import is_index, split

_SCALARS = (str, ObjectId, int, Int64, float, datetime.datetime)
_RANGES = ("$gt", "$gte", "$lt", "$lte")


def _exact_value(value: Any, null_ok: bool) -> bool:
    if value is None:
        return null_ok
    if isinstance(value, float):
        return value == value
    if isinstance(value, datetime.datetime):
        return value.tzinfo is None
    return isinstance(value, _SCALARS)  # bool is an int


def _exact_condition(cond: Any, multikey: bool) -> bool:
    if not is_operator_doc(cond):
        return _exact_value(cond, not multikey)
    if multikey and len(cond) != 1:
        return False  # several operators may hold for different elements
    for op, arg in cond.items():
        if op == "$eq":
            ok = _exact_value(arg, not multikey)
        elif op == "$in":
            ok = isinstance(arg, list) and all(_exact_value(v, not multikey) for v in arg)
        elif op in _RANGES:
            ok = arg is not None and not isinstance(arg, bool) and _exact_value(arg, False)
        else:
            return False
        if not ok:
            return False
    return True


def exact_scan(filter_spec: Mapping[str, Any] | None, scan: IndexScan) -> bool:
    """Does ``scan`` read exactly the entries of the documents that match
    ``filter_spec``?"""
    index = scan.index
    # Under a collation the bounds may be wider than the filter (a $regex).
    if index.kind != "btree" or scan.intervals is None or index.collator is not None:
        return False
    fields = list(index.key)
    conditions = dict(filter_spec or {})
    if any(is_index(part) for name in fields for part in split(name)):
        return False
    for path, cond in conditions.items():
        if path not in fields or not _exact_condition(cond, index.multikey):
            return False
    # The intervals are the conditions' (a hint may force a whole-index scan).
    for name, intervals in zip(fields, scan.intervals, strict=True):
        wanted = condition_intervals(conditions[name], index.multikey) if name in conditions else [ALL]
        if intervals != wanted:
            return False
    # The ranges bound the fields up to the first ranged one; the key check
    # (never on a multikey index) the later ones.
    first = next((i for i, ivs in enumerate(scan.intervals) if not all(iv.is_point for iv in ivs)), None)
    later = scan.intervals[first + 1 :] if first is not None else []
    return scan.key_check is not None or all(ivs == [ALL] for ivs in later)


def single_interval(scan: IndexScan) -> dict[str, Any] | None:
    """COUNT_SCAN's ``indexBounds`` (startKey, endKey and their inclusion,
    in the index's order) when the scan's bounds are one interval: points,
    then at most one range, then whole fields; else None."""
    if scan.intervals is None or len(scan.ranges) != 1 or scan.key_check is not None:
        return None
    start: dict[str, Any] = {}
    end: dict[str, Any] = {}
    start_inclusive = end_inclusive = True
    ranged = False
    for name, (_, descending), intervals in zip(scan.index.key, scan.index.fields, scan.intervals, strict=True):
        if ranged:
            # After the range, a whole field: its first or last key, so that
            # the range's own inclusion holds.
            low, high = (MaxKey(), MinKey()) if descending else (MinKey(), MaxKey())
            start[name] = low if start_inclusive else high
            end[name] = high if end_inclusive else low
            continue
        if len(intervals) != 1:
            return None
        iv: Interval = intervals[0].reversed() if descending else intervals[0]
        ok_lo, lo = whole_value(iv.lo, descending)
        ok_hi, hi = whole_value(iv.hi, descending)
        if not (ok_lo and ok_hi):
            return None
        start[name], end[name] = lo, hi
        if not iv.is_point:
            ranged = True
            start_inclusive, end_inclusive = iv.lo_inclusive, iv.hi_inclusive
    return {"startKey": start, "startKeyInclusive": start_inclusive, "endKey": end, "endKeyInclusive": end_inclusive}
