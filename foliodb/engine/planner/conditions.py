"""A filter's conditions by field, their key intervals, and partial-filter implication.

:func:`field_conditions` gathers, per dotted path, the conditions every match
must satisfy: the filter's top level and its ``$and`` branches (an
``$elemMatch`` object also bounds its sub-paths); ``$or``, ``$nor`` and other
top-level operators bound nothing here. :func:`field_intervals` turns one
field's conditions into key intervals (:mod:`.bounds`), intersecting them only
on a non-multikey field, where they must hold for the same value.
:func:`implies` decides, conservatively, whether every match of a query also
matches a partial index's ``partialFilterExpression``: False whenever in doubt,
so a partial index is never used for documents it may lack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.engine.index_keys import NULL_KEY
from foliodb.engine.planner.bounds import Interval, condition_intervals, contains, intersect
from foliodb.query.filter import is_operator_doc


def field_conditions(filter_spec: Mapping[str, Any] | None) -> dict[str, list[Any]]:
    """Each field's conditions that every match must satisfy (top level and
    inside ``$and``; an ``$elemMatch`` object also bounds its sub-paths)."""
    out: dict[str, list[Any]] = {}
    if not filter_spec:
        return out
    for key, value in filter_spec.items():
        if key == "$and" and isinstance(value, list):
            for branch in value:
                if isinstance(branch, Mapping):
                    for path, conds in field_conditions(branch).items():
                        out.setdefault(path, []).extend(conds)
        elif not key.startswith("$"):
            out.setdefault(key, []).append(value)
            if is_operator_doc(value):
                elem = value.get("$elemMatch")
                if isinstance(elem, Mapping) and elem and not all(k.startswith("$") for k in elem):
                    for path, conds in field_conditions(elem).items():
                        out.setdefault(f"{key}.{path}", []).extend(conds)
    return out


def field_intervals(conds: list[Any], multikey: bool) -> list[Interval] | None:
    result: list[Interval] | None = None
    for cond in conds:
        intervals = condition_intervals(cond, multikey)
        if intervals is None:
            continue
        if result is None:
            result = intervals
        elif not multikey:
            # Separate conditions on an array field may hold for different
            # elements, so only a non-multikey field intersects them.
            result = intersect(result, intervals)
    return result


def includes_null(intervals: list[Interval] | None) -> bool:
    if intervals is None:
        return True
    return any(iv.lo <= NULL_KEY <= iv.hi or (iv.hi_inclusive and NULL_KEY.startswith(iv.hi)) for iv in intervals)


def implies(conditions: dict[str, list[Any]], partial: Mapping[str, Any]) -> bool:
    """Does every document matching the query match ``partial``? Judged
    condition by condition of the partial filter, conservatively."""
    if any(key.startswith("$") and key != "$and" for key in partial):
        return False
    for path, pconds in field_conditions(partial).items():
        for pcond in pconds:
            if not _condition_implied(conditions.get(path, []), pcond):
                return False
    return True


def _condition_implied(query_conds: list[Any], pcond: Any) -> bool:
    if is_operator_doc(pcond) and list(pcond) == ["$exists"] and pcond["$exists"]:
        for cond in query_conds:
            if is_operator_doc(cond) and cond.get("$exists"):
                return True
            if not includes_null(condition_intervals(cond, True)):
                return True
        return False
    wanted = condition_intervals(pcond, False)
    if wanted is None:
        return False
    for cond in query_conds:
        got = condition_intervals(cond, True)
        if got is not None and contains(wanted, got):
            return True
    return False
