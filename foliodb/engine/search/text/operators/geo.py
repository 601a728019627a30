"""Geo operators on ``geo`` fields: ``geoWithin`` (points) and ``geoShape`` (shapes).

Manual: https://www.mongodb.com/docs/atlas/atlas-search/geoWithin/,
https://www.mongodb.com/docs/atlas/atlas-search/geoShape/

* ``geoWithin``: ``{path, box | circle | geometry}`` (exactly one) over the points a ``geo``
  field indexes: ``box: {bottomLeft, topRight}`` (GeoJSON points; latitude and longitude
  ranges, edges included, bottomLeft's both smaller), ``circle: {center, radius}`` (meters,
  haversine on Lucene's mean earth radius, as ``near``), ``geometry``: a Polygon or
  MultiPolygon, its edges straight in longitude/latitude as Lucene's point-in-polygon
  (holes excluded).
* ``geoShape``: ``{path, relation, geometry}`` over the shapes of a ``geo`` field indexed
  with ``indexShapes: true`` (:data:`~foliodb.engine.search.text.mapping.SHAPE`): a
  document's shapes *intersect* the geometry (any shape meets it), are *disjoint* (none
  does), are *within* it (every shape inside, the geometry holding no point or line), or
  *contain* it (one shape holds all of it). Relations are decided by FolioDB's S2 geometry
  (:mod:`foliodb.query.geometry`, as ``$geoIntersects`` / ``$geoWithin``): edges are
  geodesics there, where Lucene's are straight in longitude/latitude.

Both score a constant 1 per path matched, as Lucene's geo queries; a path not indexed as
``geo`` (with ``indexShapes`` for geoShape) is refused with mongot's message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import SHAPE, TextDefinition, geo_point
from foliodb.engine.search.text.operators import (
    OPERATORS,
    Query,
    Run,
    check_fields,
    number,
    of_roots,
    search_error,
    strings,
)
from foliodb.engine.search.text.operators.values import haversine_meters
from foliodb.engine.search.text.scoring import Hits, constant, empty, union
from foliodb.query.geometry import GeoError, Geometry, SphereRegion, intersects, parse_geometry, point_in_ring

RELATIONS = ("contains", "disjoint", "intersects", "within")


def _geo_paths(body: Mapping[str, Any], place: str, definition: TextDefinition, shapes: bool) -> list[str]:
    paths = strings(body["path"], f"{place}.path")
    for path in paths:
        specs, _ = definition.specs_at(path)
        if not any(s.type == "geo" and (s.shapes or not shapes) for s in specs):
            if shapes:
                raise search_error(f"geoShape requires path '{path}' to be indexed as 'geo' with indexShapes=true")
            raise search_error(f"geoWithin requires path '{path}' to be indexed as 'geo'")
    return paths


def _point(value: Any, place: str) -> tuple[float, float]:
    point = geo_point(value) if isinstance(value, Mapping) else None
    if point is None:
        raise search_error(f'"{place}" must be a GeoJSON point')
    lon, lat = point
    if not (-180 <= lon <= 180 and -90 <= lat <= 90):
        raise search_error(f'"{place}" must be a point with longitude in [-180, 180] and latitude in [-90, 90]')
    return point


def _geometry(value: Any, place: str) -> tuple[Geometry, Any]:
    if not isinstance(value, Mapping) or "type" not in value:
        raise search_error(f'"{place}" must be a GeoJSON geometry')
    try:
        return parse_geometry(value), value
    except GeoError as exc:
        raise search_error(f'"{place}" is not a valid geometry: {exc}') from None


# -- geoWithin --------------------------------------------------------------------------------


def _rings(geojson: Mapping[str, Any]) -> list[list[list[tuple[float, float]]]]:
    """The polygons of a Polygon / MultiPolygon: each its shell, then its holes."""
    polygons = [geojson["coordinates"]] if geojson["type"] == "Polygon" else geojson["coordinates"]
    return [[[(float(p[0]), float(p[1])) for p in ring] for ring in polygon] for polygon in polygons]


class GeoWithinQuery(Query):
    def __init__(self, paths: list[str], kind: str, shape: Any) -> None:
        self.paths, self.kind, self.shape = paths, kind, shape

    def _inside(self, lon: Any, lat: Any) -> Any:
        if self.kind == "box":
            (lon0, lat0), (lon1, lat1) = self.shape
            return (lon >= lon0) & (lon <= lon1) & (lat >= lat0) & (lat <= lat1)
        if self.kind == "circle":
            center, radius = self.shape
            return haversine_meters(center, lon, lat) <= radius
        inside = np.zeros(len(lon), dtype=bool)
        for i, p in enumerate(zip(lon.tolist(), lat.tolist(), strict=True)):
            inside[i] = any(
                point_in_ring(p, shell) and not any(point_in_ring(p, hole) for hole in holes)
                for shell, *holes in self.shape
            )
        return inside

    def match(self, run: Run) -> Hits:
        parts = []
        for path in self.paths:
            ords, lon = run.reader.column(path + "\x00glon")
            _, lat = run.reader.column(path + "\x00glat")
            parts.append(constant(ords[self._inside(lon, lat)]))
        return of_roots(run, union(parts, run.reader.size)[0])


@OPERATORS.register("geoWithin")
def op_geoWithin(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path", "box", "circle", "geometry"), ("path",))
    given = [k for k in ("box", "circle", "geometry") if k in body]
    if len(given) != 1:
        raise search_error(f'"{place}" must hold exactly one of [box, circle, geometry]')
    kind = given[0]
    paths = _geo_paths(body, place, definition, shapes=False)
    spec, where = body[kind], f"{place}.{kind}"
    if kind == "geometry":
        _, geojson = _geometry(spec, where)
        if geojson["type"] not in ("Polygon", "MultiPolygon"):
            raise search_error(f'"{where}" Geometry must be a Polygon')
        return GeoWithinQuery(paths, kind, _rings(geojson))
    if not isinstance(spec, Mapping):
        raise search_error(f'"{where}" must be a document')
    if kind == "box":
        check_fields(spec, where, ("bottomLeft", "topRight"), ("bottomLeft", "topRight"))
        low = _point(spec["bottomLeft"], f"{where}.bottomLeft")
        high = _point(spec["topRight"], f"{where}.topRight")
        if not low[1] < high[1]:
            raise search_error("bottomLeft.latitude must be smaller than topRight.latitude")
        if not low[0] < high[0]:
            raise search_error("bottomLeft.longitude must be smaller than topRight.longitude")
        return GeoWithinQuery(paths, kind, (low, high))
    check_fields(spec, where, ("center", "radius"), ("center", "radius"))
    radius = number(spec["radius"], f"{where}.radius")
    if radius <= 0:
        raise search_error(f'"{where}.radius" must be positive')
    return GeoWithinQuery(paths, kind, (_point(spec["center"], f"{where}.center"), radius))


# -- geoShape ---------------------------------------------------------------------------------


class GeoShapeQuery(Query):
    def __init__(self, paths: list[str], relation: str, geometry: Geometry) -> None:
        self.paths, self.relation, self.geometry = paths, relation, geometry
        self.region = SphereRegion(geometry.polygons)

    def _holds(self, shape: Geometry) -> bool:
        """Does one indexed shape stand in the relation (``disjoint``: does it meet the geometry)?"""
        if self.relation in ("intersects", "disjoint"):
            return intersects(shape, self.geometry)
        if self.relation == "within":
            return self.region.within(shape)
        return SphereRegion(shape.polygons).within(self.geometry)

    def match(self, run: Run) -> Hits:
        parts = []
        for path in self.paths:
            key = path + SHAPE
            good: list[Any] = []
            bad: list[Any] = []
            for term in run.reader.terms(key):
                ords = run.reader.postings(key, term)[0]
                if len(ords):
                    (good if self._holds(parse_geometry(json.loads(term))) else bad).append(ords)
            if self.relation == "disjoint":
                good, bad = bad, good
            found = np.unique(np.concatenate(good)) if good else empty()[0]
            if self.relation in ("within", "disjoint") and bad:
                # Every shape of the document must stand in the relation.
                found = found[~np.isin(found, np.concatenate(bad))]
            parts.append(constant(found))
        return of_roots(run, union(parts, run.reader.size)[0])


@OPERATORS.register("geoShape")
def op_geoShape(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path", "relation", "geometry"), ("path", "relation", "geometry"))
    relation = body["relation"]
    if relation not in RELATIONS:
        raise search_error(f'"{place}.relation" must be one of [{", ".join(RELATIONS)}]')
    geometry, _ = _geometry(body["geometry"], f"{place}.geometry")
    if relation == "within" and geometry.points:
        raise search_error(f"\"{place}.geometry\" cannot use relation 'within' with points")
    if relation == "within" and geometry.lines:
        raise search_error(f"\"{place}.geometry\" cannot use relation 'within' with lines")
    return GeoShapeQuery(_geo_paths(body, place, definition, shapes=True), relation, geometry)
