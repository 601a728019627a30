"""A collection's plan cache and index filters, per query shape, as mongod's.

A query shape is a query without its values: the filter's operators, paths
and value types, the sort, the projection and the collation - what decides
which index serves it. After a trial among several candidate plans the
planner caches the index that won for the shape (mongod caches only plans
that had rivals) and plans the next query of the shape with that index alone,
while it still serves the query. Each version of a collection (a catalog
change: an index created, dropped or hidden) starts with an empty cache, as
mongod clears its cache then.

Beside the cache, an invisible memo (:class:`PlanMemo`) remembers, per
shape, the one index that served a query when it had no rival, so the next
query of the shape builds only that index's bounds; neither ``$planCacheStats``
nor ``planCacheClear`` sees it, and it goes with the collection's version too.

Index filters restrict the indexes the planner considers for a shape and
override a hint; none allowed that serves the query means a collection scan.
Like mongod's they live as long as the process, outlast index changes, and
go with the collection (a new one has a new uuid, and none).

Manual: https://www.mongodb.com/docs/manual/core/query-plans/ ,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/planCacheStats/ ,
https://www.mongodb.com/docs/manual/reference/command/planCacheSetFilter/
"""

from __future__ import annotations

import datetime
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foliodb.query import compare as cmp
from foliodb.query.collation import Collator

if TYPE_CHECKING:
    from foliodb.engine.catalog import IndexInfo

SIZE = 1000  # entries per collection; the oldest goes first
MEMO_SIZE = 256  # memo entries per collection; the least recently used goes first
Shape = tuple[Any, ...]


def query_shape(filter_spec: Any) -> Any:
    """A filter without its values: operators, paths and value types."""
    if isinstance(filter_spec, Mapping):
        return tuple((key, query_shape(value)) for key, value in filter_spec.items())
    if isinstance(filter_spec, list):
        return ("[]", *(query_shape(v) for v in filter_spec[:8]), len(filter_spec) > 8)
    return cmp.bracket(filter_spec)


def _projection_shape(projection: Mapping[str, Any] | None) -> Any:
    """Which fields a projection keeps or drops (the kind of each value, not the value)."""
    if not projection:
        return ()
    return tuple(
        (key, bool(value) if isinstance(value, (bool, int, float)) else query_shape(value))
        for key, value in projection.items()
    )


def shape_of(
    filter_spec: Mapping[str, Any] | None,
    sort: list[tuple[str, int]] | None,
    projection: Mapping[str, Any] | None,
    collator: Collator | None,
) -> Shape:
    collation = None if collator is None else tuple(collator.spec.items())
    return (query_shape(filter_spec or {}), tuple(sort or ()), _projection_shape(projection), collation)


def _hex(value: Any) -> str:
    """An 8-digit hexadecimal hash, as mongod's ``queryHash`` and ``planCacheKey`` look."""
    return f"{zlib.crc32(repr(value).encode()):08X}"


def query_hash(shape: Shape) -> str:
    return _hex(shape)


def plan_cache_key(shape: Shape, index_names: list[str]) -> str:
    """The shape's key with the indexes the collection has: a new index gives a new key."""
    return _hex((shape, tuple(sorted(index_names))))


@dataclass
class Entry:
    """One cached plan, with what ``$planCacheStats`` shows of it."""

    index: str  # the name of the index that won
    created_from: dict[str, Any]  # the query that made it: {query, sort, projection[, collation]}
    created: datetime.datetime
    works: int  # the winner's trial works
    cached_plan: dict[str, Any]
    exec_stats: list[dict[str, Any]]  # each candidate's trial, the winner first
    scores: list[float]
    index_filter_set: bool


class PlanCache:
    """Shape -> :class:`Entry`, bounded at :data:`SIZE`. Readers look up without the lock (a
    dict read is atomic); changes take it, so two planners' puts cannot evict one entry twice."""

    def __init__(self) -> None:
        self.entries: dict[Shape, Entry] = {}
        self._lock = threading.Lock()

    def get(self, shape: Shape) -> Entry | None:
        return self.entries.get(shape)

    def put(self, shape: Shape, entry: Entry) -> None:
        with self._lock:
            entries = self.entries
            entries.pop(shape, None)
            if len(entries) >= SIZE:
                del entries[next(iter(entries))]  # dicts keep insertion order: the oldest
            entries[shape] = entry

    def remove(self, shape: Shape) -> None:
        with self._lock:
            self.entries.pop(shape, None)

    def clear(self) -> None:
        with self._lock:
            self.entries.clear()


@dataclass(frozen=True)
class Memo:
    """How a shape's query was planned when ``index`` was its only candidate:
    the planner rebuilds that index's bounds from the query's values, and
    needs no other index while the query has no condition on any path of
    ``absent`` (the leading fields of the collection's other indexes, which
    then cannot serve it whatever the values)."""

    index: IndexInfo
    absent: tuple[str, ...]
    # When the shape is equalities to plain scalars on top-level paths, one
    # of them the index's leading field: per key field, the path whose value
    # is its point (None: unbounded); the bounds are then filled in directly.
    points: tuple[str | None, ...] | None = None


class PlanMemo:
    """Shape -> :class:`Memo`, least recently used first, bounded at :data:`MEMO_SIZE`
    (locked as :class:`PlanCache`)."""

    def __init__(self) -> None:
        self.entries: dict[Shape, Memo] = {}
        self._lock = threading.Lock()

    def get(self, shape: Shape) -> Memo | None:
        if shape not in self.entries:
            return None
        with self._lock:  # the most recently used goes last
            memo = self.entries.pop(shape, None)
            if memo is not None:
                self.entries[shape] = memo
        return memo

    def put(self, shape: Shape, memo: Memo) -> None:
        with self._lock:
            entries = self.entries
            entries.pop(shape, None)
            if len(entries) >= MEMO_SIZE:
                del entries[next(iter(entries))]
            entries[shape] = memo


@dataclass
class IndexFilter:
    """The indexes the planner may use for one shape, with the query that set them."""

    query: dict[str, Any]
    sort: dict[str, Any]
    projection: dict[str, Any]
    collation: dict[str, Any] | None
    indexes: list[Any]  # key patterns (documents) and names (strings), as given

    def allows(self, name: str, key: Mapping[str, Any]) -> bool:
        for allowed in self.indexes:
            if isinstance(allowed, str):
                if allowed == name:
                    return True
            elif list(allowed.items()) == list(key.items()):
                return True
        return False

    def listed(self) -> dict[str, Any]:
        """As ``planCacheListFilters`` shows it."""
        out: dict[str, Any] = {"query": self.query, "sort": self.sort, "projection": self.projection}
        if self.collation is not None:
            out["collation"] = self.collation
        out["indexes"] = list(self.indexes)
        return out


IndexFilters = dict[Shape, IndexFilter]  # one collection's (see Engine.index_filters)
