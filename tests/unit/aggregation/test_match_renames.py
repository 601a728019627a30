"""A $match after a stage that renames the fields it reads moves before that stage with the old
names (mongod's getComputedPaths renames, found by jstests/aggregation/match_swapping_renamed_fields.js),
so the query planner can use an index on them; and $_internalInhibitOptimization stops such moves.

Expected documents are computed here in plain Python from the inserted ones."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure


def _explain(db: Any, pipeline: list[dict[str, Any]]) -> dict[str, Any]:
    return db.command("explain", {"aggregate": "c", "pipeline": pipeline, "cursor": {}})


def _stages(explained: dict[str, Any]) -> list[str]:
    return [next(iter(stage)) for stage in explained.get("stages", [])]


def _index_scans(explained: dict[str, Any]) -> list[Any]:
    """The key patterns of the IXSCAN stages explain shows (the winning plan's, once each)."""
    found: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("stage") == "IXSCAN":
                found.append(node["keyPattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(explained.get("stages", [explained])[0])
    return sorted(set(map(json.dumps, found)))


DOCS = [{"_id": i, "a": i, "b": 10 - i} for i in range(1, 6)]


@pytest.mark.parametrize(
    ("pipeline", "expected"),
    [
        ([{"$project": {"_id": 0, "z": "$a"}}, {"$match": {"z": {"$gt": 3}}}], [{"z": d["a"]} for d in DOCS[3:]]),
        (
            [{"$addFields": {"z": "$$CURRENT.a"}}, {"$match": {"z": {"$lte": 2}}}],
            [{**d, "z": d["a"]} for d in DOCS[:2]],
        ),
        (
            [{"$project": {"d": "$a"}}, {"$set": {"e": "$d"}}, {"$project": {"f": "$$ROOT.e"}}, {"$match": {"f": 5}}],
            [{"_id": 5, "f": 5}],
        ),
    ],
)
def test_a_match_on_a_renamed_field_uses_the_old_fields_index(
    db: Any, pipeline: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    db.c.insert_many(DOCS)
    db.c.create_index("a")
    assert list(db.c.aggregate(pipeline)) == expected
    explained = _explain(db, pipeline)
    assert _index_scans(explained) == [json.dumps({"a": 1})]
    assert "$match" not in _stages(explained)


def test_a_partly_renamed_match_splits(db: Any) -> None:
    db.c.insert_many(DOCS)
    db.c.create_index("a")
    pipeline = [{"$project": {"z": "$a", "s": {"$add": ["$a", "$b"]}}}, {"$match": {"z": {"$gt": 2}, "s": 10}}]
    assert list(db.c.aggregate(pipeline)) == [{"_id": d["_id"], "z": d["a"], "s": 10} for d in DOCS[2:]]
    explained = _explain(db, pipeline)
    assert _index_scans(explained) == [json.dumps({"a": 1})]
    assert _stages(explained) == ["$cursor", "$project", "$match"]
    assert explained["stages"][2]["$match"] == {"s": 10}


def test_a_map_over_an_array_renames_its_elements_fields(db: Any) -> None:
    db.c.insert_many([{"_id": 0, "a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]}, {"_id": 1, "a": [{"b": 3, "c": 3}]}])
    db.c.create_index([("a.b", 1)])
    mapped = {"$map": {"input": "$a", "as": "it", "in": {"e": "$$it.b", "f": {"$literal": 9}}}}
    pipeline = [{"$project": {"d": mapped}}, {"$match": {"d.e": 2, "d.f": 9}}]
    assert list(db.c.aggregate(pipeline)) == [{"_id": 0, "d": [{"e": 1, "f": 9}, {"e": 2, "f": 9}]}]
    explained = _explain(db, pipeline)
    assert _index_scans(explained) == [json.dumps({"a.b": 1})]
    assert explained["stages"][-1]["$match"] == {"d.f": 9}


@pytest.mark.parametrize("value", ["$a.b", {"$toInt": "$a"}, "$$NOW"])
def test_other_expressions_are_no_renames(db: Any, value: Any) -> None:
    # A dotted path can build arrays of arrays ({a: [{b: [1]}]} gives [[1]]), so mongod renames only
    # a single field; a $match on a computed field stays after its stage.
    db.c.insert_many([{"_id": 1, "a": [{"b": [1]}]}, {"_id": 2, "a": 1}])
    db.c.create_index("a")
    pipeline = [{"$project": {"z": value}}, {"$match": {"z": 1}}]
    explained = _explain(db, pipeline)
    assert _stages(explained)[-1] == "$match"
    assert _index_scans(explained) == []


def test_inhibit_optimization_passes_documents_and_stops_moves(db: Any) -> None:
    db.c.insert_many(DOCS)
    db.c.create_index("a")
    pipeline = [
        {"$_internalInhibitOptimization": {}},
        {"$project": {"x": "$a", "y": "$a"}},
        {"$match": {"y": 4, "w": 1}},
    ]
    assert list(db.c.aggregate(pipeline)) == []
    assert list(db.c.aggregate([*pipeline[:2], {"$match": {"y": 4}}])) == [{"_id": 4, "x": 4, "y": 4}]
    explained = _explain(db, pipeline)
    # The clause on y moves before the $project (as one on a), the one on w stays; neither passes
    # the inhibiting stage to reach the find.
    assert _stages(explained) == ["$cursor", "$_internalInhibitOptimization", "$match", "$project", "$match"]
    assert json.dumps(explained["stages"][2]["$match"]) == json.dumps({"a": 4})
    assert _index_scans(explained) == []


@pytest.mark.parametrize(("spec", "code"), [(1, 14), ({"a": 1}, 9)])
def test_inhibit_optimization_takes_an_empty_object(db: Any, spec: Any, code: int) -> None:
    # document_source_internal_inhibit_optimization.cpp: TypeMismatch, then FailedToParse.
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$_internalInhibitOptimization": spec}]))
    assert info.value.code == code


# A value of "a": scalars, null, documents with "b", and arrays of those (arrays in arrays too).
_leaf = st.one_of(st.integers(0, 3), st.none(), st.just("s"))
_element = st.one_of(_leaf, st.fixed_dictionaries({"b": _leaf}), st.fixed_dictionaries({}))
_value = st.one_of(_element, st.lists(st.one_of(_element, st.lists(_element, max_size=2)), max_size=3))
_documents = st.lists(
    st.one_of(st.fixed_dictionaries({"a": _value, "c": _leaf}), st.fixed_dictionaries({"c": _leaf})),
    max_size=12,
).map(lambda docs: [{"_id": i, **d} for i, d in enumerate(docs)])
_map = {"$map": {"input": "$a", "as": "it", "in": {"e": "$$it.b", "k": {"$literal": 1}}}}

RENAMING = [
    ({"$project": {"z": "$a", "c": 1}}, [{"z": 1}, {"z": None}, {"z.b": 2}, {"z": {"$exists": False}}, {"z": [1, 2]}]),
    ({"$addFields": {"z": "$$CURRENT.a"}}, [{"z": {"$gt": 1}}, {"z.b": {"$in": [0, None]}}, {"z": {"$size": 1}}]),
    ({"$project": {"_id": 0, "z": "$$ROOT.a", "c": 1}}, [{"z": {"$elemMatch": {"b": 1}}}, {"z": {"$type": "array"}}]),
    ({"$project": {"z": "$a", "y": "$c"}}, [{"z": 1, "y": 2}, {"$or": [{"z": 0}, {"y": None}]}, {"y": {"$ne": 1}}]),
    ({"$set": {"d": _map}}, [{"d.e": 1}, {"d.e": None}, {"d.e": 1, "d.k": 1}, {"d.e": {"$exists": True}}]),
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # emptied each run
@given(_documents, st.sampled_from([(stage, match) for stage, matches in RENAMING for match in matches]))
def test_moving_a_match_past_a_rename_keeps_the_answer(db: Any, docs: list[dict[str, Any]], case: Any) -> None:
    # The moved pipeline against the same one kept in order by $_internalInhibitOptimization. A $map
    # rename holds for arrays of documents (or a null or missing array), which is what mongod's
    # rewrite assumes: over a scalar or array element, {e: "$$it.b"} leaves no 'e' (so {"d.e": null}
    # matches) where "a.b" reaches nothing, and a non-array input fails the $map.
    stage, match = case
    if "$set" in stage:
        docs = [
            d
            for d in docs
            if d.get("a") is None or (isinstance(d["a"], list) and all(isinstance(x, dict) for x in d["a"]))
        ]
    db.c.delete_many({})
    if docs:
        db.c.insert_many(docs)
    moved = list(db.c.aggregate([stage, {"$match": match}, {"$sort": {"_id": 1}}]))
    kept = list(
        db.c.aggregate([stage, {"$_internalInhibitOptimization": {}}, {"$match": match}, {"$sort": {"_id": 1}}])
    )
    assert moved == kept
