"""Which index answers a distinct command by seeking from value to value.

An index serves ``distinct(key, filter)`` with a DISTINCT_SCAN when (as in
mongod) it is a btree index, not partial nor hidden, and ``key`` is one of
its fields, every field before it bounded to points by the filter. Without a
filter any such index does, multikey ones included (the scan reads a
document per value there, see :class:`~.distinct_scan.DistinctScan`); with one, the
index must also answer the filter from its keys (key-readable, the filter
reading indexed paths only: :mod:`.covering`), since a seek past a value
must not skip a matching document. Of several, the one with the fewest
fields wins (mongod's rule). Anything else runs as a find.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.engine.catalog import IndexInfo
from foliodb.engine.planner.bounds import ALL, key_ranges
from foliodb.engine.planner.candidates import shown_bounds
from foliodb.engine.planner.choose import hinted_index, indexes_disabled
from foliodb.engine.planner.conditions import field_conditions, field_intervals
from foliodb.engine.planner.covering import KeyLayout, filter_paths, key_layout
from foliodb.engine.planner.distinct_scan import DistinctScan
from foliodb.engine.records import CollectionStore
from foliodb.query.paths import is_index, split


def distinct_scan(
    store: CollectionStore,
    key: str,
    filter_spec: Mapping[str, Any] | None,
    compile_matcher: Callable[[], Callable[[dict[str, Any]], bool]],
    hint: Any,
) -> DistinctScan | None:
    """The DISTINCT_SCAN for ``distinct(key, filter_spec)``, or None;
    ``compile_matcher`` gives the filter's test (compiled only when a scan
    will use it)."""
    if indexes_disabled() or any(is_index(part) or part.startswith("$") for part in split(key)):
        return None
    read = filter_paths(filter_spec)
    if read is None:
        return None
    hinted = hinted_index(store, hint)
    if isinstance(hinted, int):
        return None  # $natural
    conditions = field_conditions(filter_spec)
    best: tuple[IndexInfo, int, list[Any], KeyLayout | None] | None = None
    for index in (hinted,) if hinted is not None else store.info.indexes.values():
        spec = index.spec
        names = list(index.key)
        if spec.get("hidden") or index.kind != "btree" or "partialFilterExpression" in spec or key not in names:
            continue
        if index.collator is not None:
            continue  # its keys are sort keys, not the values (distinct runs without a collation here)
        position = names.index(key)
        layout = None
        if read:
            layout = key_layout(index, read)
            if layout is None:
                continue
        bounded = [field_intervals(conditions.get(name, []), index.multikey) for name in names]
        per_field = [intervals if intervals is not None else [ALL] for intervals in bounded]
        if not all(iv.is_point for intervals in per_field[:position] for iv in intervals):
            continue
        if best is None or len(names) < len(best[0].key):
            best = (index, position, per_field, layout)
    if best is None:
        return None
    index, position, per_field, layout = best
    descending = [d for _, d in index.fields]
    ranges = key_ranges(per_field, descending)
    if ranges is None:
        return None
    shown = shown_bounds(list(index.key), descending, per_field)
    next_field = None
    if position + 1 < len(per_field) and per_field[position + 1] != [ALL]:
        intervals = per_field[position + 1]
        next_field = (
            sorted((iv.reversed() for iv in intervals), key=lambda iv: iv.lo) if descending[position + 1] else intervals
        )
    matcher = compile_matcher() if read else None
    return DistinctScan(store, index, ranges, position, shown, layout, matcher, next_field)
