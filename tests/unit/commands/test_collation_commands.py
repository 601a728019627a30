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


def _icu_key(text: str, strength: int = 2) -> str:
    """``text``'s collation key as mongod prints it, computed with ICU itself
    (mongod's getSortKey, without the terminating 0x00)."""
    import icu

    collator = icu.Collator.createInstance(icu.Locale("en"))
    collator.setStrength({1: icu.Collator.PRIMARY, 2: icu.Collator.SECONDARY}[strength])
    return f"CollationKey(0x{collator.getSortKey(text)[:-1].hex()})"


def test_the_id_index_takes_the_collection_collation(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """https://www.mongodb.com/docs/manual/reference/method/db.createCollection/ (collation:
    "Indexes on that collection will be created with that collation"): the _id index is one of
    them, so listIndexes and listCollections' idIndex show it, _id is unique under it (at
    strength 2 "a" and "A" are one key, "á" another) and an _id equality of that collation
    finds "a" for "A" through the index (IDHACK)."""
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)  # it asserts on the plan
    db.create_collection("c", collation=S2)
    (id_index,) = db.c.list_indexes()
    assert id_index["name"] == "_id_" and id_index["collation"]["strength"] == 2
    (entry,) = db.list_collections(filter={"name": "c"})
    assert entry["idIndex"]["collation"] == id_index["collation"]
    db.c.insert_many([{"_id": "a"}, {"_id": "á"}, {"_id": 3}])
    with pytest.raises(DuplicateKeyError) as info:
        db.c.insert_one({"_id": "A"})
    assert f'dup key: {{ _id: "{_icu_key("A")}" }}' in str(info.value)
    with pytest.raises(OperationFailure):
        db.c.insert_many([{"_id": "x"}, {"_id": "X"}])  # the batched path too
    assert db.c.find_one({"_id": "x"}) == {"_id": "x"}
    assert db.c.find_one({"_id": "A"}) == {"_id": "a"}
    assert db.c.find({"_id": "A"}).explain()["queryPlanner"]["winningPlan"] == {"stage": "IDHACK"}
    assert db.c.delete_one({"_id": "X"}).deleted_count == 1  # a write's _id lookup too


def test_another_collation_uses_the_id_index_only_without_strings(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """https://www.mongodb.com/docs/manual/reference/collation/#collation-and-index-use: "To use
    an index for string comparisons, an operation must also specify the same collation" - a
    number is no string comparison, so a simple-collation {_id: 3} still scans the collated _id
    index, while {_id: "A"} scans the collection (and, binary, finds no "a")."""
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)  # it asserts on the plan
    db.create_collection("c", collation=S2)
    db.c.insert_many([{"_id": "a"}, {"_id": 3}, {"_id": 4}])
    simple = {"locale": "simple"}
    plan = db.c.find({"_id": 3}).collation(simple).explain()["queryPlanner"]["winningPlan"]
    assert [s["stage"] for s in _winning_stages(plan)] == ["FETCH", "IXSCAN"]
    assert plan["inputStage"]["indexBounds"] == {"_id": ["[3, 3]"]}
    assert list(db.c.find({"_id": {"$gte": 3}}).collation(simple)) == [{"_id": 3}, {"_id": 4}]
    plan = db.c.find({"_id": "A"}).collation(simple).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN"
    assert list(db.c.find({"_id": "A"}).collation(simple)) == []
    # A secondary index of another collation likewise serves numbers, never strings.
    db.d.insert_many([{"n": 1, "s": "a"}, {"n": 2, "s": "A"}])
    db.d.create_index("n", collation=S2)
    plan = db.d.find({"n": 2}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexName"] == "n_1"
    assert _ids(db.d.find({"n": 2})) == [db.d.find_one({"n": 2})["_id"]]


def test_explain_shows_collated_bounds_as_collation_keys(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """mongod prints a string bound of an index with a non-simple collation as
    ``CollationKey(0x<hex of the ICU sort key>)`` (Interval::toString); the other bounds
    (the string bracket's end, ``{}``; numbers) as usual. Expected keys come from ICU."""
    monkeypatch.delenv("FOLIODB_NO_INDEXES", raising=False)  # it asserts on the plan
    db.c.insert_many(DOCS)
    db.c.create_index("s", collation=S2)
    db.c.create_index([("s", -1)], name="down", collation=S2)

    def bounds(filter_spec: dict[str, Any], hint: str) -> list[str]:
        plan = db.c.find(filter_spec).collation(S2).hint(hint).explain()["queryPlanner"]["winningPlan"]
        return list(plan["inputStage"]["indexBounds"]["s"])

    b = _icu_key("b")
    assert bounds({"s": {"$gt": "b"}}, "s_1") == [f"({b}, {{}})"]
    assert bounds({"s": {"$gt": "b"}}, "down") == [f"({{}}, {b})"]
    # The string bracket starts at the empty string itself (mongod's minForType), not a sort key.
    assert bounds({"s": {"$lt": "b"}}, "s_1") == [f"[CollationKey(0x), {b})"]
    # "B" and "b" are one key at strength 2: one point.
    assert bounds({"s": {"$in": ["b", "B"]}}, "s_1") == [f"[{b}, {b}]"]
    assert bounds({"s": {"$in": ["b", 5]}}, "s_1") == ["[5, 5]", f"[{b}, {b}]"]


def test_validator_matches_under_the_collection_collation(db: Any) -> None:
    """The validator takes the collection's default collation (mongod parses it with the
    collection's collator; https://www.mongodb.com/docs/manual/reference/collation/: operations
    on the collection use its default collation), never the write's own; $jsonSchema's enum
    compares binary (mongod's InternalSchemaEqMatchExpression has no collator)."""
    db.create_collection("c", collation=S2, validator={"s": {"$in": ["a", "b"]}})
    db.c.insert_one({"s": "A"})
    with pytest.raises(OperationFailure) as info:
        db.c.insert_one({"s": "c"})
    assert info.value.code == 121
    db.create_collection("d", validator={"s": "a"})
    with pytest.raises(OperationFailure):
        db.d.update_one({"_id": 1}, {"$set": {"s": "A"}}, upsert=True, collation=S2)
    db.create_collection("e", collation=S2, validator={"$jsonSchema": {"properties": {"s": {"enum": ["a"]}}}})
    db.e.insert_one({"s": "a"})
    with pytest.raises(OperationFailure):
        db.e.insert_one({"s": "A"})


def test_densify_partitions_under_the_collation(db: Any) -> None:
    """https://www.mongodb.com/docs/manual/reference/operator/aggregation/densify/: mongod keeps
    the partitions in a table of its expression context's comparator, so under strength 2 the
    partitions "a" and "A" are one: 0 and 2 in it need the 1 between them."""
    db.c.insert_many([{"p": "a", "v": 0}, {"p": "A", "v": 2}])
    stage = {"$densify": {"field": "v", "partitionByFields": ["p"], "range": {"step": 1, "bounds": "partition"}}}
    folded = list(db.c.aggregate([stage, {"$project": {"_id": 0}}], collation=S2))
    assert [(d["p"].lower(), d["v"]) for d in folded] == [("a", 0), ("a", 1), ("a", 2)]
    assert len(list(db.c.aggregate([stage]))) == 2  # binary: two partitions of one value each
    db.create_collection("d", collation=S2)  # the collection's default collation, likewise
    db.d.insert_many([{"p": "a", "v": 0}, {"p": "A", "v": 2}])
    assert len(list(db.d.aggregate([stage]))) == 3
