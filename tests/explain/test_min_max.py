"""cursor.min() / cursor.max(): a range of the hinted index's keys.

Manual: https://www.mongodb.com/docs/manual/reference/method/cursor.min/ and
https://www.mongodb.com/docs/manual/reference/method/cursor.max/ (min
inclusive, max exclusive, in the index's order; a hint is required). The
cases follow mongod's jstests/core/query/minmax.js; the expected documents are
worked out by hand from the four documents below.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import MaxKey, MinKey
from pymongo.errors import OperationFailure

from tests.explain.plan_tree import stage_of

DOCS = [(1, 1), (1, 2), (2, 1), (2, 2)]  # (a, b)


def _load(db: Any, key: list[tuple[str, int]]) -> Any:
    db.c.create_index(key)
    db.c.insert_many([{"_id": n, "a": a, "b": b} for n, (a, b) in enumerate(DOCS)])
    return db.c


# (index, min, max, the (a, b) pairs returned in index order)
RANGES = [
    ([("a", 1), ("b", 1)], {"a": 1, "b": 2}, {"a": 2, "b": 1}, [(1, 2)]),
    ([("a", 1), ("b", 1)], {"a": 1, "b": 2}, {"a": 2, "b": 1.5}, [(1, 2), (2, 1)]),
    ([("a", 1), ("b", 1)], {"a": 1, "b": 2}, {"a": 2, "b": 2}, [(1, 2), (2, 1)]),
    ([("a", 1), ("b", 1)], {"a": 1, "b": 2}, None, [(1, 2), (2, 1), (2, 2)]),
    ([("a", 1), ("b", 1)], None, {"a": 2, "b": 1.5}, [(1, 1), (1, 2), (2, 1)]),
    # b descending: (1, 2) < (1, 1) < (2, 2) < (2, 1) in the index's order.
    ([("a", 1), ("b", -1)], {"a": 1, "b": 2}, None, [(1, 2), (1, 1), (2, 2), (2, 1)]),
    ([("a", 1), ("b", -1)], None, {"a": 2, "b": 0.5}, [(1, 2), (1, 1), (2, 2), (2, 1)]),
    ([("a", 1), ("b", -1)], {"a": 2, "b": 1}, None, [(2, 1)]),
    ([("a", 1), ("b", -1)], None, {"a": 1, "b": 1.5}, [(1, 2)]),
    # Bounds of any type, MinKey and MaxKey included.
    ([("a", 1), ("b", 1)], {"a": MinKey(), "b": MinKey()}, {"a": MaxKey(), "b": MaxKey()}, DOCS),
    ([("a", 1), ("b", 1)], {"a": 1, "b": MaxKey()}, {"a": 2, "b": MaxKey()}, [(2, 1), (2, 2)]),
]


@pytest.mark.parametrize(("key", "low", "high", "expected"), RANGES)
def test_min_max_return_the_key_range(db: Any, key: Any, low: Any, high: Any, expected: Any) -> None:
    coll = _load(db, key)
    cursor = coll.find().hint(key)
    if low is not None:
        cursor = cursor.min(list(low.items()))
    if high is not None:
        cursor = cursor.max(list(high.items()))
    assert [(d["a"], d["b"]) for d in cursor] == expected


def test_min_max_with_a_filter_and_a_covered_projection(db: Any) -> None:
    coll = _load(db, [("a", 1), ("b", 1)])
    cursor = coll.find({"b": 2}, {"_id": 0, "a": 1, "b": 1}).hint([("a", 1), ("b", 1)]).min([("a", 1), ("b", 2)])
    assert list(cursor) == [{"a": 1, "b": 2}, {"a": 2, "b": 2}]


def test_explain_shows_the_hinted_index_scan(db: Any) -> None:
    coll = _load(db, [("a", 1), ("b", 1)])
    explain = coll.find().hint([("a", 1), ("b", 1)]).min([("a", 1), ("b", 2)]).max([("a", 2), ("b", 2)]).explain()
    ixscan = stage_of(explain["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ixscan["indexName"] == "a_1_b_1"
    # A min/max range is a "simple range" for mongod: its indexBounds are {}.
    assert ixscan["indexBounds"] == {}
    assert explain["executionStats"]["nReturned"] == 2
    assert explain["executionStats"]["totalKeysExamined"] == 2


# (min, max, hint, code): mongod's errors (query_planner.cpp, query_request_helper.cpp).
ERRORS = [
    ({"a": 1, "b": 2}, {"a": 2, "b": 1}, None, 51173),  # a hint is required
    ({"a": 1}, None, [("a", 1), ("b", -1)], 51174),  # fields are not the key pattern's
    ({"b": 1, "a": 1}, None, [("a", 1), ("b", -1)], 51174),  # nor in its order
    ({"a": 1, "b": 1}, {"a": 1}, [("a", 1), ("b", -1)], 51176),  # min and max differ in fields
    ({"b": 1}, {"a": 1, "b": 2}, [("a", 1), ("b", -1)], 51176),
    ({"a": 1}, None, [("$natural", 1)], 291),  # NoQueryExecutionPlans
    (None, {"a": 1}, [("$natural", 1)], 291),
    ({"a": 2, "b": 2}, {"a": 2, "b": 2}, [("a", 1), ("b", -1)], 51175),  # max is exclusive
    ({"a": 2, "b": 1}, {"a": 2, "b": 2}, [("a", 1), ("b", -1)], 51175),  # b descends: (2, 2) comes first
]


@pytest.mark.parametrize(("low", "high", "hint", "code"), ERRORS)
def test_min_max_errors(db: Any, low: Any, high: Any, hint: Any, code: int) -> None:
    # The find command itself: pymongo refuses min/max without a hint before sending.
    _load(db, [("a", 1), ("b", -1)])
    cmd: dict[str, Any] = {"find": "c"}
    if hint is not None:
        cmd["hint"] = dict(hint)
    if low is not None:
        cmd["min"] = low
    if high is not None:
        cmd["max"] = high
    with pytest.raises(OperationFailure) as caught:
        db.command(cmd)
    assert caught.value.code == code


def test_an_id_equality_needs_the_hint_too(db: Any) -> None:
    # min/max make a query ineligible for IDHACK (mongod's isIdHackEligibleQuery).
    _load(db, [("a", 1), ("b", 1)])
    with pytest.raises(OperationFailure) as caught:
        db.command({"find": "c", "filter": {"_id": 1}, "min": {"a": 1, "b": 1}})
    assert caught.value.code == 51173


def test_descending_single_field_index(db: Any) -> None:
    # jstests/core/query/minmax.js: on {a: -1}, min {a: 4} gives 4 then 3; max {a: 4} gives 5.
    db.c.create_index([("a", -1)])
    db.c.insert_many([{"a": 3}, {"a": 4}, {"a": 5}])
    assert [d["a"] for d in db.c.find().hint([("a", -1)]).min([("a", 4)])] == [4, 3]
    assert [d["a"] for d in db.c.find().hint([("a", -1)]).max([("a", 4)])] == [5]
