"""count: from the record count, from index keys (COUNT_SCAN) or from documents.

Manual: https://www.mongodb.com/docs/manual/reference/command/count/ and
https://www.mongodb.com/docs/manual/reference/explain-results/ (COUNT_SCAN,
RECORD_STORE_FAST_COUNT). The shapes are mongod's (plan_explainer_impl.cpp:
COUNT_SCAN's indexBounds as startKey/endKey and their inclusion); the
expected counts are worked out by hand from the documents below.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import MaxKey, MinKey, ObjectId

from tests.explain.plan_tree import stages

# 60 documents: a = n % 5, b = n, tags = [n % 4, n % 4 + 1] (multikey).
N = 60


@pytest.fixture
def coll(db: Any) -> Any:
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.create_index("tags")
    db.c.insert_many([{"_id": n, "a": n % 5, "b": n, "tags": [n % 4, n % 4 + 1]} for n in range(N)])
    return db.c


def _explain(db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
    return db.command({"explain": cmd, "verbosity": "executionStats"})  # type: ignore[no-any-return]


# (count command fields, n, winning plan stages, COUNT_SCAN bounds or None, docs examined)
CASES = [
    ({}, N, ["RECORD_STORE_FAST_COUNT"], None, 0),
    ({"skip": 50, "limit": 20}, 10, ["RECORD_STORE_FAST_COUNT"], None, 0),
    (
        {"query": {"a": 3}},
        12,
        ["COUNT", "COUNT_SCAN"],
        {
            "startKey": {"a": 3, "b": MinKey()},
            "startKeyInclusive": True,
            "endKey": {"a": 3, "b": MaxKey()},
            "endKeyInclusive": True,
        },
        0,
    ),
    (
        # a = 3 and b >= 40: b in 43, 48, 53, 58.
        {"query": {"a": 3, "b": {"$gte": 40}}},
        4,
        ["COUNT", "COUNT_SCAN"],
        {
            "startKey": {"a": 3, "b": 40},
            "startKeyInclusive": True,
            "endKey": {"a": 3, "b": float("inf")},
            "endKeyInclusive": True,
        },
        0,
    ),
    (
        # 1 < a <= 3: mongod starts after every key of a = 1 (MaxKey on b, exclusive).
        {"query": {"a": {"$gt": 1, "$lte": 3}}},
        24,
        ["COUNT", "COUNT_SCAN"],
        {
            "startKey": {"a": 1, "b": MaxKey()},
            "startKeyInclusive": False,
            "endKey": {"a": 3, "b": MaxKey()},
            "endKeyInclusive": True,
        },
        0,
    ),
    # Two intervals: no single start and end key, the keys are counted by an IXSCAN.
    ({"query": {"a": {"$in": [0, 4]}}}, 24, ["COUNT", "IXSCAN"], None, 0),
    # Multikey: documents counted once though several keys match (tags 2 in n % 4 in {1, 2}).
    (
        {"query": {"tags": 2}},
        30,
        ["COUNT", "COUNT_SCAN"],
        {"startKey": {"tags": 2}, "startKeyInclusive": True, "endKey": {"tags": 2}, "endKeyInclusive": True},
        0,
    ),
    # A hint with an empty filter counts the hinted index's entries.
    (
        {"query": {}, "hint": "tags_1"},
        N,
        ["COUNT", "COUNT_SCAN"],
        {
            "startKey": {"tags": MinKey()},
            "startKeyInclusive": True,
            "endKey": {"tags": MaxKey()},
            "endKeyInclusive": True,
        },
        0,
    ),
    # A filter the keys cannot answer: documents are read.
    ({"query": {"a": 3, "x": {"$exists": False}}}, 12, ["COUNT", "FETCH", "IXSCAN"], None, 12),
    ({"query": {"b": {"$lt": 10}}}, 10, ["COUNT", "COLLSCAN"], None, N),
    ({"query": {"a": 3}, "skip": 10}, 2, ["COUNT", "COUNT_SCAN"], None, 0),
    ({"query": {"a": 3}, "limit": 5}, 5, ["COUNT", "COUNT_SCAN"], None, 0),
]


@pytest.mark.parametrize(("fields", "n", "plan", "bounds", "docs"), CASES)
def test_count_plans(db: Any, coll: Any, fields: Any, n: int, plan: list[str], bounds: Any, docs: int) -> None:
    cmd = {"count": "c", **fields}
    assert db.command(cmd)["n"] == n
    explain = _explain(db, cmd)
    winning = explain["queryPlanner"]["winningPlan"]
    assert stages(winning) == plan
    if bounds is not None:
        assert winning["inputStage"]["indexBounds"] == bounds
    stats = explain["executionStats"]
    assert stats["totalDocsExamined"] == docs
    assert stats["executionStages"]["nCounted"] == n
    assert stats["nReturned"] == 0


def test_count_scan_reads_keys_not_documents_on_a_large_collection(db: Any) -> None:
    db.c.create_index("status")
    statuses = ["new", "paid", "shipped", "done"]
    db.c.insert_many([{"status": statuses[n % 4], "pad": "x" * 200} for n in range(4000)])
    cmd = {"count": "c", "query": {"status": "paid"}}
    assert db.command(cmd)["n"] == 1000
    stats = _explain(db, cmd)["executionStats"]
    assert stats["totalDocsExamined"] == 0 and stats["executionStages"]["inputStage"]["stage"] == "COUNT_SCAN"


def test_count_of_a_missing_collection(db: Any) -> None:
    assert db.command({"count": "nothing", "query": {"a": 1}})["n"] == 0
    assert db.command({"count": "nothing"})["n"] == 0


def test_count_documents_and_estimated_count(coll: Any) -> None:
    assert coll.count_documents({"a": 3}) == 12
    assert coll.estimated_document_count() == N


@pytest.mark.parametrize("operator", ["$lt", "$lte", "$gt", "$gte"])
def test_a_range_of_object_ids_counts_its_documents(db: Any, operator: str) -> None:
    # The bounds of an ObjectId range end at the type's edge, a key too short to be an ObjectId:
    # counting used to fail on it with an InternalError (found by the advisor's sampling).
    ids = [ObjectId(f"{n:024x}") for n in range(1, 11)]
    db.u.insert_many([{"_id": i} for i in ids])
    pivot = ids[4]
    expected = {"$lt": 4, "$lte": 5, "$gt": 5, "$gte": 6}[operator]
    assert db.command("count", "u", query={"_id": {operator: pivot}})["n"] == expected
    assert db.command("count", "u", query={"_id": {operator: pivot}}, limit=1)["n"] == 1
