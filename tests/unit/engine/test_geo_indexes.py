"""2dsphere and 2d indexes, $near/$nearSphere through them, and $geoNear.

Manual: https://www.mongodb.com/docs/manual/core/indexes/index-types/geospatial/2dsphere/
https://www.mongodb.com/docs/manual/core/indexes/index-types/geospatial/2d/
https://www.mongodb.com/docs/manual/reference/operator/query/near/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/geoNear/

Expected distances are computed here with the haversine formula on mongod's
sphere (radius 6378.1 km), never by FolioDB.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pymongo.errors import OperationFailure, WriteError

INDEX_2DSPHERE = "https://www.mongodb.com/docs/manual/core/indexes/index-types/geospatial/2dsphere/"
INDEX_2D = "https://www.mongodb.com/docs/manual/core/indexes/index-types/geospatial/2d/"
GEONEAR = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/geoNear/"
GEOWITHIN_BIG = "https://www.mongodb.com/docs/manual/reference/operator/query/geoWithin/"
RADIUS = 6378.1 * 1000
STRICT = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}
# Everything but the square [95, 105] x [-5, 5]: its ring walked clockwise.
BIG = {"type": "Polygon", "coordinates": [[[95, -5], [95, 5], [105, 5], [105, -5], [95, -5]]], "crs": STRICT}


def haversine(a: tuple[float, float], b: tuple[float, float]) -> float:
    lng1, lat1, lng2, lat2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * RADIUS * math.asin(math.sqrt(h))


def point(x: float, y: float) -> dict[str, Any]:
    return {"type": "Point", "coordinates": [x, y]}


PLACES = [(0.0, 0.0), (1.0, 0.0), (0.0, 2.0), (3.0, 3.0), (-4.0, 1.0), (10.0, 10.0), (-100.0, 40.0)]


@pytest.fixture
def places(db: Any) -> Any:
    coll = db.places
    coll.create_index([("loc", "2dsphere")])
    coll.insert_many([{"_id": i, "loc": point(*p), "n": i % 2} for i, p in enumerate(PLACES)])
    return coll


def test_index_spec_gets_version_3(db: Any) -> None:
    db.c.create_index([("loc", "2dsphere")])
    spec = next(i for i in db.c.list_indexes() if i["name"] == "loc_2dsphere")
    assert spec["2dsphereIndexVersion"] == 3  # mongod adds the version it builds


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        ({"loc": "here"}, "Point must be an array or object, instead got type string"),
        ({"loc": [200, 0]}, "longitude/latitude is out of bounds, lng: 200 lat: 0"),
        ({"loc": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]}}, "Loop is not closed"),
        ({"loc": {"type": "Triangle", "coordinates": []}}, "unknown GeoJSON type"),
        # Big polygons are for queries: mongod's S2GetKeysForElement refuses them.
        ({"loc": BIG}, "can't index geometry with strict winding order"),
        ({"loc": {**point(0, 0), "crs": STRICT}}, "Strict winding order is only supported by polygon"),
    ],
)
def test_bad_geometry_cannot_be_indexed(db: Any, doc: dict[str, Any], reason: str) -> None:
    db.c.create_index([("loc", "2dsphere")])
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"_id": 1, **doc})
    assert info.value.code == 16755, INDEX_2DSPHERE
    assert info.value.details is not None
    assert info.value.details["errmsg"].startswith("Can't extract geo keys: { _id: 1, loc: ")
    assert reason in info.value.details["errmsg"]
    assert db.c.count_documents({}) == 0


def test_index_build_fails_on_existing_bad_geometry(db: Any) -> None:
    db.c.insert_one({"_id": 1, "loc": "here"})
    with pytest.raises(OperationFailure) as info:
        db.c.create_index([("loc", "2dsphere")])
    assert info.value.code == 16755


def test_index_build_fails_on_a_stored_big_polygon(db: Any) -> None:
    db.c.insert_one({"_id": 1, "loc": BIG})  # no index: stored, but never matched
    assert db.c.count_documents({"loc": {"$geoIntersects": {"$geometry": point(0, 0)}}}) == 0
    with pytest.raises(OperationFailure) as info:
        db.c.create_index([("loc", "2dsphere")])
    assert info.value.code == 16755, GEOWITHIN_BIG
    assert "can't index geometry with strict winding order" in str(info.value)


def test_big_polygon_queries_use_the_index(places: Any) -> None:
    places.insert_one({"_id": 100, "loc": point(100, 0)})  # in the square: outside BIG
    for op in ("$geoWithin", "$geoIntersects"):
        query = {"loc": {op: {"$geometry": BIG}}}
        assert sorted(d["_id"] for d in places.find(query)) == list(range(len(PLACES))), GEOWITHIN_BIG
        assert sorted(d["_id"] for d in places.find(query).hint([("$natural", 1)])) == list(range(len(PLACES)))
        plan = places.find(query).explain()["queryPlanner"]["winningPlan"]
        assert plan["inputStage"]["stage"] == "IXSCAN"


@pytest.mark.parametrize(
    "pipeline",
    [
        [{"$geoNear": {"near": {**point(0, 0), "crs": STRICT}, "distanceField": "d"}}],
        [
            {
                "$geoNear": {
                    "near": point(0, 0),
                    "distanceField": "d",
                    "query": {"loc": {"$geoWithin": {"$geometry": {**BIG, "coordinates": BIG["coordinates"] * 2}}}},
                }
            }
        ],
    ],
)
def test_big_polygon_misuse_in_geo_near(places: Any, pipeline: list[dict[str, Any]]) -> None:
    with pytest.raises(OperationFailure) as info:
        list(places.aggregate(pipeline))
    assert info.value.code == 2, GEOWITHIN_BIG


def test_geo_near_query_may_use_a_big_polygon(places: Any) -> None:
    # The far point (-100, 40) is outside a big polygon that leaves out the Americas' longitudes.
    americas = {**BIG, "coordinates": [[[-120, -60], [-120, 60], [-80, 60], [-80, -60], [-120, -60]]]}
    stage = {"near": point(0, 0), "distanceField": "d", "query": {"loc": {"$geoWithin": {"$geometry": americas}}}}
    assert [d["_id"] for d in places.aggregate([{"$geoNear": stage}])] == [0, 1, 2, 4, 3, 5], GEONEAR


def test_documents_without_geometry_are_left_out(db: Any) -> None:
    # 2dsphere (version 2 and later) indexes are sparse.
    db.c.create_index([("loc", "2dsphere")])
    db.c.insert_many([{"_id": 1}, {"_id": 2, "loc": None}, {"_id": 3, "loc": []}])
    assert db.c.count_documents({}) == 3


def test_geo_within_uses_the_index(places: Any) -> None:
    box = {"type": "Polygon", "coordinates": [[[-5, -5], [5, -5], [5, 5], [-5, 5], [-5, -5]]]}
    query = {"loc": {"$geoWithin": {"$geometry": box}}}
    assert sorted(d["_id"] for d in places.find(query)) == [0, 1, 2, 3, 4]
    plan = places.find(query).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH"
    assert plan["filter"] == query  # the cells only narrow: the exact predicate runs on each document
    assert plan["inputStage"]["stage"] == "IXSCAN"
    assert plan["inputStage"]["indexName"] == "loc_2dsphere"


def test_near_orders_by_distance(places: Any) -> None:
    query = {"loc": {"$near": {"$geometry": point(0.1, 0.1), "$maxDistance": 1_000_000}}}
    found = list(places.find(query, {"d": {"$meta": "geoNearDistance"}}))
    expected = sorted(
        (haversine((0.1, 0.1), p), i) for i, p in enumerate(PLACES) if haversine((0.1, 0.1), p) <= 1_000_000
    )
    assert [d["_id"] for d in found] == [i for _, i in expected]
    assert [d["d"] for d in found] == pytest.approx([d for d, _ in expected], rel=1e-9)


def test_near_min_distance_and_other_conditions(places: Any) -> None:
    query = {"loc": {"$nearSphere": {"$geometry": point(0, 0), "$minDistance": 200_000}}, "n": 1}
    # Odd _ids at least 200 km from the origin, nearest first: (3,3) 472 km, (10,10) 1568 km.
    assert [d["_id"] for d in places.find(query)] == [3, 5]


def test_near_explain_shows_geo_near(places: Any) -> None:
    plan = places.find({"loc": {"$near": {"$geometry": point(0, 0)}}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "GEO_NEAR_2DSPHERE"
    assert plan["indexName"] == "loc_2dsphere"


def test_near_needs_a_geo_index(db: Any) -> None:
    db.c.insert_one({"loc": [0, 0]})
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"loc": {"$near": [0, 0]}}))
    assert info.value.code == 291  # NoQueryExecutionPlans
    assert "unable to find index for $geoNear query" in str(info.value)


def test_a_sort_overrides_near_order(places: Any) -> None:
    query = {"loc": {"$near": {"$geometry": point(0, 0), "$maxDistance": 600_000}}}
    assert [d["_id"] for d in places.find(query).sort("_id", -1)] == [4, 3, 2, 1, 0]


def test_compound_2dsphere_index(db: Any) -> None:
    db.c.create_index([("kind", 1), ("loc", "2dsphere")])
    db.c.insert_many(
        [
            {"_id": 1, "kind": "cafe", "loc": point(0, 0)},
            {"_id": 2, "kind": "bar", "loc": point(0, 0.01)},
            {"_id": 3, "kind": "cafe", "loc": point(0, 0.02)},
        ]
    )
    query = {"kind": "cafe", "loc": {"$near": {"$geometry": point(0, 0.03)}}}
    assert [d["_id"] for d in db.c.find(query)] == [3, 1]
    within = {"kind": "cafe", "loc": {"$geoWithin": {"$centerSphere": [[0, 0], 0.0001]}}}
    assert [d["_id"] for d in db.c.find(within)] == [1]
    assert db.c.find(within).explain()["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "IXSCAN"


def test_2d_index_box_and_near(db: Any) -> None:
    db.c.create_index([("p", "2d")])
    pts = [(0, 0), (1, 1), (2, 5), (-3, 4), (50, 50)]
    db.c.insert_many([{"_id": i, "p": list(p)} for i, p in enumerate(pts)])
    box = {"p": {"$geoWithin": {"$box": [[-1, -1], [2, 5]]}}}
    assert sorted(d["_id"] for d in db.c.find(box)) == [0, 1, 2]
    assert db.c.find(box).explain()["queryPlanner"]["winningPlan"]["inputStage"]["indexName"] == "p_2d"
    # Planar distances from (0, 0): 0, sqrt 2, sqrt 29 = 5.39, 5 and 70.7.
    near = list(db.c.find({"p": {"$near": [0, 0], "$maxDistance": 6}}, {"d": {"$meta": "geoNearDistance"}}))
    assert [d["_id"] for d in near] == [0, 1, 3, 2]
    assert [d["d"] for d in near] == pytest.approx([0, math.sqrt(2), 5, math.sqrt(29)])


def test_2d_index_options(db: Any) -> None:
    db.c.create_index([("p", "2d")], min=0, max=10, bits=8)
    db.c.insert_one({"p": [5, 5]})
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"p": [11, 5]})
    assert info.value.code == 13027, INDEX_2D
    # hash.cpp GeoHashConverter::hash: the interval is closed, [min, max].
    assert "point not in interval of [ 0, 10 ]" in str(info.value)
    db.c.insert_one({"p": [10, 0]})
    with pytest.raises(OperationFailure) as bad:
        db.d.create_index([("p", "2d")], bits=40)
    assert bad.value.code == 72


def test_geo_near_stage(places: Any) -> None:
    out = list(
        places.aggregate(
            [
                {
                    "$geoNear": {
                        "near": point(0, 0),
                        "distanceField": "dist.km",
                        "distanceMultiplier": 0.001,
                        "maxDistance": 300_000,
                        "includeLocs": "at",
                        "query": {"n": 0},
                    }
                }
            ]
        )
    )
    # Even _ids within 300 km: (0,0) at 0 km and (0,2) at 222.6 km.
    assert [d["_id"] for d in out] == [0, 2]
    assert out[1]["dist"]["km"] == pytest.approx(haversine((0, 0), (0, 2)) / 1000, rel=1e-9)
    assert out[1]["at"] == point(0, 2)


def test_geo_near_legacy_spherical_is_radians(db: Any) -> None:
    db.c.create_index([("p", "2d")])
    db.c.insert_many([{"_id": 1, "p": [0, 0]}, {"_id": 2, "p": [0, 1]}])
    out = list(db.c.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d", "spherical": True}}]))
    assert [round(d["d"], 12) for d in out] == [0.0, round(math.radians(1), 12)]


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        ([{"$match": {}}, {"$geoNear": {"near": [0, 0], "distanceField": "d"}}], 40602),
        ([{"$geoNear": {"distanceField": "d"}}], 16605),
        ([{"$geoNear": {"near": [0, 0]}}], 16606),
        ([{"$geoNear": {"near": [0, 0], "distanceField": "d", "limit": 5}}], 50858),
        ([{"$geoNear": {"near": [0, 0], "distanceField": "d", "maxDistance": -1}}], 2),
        ([{"$geoNear": {"near": [0, 0], "distanceField": "d", "includeLocs": 5}}], 16607),
        ([{"$facet": {"a": [{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]}}], 40600),
    ],
)
def test_geo_near_stage_errors(places: Any, pipeline: list[dict[str, Any]], code: int) -> None:
    with pytest.raises(OperationFailure) as info:
        list(places.aggregate(pipeline))
    assert info.value.code == code, GEONEAR


def test_geo_near_needs_an_index(db: Any) -> None:
    db.c.insert_one({"p": [0, 0]})
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]))
    assert info.value.code == 27
    assert "$geoNear requires a 2d or 2dsphere index, but none were found" in str(info.value)


def test_geo_keys_are_binary_keystrings() -> None:
    # geo_keys builds keys without keystring.encode, for speed: they must be its encoding.
    from foliodb.engine.geo_keys import stored
    from foliodb.query import keystring

    for value in (0, 1, 2**32 + 7, 2**63, 2**64 - 1):
        assert stored(value) == keystring.encode(value.to_bytes(8, "big"))


def test_one_near_per_query(places: Any) -> None:
    near = {"$near": {"$geometry": point(0, 0)}}
    with pytest.raises(OperationFailure) as info:
        list(places.find({"loc": near, "other": near}))
    assert info.value.code == 2
    assert "Too many geoNear expressions" in str(info.value)


def test_match_refuses_near(places: Any) -> None:
    # count_documents runs a $match: distance order belongs to $geoNear there.
    with pytest.raises(OperationFailure) as info:
        places.count_documents({"loc": {"$near": {"$geometry": point(0, 0)}}})
    assert info.value.code == 2
    assert "$geoNear, $near, and $nearSphere are not allowed in this context" in str(info.value)


def test_2d_center_sphere_across_the_antimeridian(db: Any) -> None:
    db.c.create_index([("p", "2d")])
    db.c.insert_many([{"_id": 1, "p": [179.9, 0]}, {"_id": 2, "p": [-179.9, 0]}, {"_id": 3, "p": [0, 0]}])
    # 0.01 rad = 0.57 degrees around (180, 0) reaches both sides of the antimeridian.
    query = {"p": {"$geoWithin": {"$centerSphere": [[180, 0], 0.01]}}}
    assert sorted(d["_id"] for d in db.c.find(query)) == [1, 2]
    near = {"p": {"$nearSphere": [179.95, 0], "$maxDistance": 0.01}}
    assert [d["_id"] for d in db.c.find(near)] == [1, 2]


def test_a_partial_geo_index_serves_only_queries_inside_it(db: Any) -> None:
    db.c.create_index([("loc", "2dsphere")], partialFilterExpression={"open": True})
    db.c.insert_many([{"_id": 1, "loc": point(0, 0), "open": False}, {"_id": 2, "loc": point(0, 1), "open": True}])
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"loc": {"$near": {"$geometry": point(0, 0)}}}))
    assert info.value.code == 291
    assert [d["_id"] for d in db.c.find({"loc": {"$near": {"$geometry": point(0, 0)}}, "open": True})] == [2]


def test_geo_near_key_picks_among_geo_indexes(db: Any) -> None:
    db.c.create_index([("home", "2dsphere")])
    db.c.create_index([("work", "2dsphere")])
    db.c.insert_many(
        [{"_id": 1, "home": point(0, 0), "work": point(0, 3)}, {"_id": 2, "home": point(0, 2), "work": point(0, 0)}]
    )
    stage = {"near": point(0, 0), "distanceField": "d"}
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$geoNear": stage}]))
    assert info.value.code == 27
    assert "There is more than one 2dsphere index on test.c; unsure which to use for $geoNear" in str(info.value)
    assert [d["_id"] for d in db.c.aggregate([{"$geoNear": {**stage, "key": "work"}}])] == [2, 1]
    assert [d["_id"] for d in db.c.aggregate([{"$geoNear": {**stage, "key": "home"}}])] == [1, 2]


def test_sort_by_geo_near_distance_meta(places: Any) -> None:
    # mongod sorts every $meta descending, geoNearDistance too ("weird for
    # geoNearDistance", says sort_pattern.cpp): farthest first.
    query = {"loc": {"$near": {"$geometry": point(0, 0), "$maxDistance": 600_000}}}
    found = places.find(query, {"d": {"$meta": "geoNearDistance"}}).sort({"d": {"$meta": "geoNearDistance"}})
    distances = [d["d"] for d in found]
    assert distances == sorted(distances, reverse=True) and len(distances) == 5


def test_point_fast_path_keys_equal_the_full_parse() -> None:
    # A plain GeoJSON Point skips the full parse on insert: same cell either way.
    from foliodb.engine.geo_keys import geometry_cells, sphere_document_keys
    from foliodb.query.geometry import parse_geometry

    for x, y in [(0, 0), (12.5, 41.9), (-180, -90), (180, 90), (-73.97, 40.77)]:
        loc = point(x, y)
        keys = sphere_document_keys({"loc": loc}, [(("loc",), False)], ["2dsphere"])
        assert {cell for (cell,) in keys.values()} == geometry_cells(parse_geometry(loc))


def test_legacy_near_on_a_2dsphere_index_is_radians(places: Any) -> None:
    # A legacy pair with a 2dsphere index: spherical distances in radians.
    found = list(places.find({"loc": {"$near": [0, 0], "$maxDistance": 0.02}}, {"d": {"$meta": "geoNearDistance"}}))
    # (1, 0) is 1 degree away (0.01745 rad); (0, 2) is 0.0349 rad, beyond.
    assert [d["_id"] for d in found] == [0, 1]
    assert found[1]["d"] == pytest.approx(math.radians(1), rel=1e-9)


def test_legacy_near_out_of_bounds_on_a_2dsphere_index(places: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        list(places.find({"loc": {"$near": [200, 0]}}))
    assert info.value.code == 2
    assert "longitude/latitude is out of bounds, lng: 200 lat: 0" in str(info.value)
