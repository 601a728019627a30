"""Candidate enumeration: which of a collection's indexes can serve a query, and how.

Candidates are the collection's usable indexes (not hidden, not text; a
partial index only when the filter implies its ``partialFilterExpression``; a
sparse index only when the filter excludes documents that lack the field),
each with its key intervals per key part (:mod:`.bounds`) and whether
scanning it in one direction yields the query's sort. An index is a candidate
when its leading field is bounded or it provides the sort. Wildcard indexes
give one candidate per covered path a condition bounds; geo indexes serve
``$geoWithin``/``$geoIntersects`` on their geo field (:mod:`.geo`); hashed key
parts answer equality only. :func:`index_scan` turns a candidate into the
:class:`~.plans.IndexScan` that reads it, with explain's ``indexBounds``.

Collations: an index of the query's collation (None for both is the same)
serves it fully; a collated index's bounds are built from the query's values
transformed into sort keys (:mod:`foliodb.query.collation`), and conditions
whose bounds a sort key cannot give (``$regex``, ``$not``...) bound nothing
there: the filter still decides. An index of another collation serves only
through conditions that compare no strings (numbers, dates, ObjectIds...:
what a collation does not order), gives no order, and, with a partial filter,
not at all - as mongod's planner does (a query "must specify the same
collation" to use an index for string comparisons).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from foliodb.engine.catalog import IndexInfo
from foliodb.engine.geo_keys import GEO_KINDS
from foliodb.engine.index_keys import wildcard_projected
from foliodb.engine.planner import geo
from foliodb.engine.planner.bounds import ALL, Interval, collation_keys_shown, key_checker, key_ranges, point, union
from foliodb.engine.planner.conditions import field_conditions, field_intervals, implies, includes_null
from foliodb.engine.planner.plans import ClusteredScan, IndexScan
from foliodb.engine.records import CollectionStore
from foliodb.query import collation
from foliodb.query import compare as cmp
from foliodb.query.collation import Collator
from foliodb.query.filter import is_operator_doc
from foliodb.query.hashing import hash64


@dataclass
class Candidate:
    index: IndexInfo
    intervals: list[list[Interval]]
    direction: int
    provides_sort: bool
    # Per key part: its name in explain's indexBounds and whether it is descending (the
    # index's own, kept on it, unless a wildcard index's scan of one path names its parts).
    names: Sequence[str] = ()
    descending: Sequence[bool] = ()

    def __post_init__(self) -> None:
        if not self.names:
            self.names = self.index.key_names
            self.descending = self.index.descending


def sort_direction(index: IndexInfo, intervals: list[list[Interval]], sort: list[tuple[str, int]]) -> int:
    """1 or -1 when scanning ``index`` that way yields ``sort`` order, else 0."""
    if not sort or index.multikey or index.kind != "btree":
        return 0
    fields = list(index.key.items())
    for skip in range(len(fields) - len(sort) + 1):
        window = fields[skip : skip + len(sort)]
        if [name for name, _ in window] != [name for name, _ in sort]:
            if skip < len(intervals) and _is_single_point(intervals[skip]):
                continue
            return 0
        signs = {(1 if key_direction(d) == s else -1) for (_, d), (_, s) in zip(window, sort, strict=True)}
        if len(signs) == 1:
            return signs.pop()
        return 0
    return 0


def key_direction(value: Any) -> int:
    return -1 if cmp.is_number(value) and cmp.number_value(value) < 0 else 1


def _is_single_point(intervals: list[Interval]) -> bool:
    return len(intervals) == 1 and intervals[0].is_point


def _hashed_intervals(conds: list[Any]) -> list[Interval] | None:
    """Points of the hashes of a field's equality values (hashed indexes
    answer equality only)."""
    for cond in conds:
        values: list[Any] | None = None
        if not is_operator_doc(cond):
            values = [cond]
        elif list(cond) == ["$eq"]:
            values = [cond["$eq"]]
        elif list(cond) == ["$in"] and isinstance(cond["$in"], list):
            values = cond["$in"]
        if values is not None and not any(cmp.bracket(v) in (cmp.REGEX, cmp.ARRAY) for v in values):
            return union([point(hash64(v)) for v in values])
    return None


def _wildcard_candidates(index: IndexInfo, conditions: dict[str, list[Any]]) -> list[Candidate]:
    """A wildcard index serves a condition on any one path it covers that
    cannot match a missing field."""
    root = next(iter(index.key))[: -len("$**")]
    projection = index.spec.get("wildcardProjection")
    out = []
    for path, conds in conditions.items():
        if not path.startswith(root) or path.startswith("$"):
            continue
        if projection and not wildcard_projected(path, projection):
            continue
        if any(part.isdigit() for part in path.split(".")):
            # "a.0" may be an array position: its matches are keyed under "a" (a wildcard key
            # holds no positions), so bounds on the path "a.0" would miss them.
            continue
        intervals = field_intervals([c for c in conds if _compares_leaves(c)], multikey=True)
        if intervals is None or includes_null(intervals):
            continue
        out.append(Candidate(index, [[point(path)], intervals], 1, False, ["$_path", path], [False, False]))
    return out


_LEAF_OPERATORS = ("$eq", "$gt", "$gte", "$lt", "$lte")


def _compares_leaves(cond: Any) -> bool:
    """Whether a condition compares only to values a wildcard index keys: it keys a path's
    leaves, never an object or array as a whole, so a comparison to one (``{x: {b: 1}}``,
    ``{$gt: {b: 1}}``, ``$in`` with an array) cannot be bounded there - mongod's
    ``nodeIsSupportedByWildcardIndex``. The fetch's filter still decides the others."""
    if not is_operator_doc(cond):
        return not isinstance(cond, (Mapping, list))
    for op in _LEAF_OPERATORS:
        if op in cond and isinstance(cond[op], (Mapping, list)):
            return False
    values = cond.get("$in")
    return not (isinstance(values, list) and any(isinstance(v, (Mapping, list)) for v in values))


def candidates(
    store: CollectionStore,
    filter_spec: Mapping[str, Any] | None,
    sort: list[tuple[str, int]] | None,
    only: IndexInfo | None = None,
    collator: Collator | None = None,
    conditions: dict[str, list[Any]] | None = None,
) -> list[Candidate]:
    """The usable indexes for a query under ``collator`` (just ``only``, when
    given); ``conditions``: the filter's :func:`field_conditions`, when known."""
    if conditions is None:
        conditions = field_conditions(filter_spec)
    out: list[Candidate] = []
    for index in (only,) if only is not None else store.info.indexes.values():
        if collation.same(index.collator, collator):
            out.extend(_index_candidates(index, conditions, sort))
        elif "partialFilterExpression" not in index.spec:
            out.extend(_index_candidates(index, _uncollated_conditions(conditions), None))
    return out


def _uncollated_conditions(conditions: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The conditions an index of another collation can bound: those that
    compare no strings (objects and arrays may hold strings), and
    ``$exists``/``$type``, whose type-bracket bounds no collation moves."""
    out: dict[str, list[Any]] = {}
    for path, conds in conditions.items():
        kept = [c for cond in conds if (c := _uncollated_condition(cond)) is not None]
        if kept:
            out[path] = kept
    return out


_STRINGISH = frozenset({cmp.STRING, cmp.OBJECT, cmp.ARRAY, cmp.REGEX})


def _uncollated_condition(cond: Any) -> Any:
    if not is_operator_doc(cond):
        return None if cmp.bracket(cond) in _STRINGISH else cond
    out = {}
    for op, arg in cond.items():
        if op == "$in":
            if isinstance(arg, list) and all(cmp.bracket(v) not in _STRINGISH for v in arg):
                out[op] = arg
        elif op in ("$exists", "$type") or (op in _KEY_OPS and cmp.bracket(arg) not in _STRINGISH):
            out[op] = arg
    return out or None


def _collated_conditions(conditions: dict[str, list[Any]], collator: Collator) -> dict[str, list[Any]]:
    """The conditions as a collated index's keys see them: values as sort
    keys, and what no sort-key range can express left out."""
    out: dict[str, list[Any]] = {}
    for path, conds in conditions.items():
        kept = [c for cond in conds if (c := _collated_condition(cond, collator)) is not None]
        if kept:
            out[path] = kept
    return out


_KEY_OPS = frozenset({"$eq", "$gt", "$gte", "$lt", "$lte", "$in"})


def _collated_condition(cond: Any, collator: Collator) -> Any:
    if not is_operator_doc(cond):
        return None if cmp.bracket(cond) == cmp.REGEX else collator.transform(cond)
    out = {}
    for op, arg in cond.items():
        if op in ("$exists", "$type"):
            out[op] = arg
        elif op in _KEY_OPS and not (
            cmp.bracket(arg) == cmp.REGEX or (isinstance(arg, list) and any(cmp.bracket(v) == cmp.REGEX for v in arg))
        ):
            out[op] = collator.transform(arg)
    return out or None


def _index_candidates(
    index: IndexInfo, conditions: dict[str, list[Any]], sort: list[tuple[str, int]] | None
) -> list[Candidate]:
    spec = index.spec
    if spec.get("hidden") or index.kind == "text":
        return []
    partial = spec.get("partialFilterExpression")
    if partial is not None and not implies(conditions, partial):
        return []
    if index.collator is not None:
        conditions = _collated_conditions(conditions, index.collator)
    if index.kind == "wildcard":
        return _wildcard_candidates(index, conditions)
    if index.kind in GEO_KINDS:
        return _geo_candidates(index, conditions)
    per_field = [
        _hashed_intervals(conditions.get(name, []))
        if direction == "hashed"
        else field_intervals(conditions.get(name, []), index.multikey)
        for name, direction in index.key.items()
    ]
    if spec.get("sparse") and all(includes_null(iv) for iv in per_field):
        return []
    intervals = [iv if iv is not None else [ALL] for iv in per_field]
    direction = sort_direction(index, intervals, sort or [])
    if per_field[0] is None and not direction:
        return []
    if per_field[0] is None and (partial is not None or spec.get("sparse")) and not conditions:
        return []
    return [Candidate(index, intervals, direction or 1, bool(direction))]


def _geo_candidates(index: IndexInfo, conditions: dict[str, list[Any]]) -> list[Candidate]:
    """A geo index serves a $geoWithin/$geoIntersects on its geo field (it is
    sparse by nature, so nothing else: documents without a geometry are not in it)."""
    name = geo.geo_field(index)
    geo_ivs = geo.geo_field_intervals(index, conditions.get(name, []))
    if geo_ivs is None:
        return []
    per_field = [
        geo_ivs if field == name else field_intervals(conditions.get(field, []), index.multikey) for field in index.key
    ]
    return [Candidate(index, [iv if iv is not None else [ALL] for iv in per_field], 1, False)]


def shown_bounds(
    names: Sequence[str], descending: Sequence[bool], per_field: list[list[Interval]], direction: int = 1
) -> dict[str, list[str]]:
    """explain's ``indexBounds``: each field's intervals in the order the scan reads them (the
    index's order, reversed for a backward scan, as mongod's IndexBoundsBuilder::reverse)."""
    shown = {}
    for name, desc, intervals in zip(names, descending, per_field, strict=True):
        desc = desc != (direction < 0)
        items = [iv.show() for iv in intervals]
        shown[name] = list(reversed([iv.reversed().show() for iv in intervals])) if desc else items
    return shown


def index_scan(store: CollectionStore, candidate: Candidate) -> IndexScan | None:
    ranges = key_ranges(candidate.intervals, candidate.descending)
    if ranges is None:
        return None
    index = candidate.index

    def shown() -> dict[str, list[str]]:
        """explain's indexBounds, built only when asked (a find that is not explained reads none)."""
        shown_intervals = candidate.intervals
        if index.collator is not None:
            # A wildcard index's $_path keys are field paths, never collated.
            shown_intervals = [
                ivs if name == "$_path" else [collation_keys_shown(iv) for iv in ivs]
                for name, ivs in zip(candidate.names, candidate.intervals, strict=True)
            ]
        return shown_bounds(candidate.names, candidate.descending, shown_intervals, candidate.direction)

    check = None
    if index.kind == "btree" and not index.multikey:
        check = key_checker(candidate.intervals, candidate.descending)
    # A clustered collection's _id index is its clustered index.
    scan = ClusteredScan if index.name == "_id_" and store.info.is_clustered else IndexScan
    key_pattern = dict.fromkeys(candidate.names, 1) if index.kind == "wildcard" else None
    return scan(store, index, ranges, candidate.direction, shown, check, candidate.intervals, key_pattern)
