"""Geospatial query operators as filters: $geoWithin, $geoIntersects, $near.

Each case cites the manual page it follows; expected ``_id`` lists are worked
out by hand from the coordinates (a point 1 degree of longitude from the
origin on the equator is 6378.1 km * pi / 180 = 111.32 km away on mongod's
sphere).
"""

from __future__ import annotations

from typing import Any

import pytest

from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
GEOWITHIN = OPS + "geoWithin/"
GEOINTERSECTS = OPS + "geoIntersects/"
BOX = OPS + "box/"
POLYGON = OPS + "polygon/"
CENTER = OPS + "center/"
CENTERSPHERE = OPS + "centerSphere/"
NEAR = OPS + "near/"
NEARSPHERE = OPS + "nearSphere/"
GEOJSON = "https://www.mongodb.com/docs/manual/reference/geojson/"


def point(x: float, y: float) -> dict[str, Any]:
    return {"type": "Point", "coordinates": [x, y]}


SQUARE = {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}
# The square with a hole [4, 6] x [4, 6].
HOLED = {
    "type": "Polygon",
    "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]],
}

DOCS = [
    {"_id": 1, "loc": point(5, 5)},
    {"_id": 2, "loc": point(2, 2)},
    {"_id": 3, "loc": point(20, 20)},
    {"_id": 4, "loc": [3, 8]},  # a legacy pair
    {"_id": 5, "loc": {"type": "LineString", "coordinates": [[1, 1], [3, 3]]}},
    {"_id": 6, "loc": {"type": "LineString", "coordinates": [[5, 5], [15, 5]]}},
    {"_id": 7, "loc": {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}},
    {"_id": 8, "loc": "not a place"},
    {"_id": 9},
    {"_id": 10, "loc": [[1, 1], [30, 30]]},  # an array of legacy points
    {"_id": 11, "loc": {"type": "MultiPoint", "coordinates": [[1, 1], [30, 30]]}},
]


def matched(spec: dict[str, Any], docs: list[dict[str, Any]] = DOCS) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


CASES = [
    # Within a polygon: every point of the geometry inside (lines and polygons too).
    (GEOWITHIN, {"loc": {"$geoWithin": {"$geometry": SQUARE}}}, [1, 2, 4, 5, 7, 10]),
    (GEOWITHIN, {"loc": {"$within": {"$geometry": SQUARE}}}, [1, 2, 4, 5, 7, 10]),
    # The hole excludes (5, 5); the tiny square (1..2) and the line 1..3 avoid it.
    (GEOJSON, {"loc": {"$geoWithin": {"$geometry": HOLED}}}, [2, 4, 5, 7, 10]),
    # Intersects: the line to (15, 5) and the MultiPoint with (1, 1) count too.
    (GEOINTERSECTS, {"loc": {"$geoIntersects": {"$geometry": SQUARE}}}, [1, 2, 4, 5, 6, 7, 10, 11]),
    (GEOINTERSECTS, {"loc": {"$geoIntersects": {"$geometry": point(5, 5)}}}, [1, 6]),
    (
        GEOINTERSECTS,
        {"loc": {"$geoIntersects": {"$geometry": {"type": "LineString", "coordinates": [[0, 2.5], [20, 2.5]]}}}},
        [5],
    ),
    # Flat shapes read points on the plane, edges included.
    (BOX, {"loc": {"$geoWithin": {"$box": [[0, 0], [5, 5]]}}}, [1, 2, 10]),
    (BOX, {"loc": {"$geoWithin": {"$box": [[5, 5], [0, 0]]}}}, [1, 2, 10]),
    (POLYGON, {"loc": {"$geoWithin": {"$polygon": [[0, 0], [10, 0], [0, 10]]}}}, [1, 2, 10]),
    (CENTER, {"loc": {"$geoWithin": {"$center": [[0, 0], 3]}}}, [2, 10]),
    # 5 degrees = 0.0873 rad: (2, 2) is 2.83 degrees away, (5, 5) 7.07.
    (CENTERSPHERE, {"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 0.0873]}}}, [2, 5, 7, 10]),
    # $near as a filter keeps the distance range (meters for GeoJSON).
    (NEAR, {"loc": {"$near": {"$geometry": point(0, 0), "$maxDistance": 200_000}}}, [5, 7, 10, 11]),
    # A document's distance is its nearest location's: (1, 1) for _id 10.
    (NEAR, {"loc": {"$near": {"$geometry": point(0, 0), "$minDistance": 2_000_000}}}, [3]),
    # Legacy $near reads the plane: (2, 2) is 2.83 units from the origin.
    (NEAR, {"loc": {"$near": [0, 0], "$maxDistance": 3}}, [2, 10]),
    # $nearSphere with a legacy pair: radians (0.05 rad = 2.86 degrees).
    (NEARSPHERE, {"loc": {"$nearSphere": [0, 0], "$maxDistance": 0.05}}, [2, 5, 7, 10, 11]),
]


@pytest.mark.parametrize(("page", "spec", "expected"), CASES)
def test_geo_operator(page: str, spec: dict[str, Any], expected: list[Any]) -> None:
    assert matched(spec) == expected, page


BAD = [
    (GEOJSON, {"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]}}}}),
    (GEOJSON, {"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [0, 0]]]}}}}),
    # Edges that cross (a bow tie).
    (
        GEOJSON,
        {
            "loc": {
                "$geoWithin": {
                    "$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}
                }
            }
        },
    ),
    (GEOJSON, {"loc": {"$geoIntersects": {"$geometry": {"type": "Circle", "coordinates": [0, 0]}}}}),
    (GEOJSON, {"loc": {"$geoIntersects": {"$geometry": point(200, 0)}}}),
    (GEOJSON, {"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": ["a", 0]}}}}),
    (GEOWITHIN, {"loc": {"$geoWithin": {"$geometry": point(0, 0)}}}),
    (GEOWITHIN, {"loc": {"$geoWithin": {}}}),
    (CENTER, {"loc": {"$geoWithin": {"$center": [[0, 0], -1]}}}),
    (POLYGON, {"loc": {"$geoWithin": {"$polygon": [[0, 0], [1, 1]]}}}),
    (NEAR, {"loc": {"$near": {"$geometry": point(0, 0), "$maxDistance": -1}}}),
    (NEAR, {"loc": {"$near": "here"}}),
    (OPS + "maxDistance/", {"loc": {"$maxDistance": 5}}),
]


@pytest.mark.parametrize(("page", "spec"), BAD)
def test_bad_geometry_is_bad_value(page: str, spec: dict[str, Any]) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert info.value.code == 2, page


def test_messages_are_mongods() -> None:
    # geoparser.cpp's wording.
    with pytest.raises(CommandError, match="Loop is not closed, first vertex does not equal last vertex"):
        compile_filter(BAD[0][1])
    with pytest.raises(CommandError, match="longitude/latitude is out of bounds, lng: 200 lat: 0"):
        compile_filter(BAD[4][1])
    with pytest.raises(CommandError, match="Point must only contain numeric elements"):
        compile_filter(BAD[5][1])


# -- big polygons: the strict-winding crs ------------------------------------------

GEOMETRY = OPS + "geometry/"
STRICT = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}


def strict(*rings: list[list[float]]) -> dict[str, Any]:
    return {"type": "Polygon", "coordinates": list(rings), "crs": STRICT}


# The square [95, 105] x [-5, 5] (around (100, 0)) walked clockwise (north,
# east, south, west): its left side, the interior under strict winding, is the
# rest of the earth. Walked counter-clockwise it is the square itself.
HOLE_CW = [[95, -5], [95, 5], [105, 5], [105, -5], [95, -5]]
HOLE_CCW = [[95, -5], [105, -5], [105, 5], [95, 5], [95, -5]]
# The $geoWithin page's big-polygon example: down the meridian -100, along
# the great circle through the south pole's side of 180 to (100, -60), up
# the meridian 100, back near the north pole. Its left side spans longitude
# -100..100 through 0 and both poles, leaving a lune around 180.
MANUAL_BIG = [[-100, 60], [-100, 0], [-100, -60], [100, -60], [100, 60], [-100, 60]]

BIG_DOCS = [
    {"_id": 1, "loc": point(0, 0)},
    {"_id": 2, "loc": point(101, 0)},  # inside the square, east of the meridian 100
    {"_id": 3, "loc": {"type": "LineString", "coordinates": [[0, 0], [50, 0]]}},
    {"_id": 4, "loc": {"type": "LineString", "coordinates": [[90, 0], [110, 0]]}},  # crosses the square
    {"_id": 5, "loc": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}},
    {"_id": 6, "loc": {"type": "Polygon", "coordinates": [[[99, -1], [101, -1], [101, 1], [99, 1], [99, -1]]]}},
    # A ring around the square: it overlaps both sides.
    {"_id": 7, "loc": {"type": "Polygon", "coordinates": [[[90, -10], [110, -10], [110, 10], [90, 10], [90, -10]]]}},
    {"_id": 8, "loc": strict(HOLE_CW)},  # a stored big polygon matches nothing
    {"_id": 9, "loc": point(-170, 80)},
    {"_id": 10, "loc": [179, 1]},  # a legacy pair, in the lune around 180
    {"_id": 11, "loc": point(0, 89)},
]

BIG_CASES = [
    (GEOWITHIN, {"$geoWithin": {"$geometry": strict(HOLE_CW)}}, [1, 3, 5, 9, 10, 11]),
    (GEOINTERSECTS, {"$geoIntersects": {"$geometry": strict(HOLE_CW)}}, [1, 3, 4, 5, 7, 9, 10, 11]),
    # Under a hemisphere the strict crs reads as the default one.
    (GEOWITHIN, {"$geoWithin": {"$geometry": strict(HOLE_CCW)}}, [2, 6]),
    (GEOINTERSECTS, {"$geoIntersects": {"$geometry": strict(HOLE_CCW)}}, [2, 4, 6, 7]),
    # The default crs takes the smaller side whatever the winding.
    (GEOWITHIN, {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [HOLE_CW]}}}, [2, 6]),
    # 4, 6 and 7 straddle the meridian 100; (-170, 80) is south of the edge
    # near the north pole (it reaches 84.3 degrees at 180), so in the lune.
    (GEOWITHIN, {"$geoWithin": {"$geometry": strict(MANUAL_BIG)}}, [1, 3, 5, 11]),
    (GEOINTERSECTS, {"$geoIntersects": {"$geometry": strict(MANUAL_BIG)}}, [1, 3, 4, 5, 6, 7, 11]),
]


@pytest.mark.parametrize(("page", "cond", "expected"), BIG_CASES)
def test_big_polygon(page: str, cond: dict[str, Any], expected: list[Any]) -> None:
    assert matched({"loc": cond}, BIG_DOCS) == expected, page


BIG_BAD = [
    # Only a Polygon may name the strict crs (geoparser.cpp's parseGeoJSONCRS).
    ({"$geoIntersects": {"$geometry": {**point(0, 0), "crs": STRICT}}}, "Strict winding order is only supported by"),
    (
        {"$geoWithin": {"$geometry": {"type": "MultiPolygon", "coordinates": [[HOLE_CW]], "crs": STRICT}}},
        "Strict winding order is only supported by polygon",
    ),
    (
        {"$geoIntersects": {"$geometry": {"type": "GeometryCollection", "geometries": [strict(HOLE_CW)]}}},
        "Strict winding order is only supported by polygon",
    ),
    ({"$near": {"$geometry": {**point(0, 0), "crs": STRICT}}}, "Strict winding order is only supported by polygon"),
    # One ring, no holes.
    (
        {"$geoWithin": {"$geometry": strict(HOLE_CW, [[99, -1], [101, -1], [101, 1], [99, 1], [99, -1]])}},
        "Only one simple loop is allowed in a big polygon",
    ),
    ({"$geoWithin": {"$geometry": strict([[0, 0], [1, 0], [1, 1]])}}, "Loop is not closed"),
    ({"$geoWithin": {"$geometry": strict([[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]])}}, "Loop is not valid"),
    # The crs object itself.
    ({"$geoWithin": {"$geometry": {**SQUARE, "crs": "EPSG:4326"}}}, "GeoJSON CRS must be an object"),
    ({"$geoWithin": {"$geometry": {**SQUARE, "crs": {"properties": {}}}}}, 'must have field "type": "name"'),
    ({"$geoWithin": {"$geometry": {**SQUARE, "crs": {"type": "name"}}}}, 'field "properties" which is an object'),
    (
        {"$geoWithin": {"$geometry": {**SQUARE, "crs": {"type": "name", "properties": {"name": 4326}}}}},
        '"properties.name" must be a string',
    ),
    (
        {"$geoWithin": {"$geometry": {**SQUARE, "crs": {"type": "name", "properties": {"name": "EPSG:3857"}}}}},
        "Unknown CRS name: EPSG:3857",
    ),
]


@pytest.mark.parametrize(("cond", "message"), BIG_BAD)
def test_big_polygon_misuse_is_bad_value(cond: dict[str, Any], message: str) -> None:
    with pytest.raises(CommandError, match=message) as info:
        compile_filter({"loc": cond})
    assert info.value.code == 2, GEOMETRY


@pytest.mark.parametrize("name", ["EPSG:4326", "urn:ogc:def:crs:OGC:1.3:CRS84"])
def test_the_default_crs_may_be_named(name: str) -> None:
    shape = {**SQUARE, "crs": {"type": "name", "properties": {"name": name}}}
    assert matched({"loc": {"$geoWithin": {"$geometry": shape}}}) == [1, 2, 4, 5, 7, 10], GEOMETRY
