"""Time-series buckets: mongod's uncompressed (version 1) bucket format.

Manual: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/

A time-series collection ``<name>`` keeps its measurements in the ordinary
collection ``system.buckets.<name>``, many measurements a document::

    {_id: ObjectId(<rounded min time> + 8 unique bytes),
     control: {version: 1,
               min: {<field>: <smallest value>, ...},   time: rounded down
               max: {<field>: <largest value>, ...}},
     meta: <the measurements' shared metaField value>,  absent when they had none
     data: {<field>: {"0": <value>, "1": <value>, ...}, ...}}

``data.<field>.<i>`` is the field of the bucket's i-th measurement; a
measurement without the field has no ``<i>`` there. Every measurement has
``_id`` and the time field. Invariants a bucket keeps:

* its measurements share one meta value (compared by BSON bytes, after
  sorting an embedded document's fields, as mongod normalises metadata);
* ``control.min.<time>`` is the smallest time rounded down to
  ``bucketRoundingSeconds``, and every time lies in
  ``[control.min.<time>, control.min.<time> + bucketMaxSpanSeconds)``;
* at most :data:`MAX_MEASUREMENTS` measurements, of at most
  :data:`MAX_BUCKET_SIZE` bytes together (each measurement's BSON without
  the meta field) unless the bucket holds fewer than
  :data:`LARGE_MEASUREMENT_COUNT` large ones (then up to
  :data:`LARGE_BUCKET_SIZE`), as mongod's bucket size limits;
* ``control.min``/``max`` hold each field's smallest and largest value in
  BSON order (embedded documents field by field, as mongod does), so a
  bucket-level predicate on them never misses a measurement.

Unpacked, a measurement reads as the time field, the meta field, then its
other fields in the bucket's ``data`` order (the manual's examples).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson.datetime_ms import DatetimeMS
from bson.objectid import ObjectId

from foliodb.engine.catalog import CODEC
from foliodb.query import compare as cmp

MAX_MEASUREMENTS = 1000  # timeseriesBucketMaxCount
MAX_BUCKET_SIZE = 128_000  # timeseriesBucketMaxSize (125 KiB)
# timeseriesBucketMinCount: a bucket of fewer measurements than this, too large for
# MAX_BUCKET_SIZE, holds large measurements and stays open up to mongod's
# kLargeMeasurementsMaxBucketSize (the BSON limit less 4 MiB, room for control).
LARGE_MEASUREMENT_COUNT = 10
LARGE_BUCKET_SIZE = 16 * 1024 * 1024 - 4 * 1024 * 1024

# granularity -> (bucketMaxSpanSeconds, bucketRoundingSeconds), as the manual's "Set Granularity" table.
GRANULARITIES: dict[str, tuple[int, int]] = {
    "seconds": (3600, 60),
    "minutes": (86400, 3600),
    "hours": (2592000, 86400),
}

_EPOCH = datetime.datetime(1970, 1, 1)
MISSING = object()  # no meta field (differs from null)


@dataclass(frozen=True, slots=True)
class BucketSpec:
    """How a collection buckets: from its ``timeseries`` options."""

    time_field: str
    meta_field: str | None
    max_span: int  # seconds
    rounding: int  # seconds

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> BucketSpec:
        """From checked ``timeseries`` options (see commands.timeseries)."""
        span, rounding = GRANULARITIES[options.get("granularity", "seconds")]
        if "granularity" not in options:
            span = int(options.get("bucketMaxSpanSeconds", span))
            rounding = int(options.get("bucketRoundingSeconds", rounding))
        return cls(options["timeField"], options.get("metaField"), span, rounding)

    def round_down(self, millis: int) -> int:
        """mongod's roundTimestampToGranularity (whole seconds, down to a multiple
        of ``rounding``) for times from 1970 on; earlier times round down too,
        where mongod's C++ ``%`` rounds toward zero: a bucket's control.min must
        never be later than its measurements, or time pruning would miss them."""
        seconds = millis // 1000
        return (seconds - seconds % self.rounding) * 1000


def date_of(millis: int) -> Any:
    """A BSON date as the engine decodes it (DatetimeMS beyond datetime's range)."""
    try:
        return _EPOCH + datetime.timedelta(milliseconds=millis)
    except OverflowError:
        return DatetimeMS(millis)


def normalize_meta(value: Any) -> Any:
    """mongod sorts an embedded document's fields before bucketing by it."""
    if isinstance(value, Mapping):
        return {key: normalize_meta(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [normalize_meta(v) for v in value]
    return value


def meta_key(meta: Any) -> bytes:
    """Bucket identity of a meta value (missing differs from null)."""
    return b"" if meta is MISSING else bson.encode({"m": meta})


def split_meta(spec: BucketSpec, measurement: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(normalised meta or a missing marker, the measurement's other fields)."""
    if spec.meta_field is None or spec.meta_field not in measurement:
        return MISSING, measurement
    rest = dict(measurement)
    return normalize_meta(rest.pop(spec.meta_field)), rest


def _smaller(a: Any, b: Any, want_min: bool) -> Any:
    """The min (or max) of two values; embedded documents field by field."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = _smaller(out[key], value, want_min) if key in out else value
        return out
    order = cmp.compare(a, b)
    return a if (order <= 0) == want_min else b


class Bucket:
    """A bucket being filled: its record id (None when new), meta and columns.
    Adding a measurement appends to the columns and widens control.min/max,
    so filling a stored bucket never re-reads its measurements. ``old`` and
    ``stored`` are the document and BSON last written (None when new): what
    the update replaces."""

    def __init__(self, spec: BucketSpec, meta: Any, rid: int | None = None, bucket_id: Any = None) -> None:
        self.spec = spec
        self.meta = meta
        self.rid = rid
        self.bucket_id = bucket_id
        self.old: dict[str, Any] | None = None
        self.stored: bytes | None = None
        self.data: dict[str, dict[str, Any]] = {}
        self.low: dict[str, Any] = {}
        self.high: dict[str, Any] = {}
        self.count = 0
        self.size = 0  # bytes of its measurements (see MAX_BUCKET_SIZE)
        self.min_time: int | None = None  # rounded, millis

    @classmethod
    def load(cls, spec: BucketSpec, rid: int, doc: dict[str, Any]) -> Bucket:
        bucket = cls(spec, doc.get("meta", MISSING), rid, doc["_id"])
        bucket.old = doc
        # Copies: the stored document stays as it was, for the update's index and oplog work.
        bucket.data = {key: dict(column) for key, column in doc["data"].items()}
        bucket.low = dict(doc["control"]["min"])
        bucket.high = dict(doc["control"]["max"])
        bucket.count = len(bucket.data.get(spec.time_field, ()))
        bucket.size = sum(measurement_size(m) for m in measurements(doc))
        bucket.min_time = cmp.date_millis(bucket.low[spec.time_field])
        return bucket

    def fits(self, millis: int, size: int) -> bool:
        """Does a measurement at ``millis`` of ``size`` bytes belong here (the limits of the module docstring)?"""
        if self.count >= MAX_MEASUREMENTS:
            return False
        if self.min_time is not None and not self.min_time <= millis < self.min_time + self.spec.max_span * 1000:
            return False
        total = self.size + size
        return total <= MAX_BUCKET_SIZE or (self.count < LARGE_MEASUREMENT_COUNT and total <= LARGE_BUCKET_SIZE)

    def add(self, measurement: dict[str, Any], millis: int, size: int) -> None:
        rounded = self.spec.round_down(millis)
        if self.min_time is None or rounded < self.min_time:
            self.min_time = rounded
        index = str(self.count)
        data, low, high = self.data, self.low, self.high
        for key, value in measurement.items():
            column = data.get(key)
            if column is None:
                data[key] = {index: value}
                low[key] = high[key] = value
            else:
                column[index] = value
                low[key] = _smaller(low[key], value, True)
                high[key] = _smaller(high[key], value, False)
        self.count += 1
        self.size += size

    def document(self) -> dict[str, Any]:
        """The bucket as stored (see the module docstring); its own copy of the
        columns, so that adding to the bucket leaves the document as written."""
        assert self.min_time is not None and self.count
        if self.bucket_id is None:
            stamp = (self.min_time // 1000) & 0xFFFFFFFF
            self.bucket_id = ObjectId(stamp.to_bytes(4, "big") + ObjectId().binary[4:])
        low = dict(self.low)
        low[self.spec.time_field] = date_of(self.min_time)
        doc: dict[str, Any] = {"_id": self.bucket_id, "control": {"version": 1, "min": low, "max": dict(self.high)}}
        if self.meta is not MISSING:
            doc["meta"] = self.meta
        doc["data"] = {key: dict(column) for key, column in self.data.items()}
        return doc


# Bytes {"m": <measurement>} adds to a measurement's BSON: encoded embedded, a
# measurement keeps its field order (at the top level, BSON encoders move _id first).
WRAPPING = 8


def measurement_size(measurement: dict[str, Any]) -> int:
    """What a measurement (without its meta field) counts toward MAX_BUCKET_SIZE: its BSON size."""
    return len(bson.encode({"m": measurement}, codec_options=CODEC)) - WRAPPING


def measurements(bucket: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A bucket's measurements without the meta field, in insertion order."""
    data = bucket.get("data") or {}
    columns = list(data.items())
    count = max((len(column) for _, column in columns), default=0)
    for i in range(count):
        index = str(i)
        out = {}
        for key, column in columns:
            value = column.get(index, MISSING)
            if value is not MISSING:
                out[key] = value
        if out:
            yield out


def unpack(spec: BucketSpec, bucket: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A bucket's measurements as the time-series collection shows them."""
    meta = bucket.get("meta", MISSING)
    time_field = spec.time_field
    for measurement in measurements(bucket):
        doc: dict[str, Any] = {}
        if time_field in measurement:
            doc[time_field] = measurement[time_field]
        if spec.meta_field is not None and meta is not MISSING:
            doc[spec.meta_field] = meta
        for key, value in measurement.items():
            if key != time_field:
                doc[key] = value
        yield doc


# -- bucket-level predicates ---------------------------------------------------------

_TIME_BOUNDS = {"$gt": "max", "$gte": "max", "$lt": "min", "$lte": "min"}


def bucket_filter(spec: BucketSpec, match: Mapping[str, Any]) -> dict[str, Any] | None:
    """A filter on buckets that every bucket holding a measurement matching
    ``match`` passes (None when nothing can be said); see :func:`split_match`."""
    return split_match(spec, match)[0]


def split_match(spec: BucketSpec, match: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(a filter on buckets, what is left to check on each measurement).

    A top-level clause on the meta field (or a path inside it) moves to the
    buckets renamed to ``meta``: every measurement of a bucket has exactly the
    bucket's meta value, so the clause is decided there. A time comparison with
    a date adds a comparison with ``control.min``/``control.max`` (a safe
    superset) and stays for the measurements; other clauses only stay."""
    clauses: list[tuple[str, Any]] = []
    for key, value in match.items():
        if key == "$and" and isinstance(value, list) and all(isinstance(c, Mapping) for c in value):
            clauses.extend(item for clause in value for item in clause.items())
        else:
            clauses.append((key, value))
    on_buckets: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    meta = spec.meta_field
    for key, value in clauses:
        if meta is not None and (key == meta or key.startswith(meta + ".")):
            on_buckets.append({"meta" + key[len(meta) :]: value})
            continue
        if key == spec.time_field:
            on_buckets.extend(_time_clauses(spec, value))
        rest.append({key: value})
    return _conjunction(on_buckets), _conjunction(rest)


def _conjunction(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _time_clauses(spec: BucketSpec, condition: Any) -> list[dict[str, Any]]:
    time = spec.time_field
    if not isinstance(condition, Mapping) or not any(str(k).startswith("$") for k in condition):
        condition = {"$eq": condition}
    out: list[dict[str, Any]] = []
    for op, value in condition.items():
        if cmp.bracket(value) != cmp.DATE:
            continue  # only dates compare with a measurement's time
        if op in _TIME_BOUNDS:
            out.append({f"control.{_TIME_BOUNDS[op]}.{time}": {op: value}})
        elif op == "$eq":
            out.append({f"control.min.{time}": {"$lte": value}})
            out.append({f"control.max.{time}": {"$gte": value}})
    return out
