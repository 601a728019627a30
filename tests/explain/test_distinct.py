"""distinct through an index: a DISTINCT_SCAN seeks from value to value.

Manual: https://www.mongodb.com/docs/manual/reference/command/distinct/
(array fields give each element; values once each) and
https://www.mongodb.com/docs/manual/reference/explain-results/
(DISTINCT_SCAN; PROJECTION_COVERED when the keys alone answer). The
expected values are worked out by hand from the documents below.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.explain.plan_tree import stage_of, stages

N = 3000


@pytest.fixture
def coll(db: Any) -> Any:
    db.c.create_index("status")
    db.c.create_index("tags")
    db.c.create_index([("shop", 1), ("city", 1)])
    statuses = ["new", "paid", "shipped"]
    db.c.insert_many(
        [
            {
                "status": statuses[n % 3],
                "tags": [n % 4, n % 4 + 1] if n % 10 else [],
                "shop": n % 5,
                "city": f"c{n % 7}",
            }
            for n in range(N)
        ]
    )
    db.c.insert_many([{"status": None}, {"other": 1}])  # null and missing: distinct keeps null only
    return db.c


def _explain(db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
    return db.command({"explain": cmd, "verbosity": "executionStats"})  # type: ignore[no-any-return]


# (distinct command fields, values, winning plan stages)
CASES = [
    ({"key": "status"}, [None, "new", "paid", "shipped"], ["PROJECTION_COVERED", "DISTINCT_SCAN"]),
    # Multikey: elements are the values; documents give them ([] gives none).
    ({"key": "tags"}, [0, 1, 2, 3, 4], ["PROJECTION_SIMPLE", "FETCH", "DISTINCT_SCAN"]),
    # A point on the leading field, distinct on the next: cities of shop 3 (n % 5 == 3, all n % 7).
    ({"key": "city", "query": {"shop": 3}}, [f"c{i}" for i in range(7)], ["PROJECTION_COVERED", "DISTINCT_SCAN"]),
    # A filter on a later field, read from the keys: shops with a city c6 (every shop has one).
    ({"key": "shop", "query": {"city": "c6"}}, [0, 1, 2, 3, 4], ["PROJECTION_COVERED", "DISTINCT_SCAN"]),
    (
        {"key": "city", "query": {"shop": {"$in": [1, 2]}, "city": {"$gt": "c4"}}},
        ["c5", "c6"],
        ["PROJECTION_COVERED", "DISTINCT_SCAN"],
    ),
    # No index serves this filter from its keys: a find.
    ({"key": "status", "query": {"shop": 1}}, ["new", "paid", "shipped"], ["FETCH", "IXSCAN"]),
]


@pytest.mark.parametrize(("fields", "values", "plan"), CASES)
def test_distinct_plans(db: Any, coll: Any, fields: Any, values: list[Any], plan: list[str]) -> None:
    cmd = {"distinct": "c", **fields}
    assert db.command(cmd)["values"] == values
    explain = _explain(db, cmd)
    assert stages(explain["queryPlanner"]["winningPlan"]) == plan


def test_distinct_scan_reads_one_key_per_value(db: Any, coll: Any) -> None:
    explain = _explain(db, {"distinct": "c", "key": "status"})
    scan = stage_of(explain["queryPlanner"]["winningPlan"], "DISTINCT_SCAN")
    assert scan["indexName"] == "status_1" and scan["indexBounds"] == {"status": ["[MinKey, MaxKey]"]}
    stats = explain["executionStats"]
    # Three values from their keys, and null from the first document under it;
    # the missing field's null key is followed to the one document with a null.
    assert stats["totalKeysExamined"] <= 6
    assert stats["totalDocsExamined"] <= 2
    assert stats["nReturned"] == 4


def test_distinct_scan_bounds_of_a_filter(db: Any, coll: Any) -> None:
    explain = _explain(db, {"distinct": "c", "key": "city", "query": {"shop": 3}})
    scan = stage_of(explain["queryPlanner"]["winningPlan"], "DISTINCT_SCAN")
    assert scan["indexBounds"] == {"shop": ["[3, 3]"], "city": ["[MinKey, MaxKey]"]}
    assert explain["executionStats"]["totalKeysExamined"] == 7
    assert explain["executionStats"]["totalDocsExamined"] == 0


def test_equal_values_of_different_types_keep_the_first_met(db: Any) -> None:
    # 1 and 1.0 are one value; a collection scan meets the int first.
    db.c.create_index("v")
    db.c.insert_many([{"v": 2.0}, {"v": 1}, {"v": 1.0}, {"v": 2}])
    values = db.command({"distinct": "c", "key": "v"})["values"]
    assert values == [1, 2.0] and [type(v) for v in values] == [int, float]


def test_hint_to_an_index_without_the_key_runs_a_find(db: Any, coll: Any) -> None:
    cmd = {"distinct": "c", "key": "status", "hint": "tags_1"}
    assert db.command(cmd)["values"] == [None, "new", "paid", "shipped"]
    assert "DISTINCT_SCAN" not in stages(_explain(db, cmd)["queryPlanner"]["winningPlan"])
