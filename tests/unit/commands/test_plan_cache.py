"""The plan cache and index filters: ``$planCacheStats``, ``planCacheClear``,
``planCacheSetFilter``, ``planCacheListFilters``, ``planCacheClearFilters``.

Expected behaviour from the manual: https://www.mongodb.com/docs/manual/core/query-plans/
(only plans that had rivals are cached; an index filter overrides a hint; index
changes clear the cache), https://www.mongodb.com/docs/manual/reference/operator/aggregation/planCacheStats/
and the commands' pages; the BadValue messages are mongod's plan_cache_commands.cpp and
index_filter_commands.cpp.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson import Int64
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

import foliodb

Collection = Any


@pytest.fixture
def client() -> Iterator[Any]:
    with foliodb.MongoClient(":memory:") as c:
        yield c


@pytest.fixture
def coll(client: Any) -> Collection:
    """Three indexes that all serve {a, b}: a query on both has rivals."""
    c = client.db.c
    c.insert_many([{"_id": i, "a": i % 10, "b": i % 7, "c": i % 3} for i in range(700)])
    c.create_index("a")
    c.create_index("b")
    c.create_index([("a", 1), ("b", 1)])
    return c


def entries(coll: Collection) -> list[dict[str, Any]]:
    return list(coll.aggregate([{"$planCacheStats": {}}]))


def winning_index(explain: dict[str, Any]) -> str | None:
    node = explain["queryPlanner"]["winningPlan"]
    while "inputStage" in node:
        node = node["inputStage"]
    return node.get("indexName")


def code_of(call: Any) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as caught:
        call()
    return caught.value.code, str(caught.value.details.get("errmsg") if caught.value.details else "")


# -- the cache -------------------------------------------------------------------------------------


def test_only_a_plan_that_had_rivals_is_cached(coll: Collection) -> None:
    coll.find_one({"_id": 5})  # IDHACK: no planning
    list(coll.find({"c": 1}))  # no index: a collection scan
    list(coll.find({"b": 1, "c": 1}, hint="b_1"))  # hinted
    assert entries(coll) == []
    list(coll.find({"a": 1, "b": 1}))
    (entry,) = entries(coll)
    assert entry["createdFromQuery"] == {"query": {"a": 1, "b": 1}, "sort": {}, "projection": {}}
    assert entry["version"] == "1" and entry["isActive"] is True and entry["indexFilterSet"] is False
    assert isinstance(entry["works"], Int64) and isinstance(entry["estimatedSizeBytes"], Int64)
    assert len(entry["creationExecStats"]) == len(entry["candidatePlanScores"]) == 3  # a_1, b_1, a_1_b_1
    assert entry["candidatePlanScores"] == sorted(entry["candidatePlanScores"], reverse=True)  # the winner first
    explain = coll.find({"a": 1, "b": 1}).explain()
    assert entry["cachedPlan"]["inputStage"]["indexName"] == winning_index(explain)
    assert (entry["queryHash"], entry["planCacheKey"]) == (
        explain["queryPlanner"]["queryHash"],
        explain["queryPlanner"]["planCacheKey"],
    )


def test_queries_of_one_shape_share_an_entry(coll: Collection) -> None:
    list(coll.find({"a": 1, "b": 1}))
    list(coll.find({"a": 4, "b": 2}))  # other values, the same shape
    assert len(entries(coll)) == 1
    list(coll.find({"a": 1, "b": 1}).sort("a", 1))  # a sort is another shape
    list(coll.find({"a": 1, "b": 1}, {"a": 1}))  # so is a projection
    list(coll.find({"a": {"$gt": 1}, "b": 1}))  # and another operator
    shapes = {e["queryHash"] for e in entries(coll)}
    assert len(shapes) == 4
    plain = coll.find({"a": 9, "b": 9}).explain()["queryPlanner"]["queryHash"]
    sorted_ = coll.find({"a": 9, "b": 9}).sort("a", 1).explain()["queryPlanner"]["queryHash"]
    assert plain != sorted_ and {plain, sorted_} <= shapes


def test_an_index_change_empties_the_cache_and_changes_the_key(coll: Collection) -> None:
    list(coll.find({"a": 1, "b": 1}))
    before = coll.find({"a": 1, "b": 1}).explain()["queryPlanner"]
    coll.create_index("c")
    assert entries(coll) == []
    after = coll.find({"a": 1, "b": 1}).explain()["queryPlanner"]
    assert after["queryHash"] == before["queryHash"] and after["planCacheKey"] != before["planCacheKey"]


def test_plan_cache_clear_one_shape_or_all(client: Any, coll: Collection) -> None:
    list(coll.find({"a": 1, "b": 1}))
    list(coll.find({"a": 1, "b": 1}).sort("b", 1))
    client.db.command("planCacheClear", "c", query={"a": 3, "b": 4}, sort={"b": 1})
    assert [e["createdFromQuery"]["sort"] for e in entries(coll)] == [{}]
    client.db.command("planCacheClear", "c", query={"a": 3})  # no entry of that shape: nothing happens
    assert len(entries(coll)) == 1
    client.db.command("planCacheClear", "c")
    assert entries(coll) == []
    assert client.db.command("planCacheClear", "missing")["ok"] == 1.0  # trivially cleared


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"sort": {"a": 1}}, "sort, projection, or collation provided without query"),
        ({"projection": {"a": 1}}, "sort, projection, or collation provided without query"),
        ({"query": 1}, "required field query must be an object"),
        ({"query": {}, "sort": 1}, "optional field sort must be an object"),
        ({"query": {}, "projection": "a"}, "optional field projection must be an object"),
    ],
)
def test_plan_cache_clear_refuses_a_shape_without_its_query(
    client: Any, coll: Collection, fields: dict[str, Any], message: str
) -> None:
    list(coll.find({"a": 1, "b": 1}))
    assert code_of(lambda: client.db.command("planCacheClear", "c", **fields)) == (2, message)
    assert len(entries(coll)) == 1  # nothing cleared


def test_plan_cache_stats_is_a_first_stage_of_a_collection(client: Any, coll: Collection) -> None:
    assert code_of(lambda: list(coll.aggregate([{"$match": {}}, {"$planCacheStats": {}}])))[0] == 40602
    assert code_of(lambda: list(coll.aggregate([{"$facet": {"x": [{"$planCacheStats": {}}]}}])))[0] == 40600
    assert code_of(lambda: list(coll.aggregate([{"$planCacheStats": 1}])))[0] == 9
    assert code_of(lambda: list(coll.aggregate([{"$planCacheStats": {"x": 1}}])))[0] == 40415
    assert code_of(lambda: list(coll.aggregate([{"$planCacheStats": {"allHosts": True}}])))[0] == 9
    assert code_of(lambda: list(client.db.aggregate([{"$planCacheStats": {}}])))[0] == 73  # no collection
    assert list(client.db.missing.aggregate([{"$planCacheStats": {}}])) == []
    list(coll.find({"a": 1, "b": 1}))
    assert [
        e["version"] for e in coll.aggregate([{"$planCacheStats": {"allHosts": False}}, {"$project": {"version": 1}}])
    ] == ["1"]


# -- index filters ---------------------------------------------------------------------------------


def test_an_index_filter_restricts_the_planner_and_overrides_a_hint(client: Any, coll: Collection) -> None:
    client.db.command("planCacheSetFilter", "c", query={"a": 0, "b": 0}, indexes=[{"b": 1}])
    for query in ({"a": 1, "b": 1}, {"a": 5, "b": 3}):
        explain = coll.find(query).explain()
        assert explain["queryPlanner"]["indexFilterSet"] is True and winning_index(explain) == "b_1"
        assert winning_index(coll.find(query).hint("a_1").explain()) == "b_1"  # the hint is ignored
        assert sorted(d["_id"] for d in coll.find(query)) == [
            i for i in range(700) if (i % 10, i % 7) == (query["a"], query["b"])
        ]
    other = coll.find({"a": 1}).explain()  # another shape: not filtered
    assert other["queryPlanner"]["indexFilterSet"] is False


def test_an_index_filter_by_name_and_one_that_serves_nothing(client: Any, coll: Collection) -> None:
    client.db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, indexes=["a_1_b_1"])
    assert winning_index(coll.find({"a": 2, "b": 2}).explain()) == "a_1_b_1"
    client.db.command("planCacheSetFilter", "c", query={"a": 1}, indexes=[{"b": 1}, "nonexistent"])
    explain = coll.find({"a": 2}).explain()
    assert explain["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert explain["queryPlanner"]["indexFilterSet"] is True
    assert len(list(coll.find({"a": 2}))) == 70


def test_list_filters_shows_each_as_set(client: Any, coll: Collection) -> None:
    assert client.db.command("planCacheListFilters", "c")["filters"] == []
    client.db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, sort={"a": -1}, indexes=[{"a": 1}, "b_1"])
    client.db.command(
        "planCacheSetFilter", "c", query={"a": "x"}, collation={"locale": "fr"}, projection={"a": 1}, indexes=["a_1"]
    )
    listed = client.db.command("planCacheListFilters", "c")["filters"]
    assert sorted(listed, key=repr) == sorted(  # mongod lists filters in no set order
        [
            {"query": {"a": 1, "b": 1}, "sort": {"a": -1}, "projection": {}, "indexes": [{"a": 1}, "b_1"]},
            {
                "query": {"a": "x"},
                "sort": {},
                "projection": {"a": 1},
                "collation": {"locale": "fr"},
                "indexes": ["a_1"],
            },
        ],
        key=repr,
    )
    # The same shape again replaces its filter.
    client.db.command("planCacheSetFilter", "c", query={"a": 7, "b": 7}, sort={"a": -1}, indexes=[{"b": 1}])
    filters = client.db.command("planCacheListFilters", "c")["filters"]
    assert sorted(repr(f["indexes"]) for f in filters) == sorted([repr([{"b": 1}]), repr(["a_1"])])
    assert client.db.command("planCacheListFilters", "missing")["filters"] == []


def test_setting_and_clearing_filters_drops_the_plans_they_concern(client: Any, coll: Collection) -> None:
    list(coll.find({"a": 1, "b": 1}))
    list(coll.find({"a": 1, "b": 1}).sort("a", 1))
    client.db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, indexes=[{"a": 1}, {"b": 1}])
    assert [e["createdFromQuery"]["sort"] for e in entries(coll)] == [{"a": 1}]
    list(coll.find({"a": 1, "b": 1}))  # a trial among the two allowed
    filtered = [e for e in entries(coll) if e["createdFromQuery"]["sort"] == {}]
    assert [e["indexFilterSet"] for e in filtered] == [True] and len(filtered[0]["candidatePlanScores"]) == 2
    client.db.command("planCacheClearFilters", "c", query={"a": 2, "b": 2})
    assert client.db.command("planCacheListFilters", "c")["filters"] == []
    assert [e["createdFromQuery"]["sort"] for e in entries(coll)] == [{"a": 1}]
    assert coll.find({"a": 1, "b": 1}).explain()["queryPlanner"]["indexFilterSet"] is False


def test_clear_filters_without_a_query_clears_them_all(client: Any, coll: Collection) -> None:
    client.db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, indexes=[{"a": 1}])
    client.db.command("planCacheSetFilter", "c", query={"b": 1}, indexes=[{"b": 1}])
    code = code_of(lambda: client.db.command("planCacheClearFilters", "c", sort={"a": 1}))
    assert code == (2, "sort, projection, or collation provided without query")
    client.db.command("planCacheClearFilters", "c")
    assert client.db.command("planCacheListFilters", "c")["filters"] == []
    assert client.db.command("planCacheClearFilters", "missing")["ok"] == 1.0


def test_filters_outlast_index_changes_and_go_with_the_collection(client: Any, coll: Collection) -> None:
    client.db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, indexes=[{"b": 1}])
    coll.create_index("c")
    coll.drop_index("a_1")
    assert len(client.db.command("planCacheListFilters", "c")["filters"]) == 1
    assert winning_index(coll.find({"a": 1, "b": 1}).explain()) == "b_1"
    coll.drop()
    coll.insert_one({"a": 1, "b": 1})
    assert client.db.command("planCacheListFilters", "c")["filters"] == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"query": {"a": 1}}, "required field indexes missing"),
        ({"query": {"a": 1}, "indexes": {"a": 1}}, "required field indexes must be an array"),
        ({"query": {"a": 1}, "indexes": []}, "required field indexes must contain at least one index"),
        ({"query": {"a": 1}, "indexes": [1]}, "each item in indexes must be an object or string"),
        ({"query": {"a": 1}, "indexes": [{}]}, "index specification cannot be empty"),
        ({"indexes": [{"a": 1}]}, "required field query missing"),
        ({"query": [], "indexes": [{"a": 1}]}, "required field query must be an object"),
        ({"query": {}, "collation": "fr", "indexes": [{"a": 1}]}, "optional field collation must be an object"),
    ],
)
def test_set_filter_errors(client: Any, coll: Collection, fields: dict[str, Any], message: str) -> None:
    assert code_of(lambda: client.db.command("planCacheSetFilter", "c", **fields)) == (2, message)
    assert client.db.command("planCacheListFilters", "c")["filters"] == []


def test_set_filter_on_a_missing_collection(client: Any) -> None:
    call = lambda: client.db.command("planCacheSetFilter", "missing", query={"a": 1}, indexes=[{"a": 1}])  # noqa: E731
    assert code_of(call) == (2, "no such collection")


FILTERS = st.fixed_dictionaries(
    {},
    optional={
        "a": st.one_of(st.integers(0, 9), st.fixed_dictionaries({"$gte": st.integers(0, 9)})),
        "b": st.one_of(st.integers(0, 6), st.fixed_dictionaries({"$lt": st.integers(0, 6)})),
        "c": st.integers(0, 2),
    },
)


@settings(max_examples=40, deadline=None)
@given(query=FILTERS, allowed=st.sampled_from([["a_1"], ["b_1"], ["a_1_b_1"], ["a_1", "b_1"], ["c_1"]]))
def test_whatever_indexes_a_filter_allows_the_answers_are_a_scans(query: dict[str, Any], allowed: list[str]) -> None:
    # An index filter changes how a query runs, never what it returns.
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        coll.insert_many([{"_id": i, "a": i % 10, "b": i % 7, "c": i % 3} for i in range(200)])
        for key in ("a", "b", [("a", 1), ("b", 1)]):
            coll.create_index(key)
        scanned = sorted(d["_id"] for d in coll.find(query).hint({"$natural": 1}))
        client.db.command("planCacheSetFilter", "c", query=query, indexes=allowed)
        assert sorted(d["_id"] for d in coll.find(query)) == scanned
        assert sorted(d["_id"] for d in coll.find(query).sort("a", -1)) == scanned


def test_a_count_follows_an_index_filter_too(client: Any, coll: Collection) -> None:
    client.db.command("planCacheSetFilter", "c", query={"a": 1, "b": 1}, indexes=["b_1"])
    explain = client.db.command("explain", {"count": "c", "query": {"a": 2, "b": 3}})
    assert explain["queryPlanner"]["indexFilterSet"] is True and winning_index(explain) == "b_1"
    assert coll.count_documents({"a": 2, "b": 3}) == sum(1 for i in range(700) if (i % 10, i % 7) == (2, 3))
