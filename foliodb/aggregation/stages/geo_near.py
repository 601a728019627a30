"""$geoNear.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/geoNear/

The first stage of a pipeline (40602 elsewhere). The stage becomes a find
(see :class:`GeoNearRequest` and ``Pushdown.near``): ``$near`` on ``key``
(or the collection's only 2d index, else its only 2dsphere index) with
``query`` as the filter, which the engine answers in distance order through
the geo index; the stage then writes ``distanceField`` (the distance times
``distanceMultiplier``) and ``includeLocs`` (the location measured) from
the documents' geoNear metadata.

Units follow ``$near``/``$nearSphere``: a GeoJSON ``near`` measures meters
on the sphere; a legacy pair with ``spherical: true`` radians on the sphere,
without it the plane of a 2d index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import CommandError, ErrorCode, bad_value, location, type_mismatch
from foliodb.query import compare as cmp
from foliodb.query import metadata
from foliodb.query.bsontypes import type_name
from foliodb.query.expr.core import truthy
from foliodb.query.filter import compile_filter
from foliodb.query.filter_ops.geo import NearQuery, parse_near
from foliodb.query.reshape import set_path, split_path

_KNOWN = frozenset(
    {
        "near",
        "distanceField",
        "distanceMultiplier",
        "includeLocs",
        "key",
        "maxDistance",
        "minDistance",
        "query",
        "spherical",
    }
)


@dataclass(frozen=True, slots=True)
class GeoNearRequest:
    """What the find under a $geoNear runs: near ``query`` on ``key``
    (None: the collection's geo index), filtered by ``filter``."""

    key: str | None
    query: NearQuery
    filter: Mapping[str, Any]


def _distance(spec: Mapping[str, Any], name: str) -> float | None:
    if name not in spec:
        return None
    value = spec[name]
    if not cmp.is_number(value) or isinstance(value, bool):
        raise type_mismatch(f"{name} must be a number")
    n = float(cmp.number_value(value))
    if not n >= 0:
        raise bad_value(f"{name} must be nonnegative")
    return n


def _near_query(spec: Mapping[str, Any]) -> NearQuery:
    near = spec.get("near")
    if not isinstance(near, (Mapping, list)):
        raise location(16605, "$geoNear requires a 'near' option as an Array")
    low, high = _distance(spec, "minDistance"), _distance(spec, "maxDistance")
    bounds = {k: v for k, v in (("$minDistance", low), ("$maxDistance", high)) if v is not None}
    if isinstance(near, Mapping) and near.get("type") is not None:
        return parse_near("$near", {"$geometry": near, **bounds}, {})
    op = "$nearSphere" if truthy(spec.get("spherical", False)) else "$near"
    return parse_near(op, near, bounds)


@STAGES.register("$geoNear")
def stage_geoNear(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(10065, f"$geoNear must take an object, but got: {type_name(spec)}")
    for name, code in (("limit", 50858), ("num", 50857)):
        if name in spec:
            raise location(code, f"$geoNear no longer supports the '{name}' parameter. Use a $limit stage instead.")
    if "start" in spec:
        raise location(50856, "$geoNear no longer supports the 'start' argument.")
    for name in spec:
        if name not in _KNOWN:
            raise location(ErrorCode.BadValue, f"Unknown argument to $geoNear: {name}")
    query = _near_query(spec)
    distance_field = spec.get("distanceField")
    if not isinstance(distance_field, str):
        raise location(16606, "$geoNear requires a 'distanceField' option as a String")
    distance_parts = split_path(distance_field)
    locs = spec.get("includeLocs")
    if locs is not None and not isinstance(locs, str):
        raise location(16607, "$geoNear requires that 'includeLocs' option is a String")
    locs_parts = split_path(locs) if locs is not None else None
    multiplier = _distance(spec, "distanceMultiplier")
    scale = 1.0 if multiplier is None else multiplier
    key = spec.get("key")
    if key is not None:
        if not isinstance(key, str):
            raise type_mismatch(f"$geoNear parameter 'key' must be of type string but found type: {type_name(key)}")
        if not key:
            raise bad_value("$geoNear parameter 'key' cannot be the empty string")
    filter_spec = spec.get("query", {})
    if not isinstance(filter_spec, Mapping):
        raise type_mismatch("query must be an object")
    compile_filter(filter_spec, where.env.ctx)  # its errors now, before any document

    def run(docs: Docs) -> Docs:
        for doc in docs:
            meta = metadata.of(doc)
            if meta is None or "geoNearDistance" not in meta:
                raise CommandError(ErrorCode.InternalError, "$geoNear ran without its geo index scan")
            doc = set_path(doc, distance_parts, meta["geoNearDistance"] * scale)
            if locs_parts is not None:
                doc = set_path(doc, locs_parts, meta["geoNearPoint"])
            yield doc

    stage = Stage("$geoNear", dict(spec), run)
    stage.near = GeoNearRequest(key, query, filter_spec)
    return stage
