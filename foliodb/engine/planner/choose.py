"""Choosing the access path: from a filter, a sort and a hint to a :class:`Plan`.

In order: ``min``/``max`` (cursor.min(), cursor.max()) are not filters but a
range of the hinted index's keys, ``[min, max)`` in the index's order: the
plan scans exactly that range, and with indexes disabled a collection scan
keeps the documents with a key in it, so the answers stay the same. Then an
index filter (``planCacheSetFilter``) for the query's shape, which overrides a
hint; a ``$natural`` hint or sort is a collection scan; a filter that is
exactly ``{_id: value}`` is IDHACK's point lookup (the ``_id`` index has the
collection's default collation, so IDHACK serves the queries of that
collation); a plan cached for the shape is reused when it serves this query
too. Otherwise the candidates (:mod:`.candidates`) compete: with several, each
runs a short trial (as MongoDB's multi-planner does) and the most productive
wins - matching documents per record examined, a plan that needs no blocking
sort preferred - and the winner is cached. Without candidates a top-level
``$or`` whose every branch has an index is an OR of index scans, else the plan
is a collection scan. A hinted index of another collation is scanned whole and
gives no order. ``$near``/``$nearSphere`` have their own entry,
:func:`near_plan`.

``FOLIODB_NO_INDEXES=1`` in the environment disables every index access path
(the answers must not change; the test suite can run both ways).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import bson
from bson import Int64, MaxKey, MinKey, ObjectId

from foliodb.engine.catalog import CODEC, IndexInfo
from foliodb.engine.geo_keys import GEO_KINDS
from foliodb.engine.plan_cache import Entry, IndexFilter, shape_of
from foliodb.engine.planner import geo
from foliodb.engine.planner.bounds import ALL, KeyRange
from foliodb.engine.planner.candidates import Candidate, candidates, index_scan, key_direction, sort_direction
from foliodb.engine.planner.conditions import field_conditions, field_intervals, implies
from foliodb.engine.planner.plans import AccessStage, CollScan, IdLookup, IndexScan, OrScan
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import collation, keystring
from foliodb.query import compare as cmp
from foliodb.query.collation import Collator
from foliodb.query.filter import is_operator_doc
from foliodb.query.filter_ops.geo import NearQuery
from foliodb.query.paths import is_index

TRIAL_RESULTS = 101
TRIAL_WORKS = 10_000


def indexes_disabled() -> bool:
    return os.environ.get("FOLIODB_NO_INDEXES", "") not in ("", "0")


@dataclass
class Plan:
    access: AccessStage
    provides_sort: bool = False
    rejected: list[AccessStage] = field(default_factory=list)
    # Per candidate: (stage, results, works) of the trial, winner first.
    trials: list[tuple[AccessStage, int, int]] = field(default_factory=list)
    # A test every document must pass besides the filter (min/max without indexes).
    doc_test: Callable[[dict[str, Any]], bool] | None = None
    index_filter_set: bool = False  # an index filter chose the candidates (explain's indexFilterSet)
    scores: list[float] = field(default_factory=list)  # the trial's, winner first


_PLAIN_ID_TYPES = frozenset({ObjectId, str, int})


def id_hack_keys(
    store: CollectionStore | None, filter_spec: Mapping[str, Any] | None, collator: Collator | None
) -> list[bytes] | None:
    """IDHACK's ``_id`` index key of a filter that is exactly ``{_id: value}``,
    for a query under ``collator``: only when that is the index's collation
    (mongod: the collection's default), so the index's equality is the
    query's. Without a collection, as if simple."""
    id_collator = store.info.id_index.collator if store is not None else None
    if not collation.same(id_collator, collator) or not filter_spec or list(filter_spec) != ["_id"]:
        return None
    cond = filter_spec["_id"]
    if type(cond) in _PLAIN_ID_TYPES:  # the usual _id values: no operator document, array or regex
        return [collation.key_encoder(id_collator)(cond)]
    if is_operator_doc(cond):
        if list(cond) != ["$eq"]:
            return None
        cond = cond["$eq"]
    if cmp.bracket(cond) in (cmp.REGEX, cmp.ARRAY):
        return None
    return [collation.key_encoder(id_collator)(cond)]


_EXACT_TYPES = (str, ObjectId, int, Int64, bool, datetime.datetime)


def exact_by_index(filter_spec: Mapping[str, Any] | None, index: IndexInfo, collator: Collator | None = None) -> bool:
    """Does scanning ``index`` for ``filter_spec`` yield exactly its matches?

    True for one equality with a plain scalar on the index's leading field
    (a path without array positions): an entry in that key range means the
    field, or one of its array elements, equals the value - which is what
    the equality means - so fetched documents need no second check.
    """
    if (
        not filter_spec
        or len(filter_spec) != 1
        or index.kind != "btree"
        or not collation.same(index.collator, collator)
    ):
        return False
    ((path, cond),) = filter_spec.items()
    if path != next(iter(index.key)) or path.startswith("$") or any(is_index(p) for p in path.split(".")):
        return False
    if is_operator_doc(cond):
        if list(cond) != ["$eq"]:
            return False
        cond = cond["$eq"]
    if isinstance(cond, float):
        return cond == cond  # NaN keys are exact too, but keep it simple
    return isinstance(cond, _EXACT_TYPES) and not (isinstance(cond, datetime.datetime) and cond.tzinfo)


def choose_plan(
    store: CollectionStore,
    filter_spec: Mapping[str, Any] | None,
    matcher: Callable[..., bool] | None,
    sort: list[tuple[str, int]] | None = None,
    natural: int | None = None,
    hint: Any = None,
    min_key: Mapping[str, Any] | None = None,
    max_key: Mapping[str, Any] | None = None,
    collator: Collator | None = None,
    projection: Mapping[str, Any] | None = None,
) -> Plan:
    if min_key or max_key:
        return _min_max_plan(store, hint, min_key or {}, max_key or {}, sort)
    # The shape is computed only when needed: not for IDHACK's point lookups, unless filters exist.
    shape = shape_of(filter_spec, sort, projection, collator) if store.index_filters else None
    index_filter = store.index_filters.get(shape) if shape is not None else None
    hinted = hinted_index(store, hint) if index_filter is None else None  # a filter overrides a hint
    if isinstance(hinted, int):
        return Plan(CollScan(store, hinted))
    if natural is not None:
        return Plan(CollScan(store, natural))
    if hinted is None:
        keys = id_hack_keys(store, filter_spec, collator)
        if keys is not None:
            return Plan(IdLookup(store, keys))
        if indexes_disabled():
            return Plan(CollScan(store))
    filtered = index_filter is not None
    if shape is None:
        shape = shape_of(filter_spec, sort, projection, collator)
    cached = store.plan_cache.get(shape) if hinted is None else None
    if cached is not None:
        # The winner for queries of this shape, if it serves this one too
        # (a partial index may not: it depends on the values).
        found = candidates(store, filter_spec, sort, store.info.indexes.get(cached.index), collator)
        scans = [(c, s) for c in found if (s := index_scan(store, c)) is not None]
        if len(scans) == 1:
            candidate, scan = scans[0]
            return Plan(scan, candidate.provides_sort, index_filter_set=filtered)
    found = candidates(store, filter_spec, sort, None, collator)
    if index_filter is not None:
        found = [c for c in found if index_filter.allows(c.index.name, c.index.key)]
    if hinted is not None:
        found = [c for c in found if c.index is hinted]
        if not found:
            # A hint forces its index even when nothing bounds it.
            intervals = [[ALL] for _ in hinted.key]
            same = collation.same(hinted.collator, collator)
            direction = sort_direction(hinted, intervals, sort or []) if same else 0
            found = [Candidate(hinted, intervals, direction or 1, bool(direction))]
    scans = [(c, s) for c in found if (s := index_scan(store, c)) is not None]
    if not scans:
        union_scan = _or_plan(store, filter_spec, collator, index_filter) if hinted is None else None
        return Plan(union_scan or CollScan(store), index_filter_set=filtered)
    if len(scans) == 1:
        candidate, scan = scans[0]
        return Plan(scan, candidate.provides_sort, index_filter_set=filtered)
    plan = _trial(store, scans, matcher, bool(sort))
    plan.index_filter_set = filtered
    if hinted is None:  # only plans that had rivals are cached, as mongod's
        store.plan_cache.put(shape, _entry(plan, filter_spec, sort, projection, collator))
    return plan


def _entry(
    plan: Plan,
    filter_spec: Mapping[str, Any] | None,
    sort: list[tuple[str, int]] | None,
    projection: Mapping[str, Any] | None,
    collator: Collator | None,
) -> Entry:
    """The cache entry of a trial's winner, with what ``$planCacheStats`` shows of the trial."""
    assert isinstance(plan.access, IndexScan)
    created_from: dict[str, Any] = {
        "query": dict(filter_spec or {}),
        "sort": dict(sort or ()),
        "projection": dict(projection or {}),
    }
    if collator is not None:
        created_from["collation"] = dict(collator.spec)
    stats = []
    for stage, produced, works in plan.trials:
        scan = {**stage.explain(), "nReturned": works, "works": works, "keysExamined": works}
        fetch = {"stage": "FETCH", "nReturned": produced, "works": works, "docsExamined": works, "inputStage": scan}
        stats.append(
            {
                "nReturned": produced,
                "executionTimeMillisEstimate": 0,
                "totalKeysExamined": works,
                "totalDocsExamined": works,
                "executionStages": fetch,
            }
        )
    return Entry(
        index=plan.access.index.name,
        created_from=created_from,
        created=datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
        works=plan.trials[0][2],
        cached_plan={"stage": "FETCH", "inputStage": plan.access.explain()},
        exec_stats=stats,
        scores=plan.scores,
        index_filter_set=plan.index_filter_set,
    )


def _or_plan(
    store: CollectionStore,
    filter_spec: Mapping[str, Any] | None,
    collator: Collator | None,
    index_filter: IndexFilter | None,
) -> OrScan | None:
    """Index scans for each branch of a top-level ``$or`` (with the filter's
    other conditions), when every branch has one (of the indexes an index
    filter allows); else None."""
    if not filter_spec or not isinstance(filter_spec.get("$or"), list):
        return None
    others = {k: v for k, v in filter_spec.items() if k != "$or"}
    scans: list[AccessStage] = []
    for branch in filter_spec["$or"]:
        if not isinstance(branch, Mapping):
            return None
        found = candidates(store, {"$and": [others, branch]} if others else branch, None, None, collator)
        if index_filter is not None:
            found = [c for c in found if index_filter.allows(c.index.name, c.index.key)]
        scan = next((s for c in found if (s := index_scan(store, c)) is not None), None)
        if scan is None:
            return None
        scans.append(scan)
    return OrScan(scans)


def _planner_error(code: int, reason: str) -> CommandError:
    return CommandError(code, f"error processing query: planner returned error :: caused by :: {reason}")


def _min_max_plan(
    store: CollectionStore,
    hint: Any,
    min_key: Mapping[str, Any],
    max_key: Mapping[str, Any],
    sort: list[tuple[str, int]] | None,
) -> Plan:
    """The scan of the hinted index from ``min_key`` (inclusive) to
    ``max_key`` (exclusive), with mongod's checks: a hint is required
    (51173), and each bound names the key pattern's fields in order (51174)
    with min before max (51175)."""
    hinted = hinted_index(store, hint)
    if isinstance(hinted, int):
        raise _planner_error(ErrorCode.NoQueryExecutionPlans, "min and max are incompatible with $natural")
    if hinted is None:
        raise _planner_error(51173, "When using min()/max() a hint of which index to use must be provided")
    names = list(hinted.key)
    if hinted.kind in ("wildcard", "text", *GEO_KINDS) or any(
        bound and list(bound) != names for bound in (min_key, max_key)
    ):
        raise _planner_error(51174, "The index chosen is not compatible with min/max")
    start = _bound_key(hinted, min_key, low=True)
    stop = _bound_key(hinted, max_key, low=False)
    if start >= stop:
        raise _planner_error(
            51175, "The value provided for min() does not come before the value provided for max() in the hinted index"
        )
    if indexes_disabled():
        writer = next(w for w in store.writers if w.info.name == hinted.name)

        def in_range(doc: dict[str, Any]) -> bool:
            return any(start <= key < stop for key in writer.keys(doc))

        return Plan(CollScan(store), doc_test=in_range)
    direction = sort_direction(hinted, [[ALL] for _ in names], sort or [])
    # mongod shows a min/max range (a "simple range") as empty indexBounds.
    scan = IndexScan(store, hinted, [KeyRange(start, stop)], direction or 1, {})
    return Plan(scan, bool(direction))


def _bound_key(index: IndexInfo, bound: Mapping[str, Any], low: bool) -> bytes:
    """The key of a min or max bound; an empty bound is the index's first
    (``low``) or last key: MinKey or MaxKey by each field's direction."""
    parts = []
    for (name, _), (_, descending) in zip(index.key.items(), index.fields, strict=True):
        value = bound[name] if bound else (MinKey() if low != descending else MaxKey())
        key = keystring.encode(value if index.collator is None else index.collator.transform(value))
        parts.append(keystring.complement(key) if descending else key)
    return b"".join(parts)


def hinted_index(store: CollectionStore, hint: Any) -> IndexInfo | int | None:
    """The hinted index, a natural-order direction, or None without a hint."""
    if hint is None or hint == {} or hint == "":
        return None
    if isinstance(hint, Mapping) and "$natural" in hint:
        return -1 if key_direction(hint["$natural"]) < 0 else 1
    for index in store.info.indexes.values():
        if index.spec.get("hidden"):
            continue
        if isinstance(hint, str) and index.name == hint:
            return index
        if isinstance(hint, Mapping) and list(index.key.items()) == list(hint.items()):
            return index
    raise _planner_error(ErrorCode.BadValue, "hint provided does not correspond to an existing index")


def _trial(
    store: CollectionStore,
    scans: list[tuple[Candidate, IndexScan]],
    matcher: Callable[..., bool] | None,
    sorted_query: bool,
) -> Plan:
    """Run each candidate a little; the most productive wins."""
    results: list[tuple[float, int, Candidate, IndexScan, int, int]] = []
    for order, (candidate, scan) in enumerate(scans):
        produced = works = 0
        eof = True
        for _rid, data in scan.rows():
            works += 1
            if matcher is None or matcher(bson.decode(data, CODEC)):
                produced += 1
            if produced >= TRIAL_RESULTS or works >= TRIAL_WORKS:
                eof = False
                break
        productivity = produced / max(works, 1) + (1.0 if eof else 0.0)
        if sorted_query and candidate.provides_sort:
            productivity += 0.5
        results.append((productivity, -order, candidate, scan, produced, works))
    results.sort(key=lambda r: (r[0], r[1]), reverse=True)
    winner = results[0]
    fresh = index_scan(store, winner[2])
    assert fresh is not None
    return Plan(
        fresh,
        winner[2].provides_sort,
        rejected=[r[3] for r in results[1:]],
        trials=[(r[3], r[4], r[5]) for r in results],
        scores=[r[0] for r in results],
    )


def plan_access(
    store: CollectionStore,
    filter_spec: Mapping[str, Any] | None,
    matcher: Callable[..., bool] | None,
    hint: Any,
    collator: Collator | None = None,
) -> AccessStage:
    """The access stage for a write's target documents (no sort)."""
    return choose_plan(store, filter_spec, matcher, None, None, hint, collator=collator).access


def _serves(index: IndexInfo, filter_spec: Mapping[str, Any]) -> bool:
    partial = index.spec.get("partialFilterExpression")
    return partial is None or implies(field_conditions(filter_spec), partial)


def near_plan(store: CollectionStore, filter_spec: Mapping[str, Any], path: str, query: NearQuery) -> Plan:
    """The distance-ordered plan of a $near/$nearSphere on ``path``: a geo
    index on that path is required (2dsphere for a GeoJSON point; a legacy
    $near prefers a 2d index and reads distances on the plane)."""
    usable = [
        i
        for i in store.info.indexes.values()
        if i.kind in GEO_KINDS and not i.spec.get("hidden") and geo.geo_field(i) == path and _serves(i, filter_spec)
    ]
    if query.geojson:
        usable = [i for i in usable if i.kind == "2dsphere"]
    usable.sort(key=lambda i: (i.kind != "2d") if not query.spherical else (i.kind != "2dsphere"))
    if not usable:
        raise _planner_error(ErrorCode.NoQueryExecutionPlans, "unable to find index for $geoNear query")
    index = usable[0]
    if index.kind == "2dsphere" and query.center is None:
        x, y = query.flat
        raise CommandError(ErrorCode.BadValue, geo.sphere_bounds_message(x, y))
    if index.kind == "2dsphere" and not query.spherical:
        query = query.on_sphere()  # a legacy $near on a 2dsphere index measures radians
    if indexes_disabled():
        return Plan(geo.GeoNearScan(store, None, path, query))
    conditions = field_conditions(filter_spec)
    others = [
        field_intervals(conditions.get(field, []), index.multikey) or [ALL] if field != path else [ALL]
        for field in index.key
    ]
    # Distance order is the scan's own; a sort given besides it still applies.
    return Plan(geo.GeoNearScan(store, index, path, query, others))
