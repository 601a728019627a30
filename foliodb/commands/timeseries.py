"""Time-series collections in the catalog: create, collMod, listCollections
and the translation of their indexes to bucket indexes.

Manual: https://www.mongodb.com/docs/manual/core/timeseries-collections/,
https://www.mongodb.com/docs/manual/core/timeseries/timeseries-granularity/,
https://www.mongodb.com/docs/manual/core/timeseries/timeseries-secondary-index/

``create`` with ``timeseries`` makes two catalog entries, as mongod does:
``<name>``, which reads as ``$_internalUnpackBucket`` over its buckets (see
``CollectionInfo.view_pipeline``) and whose writes go to buckets
(``foliodb.engine.timeseries``), and ``system.buckets.<name>``, a clustered
collection of bucket documents. Options are stored as listCollections shows
them (``granularity`` with its ``bucketMaxSpanSeconds``, or the two custom
seconds). An index on the time-series collection is an index on the buckets:
the meta field becomes ``meta``, a measurement field ``f`` becomes
``control.min.f`` and ``control.max.f`` (in the other order when descending);
listIndexes translates back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.engine.buckets import GRANULARITIES
from foliodb.engine.catalog import CollectionInfo
from foliodb.engine.engine import ID_INDEX_SPEC
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import is_string

_FIELDS = ("timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds")


def buckets_name(name: str) -> str:
    return f"system.buckets.{name}"


def check_options(raw: Any, command: str = "create") -> dict[str, Any]:
    """The ``timeseries`` option checked, as listCollections will show it."""
    if not isinstance(raw, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch, f"BSON field '{command}.timeseries' is the wrong type, expected type 'object'"
        )
    for key in raw:
        if key not in _FIELDS:
            raise location(40415, f"BSON field '{command}.timeseries.{key}' is an unknown field.")
    if "timeField" not in raw:
        raise location(40414, f"BSON field '{command}.timeseries.timeField' is missing but a required field")
    out: dict[str, Any] = {}
    for key in ("timeField", "metaField"):
        if key in raw:
            value = raw[key]
            if not is_string(value):
                raise CommandError(
                    ErrorCode.TypeMismatch,
                    f"BSON field '{command}.timeseries.{key}' is the wrong type, expected type 'string'",
                )
            if "." in value:
                raise CommandError(ErrorCode.InvalidOptions, f"The '{key}' field cannot contain embedded fields")
            if key == "metaField" and value == "_id":
                raise CommandError(ErrorCode.InvalidOptions, "The 'metaField' field cannot be \"_id\"")
            out[key] = value
    if out.get("metaField") == out["timeField"]:
        raise CommandError(
            ErrorCode.InvalidOptions, "The 'metaField' field cannot be the same as the 'timeField' field"
        )
    span = raw.get("bucketMaxSpanSeconds")
    rounding = raw.get("bucketRoundingSeconds")
    for key, value in (("bucketMaxSpanSeconds", span), ("bucketRoundingSeconds", rounding)):
        if value is not None:
            seconds = params.as_int(value, f"{command}.timeseries.{key}")
            if not 1 <= seconds <= 31536000:
                raise location(
                    ErrorCode.BadValue,
                    f"BSON field '{command}.timeseries.{key}' value must be in the range [1, 31536000]",
                )
    if "granularity" in raw or (span is None and rounding is None):
        granularity = raw.get("granularity", "seconds")
        if granularity not in GRANULARITIES:
            raise CommandError(
                ErrorCode.BadValue,
                f"Enumeration value '{granularity}' for field '{command}.timeseries.granularity' is not a valid value.",
            )
        default_span, default_rounding = GRANULARITIES[granularity]
        if span is not None and span != default_span:
            raise CommandError(
                ErrorCode.InvalidOptions,
                "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of "
                f"{default_span} for the provided granularity",
            )
        if rounding is not None and rounding != default_rounding:
            raise CommandError(
                ErrorCode.InvalidOptions,
                "Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of "
                f"{default_rounding} for the provided granularity",
            )
        out["granularity"] = granularity
        out["bucketMaxSpanSeconds"] = default_span
        return out
    if span is None or rounding is None:
        raise CommandError(
            ErrorCode.InvalidOptions,
            "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        )
    if span != rounding:
        raise CommandError(
            ErrorCode.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'"
        )
    out["bucketRoundingSeconds"] = int(rounding)
    out["bucketMaxSpanSeconds"] = int(span)
    return out


def create(request: Request, name: str, options: dict[str, Any], db: str | None = None) -> None:
    """Inside a write: the time-series collection and its buckets (with the
    index on meta and time that mongod 6.3+ creates when there is a meta field)."""
    engine = request.engine
    db = db or request.db
    ts = options["timeseries"]
    draft = engine.draft()
    info = draft.add_collection(db, name, options)
    engine.record(db, info, {"create": name, **options})
    bucket_options = {"clusteredIndex": True, "timeseries": ts}
    if "expireAfterSeconds" in options:
        bucket_options["expireAfterSeconds"] = options["expireAfterSeconds"]
    buckets = draft.add_collection(db, buckets_name(name), bucket_options)
    draft.add_index(buckets, dict(ID_INDEX_SPEC))
    engine.record(db, buckets, {"create": buckets.name, **bucket_options})
    if "metaField" in ts:
        key = {ts["metaField"]: 1, ts["timeField"]: 1}
        draft.add_index(buckets, {"v": 2, "key": bucket_key(ts, key), "name": default_name(key)})


def default_name(key: Mapping[str, Any]) -> str:
    return "_".join(f"{field}_{direction}" for field, direction in key.items())


def bucket_key(ts: Mapping[str, Any], key: Mapping[str, Any]) -> dict[str, Any]:
    """A time-series index key as the buckets' index key."""
    out: dict[str, Any] = {}
    meta = ts.get("metaField")
    for field, direction in key.items():
        if meta is not None and (field == meta or field.startswith(meta + ".")):
            out["meta" + field[len(meta) :]] = direction
        elif isinstance(direction, (int, float)) and not isinstance(direction, bool):
            low, high = (f"control.min.{field}", f"control.max.{field}")
            first, second = (low, high) if direction > 0 else (high, low)
            out[first] = direction
            out[second] = direction
        else:
            raise CommandError(
                ErrorCode.CannotCreateIndex,
                f"Index type not supported on a time-series measurement field: {field}: {direction!r}",
            )
    return out


def user_key(ts: Mapping[str, Any], key: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`bucket_key`."""
    out: dict[str, Any] = {}
    meta = ts.get("metaField")
    for field, direction in key.items():
        if field == "meta" or field.startswith("meta."):
            out[f"{meta}{field[4:]}"] = direction
        elif field.startswith("control."):
            out.setdefault(field.split(".", 2)[2], direction)
    return out


def bucket_index_spec(ts: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """A createIndexes spec on the time-series collection, for the buckets."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("key"), Mapping):
        return dict(spec) if isinstance(spec, Mapping) else spec
    out = dict(spec)
    if spec.get("unique"):
        raise CommandError(ErrorCode.InvalidOptions, "Unique indexes are not supported on time-series collections")
    if "name" not in out:
        out["name"] = default_name(spec["key"])
    out["key"] = bucket_key(ts, spec["key"])
    return out


def listed_indexes(info: CollectionInfo, buckets: CollectionInfo) -> list[dict[str, Any]]:
    """listIndexes of a time-series collection: its bucket indexes, in the user's terms."""
    ts = info.options["timeseries"]
    out = []
    for index in buckets.indexes.values():
        if index.name == "_id_":
            continue
        spec = dict(index.spec)
        spec["key"] = user_key(ts, index.key)
        out.append(spec)
    return out


def collection_entry(info: CollectionInfo) -> dict[str, Any]:
    return {"name": info.name, "type": "timeseries", "options": dict(info.options), "info": {"readOnly": False}}


def coll_mod(current: Mapping[str, Any], change: Any) -> dict[str, Any]:
    """collMod's ``timeseries`` option: the new ``timeseries`` options (only a coarser granularity)."""
    if not isinstance(change, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch, "BSON field 'collMod.timeseries' is the wrong type, expected type 'object'"
        )
    for key in change:
        if key not in ("granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds"):
            raise location(40415, f"BSON field 'collMod.timeseries.{key}' is an unknown field.")
    target = change.get("granularity")
    if target is None:
        raise CommandError(ErrorCode.InvalidOptions, "No timeseries parameters were given")
    if target not in GRANULARITIES:
        raise CommandError(
            ErrorCode.BadValue,
            f"Enumeration value '{target}' for field 'collMod.timeseries.granularity' is not a valid value.",
        )
    order = list(GRANULARITIES)
    now = current.get("granularity")
    if now == target:
        return dict(current)
    if now is None or order.index(target) < order.index(now):
        raise CommandError(
            ErrorCode.InvalidOptions,
            "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or "
            "'minutes' to 'hours'.",
        )
    out = {key: value for key, value in current.items() if key != "bucketRoundingSeconds"}
    out["granularity"] = target
    out["bucketMaxSpanSeconds"] = GRANULARITIES[target][0]
    return out
