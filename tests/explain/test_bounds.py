"""Index bounds in explain: mongod's interval strings, and scans as tight.

Manual: https://www.mongodb.com/docs/manual/reference/explain-results/
(indexBounds), https://www.mongodb.com/docs/manual/core/multikey-index-bounds/
(on a multikey index, $gt and $lt on one field may hold for different
elements: only one of them bounds, unless inside $elemMatch) and
https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/.
Expected strings are mongod's format, written out by hand.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Regex

from tests.explain.plan_tree import stage_of

# (index, documents make it multikey, filter, expected indexBounds)
CASES = [
    ([("a", 1)], False, {"a": {"$in": [3, 1, 2]}}, {"a": ["[1, 1]", "[2, 2]", "[3, 3]"]}),
    ([("a", 1)], False, {"a": {"$gt": 1, "$lt": 5}}, {"a": ["(1, 5)"]}),
    ([("a", 1)], False, {"a": {"$lte": 5}}, {"a": ["[-inf.0, 5]"]}),
    ([("a", 1)], False, {"a": {"$gte": "m"}}, {"a": ['["m", {})']}),
    ([("a", 1)], False, {"a": None}, {"a": ["[null, null]"]}),
    ([("a", 1)], False, {"a": {"$type": "string"}}, {"a": ['["", {})']}),
    (
        [("a", 1)],
        False,
        {"a": {"$gt": datetime.datetime(2020, 1, 1)}},
        {"a": ["(new Date(1577836800000), new Date(9223372036854775807)]"]},
    ),
    ([("a", 1)], False, {"a": {"$regex": "^ab"}}, {"a": ['["ab", "ac")', "[/^ab/, /^ab/]"]}),
    ([("a", 1)], False, {"a": Regex("b", "i")}, {"a": ['["", {})', "[/b/i, /b/i]"]}),
    ([("a", 1), ("b", 1)], False, {"a": 1, "b": {"$gte": 2}}, {"a": ["[1, 1]"], "b": ["[2, inf.0]"]}),
    (
        [("a", 1), ("b", -1)],
        False,
        {"a": {"$in": [1, 2]}, "b": {"$gt": 2, "$lt": 9}},
        {"a": ["[1, 1]", "[2, 2]"], "b": ["(9, 2)"]},
    ),
    ([("a", 1), ("b", 1)], False, {"a": {"$gt": 1}, "b": 3}, {"a": ["(1, inf.0]"], "b": ["[3, 3]"]}),
    ([("a", 1), ("b", -1)], False, {"a": 1}, {"a": ["[1, 1]"], "b": ["[MaxKey, MinKey]"]}),
    # Multikey: one bound of the two, unless $elemMatch ties them to one element.
    ([("a", 1)], True, {"a": {"$gt": 1, "$lt": 5}}, {"a": ["(1, inf.0]"]}),
    ([("a", 1)], True, {"a": {"$elemMatch": {"$gt": 1, "$lt": 5}}}, {"a": ["(1, 5)"]}),
    ([("a", 1)], True, {"a": [1, 2]}, {"a": ["[1, 1]", "[[ 1, 2 ], [ 1, 2 ]]"]}),
    (
        [("t.b", 1), ("t.c", 1)],
        True,
        {"t": {"$elemMatch": {"b": 1, "c": {"$gt": 1}}}},
        {"t.b": ["[1, 1]"], "t.c": ["(1, inf.0]"]},
    ),
]


@pytest.mark.parametrize(("key", "multikey", "filter_spec", "bounds"), CASES)
def test_index_bounds(db: Any, key: Any, multikey: bool, filter_spec: Any, bounds: Any) -> None:
    db.c.create_index(key)
    first = key[0][0].split(".")[0]
    db.c.insert_one({first: [{"b": 0, "c": 0}, 5] if multikey else 0})
    ixscan = stage_of(db.c.find(filter_spec).explain()["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ixscan["isMultiKey"] is multikey
    assert ixscan["indexBounds"] == bounds


def test_later_compound_bounds_are_checked_on_the_keys(db: Any) -> None:
    # {a: {$gt: 1}, b: 3}: the scan reads every key with a > 1 but fetches
    # only those with b = 3, as mongod's bounds checker does.
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.insert_many([{"a": a, "b": b} for a in range(5) for b in range(10)])
    stats = db.c.find({"a": {"$gt": 1}, "b": 3}).explain()["executionStats"]
    assert stats["nReturned"] == 3
    assert stats["totalDocsExamined"] == 3
