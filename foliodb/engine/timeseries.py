"""Writes to a time-series collection, as writes to its buckets.

Manual: https://www.mongodb.com/docs/manual/core/timeseries-collections/ and
https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/

:class:`TimeSeriesWriter` works inside the caller's write transaction on the
``system.buckets.<name>`` store (format in :mod:`foliodb.engine.buckets`):

* insert: each measurement goes into a bucket of its meta value whose time
  span holds it and which has room, as the collection's bucket catalog
  (:mod:`foliodb.engine.bucket_catalog`) chooses it from the buckets it holds
  in memory, loading from the store (mongod "reopens" buckets the same way)
  only what it does not hold; else a new bucket. A batch rewrites each bucket
  it touches once, without reading it back.
* delete and update (any filter and update since MongoDB 7.0): the buckets
  the filter's bucket-level predicate admits are unpacked, the filter runs on
  each measurement, and each touched bucket is rewritten without the matched
  measurements (or deleted when empty); an update's results are inserted
  again as new measurements, as mongod does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import bson
from bson import ObjectId

from foliodb.engine.bucket_catalog import BucketCatalog, Series
from foliodb.engine.buckets import (
    MISSING,
    WRAPPING,
    Bucket,
    BucketSpec,
    bucket_filter,
    measurement_size,
    measurements,
    meta_key,
    split_meta,
    unpack,
)
from foliodb.engine.catalog import CODEC
from foliodb.engine.query import FindExecution, FindSpec
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter

Doc = dict[str, Any]


def check_measurement(spec: BucketSpec, doc: Any) -> Doc:
    """A measurement as stored: a document with a date in the time field (mongod's
    BadValue otherwise) and an ``_id`` (generated, last, when missing)."""
    if not isinstance(doc, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'insert.documents' is the wrong type, expected object")
    if cmp.bracket(doc.get(spec.time_field)) != cmp.DATE:
        raise CommandError(
            ErrorCode.BadValue, f"'{spec.time_field}' must be present and contain a valid BSON UTC datetime value"
        )
    out = dict(doc)
    if "_id" not in out:
        out["_id"] = ObjectId()
    return out


class TimeSeriesWriter:
    """One write command's access to one time-series collection's buckets."""

    def __init__(self, store: CollectionStore, spec: BucketSpec, ctx: Context) -> None:
        self.store = store
        self.spec = spec
        self.ctx = ctx

    # -- insert --------------------------------------------------------------------

    def insert(self, measurements: list[Doc]) -> None:
        """Store checked measurements (see :func:`check_measurement`)."""
        store = self.store
        catalog = BucketCatalog.of(store, self.spec)
        store.storage.rollback_hooks[catalog] = catalog.drop
        filled: dict[bytes, dict[int, Bucket]] = {}  # by meta, then bucket: the order written
        touched: dict[bytes, Series] = {}
        try:
            for measurement in measurements:
                meta, rest = split_meta(self.spec, measurement)
                data = store.encode({"m": rest})
                rest = bson.decode(data, CODEC)["m"]  # the engine's own copy, as storage would give it back
                size = len(data) - WRAPPING  # as measurement_size(rest)
                millis = cmp.date_millis(rest[self.spec.time_field])
                key = meta_key(meta)
                series, bucket = catalog.bucket_for(store, self.ctx, meta, key, millis, size)
                if bucket is None:
                    bucket = Bucket(self.spec, bson.decode(key, CODEC)["m"] if key else MISSING)
                    series.buckets.append(bucket)
                bucket.add(rest, millis, size)
                filled.setdefault(key, {})[id(bucket)] = bucket
                touched[key] = series
            for buckets in filled.values():
                for bucket in buckets.values():
                    self._write(bucket)
        except BaseException:
            catalog.drop()  # it may hold measurements the store does not
            raise
        catalog.written(store, list(touched.values()))

    def _write(self, bucket: Bucket) -> None:
        if not bucket.count:
            if bucket.rid is not None and bucket.old is not None:
                self.store.delete(bucket.rid, bucket.old, bucket.stored)
            return
        doc = bucket.document()
        if bucket.rid is None:
            data = self.store.encode(doc)
            bucket.rid = self.store.insert(doc, data)
        else:
            assert bucket.old is not None
            data = self.store.encode(doc, after_update=True)
            self.store.update(bucket.rid, bucket.old, doc, data, bucket.stored, replace=True)
        bucket.old, bucket.stored = doc, data

    # -- delete and update ---------------------------------------------------------

    def _candidates(self, filter_spec: Mapping[str, Any] | None) -> list[tuple[int, Doc]]:
        pruning = bucket_filter(self.spec, filter_spec) if filter_spec else None
        run = FindExecution(self.store, FindSpec(filter=pruning, show_record_id=True), self.ctx)
        return [(doc.pop("$recordId"), doc) for doc in run]

    def remove_matching(
        self,
        filter_spec: Mapping[str, Any] | None,
        multi: bool,
        each: Callable[[Doc, MatchDetails], None] | None = None,
    ) -> int:
        """Remove the measurements matching the filter (the first only, unless
        ``multi``), calling ``each`` on each as the collection shows it; the count."""
        matcher = compile_filter(filter_spec, self.ctx)
        n = 0
        for rid, stored in self._candidates(filter_spec):
            stored_measurements = list(measurements(stored))
            kept = []
            for measurement, shown in zip(stored_measurements, unpack(self.spec, stored), strict=True):
                details = MatchDetails()
                if (multi or n == 0) and matcher(shown, details):
                    n += 1
                    if each is not None:
                        each(shown, details)
                else:
                    kept.append(measurement)
            if len(kept) != len(stored_measurements):
                rebuilt = Bucket(self.spec, stored.get("meta", MISSING), rid, stored["_id"])
                rebuilt.old = stored
                for measurement in kept:
                    millis = cmp.date_millis(measurement[self.spec.time_field])
                    rebuilt.add(measurement, millis, measurement_size(measurement))
                self._write(rebuilt)
            if n and not multi:
                break
        return n
