"""Access stages: how candidate records come out of storage.

An access stage yields ``(rid, bson_bytes)`` candidates; the query layer
decodes, filters (always: an access path only narrows, it never decides a
match), sorts and projects them. Each stage counts what it examined, for
``explain``'s executionStats. Two read index keys only: an IndexScan's
:meth:`~IndexScan.count` (COUNT_SCAN, used only where the bounds are exactly
the filter, see :mod:`.counting`) and :class:`~.distinct_scan.DistinctScan`,
which yields a distinct command's values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from foliodb import interrupt
from foliodb.engine.cache import Haystack, Row
from foliodb.engine.catalog import IndexInfo
from foliodb.engine.planner.bounds import ALL, Interval, KeyRange, whole_value
from foliodb.engine.record_reads import SCAN_FIRST
from foliodb.engine.records import CollectionStore
from foliodb.engine.text import TextIndex, TextQuery
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import collation, keystring
from foliodb.query.keystring import decode_key


class AccessStage:
    stage = ""
    keys_examined = 0
    docs_examined = 0

    def rows(self) -> Iterator[tuple[int, bytes]]:
        raise NotImplementedError

    def explain(self) -> dict[str, Any]:
        raise NotImplementedError

    def summary(self) -> str:
        """The plan as the profiler's and the log's ``planSummary`` show it."""
        return self.stage


class CollScan(AccessStage):
    """Every record, in record-id (insertion) order or its reverse. With
    ``needles`` (see :mod:`foliodb.query.prefilter`) SQLite itself skips the
    records whose bytes lack one of each group, before Python sees them."""

    stage = "COLLSCAN"

    def __init__(self, store: CollectionStore, direction: int = 1, needles: list[list[bytes]] | None = None) -> None:
        self.store = store
        self.direction = direction
        self.needles = needles or []
        self._produced = 0
        self._last_rid: int | None = None
        self._finished = False

    def rows(self) -> Iterator[tuple[int, bytes]]:
        for row in self.store.scan(reverse=self.direction < 0, needles=self.needles):
            self._produced += 1
            self._last_rid = row[0]
            yield row
        self._finished = True

    def cached_rows(self, build: bool) -> list[Row] | None:
        """The scan as (record id, BSON, decoded document) from the document cache
        (:meth:`CollectionStore.cached_rows`, built when missing if ``build``: at once
        without needles, after enough needle scans with them), in this scan's order; None
        when the cache has no part in it. The caller tests the needles (on the BSON) and
        reports its progress (:meth:`cached_progress`)."""
        rows = self.store.cached_rows(build, patient=bool(self.needles))
        if rows is None or self.direction > 0:
            return rows
        return rows[::-1]

    def cached_haystack(self, rows: list[Row]) -> Haystack | None:
        """The BSON of :meth:`cached_rows`' ``rows`` end to end, for a forward scan (the
        haystack is in record-id order) while their entry is cached; else None."""
        return self.store.cached_haystack(rows) if self.direction > 0 else None

    def cached_progress(self, produced: int, last_rid: int | None, finished: bool) -> None:
        """How far a scan of :meth:`cached_rows` has gone, counted as :meth:`rows` counts
        (told at each document it hands on and at its end: a suspended cursor's first batch
        reports what it examined)."""
        self._produced = produced
        self._last_rid = last_rid
        self._finished = finished

    @property
    def docs_examined(self) -> int:  # type: ignore[override]
        """Records the scan passed over, as MongoDB counts them: with needles,
        SQLite skipped some without Python seeing them, so they are counted
        (only when asked: explain, the profiler) from the position reached."""
        if not self.needles:
            return self._produced
        if self._finished:
            return self.store.count()
        if self._last_rid is None:
            return 0
        return self.store.count_through(self._last_rid, reverse=self.direction < 0)

    def explain(self) -> dict[str, Any]:
        return {"stage": "COLLSCAN", "direction": "forward" if self.direction > 0 else "backward"}


def _record_bound(key: bytes, collated: bool) -> tuple[bool, Any]:
    """(True, the value) of a clustered scan's bound key, as minRecord and
    maxRecord show it: a string of a ``collated`` ``_id`` index is a sort
    key, shown as explain shows collated bounds (``CollationKey(0x..)``,
    see :func:`~foliodb.engine.planner.bounds.collation_keys_shown`); the
    number bracket starts at NaN there (its minimum for the type), where
    index bounds say -inf."""
    if key == _NEG_INF:
        return True, float("nan")
    whole, value = whole_value(key, False)
    if whole and collated and isinstance(value, str):
        return True, collation.shown_key(value)
    return whole, value


_NEG_INF = keystring.encode(float("-inf"))


def clustered_explain(index: IndexInfo, direction: int, hull: tuple[bytes, bytes] | None) -> dict[str, Any]:
    """A scan of a clustered collection's ``_id`` index as mongod shows its
    scan of the clustered index (a collection scan there): CLUSTERED_IXSCAN
    with the inclusive record bounds ``minRecord``/``maxRecord`` - the
    lowest and highest keys of the scan of ``index`` (``hull``), the filter
    deciding the rest, as in mongod - or a plain COLLSCAN when they are no
    values (``$exists``, a ``$regex``, a hint without a filter...).

    Manual: https://www.mongodb.com/docs/manual/core/clustered-collections/
    ("a query that uses a clustered index performs a bounded collection scan")."""
    node: dict[str, Any] = {"stage": "COLLSCAN", "direction": "forward" if direction > 0 else "backward"}
    if hull is not None:
        collated = index.collator is not None
        low, lo = _record_bound(hull[0], collated)
        high, hi = _record_bound(hull[1], collated)
        if low and high:
            node.update(stage="CLUSTERED_IXSCAN", minRecord=lo, maxRecord=hi)
    return node


class IdLookup(AccessStage):
    """Point lookups of ``_id`` values in the ``_id`` index (MongoDB's IDHACK
    for one value, an IXSCAN of point bounds for several; on a clustered
    collection, a CLUSTERED_IXSCAN of each record, which reads no keys)."""

    def __init__(self, store: CollectionStore, keys: list[bytes]) -> None:
        self.store = store
        self.keys = keys
        self.clustered = store.info.is_clustered
        self.stage = "CLUSTERED_IXSCAN" if self.clustered else "IDHACK" if len(keys) == 1 else "IXSCAN"

    def rows(self) -> Iterator[tuple[int, bytes]]:
        for key in self.keys:
            if not self.clustered:
                self.keys_examined += 1
            row = self.store.row_by_id_key(key)
            if row is not None:
                self.docs_examined += 1
                yield row

    def explain(self) -> dict[str, Any]:
        if self.clustered:
            return clustered_explain(self.store.info.id_index, 1, (min(self.keys), max(self.keys)))
        if self.stage == "IDHACK":
            return {"stage": "IDHACK"}
        return {
            "stage": "IXSCAN",
            "keyPattern": {"_id": 1},
            "indexName": "_id_",
            "isMultiKey": False,
            "direction": "forward",
        }


def index_scan_explain(
    stage: str, index: IndexInfo, direction: int, bounds: Any, key_pattern: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An index-reading stage as mongod's explain shows it (IXSCAN, DISTINCT_SCAN). A wildcard
    index's scan of one path shows that path's key pattern ({$_path: 1, path: 1}), as mongod."""
    spec = index.spec
    key = key_pattern if key_pattern is not None else dict(index.key)
    out: dict[str, Any] = {"stage": stage, "keyPattern": key, "indexName": index.name}
    if "collation" in spec:
        out["collation"] = dict(spec["collation"])  # as mongod shows a collated index
    out.update(
        {
            "isMultiKey": index.multikey,
            "multiKeyPaths": {name: [name] if index.multikey and name != "$_path" else [] for name in key},
            "isUnique": bool(spec.get("unique", False)),
            "isSparse": bool(spec.get("sparse", False)),
            "isPartial": "partialFilterExpression" in spec,
            "indexVersion": 2,
            "direction": "forward" if direction > 0 else "backward",
            "indexBounds": bounds,
        }
    )
    return out


class IndexScan(AccessStage):
    """Records through an index's key ranges (IXSCAN, with the FETCH of each
    record in the same SQL statement). A multikey index can list a record
    under several keys; each record is produced once. ``key_check`` (see
    :func:`~foliodb.engine.planner.bounds.key_checker`) passes over keys
    outside the bounds of fields the ranges leave open, unread."""

    stage = "IXSCAN"

    def summary(self) -> str:
        return f"{self.stage} {self.index.pattern_shown}"

    def __init__(
        self,
        store: CollectionStore,
        index: IndexInfo,
        ranges: list[KeyRange],
        direction: int,
        bounds: dict[str, list[str]] | Callable[[], dict[str, list[str]]],
        key_check: Callable[[bytes], bool] | None = None,
        intervals: list[list[Interval]] | None = None,
        key_pattern: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.key_pattern = key_pattern  # explain's keyPattern when not the index's (a wildcard's path)
        self.index = index
        self.ranges = ranges
        self.direction = direction
        self._bounds = bounds  # or what builds them, on first use
        self.key_check = key_check
        self.intervals = intervals  # per field, from the filter (None: a min/max range)
        self.keys_examined = 0
        self.docs_examined = 0
        self.covered = False  # set by the query layer: keys alone answer it
        self.first_fetch = SCAN_FIRST  # the first batch's rows; a find sets what it expects to return

    @property
    def bounds(self) -> dict[str, list[str]]:
        """explain's ``indexBounds`` (built when first asked: explain, the plan cache's stats)."""
        bounds = self._bounds
        if callable(bounds):
            bounds = self._bounds = bounds()
        return bounds

    def rows(self) -> Iterator[tuple[int, bytes]]:
        seen: set[int] | None = set() if self.index.multikey else None
        ranges = self.ranges if self.direction > 0 else list(reversed(self.ranges))
        key_check = self.key_check
        n = 0
        for key_range in ranges:
            for key, rid, data in self._scan(key_range, False):
                self.keys_examined += 1
                n += 1
                if not n & 255:
                    interrupt.check()  # keys the check rejects, or a caller that yields no rows
                if key_check is not None and not key_check(key):
                    continue
                if seen is not None:
                    if rid in seen:
                        continue
                    seen.add(rid)
                self.docs_examined += 1
                assert data is not None  # a fetching scan joins each entry to its record
                yield rid, data

    def key_values(self) -> Iterator[tuple[int, list[Any]]]:
        """(rid, indexed values) from the keys alone, for covered queries
        (on indexes that are neither multikey nor lossy)."""
        descending = [isinstance(d, (int, float)) and d < 0 for d in self.index.key.values()]
        ranges = self.ranges if self.direction > 0 else list(reversed(self.ranges))
        key_check = self.key_check
        n = 0
        for key_range in ranges:
            for key, rid, _ in self._scan(key_range, True):
                self.keys_examined += 1
                n += 1
                if not n & 255:
                    interrupt.check()
                if key_check is None or key_check(key):
                    yield rid, decode_key(key, descending)

    def count(self) -> int:
        """How many records the scan reads, from the keys alone (each record
        of a multikey index once): one SQL count unless a key check decides."""
        key_check = self.key_check
        if key_check is None:
            ranges = [(r.start, r.stop) for r in self.ranges]
            n = self.store.index_count(self.index, ranges, records=self.index.multikey)
            self.keys_examined += n
            return n
        n = 0
        for key_range in self.ranges:
            for key, _, _ in self._scan(key_range, True):
                self.keys_examined += 1
                if not self.keys_examined & 255:
                    interrupt.check()
                n += key_check(key)
        return n

    def _scan(self, key_range: KeyRange, keys_only: bool) -> Iterator[tuple[bytes, int, bytes | None]]:
        store, index = self.store, self.index
        start, stop = key_range.start, key_range.stop
        # Small first, as a collection scan's (record_reads.SCAN_FIRST): a limit-1 query reads one short
        # batch, and an idle cursor holds only the few rows fetched and not yet returned.
        batch = self.first_fetch
        forward = self.direction > 0
        while True:
            rows = store.index_rows(index, start, stop, forward, keys_only, batch)
            count, last = len(rows), rows[-1][0] if rows else b""
            rows.reverse()
            while rows:  # popped: returned rows are not held
                yield rows.pop()
            if count < batch:
                return
            if forward:
                start = last + b"\x00"  # the smallest key above `last`
            else:
                stop = last
            batch = min(batch * 4, 512)

    def explain(self) -> dict[str, Any]:
        return index_scan_explain("IXSCAN", self.index, self.direction, self.bounds, self.key_pattern)


class ClusteredScan(IndexScan):
    """An IndexScan of a clustered collection's ``_id`` index, which stands
    for its clustered index: explain shows it as mongod shows a scan of the
    clustered index (see :func:`clustered_explain`), and, as there, it reads
    records, no index keys."""

    @property
    def keys_examined(self) -> int:
        return 0

    @keys_examined.setter
    def keys_examined(self, value: int) -> None:
        pass  # a clustered scan counts the records it reads, never keys

    def explain(self) -> dict[str, Any]:
        ids = self.intervals[0] if self.intervals else None
        return clustered_explain(self.index, self.direction, (ids[0].lo, ids[-1].hi) if ids and ids != [ALL] else None)

    def summary(self) -> str:
        return str(self.explain()["stage"])


class TextScan(AccessStage):
    """Records holding any of a ``$text`` query's terms, through the text index (each record once):
    for a compound text index, the entries under the query's prefix values. The query layer checks
    phrases and negations and scores. A query with no prefix values for a compound index cannot use
    it (mongod's NoQueryExecutionPlans)."""

    stage = "TEXT_MATCH"

    def __init__(
        self, store: CollectionStore, index: IndexInfo, text: TextIndex, query: TextQuery, prefix: list[Any] | None
    ) -> None:
        if prefix is None:
            raise CommandError(
                ErrorCode.NoQueryExecutionPlans,
                "error processing query: planner returned error :: caused by :: failed to use text index to "
                "satisfy $text query (if text index is compound, are equality predicates given for all prefix "
                "fields?)",
            )
        self.store = store
        self.index = index
        self.terms = sorted(query.terms)
        self.query = query
        self.prefix = text.prefix_key(prefix)
        self.prefix_values = dict(zip(text.before, prefix, strict=True))
        self.keys_examined = 0
        self.docs_examined = 0

    def rows(self) -> Iterator[tuple[int, bytes]]:
        rids: set[int] = set()
        for term in self.terms:
            low = self.prefix + keystring.encode(term)
            found = self.store.index_rids(self.index, low, low + b"\xff")
            self.keys_examined += len(found)
            rids.update(found)
        for rid in sorted(rids):
            data = self.store.get_raw(rid)
            if data is not None:
                self.docs_examined += 1
                yield rid, data

    def explain(self) -> dict[str, Any]:
        return {
            "stage": "TEXT_MATCH",
            "indexPrefix": self.prefix_values,
            "indexName": self.index.name,
            "parsedTextQuery": self.query.parsed(),
            "textIndexVersion": 3,
            "inputStage": {
                "stage": "FETCH",
                "inputStage": {
                    "stage": "OR",
                    "inputStages": [
                        {
                            "stage": "IXSCAN",
                            "keyPattern": dict(self.index.key),
                            "indexName": self.index.name,
                            "isMultiKey": True,
                            "direction": "backward",
                            "indexBounds": {},
                        }
                        for _ in self.terms
                    ],
                },
            },
        }


class OrScan(AccessStage):
    """The union of index scans, one per ``$or`` branch, each record once."""

    stage = "OR"

    def summary(self) -> str:
        return ", ".join(dict.fromkeys(scan.summary() for scan in self.scans))

    def __init__(self, scans: list[AccessStage]) -> None:
        self.scans = scans

    def rows(self) -> Iterator[tuple[int, bytes]]:
        seen: set[int] = set()
        for scan in self.scans:
            for rid, data in scan.rows():
                self.keys_examined = sum(s.keys_examined for s in self.scans)
                self.docs_examined = sum(s.docs_examined for s in self.scans)
                if rid not in seen:
                    seen.add(rid)
                    yield rid, data

    def explain(self) -> dict[str, Any]:
        return {"stage": "OR", "inputStages": [scan.explain() for scan in self.scans]}
