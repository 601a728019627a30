"""Geometries as MongoDB reads them, on Google's S2 (the library mongod uses).

Manual: https://www.mongodb.com/docs/manual/reference/geojson/ and
https://www.mongodb.com/docs/manual/geospatial-queries/

A stored or query value parses (:func:`parse_geometry`) to a
:class:`Geometry`: its points, polylines and polygons on the unit sphere,
and for a single point its plane coordinates too, since the flat operators
(``$box``, ``$polygon``, ``$center``) and ``2d`` indexes read points as
``(x, y)``. Accepted forms are the GeoJSON types Point, LineString, Polygon
(first ring the shell, the others holes inside it), MultiPoint,
MultiLineString, MultiPolygon and GeometryCollection, and legacy coordinate
pairs (``[x, y]`` or an embedded document's first two fields). A value that
is not well formed raises :class:`GeoError` with mongod's message; callers
turn it into BadValue (a query operand) or 16755 (an indexed document).

A GeoJSON object may name its ``crs``: EPSG:4326 (the default) or, for a
Polygon alone, MongoDB's strict-winding CRS (:data:`STRICT_WINDING`), which
makes a "big polygon": one ring whose left side (counter-clockwise winding)
is its interior, however large, where a default ring means the smaller of
its two sides. S2 reads a loop's interior from its orientation, so a big
polygon is its loop un-normalized; :attr:`Geometry.big` marks it, since
mongod queries with big polygons but neither indexes nor matches stored ones
(https://www.mongodb.com/docs/manual/reference/operator/query/geoWithin/).

Regions answer ``within(geometry)`` for ``$geoWithin``; :func:`intersects`
answers ``$geoIntersects``; :func:`distance` is the angle from a point to
the nearest part of a geometry, for ``$near``. Distances on the sphere are
radians; :data:`EARTH_RADIUS_METERS` (mongod's) converts to meters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import s2geometry as s2

from foliodb.query import bsontypes
from foliodb.query import compare as cmp
from foliodb.query.render import render

EARTH_RADIUS_METERS = 6378.1 * 1000  # mongod's kRadiusOfEarthInMeters
# Two points this close (radians, ~6 nm) are one point: a point lies on a line.
_ON_LINE = 1e-15
STRICT_WINDING = "urn:x-mongodb:crs:strictwinding:EPSG:4326"
_DEFAULT_CRS = ("urn:ogc:def:crs:OGC:1.3:CRS84", "EPSG:4326")


class GeoError(ValueError):
    """A malformed geometry; the message is mongod's."""


@dataclass(frozen=True, slots=True)
class Geometry:
    points: tuple[Any, ...] = ()  # S2Point
    lines: tuple[Any, ...] = ()  # S2Polyline
    polygons: tuple[Any, ...] = ()  # S2Polygon
    flat: tuple[float, float] | None = None  # a single point's (x, y)
    geojson: bool = True  # False: a legacy coordinate pair
    big: bool = False  # a strict-winding Polygon


def _number(value: Any) -> bool:
    return cmp.is_number(value) and not isinstance(value, bool)


def flat_point(value: Any, extra_ok: bool = False) -> tuple[float, float]:
    """A legacy pair ``[x, y]`` or ``{a: x, b: y}`` (mongod's parseFlatPoint)."""
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        raise GeoError(f"Point must be an array or object, instead got type {bsontypes.type_name(value)}")
    if len(items) < 2:
        raise GeoError("Point must only contain numeric elements")
    if not _number(items[0]) or not _number(items[1]):
        raise GeoError("Point must only contain numeric elements")
    if len(items) > 2 and not extra_ok:
        raise GeoError("Point must only contain two numeric elements")
    return float(cmp.number_value(items[0])), float(cmp.number_value(items[1]))


def valid_lng_lat(x: float, y: float) -> bool:
    return -180 <= x <= 180 and -90 <= y <= 90


def sphere_point(x: float, y: float) -> Any:
    if not valid_lng_lat(x, y):
        raise GeoError(f"longitude/latitude is out of bounds, lng: {format_number(x)} lat: {format_number(y)}")
    return s2.S2LatLng.FromDegrees(y, x).ToPoint()


def format_number(x: float) -> str:
    """A double as mongod streams it: 200, 1.5, inf, nan."""
    if not math.isfinite(x):
        return str(x)
    return str(int(x)) if x == int(x) else repr(x)


def _coordinate(value: Any) -> Any:
    if not isinstance(value, list):
        raise GeoError("GeoJSON coordinates must be an array")
    x, y = flat_point(value, extra_ok=True)  # GeoJSON allows an altitude
    return sphere_point(x, y)


def _coordinates(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise GeoError("GeoJSON coordinates must be an array of coordinates")
    return [_coordinate(v) for v in value]


def same_point(a: Any, b: Any) -> bool:
    # S2Point proxies compare by identity: compare coordinates.
    return bool(a.x() == b.x() and a.y() == b.y() and a.z() == b.z())


def _dedup(points: list[Any]) -> list[Any]:
    """Consecutive equal vertices removed (S2 rejects them; mongod too)."""
    out: list[Any] = []
    for p in points:
        if not out or not same_point(out[-1], p):
            out.append(p)
    return out


def _line(value: Any) -> Any:
    points = _dedup(_coordinates(value))
    if len(points) < 2:
        raise GeoError(f"GeoJSON LineString must have at least 2 vertices: {value}")
    line = s2.S2Polyline()
    line.InitFromS2Points(points)
    if not line.IsValid():
        raise GeoError(f"Invalid LineString: {value}")
    return line


def _loop(ring: Any, normalize: bool = True) -> Any:
    points = _coordinates(ring)
    if not points or not same_point(points[0], points[-1]):
        raise GeoError(f"Loop is not closed, first vertex does not equal last vertex: {ring}")
    # mongod erases consecutive duplicates from the whole ring, then drops the closing vertex.
    vertices = _dedup(points)[:-1]
    if len(vertices) < 3:
        raise GeoError(f"Loop must have at least 3 different vertices: {ring}")
    loop = s2.S2Loop(vertices)
    if not loop.IsValid():
        raise GeoError(f"Loop is not valid: {ring} Edges cross or vertices are duplicated")
    if normalize:  # a default-CRS ring's winding does not matter: the smaller side is meant
        loop.Normalize()
    return loop


def _polygon(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise GeoError("Polygon coordinates must be an array")
    loops = [_loop(ring) for ring in value]
    shell = loops[0]
    for hole in loops[1:]:
        if not shell.Contains(hole):
            raise GeoError(
                f"Secondary loops not contained by first exterior loop - secondary loops must be holes: {value}"
            )
    polygon = s2.S2Polygon()
    polygon.InitNested(loops)
    if not polygon.IsValid():
        raise GeoError(f"Polygon isn't valid: {value}")
    return polygon


def _big_polygon(value: Any) -> Any:
    """A strict-winding Polygon's coordinates (a list): one ring, its left side the inside."""
    if len(value) != 1:
        raise GeoError(f"Only one simple loop is allowed in a big polygon: {value}")
    polygon = s2.S2Polygon()
    polygon.InitNested([_loop(value[0], normalize=False)])
    return polygon


def _strict_crs(obj: Mapping[str, Any]) -> bool:
    """Does ``obj`` name the strict-winding CRS? Checked as mongod's parseGeoJSONCRS."""
    if "crs" not in obj:
        return False
    crs = obj["crs"]
    if not isinstance(crs, Mapping):
        raise GeoError("GeoJSON CRS must be an object")
    if crs.get("type") != "name":
        raise GeoError('GeoJSON CRS must have field "type": "name"')
    properties = crs.get("properties")
    if not isinstance(properties, Mapping):
        raise GeoError('CRS must have field "properties" which is an object')
    name = properties.get("name")
    if not isinstance(name, str):
        raise GeoError('In CRS, "properties.name" must be a string')
    if name in _DEFAULT_CRS:
        return False
    if name == STRICT_WINDING:
        return True
    raise GeoError(f"Unknown CRS name: {name}")


_SIMPLE = ("Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon")


def _geojson(obj: Mapping[str, Any], in_collection: bool = False) -> Geometry:
    kind = obj.get("type")
    if kind == "GeometryCollection":
        members = obj.get("geometries")
        if not isinstance(members, list):
            raise GeoError("GeometryCollection geometries must be an array")
        parts = []
        for member in members:
            if not isinstance(member, Mapping):
                raise GeoError(f'Element {member} of "geometries" is not an object')
            if member.get("type") not in _SIMPLE:
                raise GeoError(f'Element {member} of "geometries" is not a valid GeoJSON geometry')
            parts.append(_geojson(member, in_collection=True))
        return Geometry(
            tuple(p for g in parts for p in g.points),
            tuple(line for g in parts for line in g.lines),
            tuple(poly for g in parts for poly in g.polygons),
        )
    if kind not in _SIMPLE:
        raise GeoError(f"unknown GeoJSON type: {_shown(obj)}")
    big = _strict_crs(obj)
    # A big polygon in a GeometryCollection is refused too: mongod cannot use one there.
    if big and (kind != "Polygon" or in_collection):
        raise GeoError("Strict winding order is only supported by polygon")
    coords = obj.get("coordinates")
    if kind == "Point":
        if not isinstance(coords, list):
            raise GeoError("Point must be an array or object, instead got type " + bsontypes.type_name(coords))
        x, y = flat_point(coords, extra_ok=True)
        return Geometry(points=(sphere_point(x, y),), flat=(x, y))
    if not isinstance(coords, list):
        raise GeoError(f"{kind} coordinates must be an array")
    if kind == "LineString":
        return Geometry(lines=(_line(coords),))
    if kind == "Polygon":
        if big:
            return Geometry(polygons=(_big_polygon(coords),), big=True)
        return Geometry(polygons=(_polygon(coords),))
    if not coords:
        raise GeoError(f"{kind} coordinates must have at least 1 element")
    if kind == "MultiPoint":
        return Geometry(points=tuple(_coordinate(c) for c in coords))
    if kind == "MultiLineString":
        return Geometry(lines=tuple(_line(c) for c in coords))
    return Geometry(polygons=tuple(_polygon(c) for c in coords))


def _shown(value: Any) -> str:
    return render(value)


def is_geojson(value: Any) -> bool:
    return isinstance(value, Mapping) and "type" in value


def parse_geometry(value: Any) -> Geometry:
    """A stored or query geometry: GeoJSON, or a legacy coordinate pair."""
    if is_geojson(value):
        return _geojson(value)
    x, y = flat_point(value)
    # A legacy pair outside longitude/latitude bounds is still a plane point.
    points = (s2.S2LatLng.FromDegrees(y, x).ToPoint(),) if valid_lng_lat(x, y) else ()
    return Geometry(points=points, flat=(x, y), geojson=False)


# -- predicates -----------------------------------------------------------------------
#
# As mongod's GeometryContainer (geometry_container.cpp): a point is its leaf S2 cell, so a point on a
# polygon's edge or vertex, or on a line, meets it (S2's MayIntersect of the cell); a geometry lies
# within a (multi)polygon when each of its parts lies within one of the polygons (not their union).


def _cell(point: Any) -> Any:
    return s2.S2Cell(s2.S2CellId(point))


def _parts(g: Geometry) -> list[tuple[int, Any]]:
    """(kind, part): 0 a point, 1 a line, 2 a polygon."""
    return [(0, p) for p in g.points] + [(1, line) for line in g.lines] + [(2, poly) for poly in g.polygons]


def _meet(a: tuple[int, Any], b: tuple[int, Any]) -> bool:
    (ka, x), (kb, y) = sorted((a, b), key=lambda part: part[0])
    if ka == 0:
        return bool(s2.S2CellId(x) == s2.S2CellId(y)) if kb == 0 else bool(y.MayIntersect(_cell(x)))
    if ka == 1:
        return bool(x.Intersects(y)) if kb == 1 else bool(y.IntersectWithPolyline(x))
    return bool(x.Intersects(y))


def intersects(a: Geometry, b: Geometry) -> bool:
    """Do two geometries share a point (``$geoIntersects``)?"""
    parts = _parts(b)
    return any(_meet(pa, pb) for pa in _parts(a) for pb in parts)


def _line_within(polygon: Any, line: Any) -> bool:
    # mongod's containsLine: the polygon clips the line to one piece that covers it (to 1e-10 degrees).
    pieces = polygon.IntersectWithPolyline(line)
    return len(pieces) == 1 and abs(pieces[0].GetLength().radians() - line.GetLength().radians()) < 2e-12


def _polygon_contains(polygon: Any, part: tuple[int, Any]) -> bool:
    kind, x = part
    if kind == 0:
        return bool(polygon.Contains(x) or polygon.MayIntersect(_cell(x)))  # edges and vertices too
    if kind == 1:
        return _line_within(polygon, x)
    return bool(polygon.Contains(x))


def part_distance(center: Any, part: tuple[int, Any]) -> float:
    """The angle (radians) from ``center`` to the nearest point of one part."""
    kind, x = part
    if kind == 0:
        return float(s2.S1Angle(center, x).radians())
    if kind == 1:
        nearest, _ = x.Project(center)
        return float(s2.S1Angle(center, nearest).radians())
    return float(x.GetDistance(center).radians())


def distance(center: Any, geometry: Geometry) -> float:
    """The angle (radians) from ``center`` to the nearest part of ``geometry``."""
    return min((part_distance(center, part) for part in _parts(geometry)), default=math.inf)


def sphere_cap(center: Any, radius: float) -> Any:
    """The S2 cap of points within ``radius`` radians of ``center`` (the whole sphere past pi)."""
    return s2.S2Cap(center, s2.S1ChordAngle(s2.S1Angle.Radians(min(radius, math.pi))))


class Region(Protocol):
    def within(self, geometry: Geometry) -> bool: ...


@dataclass(frozen=True, slots=True)
class SphereRegion:
    """A Polygon or MultiPolygon on the sphere: a geometry is within when each of its parts lies in
    one of the polygons."""

    polygons: tuple[Any, ...]

    def within(self, geometry: Geometry) -> bool:
        parts = _parts(geometry)
        return bool(parts) and all(any(_polygon_contains(poly, part) for poly in self.polygons) for part in parts)


@dataclass(frozen=True, slots=True)
class Cap:
    """``$centerSphere``: points within ``radius`` radians of ``center``. A point is within when its
    cell meets the cap; a line or polygon when no point of it is nearer the cap's antipode than the
    complement cap's radius (mongod's GeometryContainer::contains)."""

    center: Any
    radius: float

    def within(self, geometry: Geometry) -> bool:
        parts = _parts(geometry)
        if not parts:
            return False
        cap = sphere_cap(self.center, self.radius)
        antipode = s2.S2Point_FromRaw(*(-v for v in s2.S2Point_ToRaw(self.center)))
        reach = math.pi - self.radius
        for kind, x in parts:
            if kind == 0:
                if not cap.MayIntersect(_cell(x)):
                    return False
            elif part_distance(antipode, (kind, x)) < reach:
                return False
        return True


@dataclass(frozen=True, slots=True)
class Box:
    """``$box``: bottom-left and top-right corners on the plane, edges included."""

    low: tuple[float, float]
    high: tuple[float, float]

    def within(self, geometry: Geometry) -> bool:
        p = geometry.flat
        return p is not None and self.low[0] <= p[0] <= self.high[0] and self.low[1] <= p[1] <= self.high[1]


@dataclass(frozen=True, slots=True)
class FlatPolygon:
    """``$polygon``: a ring of plane points (closed implicitly), edges included."""

    vertices: tuple[tuple[float, float], ...]

    def within(self, geometry: Geometry) -> bool:
        p = geometry.flat
        return p is not None and point_in_ring(p, self.vertices)


@dataclass(frozen=True, slots=True)
class Circle:
    """``$center``: plane points within ``radius`` of ``center``."""

    center: tuple[float, float]
    radius: float

    def within(self, geometry: Geometry) -> bool:
        p = geometry.flat
        return p is not None and distance_compare(p, self.center, self.radius) <= 0


def flat_distance(a: tuple[float, float], b: tuple[float, float]) -> float:
    """The plane distance of two points, as mongod's distance(): sqrt(dx^2 + dy^2)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    return math.sqrt(dx * dx + dy * dy)


def distance_compare(p1: tuple[float, float], p2: tuple[float, float], radius: float) -> float:
    """mongod's distanceCompare (shapes.cpp): above zero when the points are farther apart than
    ``radius``. Axis-aligned points compare ``p + radius`` with the other coordinate, so that
    (52.0 - 51.9999) falls within 0.0001, as a point at exactly the radius should."""
    a, b = p2[0] - p1[0], p2[1] - p1[1]
    if a == 0:
        return p2[1] - (p1[1] + radius) if p2[1] > p1[1] else p1[1] - (p2[1] + radius)
    if b == 0:
        return p2[0] - (p1[0] + radius) if p2[0] > p1[0] else p1[0] - (p2[0] + radius)
    return math.sqrt(a * a + b * b) - radius


def point_in_ring(p: tuple[float, float], ring: Sequence[tuple[float, float]]) -> bool:
    """Even-odd test, a point on an edge counting as inside."""
    x, y = p
    inside = False
    n = len(ring)
    for i in range(n):
        (x1, y1), (x2, y2) = ring[i], ring[(i + 1) % n]
        cross = (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)
        if cross == 0 and min(x1, x2) <= x <= max(x1, x2) and min(y1, y2) <= y <= max(y1, y2):
            return True
        if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
            inside = not inside
    return inside
