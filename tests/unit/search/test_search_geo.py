"""geoWithin and geoShape on geo fields, against plain-Python geometry.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/geoWithin/ (box, circle, Polygon /
MultiPolygon over indexed points) and .../atlas-search/geoShape/ (relation contains,
disjoint, intersects, within over shapes indexed with ``indexShapes: true``). Points are
kept clear of every boundary (a metre for circles, 1e-6 degrees for polygons) so that
straight and geodesic edges, and haversine rounding, cannot change an answer; shapes are
small rectangles near the equator, half a degree apart at least.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready

EARTH_MEAN_RADIUS = 6_371_008.7714  # Lucene's GeoUtils.EARTH_MEAN_RADIUS_METERS


def _point(lon: float, lat: float) -> dict[str, Any]:
    return {"type": "Point", "coordinates": [lon, lat]}


def _rect(x0: float, y0: float, x1: float, y1: float) -> dict[str, Any]:
    return {"type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]}


def _index(coll: Any, shapes: bool) -> None:
    field = {"type": "geo", "indexShapes": True} if shapes else {"type": "geo"}
    coll.create_search_index(
        SearchIndexModel(definition={"mappings": {"fields": {"loc": field, "name": {"type": "string"}}}})
    )
    wait_ready(coll, "default")


def _ids(coll: Any, operator: dict[str, Any]) -> set[Any]:
    return {d["_id"] for d in coll.aggregate([{"$search": operator}])}


def _points(db: Any, n: int = 300) -> tuple[Any, dict[int, tuple[float, float]]]:
    rng = random.Random(11)
    points = {i: (rng.uniform(-30, 30), rng.uniform(-30, 30)) for i in range(n)}
    db.pts.insert_many([{"_id": i, "loc": _point(*p)} for i, p in points.items()])
    _index(db.pts, shapes=False)
    return db.pts, points


def _haversine(a: tuple[float, float], b: tuple[float, float]) -> float:
    lon1, lat1, lon2, lat2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_MEAN_RADIUS * math.asin(math.sqrt(h))


def test_geo_within_box(db: Any) -> None:
    coll, points = _points(db)
    box = {"bottomLeft": _point(-10.5, -3.25), "topRight": _point(12, 20)}
    expected = {i for i, (x, y) in points.items() if -10.5 <= x <= 12 and -3.25 <= y <= 20}
    assert expected and _ids(coll, {"geoWithin": {"path": "loc", "box": box}}) == expected


def test_geo_within_circle(db: Any) -> None:
    coll, points = _points(db)
    center, radius = (3.0, -4.0), 1_500_000.0
    distances = {i: _haversine(center, p) for i, p in points.items()}
    assert all(abs(d - radius) > 1 for d in distances.values())
    expected = {i for i, d in distances.items() if d <= radius}
    circle = {"center": _point(*center), "radius": radius}
    assert expected and _ids(coll, {"geoWithin": {"path": "loc", "circle": circle}}) == expected


def _in_ring(p: tuple[float, float], ring: list[list[float]]) -> bool:
    """Even-odd ray casting."""
    x, y = p
    inside = False
    for (x1, y1), (x2, y2) in itertools.pairwise(ring):
        if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
            inside = not inside
    return inside


def test_geo_within_polygon_with_hole_and_multipolygon(db: Any) -> None:
    coll, points = _points(db)
    shell = [[-20.0, -20.0], [15.0, -25.0], [25.0, 10.0], [0.0, 28.0], [-22.0, 5.0], [-20.0, -20.0]]
    hole = [[-5.0, -5.0], [5.0, -5.0], [5.0, 5.0], [-5.0, 5.0], [-5.0, -5.0]]
    polygon = {"type": "Polygon", "coordinates": [shell, hole]}
    expected = {i for i, p in points.items() if _in_ring(p, shell) and not _in_ring(p, hole)}
    assert expected and _ids(coll, {"geoWithin": {"path": "loc", "geometry": polygon}}) == expected
    second = [[26.0, 26.0], [29.0, 26.0], [29.0, 29.5], [26.0, 26.0]]
    multi = {"type": "MultiPolygon", "coordinates": [[shell, hole], [second]]}
    expected |= {i for i, p in points.items() if _in_ring(p, second)}
    assert _ids(coll, {"geoWithin": {"path": "loc", "geometry": multi}}) == expected


Rect = tuple[float, float, float, float]


def _shapes(db: Any) -> tuple[Any, dict[int, list[Rect]]]:
    rng = random.Random(5)
    docs: dict[int, list[Rect]] = {}
    for i in range(120):
        rects = []
        for _ in range(rng.choice([1, 1, 2])):
            x0, y0 = rng.randrange(-20, 18), rng.randrange(-20, 18)
            rects.append((float(x0), float(y0), float(x0 + rng.randint(1, 2)), float(y0 + rng.randint(1, 2))))
        docs[i] = rects
    db.shp.insert_many(
        [
            {"_id": i, "loc": [_rect(*r) for r in rects] if len(rects) > 1 else _rect(*rects[0])}
            for i, rects in docs.items()
        ]
    )
    _index(db.shp, shapes=True)
    return db.shp, docs


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _inside(a: Rect, b: Rect) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


@pytest.mark.parametrize("query", [(-7.5, -6.5, 4.5, 9.5), (0.5, 0.5, 1.5, 1.5), (-3.5, 10.5, 3.5, 19.5)])
def test_geo_shape_relations(db: Any, query: Rect) -> None:
    coll, docs = _shapes(db)
    expected = {
        "intersects": {i for i, rs in docs.items() if any(_overlaps(r, query) for r in rs)},
        "disjoint": {i for i, rs in docs.items() if not any(_overlaps(r, query) for r in rs)},
        "within": {i for i, rs in docs.items() if all(_inside(r, query) for r in rs)},
        "contains": {i for i, rs in docs.items() if any(_inside(query, r) for r in rs)},
    }
    for relation, ids in expected.items():
        got = _ids(coll, {"geoShape": {"path": "loc", "relation": relation, "geometry": _rect(*query)}})
        assert got == ids, relation


def test_geo_shape_with_points_and_lines(db: Any) -> None:
    db.mixed.insert_many(
        [
            {"_id": 1, "loc": _point(1.5, 1.5)},
            {"_id": 2, "loc": {"type": "LineString", "coordinates": [[0.5, 0.5], [5.5, 0.5]]}},
            {"_id": 3, "loc": _point(9.5, 9.5)},
            {"_id": 4, "loc": "not a shape"},
        ]
    )
    _index(db.mixed, shapes=True)
    square = _rect(0, 0, 3, 3)
    assert _ids(db.mixed, {"geoShape": {"path": "loc", "relation": "intersects", "geometry": square}}) == {1, 2}
    assert _ids(db.mixed, {"geoShape": {"path": "loc", "relation": "within", "geometry": square}}) == {1}
    assert _ids(db.mixed, {"geoShape": {"path": "loc", "relation": "disjoint", "geometry": square}}) == {3}
    # The points are geo points too: geoWithin sees them.
    assert _ids(db.mixed, {"geoWithin": {"path": "loc", "geometry": square}}) == {1}


def test_geo_scores_are_constant_and_compose(db: Any) -> None:
    coll, points = _points(db)
    box = {"bottomLeft": _point(-10, -10), "topRight": _point(10, 10)}
    scores = {
        d["s"]
        for d in coll.aggregate(
            [{"$search": {"geoWithin": {"path": "loc", "box": box}}}, {"$project": {"s": {"$meta": "searchScore"}}}]
        )
    }
    assert scores == {1.0}
    inner = {"geoWithin": {"path": "loc", "box": {"bottomLeft": _point(0, 0), "topRight": _point(10, 10)}}}
    expected = {i for i, (x, y) in points.items() if -10 <= x <= 10 and -10 <= y <= 10 and not (x >= 0 and y >= 0)}
    got = _ids(coll, {"compound": {"filter": [{"geoWithin": {"path": "loc", "box": box}}], "mustNot": [inner]}})
    assert got == expected


@pytest.mark.parametrize(
    "operator",
    [
        {"geoWithin": {"path": "name", "box": {"bottomLeft": _point(0, 0), "topRight": _point(1, 1)}}},
        {"geoWithin": {"path": "loc", "box": {"bottomLeft": _point(2, 0), "topRight": _point(1, 1)}}},
        {"geoWithin": {"path": "loc", "box": {"bottomLeft": _point(0, 0)}}},
        {"geoWithin": {"path": "loc", "circle": {"center": _point(0, 0), "radius": -1}}},
        {"geoWithin": {"path": "loc", "circle": {"center": _point(0, 0), "radius": 5}, "geometry": _rect(0, 0, 1, 1)}},
        {"geoWithin": {"path": "loc"}},
        {"geoWithin": {"path": "loc", "geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}}},
        {"geoWithin": {"path": "loc", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1]]]}}},
        {"geoShape": {"path": "loc", "relation": "within", "geometry": _point(0, 0)}},
        {"geoShape": {"path": "loc", "relation": "overlaps", "geometry": _rect(0, 0, 1, 1)}},
        {"geoShape": {"path": "loc", "relation": "intersects"}},
        {"geoShape": {"path": "name", "relation": "intersects", "geometry": _rect(0, 0, 1, 1)}},
    ],
)
def test_bad_geo_queries_fail(db: Any, operator: dict[str, Any]) -> None:
    db.bad.insert_one({"_id": 1, "loc": _point(0.5, 0.5), "name": "x"})
    _index(db.bad, shapes=True)
    with pytest.raises(OperationFailure) as failure:
        list(db.bad.aggregate([{"$search": operator}]))
    assert failure.value.code == 8


def test_geo_shape_needs_index_shapes(db: Any) -> None:
    db.np.insert_one({"_id": 1, "loc": _point(0.5, 0.5)})
    _index(db.np, shapes=False)
    with pytest.raises(OperationFailure) as failure:
        list(
            db.np.aggregate(
                [{"$search": {"geoShape": {"path": "loc", "relation": "intersects", "geometry": _rect(0, 0, 1, 1)}}}]
            )
        )
    assert failure.value.code == 8
    assert "indexShapes=true" in str(failure.value)
    bad = {"mappings": {"fields": {"loc": {"type": "geo", "indexShapes": "yes"}}}}
    with pytest.raises(OperationFailure) as failure:
        db.np.create_search_index(SearchIndexModel(name="bad", definition=bad))
    assert failure.value.code == 2
