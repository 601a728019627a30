"""Indexes: kinds, options, builds, the planner's choices and explain.

Manual: https://www.mongodb.com/docs/manual/indexes/ and the pages cited per test.
"""

from __future__ import annotations

import datetime
import random
import time
from typing import Any

import pytest
from bson import ObjectId
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError

import foliodb


def winning(cursor: Any) -> dict[str, Any]:
    return cursor.explain()["queryPlanner"]["winningPlan"]


def stages(plan: dict[str, Any]) -> list[str]:
    out = []
    while plan:
        out.append(plan["stage"])
        plan = plan.get("inputStage")  # type: ignore[assignment]
    return out


@pytest.fixture
def orders(db: Any) -> Any:
    rng = random.Random(7)
    users = [ObjectId(f"{n:024x}") for n in range(40)]
    start = datetime.datetime(2026, 1, 1)
    db.orders.insert_many(
        [
            {
                "user_id": rng.choice(users),
                "created_at": start + datetime.timedelta(minutes=i),
                "status": rng.choice(["pending", "processing", "shipped", "delivered"]),
                "total": rng.randrange(100, 10_000),
            }
            for i in range(3000)
        ]
    )
    return db.orders


# https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/
def test_latest_orders_of_a_user_use_the_compound_index(orders: Any) -> None:
    user = ObjectId(f"{3:024x}")
    query = orders.find({"user_id": user}).sort("created_at", -1).limit(20)
    plan = winning(query)
    assert stages(plan)[-1] == "COLLSCAN" and "SORT" in stages(plan)
    orders.create_index([("user_id", 1), ("created_at", -1)])
    explain = orders.find({"user_id": user}).sort("created_at", -1).limit(20).explain()
    plan = explain["queryPlanner"]["winningPlan"]
    assert "SORT" not in stages(plan) and stages(plan)[-1] == "IXSCAN"
    stats = explain["executionStats"]
    assert stats["nReturned"] == 20
    assert stats["totalKeysExamined"] == stats["nReturned"] == stats["totalDocsExamined"]
    expected = sorted(
        (d for d in orders.find({"user_id": user}, hint={"$natural": 1})), key=lambda d: d["created_at"], reverse=True
    )[:20]
    assert [d["_id"] for d in orders.find({"user_id": user}).sort("created_at", -1).limit(20)] == [
        d["_id"] for d in expected
    ]


# https://www.mongodb.com/docs/manual/core/index-partial/
def test_partial_index_only_when_the_query_implies_its_filter(orders: Any) -> None:
    orders.create_index(
        [("user_id", 1), ("created_at", -1)],
        name="open_orders",
        partialFilterExpression={"status": {"$in": ["pending", "processing"]}},
    )
    user = ObjectId(f"{5:024x}")
    plan = winning(orders.find({"user_id": user, "status": "pending"}))
    assert plan["inputStage"]["indexName"] == "open_orders"
    plan = winning(orders.find({"user_id": user, "status": "shipped"}))
    assert stages(plan) == ["COLLSCAN"]
    assert sorted(d["_id"] for d in orders.find({"user_id": user, "status": "pending"})) == sorted(
        d["_id"] for d in orders.find({"user_id": user, "status": "pending"}, hint={"$natural": 1})
    )


# https://www.mongodb.com/docs/manual/core/index-unique/
def test_unique_slug_rejects_a_duplicate(db: Any) -> None:
    db.products.create_index("slug", unique=True)
    db.products.insert_one({"slug": "wheelbarrow-9092"})
    with pytest.raises(DuplicateKeyError) as info:
        db.products.insert_one({"slug": "wheelbarrow-9092"})
    assert info.value.code == 11000
    assert info.value.details["keyPattern"] == {"slug": 1}
    assert info.value.details["keyValue"] == {"slug": "wheelbarrow-9092"}
    assert 'dup key: { slug: "wheelbarrow-9092" }' in str(info.value)


def test_unique_build_over_duplicates_fails_and_leaves_nothing(db: Any) -> None:
    db.c.insert_many([{"a": 1}, {"a": 1}])
    with pytest.raises(DuplicateKeyError):
        db.c.create_index("a", unique=True)
    assert list(db.c.index_information()) == ["_id_"]
    assert db.validate_collection("c")["valid"]


# https://www.mongodb.com/docs/manual/core/index-unique/#unique-index-and-missing-field
def test_unique_index_allows_one_missing_field(db: Any) -> None:
    db.c.create_index("a", unique=True)
    db.c.insert_one({"b": 1})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"b": 2})


def test_unique_sparse_allows_many_missing(db: Any) -> None:
    db.c.create_index("a", unique=True, sparse=True)
    db.c.insert_many([{"b": 1}, {"b": 2}])
    assert db.c.count_documents({}) == 2


def test_update_into_a_duplicate_changes_nothing(db: Any) -> None:
    db.c.create_index("a", unique=True)
    db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"_id": 2}, {"$set": {"a": 1, "b": 5}})
    assert db.c.find_one({"_id": 2}) == {"_id": 2, "a": 2}
    assert db.validate_collection("c")["valid"]


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
def test_multikey_index_finds_elements(db: Any) -> None:
    db.p.create_index("tags")
    db.p.insert_many([{"_id": 1, "tags": ["a", "b"]}, {"_id": 2, "tags": ["b", "c"]}, {"_id": 3, "tags": "a"}])
    assert sorted(d["_id"] for d in db.p.find({"tags": "a"})) == [1, 3]
    plan = winning(db.p.find({"tags": "b"}))
    assert plan["inputStage"]["isMultiKey"] is True
    # Two conditions on a multikey field may hold for different elements.
    db.p.insert_one({"_id": 4, "tags": [0, 9]})
    assert [d["_id"] for d in db.p.find({"tags": {"$gt": 1, "$lt": 5}})] == [4]


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/#compound-multikey-indexes
def test_parallel_arrays_cannot_be_indexed(db: Any) -> None:
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.insert_one({"a": [1, 2], "b": 1})
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"a": [1, 2], "b": [3, 4]})
    assert info.value.code == 171
    assert db.c.count_documents({}) == 1


# https://www.mongodb.com/docs/manual/core/index-sparse/
def test_sparse_index_not_used_where_it_would_change_results(db: Any) -> None:
    db.iot.create_index("location", sparse=True)
    db.iot.insert_many([{"_id": 1, "location": [1, 2]}, {"_id": 2, "speed": 3}, {"_id": 3, "location": None}])
    assert stages(winning(db.iot.find({"location": None}))) == ["COLLSCAN"]
    assert sorted(d["_id"] for d in db.iot.find({"location": None})) == [2, 3]
    assert stages(winning(db.iot.find({"location": 1})))[-1] == "IXSCAN"


# https://www.mongodb.com/docs/manual/core/index-hidden/
def test_hidden_index_is_not_used_and_cannot_be_hinted(db: Any) -> None:
    db.c.insert_many([{"a": i} for i in range(10)])
    db.c.create_index("a", hidden=True)
    assert stages(winning(db.c.find({"a": 3}))) == ["COLLSCAN"]
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"a": 3}).hint("a_1"))
    assert info.value.code == 2
    db.command("collMod", "c", index={"name": "a_1", "hidden": False})
    assert stages(winning(db.c.find({"a": 3})))[-1] == "IXSCAN"


# https://www.mongodb.com/docs/manual/reference/method/cursor.hint/
def test_hint_by_name_and_key_pattern(db: Any) -> None:
    db.c.insert_many([{"a": i, "b": -i} for i in range(20)])
    db.c.create_index("a")
    db.c.create_index("b")
    assert winning(db.c.find({"a": 3, "b": -3}).hint("b_1"))["inputStage"]["indexName"] == "b_1"
    assert winning(db.c.find({"a": 3, "b": -3}).hint([("a", 1)]))["inputStage"]["indexName"] == "a_1"
    assert stages(winning(db.c.find({"a": 3}).hint({"$natural": -1}))) == ["COLLSCAN"]
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({}).hint("nope"))
    assert info.value.code == 2 and "hint provided does not correspond to an existing index" in str(info.value)


def test_multi_planner_rejects_the_weaker_plan(db: Any) -> None:
    db.c.insert_many([{"a": i % 2, "b": i} for i in range(500)])
    db.c.create_index("a")
    db.c.create_index("b")
    explain = db.c.find({"a": 1, "b": 7}).explain()
    assert explain["queryPlanner"]["winningPlan"]["inputStage"]["indexName"] == "b_1"
    assert [p["inputStage"]["indexName"] for p in explain["queryPlanner"]["rejectedPlans"]] == ["a_1"]
    assert len(explain["executionStats"]["allPlansExecution"]) == 2


# https://www.mongodb.com/docs/manual/reference/explain-results/
def test_explain_shapes(db: Any) -> None:
    db.c.insert_many([{"a": i, "b": i % 3} for i in range(50)])
    db.c.create_index("a")
    plan = winning(db.c.find({"a": {"$gte": 10}}, {"b": 1}).sort("b", 1).skip(2).limit(5))
    assert stages(plan) == ["PROJECTION_SIMPLE", "SKIP", "SORT", "FETCH", "IXSCAN"]
    assert plan["inputStage"]["inputStage"]["limitAmount"] == 7
    ixscan = plan["inputStage"]["inputStage"]["inputStage"]["inputStage"]
    assert ixscan["indexBounds"] == {"a": ["[10, inf.0]"]}
    plan = winning(db.c.find({"a": {"$lt": 5}}).sort("a", -1))
    assert stages(plan) == ["FETCH", "IXSCAN"] and plan["inputStage"]["direction"] == "backward"
    explain = db.command("explain", {"find": "c", "filter": {"b": 1}}, verbosity="queryPlanner")
    assert "executionStats" not in explain
    assert explain["queryPlanner"]["winningPlan"] == {"stage": "COLLSCAN", "filter": {"b": 1}, "direction": "forward"}
    explain = db.command("explain", {"find": "c", "filter": {"b": 1}}, verbosity="executionStats")
    assert explain["executionStats"]["nReturned"] == 17
    assert explain["executionStats"]["totalDocsExamined"] == 50
    assert explain["executionStats"]["totalKeysExamined"] == 0


def test_index_bounds_of_operators(db: Any) -> None:
    db.c.create_index("a")
    cases = {
        "{'a': 5}": ({"a": 5}, ["[5, 5]"]),
        "$in": ({"a": {"$in": [3, 1]}}, ["[1, 1]", "[3, 3]"]),
        "range": ({"a": {"$gt": 1, "$lte": 4}}, ["(1, 4]"]),
        "$lt": ({"a": {"$lt": 0}}, ["[-inf.0, 0)"]),
        # A stored regex matches only the same regex (mongod: [/^ab/, /^ab/]).
        "string prefix": ({"a": {"$regex": "^ab"}}, ['["ab", "ac")', "[/^ab/, /^ab/]"]),
        "null": ({"a": None}, ["[null, null]"]),
    }
    for name, (query, bounds) in cases.items():
        plan = winning(db.c.find(query))
        assert plan["inputStage"]["indexBounds"]["a"][: len(bounds)] == bounds, name


# https://www.mongodb.com/docs/manual/core/index-ttl/
def test_ttl_monitor_removes_expired_carts(tmp_path: Any) -> None:
    with foliodb.MongoClient(str(tmp_path / "ttl"), ttlMonitorSleepSecs=1) as client:
        carts = client.shop.carts
        carts.create_index("last_modified", expireAfterSeconds=2)
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        carts.insert_many(
            [
                {"_id": "old", "last_modified": now - datetime.timedelta(hours=1)},
                {
                    "_id": "older-in-array",
                    "last_modified": [now + datetime.timedelta(days=1), now - datetime.timedelta(days=1)],
                },
                {"_id": "fresh", "last_modified": now + datetime.timedelta(hours=1)},
                {"_id": "no-date", "last_modified": "yesterday"},
                {"_id": "missing"},
            ]
        )
        deadline = time.time() + 10
        while time.time() < deadline and carts.count_documents({}) > 3:
            time.sleep(0.2)
        assert sorted(d["_id"] for d in carts.find()) == ["fresh", "missing", "no-date"]
        assert client.admin.command("getParameter", 1, ttlMonitorSleepSecs=1)["ttlMonitorSleepSecs"] == 1


def test_ttl_interval_is_a_parameter(client: Any) -> None:
    assert client.admin.command("getParameter", 1, ttlMonitorSleepSecs=1)["ttlMonitorSleepSecs"] == 60
    client.admin.command("setParameter", 1, ttlMonitorSleepSecs=5)
    assert client.admin.command("getParameter", 1, ttlMonitorSleepSecs=1)["ttlMonitorSleepSecs"] == 5


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-text/
def test_text_search_ranks_posts(db: Any) -> None:
    db.posts.insert_many(
        [
            {"_id": 1, "title": "MongoDB schema design", "body": "Embedding versus referencing in MongoDB"},
            {"_id": 2, "title": "Cooking", "body": "Pasta recipes for the schema-less"},
            {"_id": 3, "title": "Designing schemas", "body": "The bucket pattern"},
            {"_id": 4, "title": "Gardening", "body": "Tomatoes"},
        ]
    )
    db.posts.create_index([("title", "text"), ("body", "text")])
    cursor = db.posts.find({"$text": {"$search": "mongodb schema"}}, {"score": {"$meta": "textScore"}}).sort(
        [("score", {"$meta": "textScore"})]
    )
    results = list(cursor)
    assert [d["_id"] for d in results] == [1, 3, 2]
    assert results[0]["score"] > results[1]["score"] > 0
    assert [d["_id"] for d in db.posts.find({"$text": {"$search": '"bucket pattern"'}})] == [3]
    assert sorted(d["_id"] for d in db.posts.find({"$text": {"$search": "schema -mongodb"}})) == [2, 3]
    assert stages(winning(db.posts.find({"$text": {"$search": "pasta"}})))[0] == "TEXT_MATCH"
    info = db.posts.index_information()["title_text_body_text"]
    assert info["key"] == [("_fts", "text"), ("_ftsx", 1)] and info["weights"] == {"title": 1, "body": 1}


def test_text_errors(db: Any) -> None:
    db.c.insert_one({"a": "x"})
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"$text": {"$search": "x"}}))
    assert info.value.code == 27
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({}, {"s": {"$meta": "textScore"}}))
    assert info.value.code == 40218
    db.c.create_index([("a", "text")])
    with pytest.raises(OperationFailure) as info:
        db.c.create_index([("b", "text")])
    assert info.value.code == 85


def test_text_weights_change_the_ranking(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "title": "bread", "body": "x"}, {"_id": 2, "title": "x", "body": "bread"}])
    db.c.create_index([("title", "text"), ("body", "text")], weights={"body": 10})
    ranked = db.c.find({"$text": {"$search": "bread"}}, {"s": {"$meta": "textScore"}}).sort(
        [("s", {"$meta": "textScore"})]
    )
    assert [d["_id"] for d in ranked] == [2, 1]


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-hashed/
def test_hashed_index_answers_equality(db: Any) -> None:
    db.c.insert_many([{"h": i % 5} for i in range(50)])
    db.c.create_index([("h", "hashed")])
    plan = winning(db.c.find({"h": 3}))
    assert plan["inputStage"]["indexName"] == "h_hashed"
    assert db.c.count_documents({"h": 3}) == 10
    assert stages(winning(db.c.find({"h": {"$gt": 3}}))) == ["COLLSCAN"]
    with pytest.raises(WriteError) as info:
        db.c.insert_one({"h": [1]})
    assert info.value.code == 16766


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-wildcard/
def test_wildcard_index_serves_any_path(db: Any) -> None:
    db.iot.insert_many([{"engine": {"temp": i}} if i % 2 else {"speed": i} for i in range(40)])
    db.iot.create_index([("$**", 1)])
    plan = winning(db.iot.find({"engine.temp": {"$gt": 30}}))
    assert plan["inputStage"]["indexBounds"]["$_path"] == ['["engine.temp", "engine.temp"]']
    assert sorted(d["engine"]["temp"] for d in db.iot.find({"engine.temp": {"$gt": 30}})) == [31, 33, 35, 37, 39]
    assert stages(winning(db.iot.find({"speed": None}))) == ["COLLSCAN"]


def test_index_information_and_drop(db: Any) -> None:
    db.c.create_index([("a", 1), ("b", -1)], name="ab", unique=True)
    info = db.c.index_information()
    assert info["ab"] == {"v": 2, "key": [("a", 1), ("b", -1)], "unique": True}
    db.c.drop_index("ab")
    assert list(db.c.index_information()) == ["_id_"]
    with pytest.raises(OperationFailure) as exc:
        db.c.drop_index("ab")
    assert exc.value.code == 27
    with pytest.raises(OperationFailure) as exc:
        db.c.drop_index("_id_")
    assert exc.value.code == 72


def test_conflicting_index_specs(db: Any) -> None:
    db.c.create_index("a", name="x")
    db.c.create_index("a", name="x")  # identical: no-op
    with pytest.raises(OperationFailure) as info:
        db.c.create_index("b", name="x")
    assert info.value.code == 86
    with pytest.raises(OperationFailure) as info:
        db.c.create_index("a", name="y")
    assert info.value.code == 85


def test_validate_detects_a_damaged_index(db: Any) -> None:
    db.c.create_index("a")
    db.c.insert_many([{"a": i} for i in range(5)])
    assert db.validate_collection("c")["valid"]
    engine = db.client._executor.engine
    with engine.reading():
        table = engine.catalog.get("test", "c").indexes["a_1"].table
    # Damage the file behind the engine's back, as a faulty disk or a bug would.
    engine.storage.writer.execute(f"DELETE FROM {table} WHERE key = (SELECT min(key) FROM {table})")
    result = db.command("validate", "c")
    assert result["valid"] is False and result["keysPerIndex"]["a_1"] == 4


# https://www.mongodb.com/docs/manual/reference/operator/query/text/
def test_text_filters_in_writes(db: Any) -> None:
    db.posts.insert_many(
        [{"_id": 1, "t": "MongoDB schema design"}, {"_id": 2, "t": "schema"}, {"_id": 3, "t": "cooking"}]
    )
    db.posts.create_index([("t", "text")])
    assert db.posts.update_many({"$text": {"$search": "schema"}}, {"$set": {"tag": "s"}}).modified_count == 2
    assert db.posts.find_one_and_delete({"$text": {"$search": "cooking"}})["_id"] == 3
    assert db.posts.delete_many({"$and": [{"$text": {"$search": "mongodb"}}, {"_id": 1}]}).deleted_count == 1
    assert [d["_id"] for d in db.posts.find()] == [2]


@pytest.mark.parametrize(
    ("cursor", "examined"),
    [
        (lambda c: c.find({"title": "post 3"}), 50),  # a full scan examines every document
        (lambda c: c.find({"title": "post 3"}).limit(1), 4),  # stopped at the 4th document
        (lambda c: c.find({"title": "post 3"}).sort("$natural", -1).limit(1), 47),  # backward from the last
    ],
)
def test_collscan_docs_examined_counts_the_documents_passed_over(client: Any, cursor: Any, examined: int) -> None:
    # executionStats.totalDocsExamined counts every document the COLLSCAN read, matching or not;
    # FolioDB's SQL-side prefilter skips non-matching ones before decoding, and still counts them.
    coll = client.test.posts
    coll.insert_many([{"_id": i, "title": f"post {i}"} for i in range(50)])
    stats = cursor(coll).explain()["executionStats"]
    assert (stats["totalDocsExamined"], stats["nReturned"]) == (examined, 1)


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/ : an array's elements are its
# keys, a nested array element included, so equality to [[]] must scan the key [] too.
def test_equality_to_an_array_whose_first_element_is_an_array(db: Any) -> None:
    db.c.insert_many([{"_id": 0, "a": [[]]}, {"_id": 1, "a": [[1], 2]}, {"_id": 2, "a": [1]}])
    db.c.create_index("a")
    assert [d["_id"] for d in db.c.find({"a": [[]]})] == [0]
    assert [d["_id"] for d in db.c.find({"a": [[1], 2]})] == [1]
    assert [d["_id"] for d in db.c.find({"a": [1]}).sort("_id", 1)] == [1, 2]


# https://www.mongodb.com/docs/manual/core/indexes/index-types/index-wildcard/ : a wildcard key holds a
# path without array positions ({a: [{b: 1}]} is keyed under "a.b"), so a query whose path has a
# numeric component ("a.0.b": an array position or a field named "0") must not be answered from keys
# of that path alone.
def test_wildcard_index_and_paths_with_array_positions(db: Any) -> None:
    db.c.create_index([("$**", 1)])
    db.c.insert_many([{"_id": 0, "a": [[]]}, {"_id": 1, "a": [{"b": 1}]}, {"_id": 2, "a": {"0": {"b": 1}}}])
    assert [d["_id"] for d in db.c.find({"a.0": []})] == [0]
    assert [d["_id"] for d in db.c.find({"a.0.b": 1}).sort("_id", 1)] == [1, 2]
    assert [d["_id"] for d in db.c.find({"c": None, "a.0": []})] == [0]


# A wildcard index keys a path's leaves, never an object or an array as a whole ({x: {b: 2}} is
# keyed under "x.b"), so it cannot bound a comparison to an object or array on "x" (mongod's
# nodeIsSupportedByWildcardIndex): such queries must still find their documents.
def test_wildcard_index_and_comparisons_to_objects_and_arrays(db: Any) -> None:
    db.c.create_index([("$**", 1)])
    db.c.insert_many([{"_id": 0, "x": {"b": 2}}, {"_id": 1, "x": [1, 2]}, {"_id": 2, "x": 5}, {"_id": 3, "x": {}}])
    queries = {
        "gt_object": ({"x": {"$gt": {"b": 1}}}, [0]),
        "equal_object": ({"x": {"b": 2}}, [0]),
        "eq_object": ({"x": {"$eq": {"b": 2}}}, [0]),
        "in_object_or_number": ({"x": {"$in": [{"b": 2}, 5]}}, [0, 2]),
        "equal_array": ({"x": [1, 2]}, [1]),
        "lte_array": ({"x": {"$lte": [1, 3]}}, [1]),
        "equal_empty_object": ({"x": {}}, [3]),
        # a leaf comparison beside an object one is still bounded by the leaf: only _id 2 passes both
        "gt_object_and_number": ({"$and": [{"x": {"$gte": 5}}, {"x": {"$ne": {"b": 2}}}]}, [2]),
    }
    for name, (query, ids) in queries.items():
        assert sorted(d["_id"] for d in db.c.find(query)) == ids, name
        assert db.c.count_documents(query) == len(ids), name


@pytest.mark.parametrize(("skip", "limit", "batch_size"), [(0, 0, 0), (5, 20, 0), (0, 0, 7), (3, 600, 50), (0, 1, 0)])
def test_an_index_scan_reads_every_match_whatever_its_first_batch(
    db: Any, skip: int, limit: int, batch_size: int
) -> None:
    # A find's index scan reads its limit (or 16 rows) first, then batches of 4x up to 512: the
    # matches must cross each of those sizes whole and in key order (the sort the index gives),
    # past the other key's entries.
    db.c.insert_many([{"_id": i, "a": i % 2, "b": -i} for i in range(1400)])
    db.c.create_index([("a", 1), ("b", 1)])
    expected = sorted(range(1, 1400, 2), key=lambda i: -i)[skip : skip + limit if limit else None]
    found = db.c.find({"a": 1}, sort=[("b", 1)], skip=skip, limit=limit, batch_size=batch_size)
    assert [d["_id"] for d in found] == expected
