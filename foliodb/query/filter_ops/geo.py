"""Geospatial query operators: $geoWithin ($within) $geoIntersects $near $nearSphere.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-geospatial/

``$geoWithin`` takes one shape: ``$geometry`` (a GeoJSON Polygon or
MultiPolygon, on the sphere), ``$centerSphere`` (a cap, radius in radians),
or a flat shape read on the plane (``$box``, ``$polygon``, ``$center``).
``$geoIntersects`` takes a ``$geometry`` of any GeoJSON type. Either may be
a big polygon: a single-ringed Polygon with the strict-winding ``crs``,
larger than a hemisphere if its ring says so (see :mod:`foliodb.query.geometry`).
Values that are not geometries never match.

``$near``/``$nearSphere`` order a find's results by distance, which the
engine does with a geo index (:mod:`foliodb.engine.planner.geo`); as a
filter they keep documents whose distance lies in ``[$minDistance,
$maxDistance]``: meters for a GeoJSON point, radians for a legacy pair with
``$nearSphere``, coordinate units on the plane for a legacy ``$near``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.errors import bad_value, location
from foliodb.query import compare as cmp
from foliodb.query import geometry as geo
from foliodb.query.context import Context
from foliodb.query.filter import FIELD_OPS, Clause, Leaf
from foliodb.query.render import render


def query_geometry(value: Any) -> geo.Geometry:
    """A query operand's geometry (a big polygon too); a malformed one is BadValue."""
    try:
        return geo.parse_geometry(value)
    except geo.GeoError as exc:
        raise bad_value(str(exc)) from None


def stored_geometry(value: Any) -> geo.Geometry | None:
    """A document value's geometry, or None when it is not one. A stored big
    polygon matches nothing: mongod compares a query only with default-CRS
    shapes (its intersects answers false for one, and it refuses to index one)."""
    try:
        g = geo.parse_geometry(value)
    except geo.GeoError:
        return None
    return None if g.big else g


def _non_negative(value: Any, what: str) -> float:
    if not cmp.is_number(value) or isinstance(value, bool):
        raise bad_value(f"{what} must be a number")
    n = float(cmp.number_value(value))
    if math.isnan(n) or n < 0:
        raise bad_value(f"{what} must be non-negative")
    return n


def _legacy_pair(value: Any, what: str) -> tuple[float, float]:
    try:
        return geo.flat_point(value)
    except geo.GeoError as exc:
        raise bad_value(f"{what}: {exc}") from None


def within_region(arg: Any) -> geo.Region:
    """The region of a ``$geoWithin`` operand."""
    if not isinstance(arg, Mapping):
        raise bad_value("$geoWithin requires an object")
    shapes = [k for k in arg if k != "$uniqueDocs"]  # $uniqueDocs: deprecated, ignored
    if len(shapes) != 1:
        raise bad_value(f"$geoWithin requires exactly one shape, got: {shapes}")
    (name,) = shapes
    value = arg[name]
    if name != "$geometry" and isinstance(value, Mapping):
        value = list(value.values())  # mongod's legacy shape parsers iterate an object's values too
    if name == "$geometry":
        if not isinstance(value, Mapping) or value.get("type") not in ("Polygon", "MultiPolygon"):
            raise bad_value(f"$geoWithin not supported with provided geometry: {value}")
        return geo.SphereRegion(query_geometry(value).polygons)
    if name == "$box":
        if not isinstance(value, list) or len(value) != 2:
            raise bad_value("Point must be an array or object")
        (x1, y1), (x2, y2) = (_legacy_pair(v, "$box") for v in value)
        return geo.Box((min(x1, x2), min(y1, y2)), (max(x1, x2), max(y1, y2)))
    if name == "$polygon":
        if not isinstance(value, list) or len(value) < 3:
            raise bad_value("Polygon must have at least 3 points")
        return geo.FlatPolygon(tuple(_legacy_pair(v, "$polygon") for v in value))
    if name in ("$center", "$centerSphere"):
        if not isinstance(value, list) or len(value) != 2:
            raise bad_value(f"{name} requires [center, radius]")
        x, y = _legacy_pair(value[0], name)
        radius = _non_negative(value[1], "radius")
        if name == "$center":
            return geo.Circle((x, y), radius)
        try:
            return geo.Cap(geo.sphere_point(x, y), radius)
        except geo.GeoError as exc:
            raise bad_value(str(exc)) from None
    raise bad_value(f"unknown geo specifier: {name}: {value}")


def _geo_leaf(test: Any) -> Leaf:
    def single(v: Any) -> bool:
        g = stored_geometry(v)
        return g is not None and bool(test(g))

    return Leaf(single)


@FIELD_OPS.register("$geoWithin", "$within")
def filter_geoWithin(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    return _geo_leaf(within_region(arg).within)


def intersects_geometry(arg: Any) -> geo.Geometry:
    if not isinstance(arg, Mapping) or list(arg) != ["$geometry"]:
        raise bad_value("$geoIntersects requires a $geometry object")
    value = arg["$geometry"]
    items = list(value.values()) if isinstance(value, Mapping) else value
    if isinstance(value, list) or (items and cmp.is_number(items[0])):
        # geometry_container.cpp parseFromQuery: an array, or an object of numbers, is a legacy point.
        return query_geometry(value)
    if not geo.is_geojson(value):
        raise bad_value(f"unknown GeoJSON type: {value}")
    return query_geometry(value)


@FIELD_OPS.register("$geoIntersects")
def filter_geoIntersects(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    shape = intersects_geometry(arg)
    return _geo_leaf(lambda g: geo.intersects(g, shape))


@dataclass(frozen=True, slots=True)
class NearQuery:
    """A ``$near``/``$nearSphere`` operand. Distances are meters for a GeoJSON
    point (``geojson``), else radians (``spherical``) or plane units."""

    center: Any  # S2Point, None for a legacy pair outside lng/lat bounds
    flat: tuple[float, float]
    geojson: bool
    spherical: bool
    min_distance: float
    max_distance: float

    def on_sphere(self) -> NearQuery:
        """The query read on the sphere (a legacy $near served by a 2dsphere index)."""
        return NearQuery(self.center, self.flat, self.geojson, True, self.min_distance, self.max_distance)

    def distance(self, g: geo.Geometry) -> float | None:
        """The distance to ``g`` in this query's units (None: not measurable)."""
        if not self.spherical:
            return None if g.flat is None else geo.flat_distance(self.flat, g.flat)
        if self.center is None or not (g.points or g.lines or g.polygons):
            return None
        angle = geo.distance(self.center, g)
        return angle * geo.EARTH_RADIUS_METERS if self.geojson else angle

    def in_range(self, d: float | None) -> bool:
        return d is not None and self.min_distance <= d <= self.max_distance


def parse_near(op: str, arg: Any, spec: Mapping[str, Any]) -> NearQuery:
    """The operand of ``{field: {op: arg, ...siblings}}``."""
    low, high = 0.0, math.inf
    if isinstance(arg, Mapping) and "$geometry" in arg:
        extra = next((key for key in spec if key != op), None)
        if extra is not None:
            # mongod's parseNewQuery: the GeoJSON form takes its distances inside the operator.
            raise bad_value(
                "geo near accepts just one argument when querying for a GeoJSON point. Extra field found: "
                f"{extra}: {render(spec[extra])}"
            )
        point = arg["$geometry"]
        if not geo.is_geojson(point) or point.get("type") != "Point":
            raise bad_value(f"invalid point in geo near query $geometry argument: {point}")
        g = query_geometry(point)
        for key, value in arg.items():
            if key == "$maxDistance":
                high = _non_negative(value, "$maxDistance")
            elif key == "$minDistance":
                low = _non_negative(value, "$minDistance")
            elif key != "$geometry":
                raise bad_value(f"invalid argument in geo near query: {key}")
        assert g.flat is not None
        return NearQuery(g.points[0], g.flat, True, True, low, high)
    if geo.is_geojson(arg) and isinstance(arg, Mapping) and arg.get("type") == "Point":
        # parseQueryPoint takes a bare GeoJSON point too: on the sphere, distances in meters.
        g = query_geometry(arg)
        assert g.flat is not None
        low = _non_negative(spec["$minDistance"], "$minDistance") if "$minDistance" in spec else 0.0
        high = _non_negative(spec["$maxDistance"], "$maxDistance") if "$maxDistance" in spec else math.inf
        return NearQuery(g.points[0], g.flat, True, True, low, high)
    items = list(arg.values()) if isinstance(arg, Mapping) else arg
    if isinstance(items, list) and len(items) == 3 and all(cmp.is_number(v) for v in items):
        # mongod's parsePointWithMaxDistance: [x, y, maxDistance] (an explicit $maxDistance wins).
        x, y = float(cmp.number_value(items[0])), float(cmp.number_value(items[1]))
        high = float(cmp.number_value(items[2]))
        if not high >= 0:
            raise location(18522, "max distance must be non-negative")
    else:
        x, y = _legacy_pair(arg, f"invalid argument in geo near query {op}")
    if "$maxDistance" in spec:
        high = _non_negative(spec["$maxDistance"], "$maxDistance")
    if "$minDistance" in spec:
        low = _non_negative(spec["$minDistance"], "$minDistance")
    center = geo.sphere_point(x, y) if geo.valid_lng_lat(x, y) else None
    spherical = op == "$nearSphere"
    if spherical and center is None:
        # expression_geo.cpp GeoNearExpression::parseFrom: the point must project onto the sphere.
        raise location(17444, "Legacy point is out of bounds for spherical query")
    return NearQuery(center, (x, y), False, spherical, low, high)


def nearest(query: NearQuery, value: Any) -> tuple[float, Any] | None:
    """(distance, location) of a field value's nearest geometry (the value
    itself, or each element of an array of geometries)."""
    items = value if isinstance(value, list) and value and not cmp.is_number(value[0]) else [value]
    best: tuple[float, Any] | None = None
    for item in items:
        g = stored_geometry(item)
        d = query.distance(g) if g is not None else None
        if d is not None and (best is None or d < best[0]):
            best = (d, item)
    return best


def _near(op: str) -> Any:
    def compile_near(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
        query = parse_near(op, arg, spec)

        def single(v: Any) -> bool:
            # A document's distance is its nearest location's, as the near scan measures.
            found = nearest(query, v)
            return found is not None and query.in_range(found[0])

        return Leaf(single, expand=False)

    compile_near.__name__ = f"filter_{op[1:]}"
    return compile_near


FIELD_OPS.register("$near")(_near("$near"))
FIELD_OPS.register("$nearSphere")(_near("$nearSphere"))
# mongod's query parser takes $geoNear as $near (expression_geo.cpp, GeoNearExpression::parseLegacyQuery).
FIELD_OPS.register("$geoNear")(_near("$geoNear"))


def _always(v: Any) -> bool:
    return True


@FIELD_OPS.register("$maxDistance", "$minDistance")
def filter_near_distance(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    # A legacy $near's bound: $near reads it; on its own it is meaningless.
    if not any(op in spec for op in NEAR_OPS):
        raise bad_value("$maxDistance and $minDistance may only be used with $near or $nearSphere")
    return Leaf(_always, missing=True)


NEAR_OPS = ("$near", "$nearSphere", "$geoNear")
_NEAR_OPS = NEAR_OPS


def check_near_placement(spec: Mapping[str, Any]) -> None:
    """mongod's CanonicalQuery::isValid for near queries: at most one, and at the top level
    (the filter itself or one of its top-level ``$and``'s clauses), BadValue otherwise."""
    count, misplaced = _near_count(spec, True)
    if count > 1:
        raise bad_value("Too many geoNear expressions")
    if misplaced:
        raise bad_value("geoNear must be top-level expr")


def _near_count(spec: Mapping[str, Any], top: bool) -> tuple[int, bool]:
    count, misplaced = 0, False
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    # A top-level $and flattens, and so does an $or of one clause (mongod's
                    # optimizer makes it that clause before CanonicalQuery::isValid looks).
                    flattens = key == "$and" or (key == "$or" and len(value) == 1)
                    n, bad = _near_count(clause, top and flattens)
                    count, misplaced = count + n, misplaced or bad
        elif not key.startswith("$") and isinstance(value, Mapping):
            n = sum(op in value for op in NEAR_OPS)
            count, misplaced = count + n, misplaced or (n > 0 and not top)
    return count, misplaced


def has_near(spec: Any) -> bool:
    """Does a filter use $near/$nearSphere anywhere (what $match refuses)?"""
    if not isinstance(spec, Mapping):
        return False
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            if any(has_near(clause) for clause in value):
                return True
        elif not key.startswith("$") and isinstance(value, Mapping):
            if any(op in value for op in _NEAR_OPS):
                return True
            for op in ("$not", "$elemMatch"):
                inner = value.get(op)
                if isinstance(inner, Mapping) and (any(k in inner for k in _NEAR_OPS) or has_near(inner)):
                    return True
    return False
