"""executionStats of the stages after an aggregate's find, a $lookup's joins above all.

Manual: https://www.mongodb.com/docs/manual/reference/explain-results/ ("Execution Plan
Statistics for Query with $lookup Pipeline Stage", 5.0): in executionStats verbosity a
$lookup stage reports ``totalDocsExamined``, ``totalKeysExamined``, ``collectionScans``,
``indexesUsed`` and ``executionTimeMillisEstimate``; each stage its ``nReturned``. The
expected counts are worked out from the documents below: 6 users, 30 orders, order ``n``
belonging to user ``n % 5`` (user 5 has none).
"""

from __future__ import annotations

from typing import Any

import pytest

USERS, ORDERS = 6, 30
JOIN = {"$lookup": {"from": "orders", "localField": "_id", "foreignField": "user", "as": "orders"}}


@pytest.fixture
def db_with_orders(db: Any) -> Any:
    db.users.insert_many([{"_id": u} for u in range(USERS)])
    db.orders.insert_many([{"_id": n, "user": n % 5} for n in range(ORDERS)])
    return db


def _stages(db: Any, pipeline: list[Any], verbosity: str = "executionStats") -> list[dict[str, Any]]:
    explained = db.command("explain", {"aggregate": "users", "pipeline": pipeline, "cursor": {}}, verbosity=verbosity)
    return list(explained["stages"][1:])  # after the $cursor stage


def test_a_join_no_index_serves_reads_the_foreign_collection_once(db_with_orders: Any) -> None:
    (lookup,) = _stages(db_with_orders, [JOIN])
    assert lookup["$lookup"] == JOIN["$lookup"]
    assert (lookup["collectionScans"], lookup["indexesUsed"]) == (1, [])
    assert (lookup["totalDocsExamined"], lookup["totalKeysExamined"]) == (ORDERS, 0)
    assert lookup["nReturned"] == USERS
    assert isinstance(lookup["executionTimeMillisEstimate"], int)


def test_an_indexed_join_names_its_index_and_fetches_each_match(db_with_orders: Any) -> None:
    db_with_orders.orders.create_index("user")
    (lookup,) = _stages(db_with_orders, [JOIN])
    assert (lookup["collectionScans"], lookup["indexesUsed"]) == (0, ["user_1"])
    assert lookup["totalDocsExamined"] == ORDERS  # every order matches one user, fetched once
    assert lookup["totalKeysExamined"] >= ORDERS


def test_a_correlated_pipeline_without_an_index_scans_once_per_input_document(db_with_orders: Any) -> None:
    join = {
        "$lookup": {
            "from": "orders",
            "let": {"u": "$_id"},
            "pipeline": [{"$match": {"$expr": {"$eq": ["$user", "$$u"]}}}],
            "as": "orders",
        }
    }
    lookup, matched = _stages(db_with_orders, [join, {"$match": {"orders": {"$size": 6}}}])
    assert (lookup["collectionScans"], lookup["indexesUsed"]) == (USERS, [])
    assert lookup["totalDocsExamined"] == USERS * ORDERS
    assert (lookup["nReturned"], matched["nReturned"]) == (USERS, 5)  # users 0-4 have 6 orders each


def test_queryplanner_verbosity_runs_nothing_and_a_pipeline_that_writes_is_not_run(db_with_orders: Any) -> None:
    (lookup,) = _stages(db_with_orders, [JOIN], verbosity="queryPlanner")
    assert lookup == {"$lookup": JOIN["$lookup"]}
    stages = _stages(db_with_orders, [JOIN, {"$out": "joined"}])
    assert [next(iter(stage)) for stage in stages] == ["$lookup", "$out"]
    assert "nReturned" not in stages[0]
    assert "joined" not in db_with_orders.list_collection_names()
