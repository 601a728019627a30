"""Writes to a time-series collection, as writes to its buckets.

Manual: https://www.mongodb.com/docs/manual/core/timeseries-collections/ and
https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/

:class:`TimeSeriesWriter` works inside the caller's write transaction on the
``system.buckets.<name>`` store (format in :mod:`foliodb.engine.buckets`):

* insert: each measurement goes into a bucket of its meta value whose time
  span holds it and which has room, looked up in the store (mongod "reopens"
  buckets the same way) or among the buckets this batch is filling, else a
  new bucket. A batch rewrites each bucket it touches once.
* delete and update (any filter and update since MongoDB 7.0): the buckets
  the filter's bucket-level predicate admits are unpacked, the filter runs on
  each measurement, and each touched bucket is rewritten without the matched
  measurements (or deleted when empty); an update's results are inserted
  again as new measurements, as mongod does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bson import ObjectId

from foliodb.engine.buckets import (
    MISSING,
    Bucket,
    BucketSpec,
    bucket_filter,
    date_of,
    measurements,
    meta_key,
    split_meta,
    unpack,
)
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
        filling: dict[bytes, list[Bucket]] = {}
        for measurement in measurements:
            meta, rest = split_meta(self.spec, measurement)
            millis = cmp.date_millis(rest[self.spec.time_field])
            key = meta_key(meta)
            open_buckets = filling.setdefault(key, [])
            bucket = next((b for b in open_buckets if b.fits(millis)), None)
            if bucket is None:
                bucket = self._reopen(meta, key, millis, {b.rid for b in open_buckets if b.rid is not None})
                if bucket is None:
                    bucket = Bucket(self.spec, meta)
                open_buckets.append(bucket)
            bucket.add(rest, millis)
        for open_buckets in filling.values():
            for bucket in open_buckets:
                self._write(bucket)

    def _reopen(self, meta: Any, key: bytes, millis: int, skip: set[int]) -> Bucket | None:
        """A stored bucket of this meta value whose span holds ``millis`` and which has room."""
        time_path = f"control.min.{self.spec.time_field}"
        lowest = self.spec.round_down(millis) - self.spec.max_span * 1000
        query: dict[str, Any] = {time_path: {"$lte": date_of(millis), "$gt": date_of(lowest)}}
        query["meta"] = meta if key else {"$exists": False}
        if self.spec.meta_field is None and lowest >= 0 and millis < (1 << 32) * 1000:
            # A bucket's _id starts with its control.min time in seconds: with no
            # meta field (so no meta index) the _id order finds the candidates.
            low, high = (lowest // 1000 + 1).to_bytes(4, "big"), (millis // 1000).to_bytes(4, "big")
            query["_id"] = {"$gte": ObjectId(low + bytes(8)), "$lte": ObjectId(high + b"\xff" * 8)}
        for found in FindExecution(self.store, FindSpec(filter=query, show_record_id=True), self.ctx):
            rid = found.pop("$recordId")
            if rid in skip or meta_key(found.get("meta", MISSING)) != key:
                continue
            bucket = Bucket.load(self.spec, rid, found)
            if bucket.fits(millis):
                return bucket
        return None

    def _write(self, bucket: Bucket) -> None:
        if not bucket.count:
            if bucket.rid is not None and bucket.old is not None:
                self.store.delete(bucket.rid, bucket.old)
            return
        doc = bucket.document()
        if bucket.rid is None:
            bucket.rid = self.store.insert(doc)
        else:
            assert bucket.old is not None
            self.store.update(bucket.rid, bucket.old, doc, replace=True)

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
                    rebuilt.add(measurement, cmp.date_millis(measurement[self.spec.time_field]))
                self._write(rebuilt)
            if n and not multi:
                break
        return n
