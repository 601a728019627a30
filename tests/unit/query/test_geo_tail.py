"""Geo edge cases MongoDB's own jstests (jstests/core/geo_*.js) found, each as mongod's source has it.

Manual: https://www.mongodb.com/docs/manual/geospatial-queries/ and the operator pages; where it is
silent, mongod's src/mongo/db/geo/shapes.cpp (distanceCompare), hash.cpp (GeoHashConverter),
geoparser.cpp, index/expression_keys_private.cpp (get2DKeys) and matcher/expression_geo.cpp
(GeoNearExpression).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pymongo.errors import OperationFailure, WriteError


def code_of(fn: Any) -> int:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code


@pytest.mark.parametrize("indexed", [False, True])
def test_center_includes_axis_aligned_points_at_the_radius(db: Any, indexed: bool) -> None:
    # shapes.cpp distanceCompare: an axis-aligned point compares p.x with center.x + radius, so
    # 5.0001 is within 0.0001 of 5 although 5.0001 - 5 > 0.0001 in doubles (jstests/core/geo_circle4.js).
    points = [(4.9999, 52), (5, 52), (5.0001, 52), (5, 52.0001), (5, 51.9999), (4.9999, 52.0001)]
    db.c.insert_many([{"_id": n, "loc": {"x": x, "y": y}} for n, (x, y) in enumerate(points)])
    if indexed:
        db.c.create_index([("loc", "2d")])
    found = db.c.find({"loc": {"$within": {"$center": [[5, 52], 0.0001]}}})
    assert sorted(d["_id"] for d in found) == [0, 1, 2, 3, 4]


def test_legacy_near_takes_a_third_element_as_max_distance(db: Any) -> None:
    # geoparser.cpp parsePointWithMaxDistance: {$near: [x, y, maxDistance]}.
    db.c.insert_many([{"loc": [0, d]} for d in (1, 2, 5)])
    db.c.create_index([("loc", "2d")])
    assert len(list(db.c.find({"loc": {"$near": [0, 0, 3]}}))) == 2
    assert code_of(lambda: list(db.c.find({"loc": {"$near": [0, 0, -1]}}))) == 18522


def test_2d_locations_follow_get2dkeys(db: Any) -> None:
    db.c.create_index([("geo", "2d")], min=-180, max=180)
    # A location array's elements must be locations: [[0, 0], 1] is not (16804).
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"geo": [[0, 0], math.pi / 180]})
    assert info.value.code == 16804
    # hash.cpp: two numbers (13026; one element is 13068), inside the closed [min, max] (13027).
    for bad, code in (({"geo": [1, "b"]}, 13026), ({"geo": [[1]]}, 13068), ({"geo": [181, 0]}, 13027)):
        with pytest.raises(WriteError) as info:
            db.c.insert_one(bad)
        assert info.value.code == code
    db.c.insert_many([{"_id": 1, "geo": [180, 0]}, {"_id": 2, "geo": [179.999, 0]}])
    assert db.c.count_documents({"geo": {"$within": {"$center": [[180, 0], 1]}}}) == 2


def test_a_near_point_outside_a_2d_index_fails(db: Any) -> None:
    # hash.cpp GeoHashConverter::hash of the near point (16433).
    db.c.insert_one({"loc": [1, 1]})
    db.c.create_index([("loc", "2d")], min=-1.0001, max=1.0001)
    pipeline = [{"$geoNear": {"near": [1.0002, 0], "distanceField": "d"}}]
    assert code_of(lambda: list(db.c.aggregate(pipeline))) == 16433


def test_near_sphere_of_a_bare_geojson_point_measures_meters(db: Any) -> None:
    # expression_geo.cpp parseLegacyQuery reads the operand with parseQueryPoint: GeoJSON too.
    db.c.create_index([("geo", "2dsphere")])
    db.c.insert_one({"geo": {"type": "Point", "coordinates": [90, 0]}})
    (found,) = db.c.find(
        {"geo": {"$nearSphere": {"type": "Point", "coordinates": [0, 0]}}}, {"d": {"$meta": "geoNearDistance"}}
    )
    assert found["d"] == pytest.approx(math.pi / 2 * 6378.1 * 1000)


def test_near_operand_errors(db: Any) -> None:
    db.c.create_index([("loc", "2dsphere")])
    db.c.insert_one({"loc": {"type": "Point", "coordinates": [0, 0]}})
    point = {"type": "Point", "coordinates": [0, 0]}
    # parseNewQuery: the $geometry form takes no sibling (BadValue).
    assert code_of(lambda: list(db.c.find({"loc": {"$near": {"$geometry": point}, "$minDistance": 0.1}}))) == 2
    # parseFrom: a legacy point of $nearSphere must project onto the sphere (17444).
    assert code_of(lambda: list(db.c.find({"loc": {"$nearSphere": [179, -91]}}))) == 17444


def test_an_or_of_one_near_clause_is_that_clause(db: Any) -> None:
    db.c.create_index([("loc", "2dsphere")])
    db.c.insert_one({"loc": [0, 0]})
    assert len(list(db.c.find({"$or": [{"loc": {"$nearSphere": [0, 0]}}]}))) == 1
    both = {"$or": [{"loc": {"$nearSphere": [0, 0]}}, {"loc": {"$nearSphere": [1, 1]}}]}
    assert code_of(lambda: list(db.c.find(both))) == 2


def test_legacy_shapes_may_be_objects(db: Any) -> None:
    # geoparser.cpp iterates the shape's elements: an object's values are its points.
    db.c.insert_one({"loc": [0, 0]})
    polygon = {"a": [-10, -10], "b": [-10, 10], "c": [10, 10], "d": [10, -10]}
    assert db.c.count_documents({"loc": {"$within": {"$polygon": polygon}}}) == 1
    assert db.c.count_documents({"loc": {"$within": {"$box": {"low": [-1, -1], "high": [1, 1]}}}}) == 1


def test_count_of_a_missing_collection_still_parses_its_filter(db: Any) -> None:
    # count_cmd.cpp: getExecutorCount parses the query before it finds no collection.
    strict = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}
    query = {"geo": {"$geoWithin": {"$geometry": {"type": "Point", "coordinates": [0, 0], "crs": strict}}}}
    assert code_of(lambda: db.command("count", "missing", query=query)) == 2
    assert db.command("count", "missing", query={"a": 1})["n"] == 0
