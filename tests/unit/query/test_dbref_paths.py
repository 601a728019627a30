"""DBRef fields in paths: ``$ref``, ``$id`` and ``$db`` are the only
``$``-prefixed names a field path may hold, so ODMs (beanie's
``fetch_links``, mongoengine) can join and filter on references.

Manual: https://www.mongodb.com/docs/manual/reference/database-references/ (a DBRef is the
document {$ref, $id, $db}), https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
(localField/foreignField are field paths), https://www.mongodb.com/docs/manual/reference/operator/aggregation/unwind/,
https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/project/
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import DBRef
from pymongo.errors import OperationFailure

DOOR_A, DOOR_B = 101, 102
HOUSE = {"_id": 1, "door": DBRef("doors", DOOR_A), "doors": [DBRef("doors", DOOR_A), DBRef("doors", DOOR_B, "t")]}


@pytest.fixture
def db(client: Any) -> Any:
    db = client.t
    db.doors.insert_many([{"_id": DOOR_A, "h": 1}, {"_id": DOOR_B, "h": 2}])
    db.houses.insert_one(dict(HOUSE))
    return db


PIPELINES = [
    # beanie's fetch_links for a direct link: $lookup on "door.$id", then $unwind of the joined field.
    (
        "lookup-localField",
        "houses",
        [
            {"$lookup": {"from": "doors", "localField": "door.$id", "foreignField": "_id", "as": "door"}},
            {"$unwind": "$door"},
            {"$project": {"door": 1}},
        ],
        [{"_id": 1, "door": {"_id": DOOR_A, "h": 1}}],
    ),
    (
        "lookup-foreignField",
        "doors",
        [
            {"$lookup": {"from": "houses", "localField": "_id", "foreignField": "doors.$id", "as": "in"}},
            {"$project": {"n": {"$size": "$in"}}},
        ],
        [{"_id": DOOR_A, "n": 1}, {"_id": DOOR_B, "n": 1}],
    ),
    (
        "unwind-through-$id",
        "houses",
        [{"$project": {"doors": 1}}, {"$unwind": "$doors"}, {"$unwind": "$doors.$id"}],
        [{"_id": 1, "doors": DBRef("doors", DOOR_A)}, {"_id": 1, "doors": DBRef("doors", DOOR_B, "t")}],
    ),
    (
        "expression-paths",
        "houses",
        [{"$project": {"_id": 0, "id": "$door.$id", "ref": "$door.$ref", "dbs": "$doors.$db"}}],
        [{"id": DOOR_A, "ref": "doors", "dbs": ["t"]}],
    ),
    (
        "project-inclusion-through-dbref",
        "houses",
        [{"$project": {"door.$id": 1}}],
        [{"_id": 1, "door": {"$id": DOOR_A}}],
    ),
    (
        "project-exclusion-through-dbref",
        "houses",
        [{"$project": {"door.$ref": 0, "doors": 0}}],
        [{"_id": 1, "door": {"$id": DOOR_A}}],
    ),
    (
        "set-inside-dbref-keeps-it-a-dbref",
        "houses",
        [{"$set": {"door.$id": 7}}, {"$project": {"door": 1}}],
        [{"_id": 1, "door": DBRef("doors", 7)}],
    ),
    (
        "group-by-$id",
        "houses",
        [{"$unwind": "$doors"}, {"$group": {"_id": "$doors.$id"}}, {"$sort": {"_id": 1}}],
        [{"_id": DOOR_A}, {"_id": DOOR_B}],
    ),
]


@pytest.mark.parametrize(("coll", "pipeline", "expected"), [p[1:] for p in PIPELINES], ids=[p[0] for p in PIPELINES])
def test_pipelines_follow_dbref_fields(db: Any, coll: str, pipeline: list[Any], expected: list[Any]) -> None:
    assert list(db[coll].aggregate(pipeline)) == expected


FILTERS = [
    ("elemMatch-ref-id", {"doors": {"$elemMatch": {"$ref": "doors", "$id": DOOR_B}}}, 1),
    ("elemMatch-id-first", {"doors": {"$elemMatch": {"$id": DOOR_B, "$ref": "doors"}}}, 1),
    ("elemMatch-with-db", {"doors": {"$elemMatch": {"$ref": "doors", "$id": DOOR_B, "$db": "t"}}}, 1),
    ("elemMatch-wrong-db", {"doors": {"$elemMatch": {"$ref": "doors", "$id": DOOR_A, "$db": "t"}}}, 0),
    ("all-of-elemMatch", {"doors": {"$all": [{"$elemMatch": {"$ref": "doors", "$id": DOOR_A}}]}}, 1),
    ("dotted-$id", {"door.$id": DOOR_A}, 1),
    ("array-$id", {"doors.$id": DOOR_B}, 1),
    ("whole-dbref", {"door": {"$ref": "doors", "$id": DOOR_A}}, 1),
]


@pytest.mark.parametrize(("query", "n"), [f[1:] for f in FILTERS], ids=[f[0] for f in FILTERS])
def test_filters_on_dbref_fields(db: Any, query: dict[str, Any], n: int) -> None:
    assert db.houses.count_documents(query) == n


def test_find_projection_through_dbref(db: Any) -> None:
    assert db.houses.find_one({}, {"door.$id": 1, "doors.$ref": 1}) == {
        "_id": 1,
        "door": {"$id": DOOR_A},
        "doors": [{"$ref": "doors"}, {"$ref": "doors"}],
    }


@pytest.mark.parametrize(
    "stage",
    [
        {"$unwind": "$door.$idx"},
        {"$lookup": {"from": "doors", "localField": "door.$x", "foreignField": "_id", "as": "d"}},
        {"$project": {"door.$foo": 1}},
    ],
)
def test_other_dollar_names_stay_refused(db: Any, stage: dict[str, Any]) -> None:
    # Only $ref, $id and $db are DBRef fields; FieldPath refuses any other "$" name (16410).
    with pytest.raises(OperationFailure) as err:
        list(db.houses.aggregate([stage]))
    assert err.value.code == 16410
