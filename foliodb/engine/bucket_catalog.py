"""The bucket catalog: a time-series collection's open buckets, in memory.

Manual: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/
(mongod's bucket catalog) and
https://www.mongodb.com/docs/manual/core/timeseries/timeseries-granularity/

mongod keeps the buckets it fills in memory, by meta value, with their
control.min/max, count and size, so that an insert appends to a bucket
without reading it back. A :class:`BucketCatalog` is FolioDB's: one per
version of a ``system.buckets.<name>`` collection (held by its
:class:`~foliodb.engine.records.CollectionStore`, so a catalog change of the
collection - collMod, an index, drop, rename, dropDatabase - starts an empty
one, as does reopening the dbpath), used only by the writer, inside
:meth:`~foliodb.engine.storage.Storage.write`.

Where a measurement goes (the same whether its buckets come from memory or
from storage): among the buckets of its meta value (compared as BSON, see
:func:`~foliodb.engine.buckets.meta_key`) that fit it (its time within the
bucket's span, room under the count and size limits), the one with the
earliest control.min time, then the one made first (the lowest record id;
buckets not yet written after those, in the order made); else a new bucket.

Invariant: for each meta value it lists (a :class:`Series`), the catalog
holds every stored bucket of that meta value with fewer than
``MAX_MEASUREMENTS`` measurements whose control.min time lies in
``[covered_from, covered_to)``, each with its document and BSON as stored
(or as this write made them, which the write's commit stores). A measurement
at time t can go only to a bucket whose control.min lies in ``(t - span, t]``;
what of that range the series does not cover is first loaded from storage.
Whatever could break the invariant drops the catalog (it is a cache: storage
fills it again):

* a write to the buckets the catalog did not make: the store's ``writes``
  count is past what the catalog last saw (direct writes to
  ``system.buckets``, deletes and updates of measurements, TTL expiry, a
  transaction's commit);
* a rollback of the write that changed it, of a savepoint inside that write,
  or of a failed commit (``Storage.rollback_hooks``), and any error while an
  insert fills it;
* a commit by another connection to the file (SQLite's ``data_version``):
  other processes on a dbpath send their commands to its owner
  (:mod:`foliodb.server.share`), so this only guards against foreign writers;
* other bucketing options than the catalog was made for.

Bounds: a series forgets buckets two spans older than its newest measurement
(raising ``covered_from``), and beyond :data:`CATALOG_BYTES` of measurements
the least recently used series go.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from bson import ObjectId

from foliodb.engine.buckets import MAX_MEASUREMENTS, MISSING, Bucket, BucketSpec, date_of, meta_key
from foliodb.engine.query import FindExecution, FindSpec
from foliodb.engine.records import CollectionStore
from foliodb.query.context import Context

CATALOG_BYTES = 64 * 1024 * 1024  # measurements held per collection before series are forgotten
_STAMP_LIMIT = (1 << 32) * 1000  # a bucket _id's 4-byte seconds stamp counts to here (millis)


class Series:
    """The buckets of one meta value the catalog holds: stored ones by record
    id, then new ones in the order made (the tie-break of the module docstring)."""

    __slots__ = ("buckets", "covered_from", "covered_to", "newest", "size")

    def __init__(self, covered_from: int, covered_to: int | None, newest: int) -> None:
        self.buckets: list[Bucket] = []
        self.covered_from = covered_from
        self.covered_to = covered_to  # None: no upper end
        self.newest = newest  # the latest measurement time put here (millis)
        self.size = 0  # bytes of the buckets' measurements, as of the last write


class BucketCatalog:
    """One buckets collection's open buckets (see the module docstring)."""

    def __init__(self, spec: BucketSpec, writes: int, data_version: int) -> None:
        self.spec = spec
        self.series: OrderedDict[bytes, Series] = OrderedDict()  # least recently used first
        self.writes = writes  # the store's write count this catalog describes
        self.data_version = data_version
        self.size = 0
        self.valid = True

    @classmethod
    def of(cls, store: CollectionStore, spec: BucketSpec) -> BucketCatalog:
        """The store's catalog, new when the one it had may be stale (inside Storage.write)."""
        data_version = int(store.conn.execute("PRAGMA data_version").fetchone()[0])
        catalog = store.bucket_catalog
        if (
            catalog is None
            or not catalog.valid
            or catalog.spec != spec
            or catalog.writes != store.writes
            or catalog.data_version != data_version
        ):
            catalog = store.bucket_catalog = cls(spec, store.writes, data_version)
        return catalog

    def drop(self) -> None:
        """Forget everything: the next insert makes a new catalog from storage."""
        self.valid = False
        self.series.clear()

    def bucket_for(
        self, store: CollectionStore, ctx: Context, meta: Any, key: bytes, millis: int, size: int
    ) -> tuple[Series, Bucket | None]:
        """The series of a measurement's meta value, and the bucket the
        measurement goes to (None: a new one)."""
        span = self.spec.max_span * 1000
        low, high = millis - span + 1, millis + 1  # a candidate's control.min lies in [low, high)
        series = self.series.get(key)
        if series is None:
            # Without a meta field the _id range finds candidates (see _load), up to where stamps wrap.
            top = _STAMP_LIMIT if self.spec.meta_field is None and low >= 0 and high <= _STAMP_LIMIT else None
            series = self.series[key] = Series(low, top, millis)
            self._load(store, ctx, series, meta, key, low, top)
        else:
            self.series.move_to_end(key)
            if low < series.covered_from:
                self._load(store, ctx, series, meta, key, low, series.covered_from)
                series.covered_from = low
            if series.covered_to is not None and high > series.covered_to:
                self._load(store, ctx, series, meta, key, series.covered_to, None)
                series.covered_to = None
            series.newest = max(series.newest, millis)
        best: Bucket | None = None
        best_time = 0
        for bucket in series.buckets:
            assert bucket.min_time is not None  # every bucket listed holds a measurement
            if (best is None or bucket.min_time < best_time) and bucket.fits(millis, size):
                best, best_time = bucket, bucket.min_time
        return series, best

    def _load(
        self, store: CollectionStore, ctx: Context, series: Series, meta: Any, key: bytes, low: int, high: int | None
    ) -> None:
        """Add the stored buckets of ``key`` with room whose control.min lies in [low, high)."""
        bounds: dict[str, Any] = {"$gte": date_of(low)}
        if high is not None:
            bounds["$lt"] = date_of(high)
        query: dict[str, Any] = {f"control.min.{self.spec.time_field}": bounds}
        query["meta"] = meta if key else {"$exists": False}
        if self.spec.meta_field is None and low >= 0 and high is not None and high <= _STAMP_LIMIT:
            # A bucket's _id starts with its control.min in whole seconds: with no meta
            # field (so no meta index) the _id order finds the candidates.
            first, last = (low // 1000).to_bytes(4, "big"), ((high - 1) // 1000).to_bytes(4, "big")
            query["_id"] = {"$gte": ObjectId(first + bytes(8)), "$lte": ObjectId(last + b"\xff" * 8)}
        known = {bucket.rid for bucket in series.buckets}
        for found in FindExecution(store, FindSpec(filter=query, show_record_id=True), ctx):
            rid = found.pop("$recordId")
            if rid in known or meta_key(found.get("meta", MISSING)) != key:
                continue
            bucket = Bucket.load(self.spec, rid, found)
            if bucket.count < MAX_MEASUREMENTS:
                series.buckets.append(bucket)
        # Stored buckets by record id, new ones after them as they were (sorted() is stable).
        series.buckets.sort(key=lambda bucket: (bucket.rid is None, bucket.rid or 0))

    def written(self, store: CollectionStore, touched: list[Series]) -> None:
        """After an insert wrote its buckets: note the store's write count,
        forget full and old buckets of the series it touched, and bound the size."""
        self.writes = store.writes
        span = self.spec.max_span * 1000
        for series in touched:
            floor = series.newest - 2 * span
            series.buckets = [b for b in series.buckets if b.count < MAX_MEASUREMENTS and (b.min_time or 0) >= floor]
            series.covered_from = max(series.covered_from, floor)
            size = sum(bucket.size for bucket in series.buckets)
            self.size += size - series.size
            series.size = size
        while self.size > CATALOG_BYTES and len(self.series) > 1:
            _, forgotten = self.series.popitem(last=False)
            self.size -= forgotten.size
