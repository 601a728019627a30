"""Geo queries through 2dsphere and 2d indexes give the exact geometric answer.

Random points and random shapes; the expected answer is computed here with
independent formulas (never FolioDB's code): the haversine distance on
mongod's sphere (radius 6378.1 km) for ``$centerSphere`` and ``$near``, the
sign of a triple product for a point against a great-circle edge (a
GeoJSON triangle, and a convex ring as a big polygon's complement), and plane geometry for ``$box``, ``$polygon``,
``$center`` and a 2d ``$near``. Points within a hair of a boundary (where
float rounding may decide either way) are left out of the comparison.
Each query must also have used the index (explain), so the index path, not
a collection scan, is what is checked.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import foliodb

RADIUS = 6378.1 * 1000
EPS = 1e-7  # relative band around boundaries left out of the comparison

LNG = st.floats(min_value=-179.0, max_value=179.0, allow_nan=False)
LAT = st.floats(min_value=-85.0, max_value=85.0, allow_nan=False)
POINTS = st.lists(st.tuples(LNG, LAT), min_size=5, max_size=80)


def haversine(a: tuple[float, float], b: tuple[float, float]) -> float:
    lng1, lat1, lng2, lat2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * math.asin(min(1.0, math.sqrt(h)))  # radians


def unit(p: tuple[float, float]) -> tuple[float, float, float]:
    lng, lat = map(math.radians, p)
    return (math.cos(lat) * math.cos(lng), math.cos(lat) * math.sin(lng), math.sin(lat))


def triple(a: Any, b: Any, c: Any) -> float:
    return a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0])


def cross2(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


@pytest.fixture(scope="module")
def geo_db() -> Iterator[Any]:
    client = foliodb.MongoClient(":memory:")
    yield client.geo
    client.close()


def load(db: Any, points: list[tuple[float, float]]) -> Any:
    """A fresh collection of the points."""
    coll = db.places
    coll.drop()
    coll.create_index([("s", "2dsphere")])
    coll.create_index([("p", "2d")])
    coll.insert_many(
        [{"_id": i, "s": {"type": "Point", "coordinates": list(p)}, "p": list(p)} for i, p in enumerate(points)]
    )
    return coll


def uses(coll: Any, query: dict[str, Any], index: str) -> bool:
    if os.environ.get("FOLIODB_NO_INDEXES", "") not in ("", "0"):
        return True  # the suite's second run: collection scans, the same answers
    plan = coll.find(query).explain()["queryPlanner"]["winningPlan"]
    return index in str(plan)


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(POINTS, st.tuples(LNG, LAT), st.floats(min_value=0.001, max_value=1.5))
def test_center_sphere_and_near_match_haversine(geo_db: Any, points: Any, center: Any, radius: float) -> None:
    coll = load(geo_db, points)
    within = {"s": {"$geoWithin": {"$centerSphere": [list(center), radius]}}}
    got = {d["_id"] for d in coll.find(within)}
    assert uses(coll, within, "s_2dsphere")
    for i, p in enumerate(points):
        d = haversine(center, p)
        if abs(d - radius) > EPS * max(radius, 1e-3):
            assert (i in got) == (d <= radius), (p, d, radius)
    # $near: the same points, nearest first, distances in meters.
    near = {
        "s": {"$near": {"$geometry": {"type": "Point", "coordinates": list(center)}, "$maxDistance": radius * RADIUS}}
    }
    found = list(coll.find(near, {"d": {"$meta": "geoNearDistance"}}))
    assert uses(coll, near, "GEO_NEAR_2DSPHERE")
    distances = [d["d"] for d in found]
    assert distances == sorted(distances)
    for doc in found:
        error = abs(doc["d"] - haversine(center, points[doc["_id"]]) * RADIUS)
        assert error <= 1e-6 * max(doc["d"], 1.0)
    ids = {d["_id"] for d in found}
    for i, p in enumerate(points):
        d = haversine(center, p)
        if abs(d - radius) > EPS * max(radius, 1e-3):
            assert (i in ids) == (d <= radius)


@SETTINGS
@given(POINTS, st.lists(st.tuples(LNG, LAT), min_size=3, max_size=3, unique=True))
def test_geojson_triangle_matches_great_circle_sides(geo_db: Any, points: Any, corners: Any) -> None:
    a, b, c = (unit(p) for p in corners)
    turn = triple(a, b, c)
    if abs(turn) < 1e-6:
        return  # a degenerate (flat) triangle: S2 rejects or it has no inside
    if turn < 0:
        corners = [corners[0], corners[2], corners[1]]  # counterclockwise
    # The smaller side of the ring is meant; a counterclockwise triangle under a hemisphere is it.
    ring = [list(p) for p in corners] + [list(corners[0])]
    query = {"s": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [ring]}}}}
    coll = load(geo_db, points)
    got = {d["_id"] for d in coll.find(query)}
    assert uses(coll, query, "s_2dsphere")
    vs = [unit(p) for p in corners]
    for i, p in enumerate(points):
        q = unit(p)
        sides = [triple(vs[k], vs[(k + 1) % 3], q) for k in range(3)]
        if min(abs(s) for s in sides) > 1e-9:
            assert (i in got) == all(s > 0 for s in sides), (p, corners)


def destination(start: tuple[float, float], bearing: float, angle: float) -> tuple[float, float]:
    """The point ``angle`` radians from ``start`` along ``bearing`` (radians, clockwise from north)."""
    lng, lat = map(math.radians, start)
    lat2 = math.asin(math.sin(lat) * math.cos(angle) + math.cos(lat) * math.sin(angle) * math.cos(bearing))
    y = math.sin(bearing) * math.sin(angle) * math.cos(lat)
    lng2 = lng + math.atan2(y, math.cos(angle) - math.sin(lat) * math.sin(lat2))
    return (math.degrees(lng2) + 180) % 360 - 180, math.degrees(lat2)


STRICT = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}
BEARINGS = st.lists(st.integers(min_value=0, max_value=71), min_size=3, max_size=8, unique=True)


@SETTINGS
@given(POINTS, st.tuples(LNG, LAT), st.floats(min_value=0.05, max_value=1.4), BEARINGS, st.booleans())
def test_big_polygon_is_the_complement_of_its_ring(
    geo_db: Any, points: Any, center: Any, radius: float, steps: list[int], clockwise: bool
) -> None:
    """A strict-winding ring's interior is its left side: walked clockwise
    (seen from above) a convex ring's interior is the rest of the earth, a big
    polygon; counter-clockwise, the ring's small inside. The default crs means
    the small inside either way.
    https://www.mongodb.com/docs/manual/reference/operator/query/geoWithin/

    The expected answer is independent of S2 and FolioDB: the ring's corners
    lie on a circle (radius under 90 degrees) around ``center``, so it is
    convex and under a hemisphere, and a point is inside it exactly when it
    is left of every edge walked counter-clockwise (a positive triple
    product); inside the big polygon exactly when it is not. The index path
    (covering cells of a region larger than a hemisphere) must agree with a
    collection scan and with that answer."""
    corners = [destination(center, math.radians(5 * k), radius) for k in sorted(steps)]  # clockwise: bearings grow
    ccw = [unit(p) for p in reversed(corners)]
    if any(abs(triple(ccw[k - 2], ccw[k - 1], ccw[k])) < 1e-9 for k in range(len(ccw))):
        return  # three corners nearly on one great circle: the ring may not be convex to S2
    ring = corners if clockwise else corners[::-1]
    coordinates = [[list(p) for p in ring] + [list(ring[0])]]
    coll = load(geo_db, points)
    strict_shape = {"type": "Polygon", "coordinates": coordinates, "crs": STRICT}
    default_shape = {"type": "Polygon", "coordinates": coordinates}
    small: set[int] = set()
    settled: set[int] = set()  # points clear of the ring's edges
    for i, p in enumerate(points):
        sides = [triple(ccw[k], ccw[(k + 1) % len(ccw)], unit(p)) for k in range(len(ccw))]
        if min(abs(side) for side in sides) > 1e-9:
            settled.add(i)
            if all(side > 0 for side in sides):
                small.add(i)
    expected = {"strict": settled - small if clockwise else small, "default": small}
    for crs, shape in (("strict", strict_shape), ("default", default_shape)):
        for op in ("$geoWithin", "$geoIntersects"):
            query = {"s": {op: {"$geometry": shape}}}
            indexed = {d["_id"] for d in coll.find(query)}
            assert uses(coll, query, "s_2dsphere")
            scanned = {d["_id"] for d in coll.find(query).hint([("$natural", 1)])}
            assert indexed == scanned, (crs, op)
            assert indexed & settled == expected[crs], (crs, op, ring)


def planar(a: tuple[float, float], b: tuple[float, float]) -> float:
    """mongod's flat distance (shapes.cpp ``distance``): sqrt(dx * dx + dy * dy) in doubles, so a
    difference under 1e-154 squares to 0, where ``math.dist`` (hypot) keeps it."""
    dx, dy = a[0] - b[0], a[1] - b[1]
    return math.sqrt(dx * dx + dy * dy)


@SETTINGS
@given(POINTS, st.tuples(LNG, LAT), st.tuples(LNG, LAT), st.lists(st.tuples(LNG, LAT), min_size=3, max_size=3))
@example(  # a distance that squares to 0: a tie at 0 with the points on the center, as mongod's
    points=[(0.0, 0.0), (0.0, 8.383393607843498e-180), (0.0, 0.0)],
    c1=(0.0, 0.0),
    c2=(0.0, 0.0),
    triangle=[(0.0, 0.0)] * 3,
)
def test_flat_shapes_on_a_2d_index(geo_db: Any, points: Any, c1: Any, c2: Any, triangle: Any) -> None:
    coll = load(geo_db, points)
    (x1, x2), (y1, y2) = sorted((c1[0], c2[0])), sorted((c1[1], c2[1]))
    box = {"p": {"$geoWithin": {"$box": [list(c1), list(c2)]}}}
    got = {d["_id"] for d in coll.find(box)}
    assert uses(coll, box, "p_2d")
    assert got == {i for i, (x, y) in enumerate(points) if x1 <= x <= x2 and y1 <= y <= y2}
    # $polygon: inside a triangle, its edges included (away from them: the sign of each side).
    poly = {"p": {"$geoWithin": {"$polygon": [list(p) for p in triangle]}}}
    got = {d["_id"] for d in coll.find(poly)}
    assert uses(coll, poly, "p_2d")
    area = cross2(*triangle)
    for i, p in enumerate(points):
        sides = [cross2(triangle[k], triangle[(k + 1) % 3], p) for k in range(3)]
        if area != 0 and min(abs(s) for s in sides) > 1e-6:
            inside = all(s > 0 for s in sides) if area > 0 else all(s < 0 for s in sides)
            assert (i in got) == inside
    # $center and a planar $near from the box's first corner.
    r = max(x2 - x1, y2 - y1)
    circle = {"p": {"$geoWithin": {"$center": [list(c1), r]}}}
    got = {d["_id"] for d in coll.find(circle)}
    near = [d["_id"] for d in coll.find({"p": {"$near": list(c1), "$maxDistance": r}})]
    for i, p in enumerate(points):
        d = planar(c1, p)
        if abs(d - r) > 1e-9 * max(r, 1):
            assert (i in got) == (d <= r)
            assert (i in near) == (d <= r)
    distances = [planar(c1, points[i]) for i in near]
    assert distances == sorted(distances)


# -- bad input: MongoDB's errors, never InternalError --------------------------------

NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(2**63), max_value=2**63 - 1)
)
COORD = st.one_of(st.lists(NUMBERS, max_size=3), NUMBERS, st.text(max_size=2), st.none())
COORDS = st.recursive(COORD, lambda inner: st.lists(inner, max_size=5), max_leaves=12)
CRS_NAMES = st.sampled_from([STRICT["properties"]["name"], "EPSG:4326", "EPSG:3857", 4326])
CRS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["name", "link"]), "properties": st.fixed_dictionaries({"name": CRS_NAMES})}
    ),
    st.fixed_dictionaries({"type": st.just("name")}, optional={"properties": st.one_of(st.none(), st.just({}))}),
    COORD,
)
GEOJSON = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Point", "LineString", "Polygon", "MultiPoint", "MultiPolygon", "Box", 5]),
        "coordinates": COORDS,
    },
    optional={"crs": CRS},
)
SHAPE = st.one_of(
    st.fixed_dictionaries({"$geometry": GEOJSON}),
    st.dictionaries(st.sampled_from(["$box", "$polygon", "$center", "$centerSphere", "$uniqueDocs"]), COORDS),
)
CONDITION = st.one_of(
    st.fixed_dictionaries({"$geoWithin": SHAPE}),
    st.fixed_dictionaries({"$geoIntersects": SHAPE}),
    st.fixed_dictionaries(
        {"$near": st.one_of(COORDS, SHAPE)}, optional={"$maxDistance": NUMBERS, "$minDistance": NUMBERS}
    ),
    st.fixed_dictionaries({"$nearSphere": st.one_of(COORDS, SHAPE)}),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONDITION, st.one_of(GEOJSON, COORDS), st.one_of(GEOJSON, COORDS))
def test_bad_geo_input_gets_mongodb_errors(condition: Any, stored: Any, near: Any) -> None:
    from foliodb.commands import Executor

    executor = Executor.open(":memory:")
    try:
        for key in ({"s": "2dsphere"}, {"p": "2d"}):
            executor.execute("db", {"createIndexes": "c", "indexes": [{"key": key, "name": next(iter(key))}]})
        commands = [
            {"insert": "c", "documents": [{"s": stored}, {"p": stored}]},
            {"find": "c", "filter": {"s": condition}},
            {"find": "c", "filter": {"p": condition}},
            {"aggregate": "c", "pipeline": [{"$geoNear": {"near": near, "distanceField": "d"}}], "cursor": {}},
        ]
        for command in commands:
            reply = executor.execute("db", command)
            if not reply["ok"]:
                assert isinstance(reply["code"], int) and reply["code"] != 1, (command, reply)
            for error in reply.get("writeErrors", []):
                assert error["code"] != 1, (command, error)
    finally:
        executor.close()
