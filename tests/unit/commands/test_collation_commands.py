"""Collation in commands: collection defaults, index collations, views,
unique indexes, explain, and every operation that takes one.

Manual: https://www.mongodb.com/docs/manual/reference/collation/ (operations
that support collation; behaviour), and
https://www.mongodb.com/docs/manual/reference/collation/#collation-and-index-use
("To use an index for string comparisons, an operation must also specify the
same collation"), https://www.mongodb.com/docs/manual/core/views/#behavior
(a view's default collation). Strength 2 folds case but keeps accents, so of
a, A, b, á the query "A" matches a and A.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import UpdateOne
from pymongo.errors import DuplicateKeyError, OperationFailure

S2 = {"locale": "en", "strength": 2}
DOCS = [{"_id": 1, "s": "a"}, {"_id": 2, "s": "A"}, {"_id": 3, "s": "b"}, {"_id": 4, "s": "á"}]


def _ids(cursor: Any) -> list[int]:
    return sorted(d["_id"] for d in cursor)


def _winning_stages(plan: dict[str, Any]) -> list[dict[str, Any]]:
    out = [plan]
    while "inputStage" in out[-1]:
        out.append(out[-1]["inputStage"])
    return out


def test_every_operation_takes_a_collation(db: Any) -> None:
    db.c.insert_many(DOCS)
    assert _ids(db.c.find({"s": "A"}, collation=S2)) == [1, 2]
    assert db.c.count_documents({"s": "A"}, collation=S2) == 2
    assert sorted(db.c.distinct("s", collation=S2)) == ["a", "b", "á"]
    assert _ids(db.c.aggregate([{"$match": {"s": "A"}}], collation=S2)) == [1, 2]
    assert db.c.update_many({"s": "A"}, {"$set": {"u": 1}}, collation=S2).modified_count == 2
    assert db.c.find_one_and_update({"s": "B"}, {"$set": {"u": 2}}, collation=S2)["_id"] == 3
    result = db.c.bulk_write([UpdateOne({"s": "Á"}, {"$set": {"u": 3}}, collation=S2)])
    assert result.modified_count == 1
    assert db.c.delete_many({"s": "A"}, collation=S2).deleted_count == 2
    assert _ids(db.c.find()) == [3, 4]


def test_aggregation_comparisons_follow_the_collation(db: Any) -> None:
    db.c.insert_many(DOCS)
    groups = db.c.aggregate(
        [{"$group": {"_id": "$s", "n": {"$sum": 1}, "max": {"$max": "$s"}}}, {"$sort": {"n": -1, "_id": 1}}],
        collation=S2,
    )
    # The $sort on _id is collated too: á (primary a) sorts before b.
    assert [(g["n"], g["_id"].lower()) for g in groups] == [(2, "a"), (1, "á"), (1, "b")]
    projected = db.c.aggregate(
        [
            {"$sort": {"_id": 1}},
            {
                "$project": {
                    "eq": {"$eq": ["$s", "A"]},
                    "in": {"$in": ["$s", ["A", "B"]]},
                    "set": {"$size": {"$setUnion": [["a", "A", "b", "B"]]}},
                }
            },
        ],
        collation=S2,
    )
    assert [(d["eq"], d["in"], d["set"]) for d in projected] == [
        (True, True, 2),
        (True, True, 2),
        (False, True, 2),
        (False, False, 2),
    ]


def test_collection_default_collation_is_inherited(db: Any) -> None:
    db.create_collection("c", collation=S2)
    db.c.insert_many(DOCS)
    assert _ids(db.c.find({"s": "A"})) == [1, 2]
    # {locale: "simple"} is an explicit override: code points again.
    assert _ids(db.c.find({"s": "A"}, collation={"locale": "simple"})) == [2]
    db.c.create_index("s", name="by_s")
    index = db.c.index_information()["by_s"]
    assert index["collation"]["strength"] == 2 and index["collation"]["locale"] == "en"
    db.c.create_index([("s", -1)], name="binary", collation={"locale": "simple"})
    assert "collation" not in db.c.index_information()["binary"]


def test_an_index_serves_only_queries_of_its_collation(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)  # it asserts on the plan
    db.c.insert_many(DOCS)
    db.c.create_index("s", collation=S2)
    plan = db.c.find({"s": "A"}).collation(S2).explain()["queryPlanner"]["winningPlan"]
    stages = _winning_stages(plan)
    assert [s["stage"] for s in stages] == ["FETCH", "IXSCAN"]
    assert stages[1]["collation"]["strength"] == 2
    plain = db.c.find({"s": "A"}).explain()["queryPlanner"]["winningPlan"]
    assert plain["stage"] == "COLLSCAN"
    # Answers are the query's own collation's, with or without the index.
    assert _ids(db.c.find({"s": "A"}).hint("s_1")) == [2]
    assert _ids(db.c.find({"s": "A"}, collation=S2)) == [1, 2]
    assert [d["s"] for d in db.c.find({}, {"_id": 0, "s": 1}, collation=S2).sort("s", 1)][:2] in (
        ["a", "A"],
        ["A", "a"],
    )


def test_a_collated_index_does_not_cover(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)  # it asserts on the plan
    # Its keys are sort keys, not the strings: mongod fetches the documents.
    db.c.insert_many(DOCS)
    db.c.create_index("s", collation=S2)
    plan = db.c.find({"s": "a"}, {"_id": 0, "s": 1}).collation(S2).explain()["queryPlanner"]["winningPlan"]
    assert "FETCH" in [s["stage"] for s in _winning_stages(plan)]
    assert sorted(d["s"] for d in db.c.find({"s": "a"}, {"_id": 0, "s": 1}, collation=S2)) == ["A", "a"]


def test_unique_index_under_collation(db: Any) -> None:
    db.c.create_index("s", unique=True, collation=S2)
    db.c.insert_one({"_id": 1, "s": "a"})
    with pytest.raises(DuplicateKeyError) as info:
        db.c.insert_one({"_id": 2, "s": "A"})
    assert 'collation: { locale: "en"' in str(info.value) and "CollationKey(0x" in str(info.value)
    db.c.insert_one({"_id": 3, "s": "á"})  # an accent is another key at strength 2
    # Changing only the case of its own value is allowed.
    assert db.c.update_one({"_id": 1}, {"$set": {"s": "A"}}).modified_count == 1
    db.d.insert_many([{"s": "a"}, {"s": "A"}])
    with pytest.raises(OperationFailure) as built:
        db.d.create_index("s", unique=True, collation=S2)
    assert built.value.code == 11000


def test_indexes_that_differ_only_by_collation_coexist(db: Any) -> None:
    db.c.create_index("s", name="s2", collation=S2)
    db.c.create_index("s", name="s1", collation={"locale": "en", "strength": 1})
    db.c.create_index("s", name="plain")
    assert {"s2", "s1", "plain"} <= set(db.c.index_information())


def test_bad_index_collations(db: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        db.c.create_index("s", collation={"locale": "xx"})
    assert info.value.code == 2
    assert "failed to add collation information to index spec" in str(info.value)
    with pytest.raises(OperationFailure) as empty:
        db.command({"createIndexes": "c", "indexes": [{"key": {"s": 1}, "name": "ix", "collation": {}}]})
    assert "The field 'collation' cannot be an empty object." in str(empty.value)
    with pytest.raises(OperationFailure) as text:
        db.c.create_index([("s", "text")], collation=S2)
    assert text.value.code == 67


def test_a_view_has_its_own_collation(db: Any) -> None:
    db.c.insert_many(DOCS)
    db.create_collection("v", viewOn="c", pipeline=[], collation=S2)
    assert _ids(db.v.find({"s": "A"})) == [1, 2]
    assert db.v.count_documents({"s": "A"}) == 2
    assert _ids(db.v.find({"s": "A"}, collation=S2)) == [1, 2]
    with pytest.raises(OperationFailure) as info:
        list(db.v.find({"s": "A"}, collation={"locale": "en", "strength": 1}))
    assert info.value.code == 167
    with pytest.raises(OperationFailure) as stacked:
        db.create_collection("w", viewOn="v", pipeline=[])
    assert stacked.value.code == 167
    assert "has conflicting collation with view" in str(stacked.value)
    # A view is not given its source collection's default collation.
    db.create_collection("ct", collation=S2)
    db.ct.insert_many(DOCS)
    db.create_collection("cv", viewOn="ct", pipeline=[])
    assert _ids(db.cv.find({"s": "A"})) == [2]


def test_simple_collation_costs_nothing_and_changes_nothing(db: Any) -> None:
    db.c.insert_many(DOCS)
    assert _ids(db.c.find({"s": "A"}, collation={"locale": "simple"})) == [2]
    assert [d["s"] for d in db.c.find().sort("s", 1).collation({"locale": "simple"})] == ["A", "a", "b", "á"]


def test_update_operators_compare_by_the_collation(db: Any) -> None:
    # https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/#std-label-updateOne-collation
    db.c.insert_one({"_id": 1, "a": ["x", "Y"], "m": "b"})
    db.c.update_one({}, {"$addToSet": {"a": "X"}, "$max": {"m": "B"}}, collation=S2)
    assert db.c.find_one() == {"_id": 1, "a": ["x", "Y"], "m": "b"}  # X is x; B is no greater than b
    db.c.update_one({}, {"$pull": {"a": "y"}}, collation=S2)
    db.c.update_one({}, {"$pullAll": {"a": ["X"]}}, collation=S2)
    assert db.c.find_one()["a"] == []
    db.c.update_one({}, {"$addToSet": {"a": "X"}})  # no collation: binary again
    db.c.update_one({}, {"$addToSet": {"a": "x"}})
    assert db.c.find_one()["a"] == ["X", "x"]


def test_array_expressions_and_sort_by_follow_the_collation(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "g": 1, "s": "b"}, {"_id": 2, "g": 1, "s": "A"}, {"_id": 3, "g": 1, "s": "a"}])
    (out,) = db.c.aggregate(
        [
            {"$group": {"_id": "$g", "top": {"$topN": {"n": 2, "sortBy": {"s": 1, "_id": 1}, "output": "$_id"}}}},
            {"$project": {"top": 1, "sorted": {"$sortArray": {"input": ["b", "B", "a"], "sortBy": 1}}}},
        ],
        collation={"locale": "en"},
    )
    # strength 3: a < A < b < B (lowercase first at the tertiary level).
    assert out["top"] == [3, 2]
    assert out["sorted"] == ["a", "b", "B"]


def test_lookup_matches_under_the_pipeline_collation(db: Any) -> None:
    # The aggregate's collation governs the whole pipeline, $lookup's join included.
    db.a.insert_many([{"_id": 1, "k": "X"}, {"_id": 2, "k": "y"}])
    db.b.insert_many([{"_id": 1, "k": "x"}, {"_id": 2, "k": "Y"}])
    stage = {"$lookup": {"from": "b", "localField": "k", "foreignField": "k", "as": "m"}}
    joined = db.a.aggregate([stage, {"$sort": {"_id": 1}}], collation=S2)
    assert [[m["_id"] for m in d["m"]] for d in joined] == [[1], [2]]
    assert [d["m"] for d in db.a.aggregate([stage])] == [[], []]


def test_bucket_boundaries_place_strings_by_the_collation(db: Any) -> None:
    # en orders a < B < c < D; code points put the capitals first (B, D < a).
    db.c.insert_many([{"s": "a"}, {"s": "B"}, {"s": "c"}, {"s": "D"}])
    stage = {"$bucket": {"groupBy": "$s", "boundaries": ["a", "c", "e"], "default": "other"}}
    assert list(db.c.aggregate([stage], collation={"locale": "en"})) == [
        {"_id": "a", "count": 2},
        {"_id": "c", "count": 2},
    ]
    assert [(b["_id"], b["count"]) for b in db.c.aggregate([stage])] == [("a", 1), ("c", 1), ("other", 2)]
