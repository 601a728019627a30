"""Covered queries: the index keys answer, no document is read.

Manual: https://www.mongodb.com/docs/manual/core/query-optimization/#covered-query
(every queried and returned field in one index; not multikey; PROJECTION_COVERED,
totalDocsExamined 0) and https://www.mongodb.com/docs/manual/reference/explain-results/.
A key cannot tell null from missing, so a null key sends the query to its
document: correct first, fast where the keys suffice. The expected documents
are worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

DOCS = [
    {"_id": 1, "a": 1, "b": 2, "c": "x"},
    {"_id": 2, "a": 1, "b": 5, "c": "y"},
    {"_id": 3, "a": 2, "b": 1, "c": "z"},
    {"_id": 4, "a": 3, "b": 4, "c": "w"},
]


@pytest.fixture
def coll(db: Any) -> Any:
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.insert_many(DOCS)
    return db.c


# (filter, projection, sort, expected documents in order)
COVERED = [
    # _id: 0 projections of the compound index's fields, with no condition on b.
    ({"a": 1}, {"_id": 0, "a": 1, "b": 1}, None, [{"a": 1, "b": 2}, {"a": 1, "b": 5}]),
    ({"a": 1}, {"_id": 0, "b": 1}, None, [{"b": 2}, {"b": 5}]),
    # $in on the compound prefix.
    ({"a": {"$in": [1, 3]}}, {"_id": 0, "a": 1, "b": 1}, None, [{"a": 1, "b": 2}, {"a": 1, "b": 5}, {"a": 3, "b": 4}]),
    # A sort on covered fields (the index's order, or a SORT stage over the keys).
    ({"a": {"$gte": 1}}, {"_id": 0, "b": 1}, [("b", -1)], [{"b": 5}, {"b": 4}, {"b": 2}, {"b": 1}]),
    ({"a": {"$gt": 1}}, {"_id": 0, "a": 1}, [("a", 1), ("b", 1)], [{"a": 2}, {"a": 3}]),
    # A range on b checked on the keys.
    ({"a": {"$gte": 1}, "b": {"$gt": 2}}, {"_id": 0, "b": 1}, None, [{"b": 5}, {"b": 4}]),
    # Filters the keys answer exactly: $ne, $nin, $or inside the index's fields.
    ({"a": 1, "b": {"$ne": 2}}, {"_id": 0, "a": 1, "b": 1}, None, [{"a": 1, "b": 5}]),
    ({"a": {"$gte": 2}, "$or": [{"b": 1}, {"b": 4}]}, {"_id": 0, "b": 1}, None, [{"b": 1}, {"b": 4}]),
]


@pytest.mark.parametrize(("filter_spec", "projection", "sort", "expected"), COVERED)
def test_covered(coll: Any, filter_spec: Any, projection: Any, sort: Any, expected: list[Any]) -> None:
    cursor = coll.find(filter_spec, projection)
    if sort:
        cursor = cursor.sort(sort)
    assert list(cursor) == expected
    explain = coll.find(filter_spec, projection).sort(sort).explain() if sort else cursor.explain()
    plan = explain["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "PROJECTION_COVERED", plan
    assert "FETCH" not in str(plan)
    assert explain["executionStats"]["totalDocsExamined"] == 0


# Not covered: the projection or filter needs more than the keys.
NOT_COVERED = [
    ({"a": 1}, {"a": 1, "b": 1}),  # _id is not in the index
    ({"a": 1}, {"_id": 0, "a": 1, "c": 1}),
    ({"a": 1, "c": "x"}, {"_id": 0, "a": 1}),
    ({"a": 1}, {"_id": 0, "a": 1, "b": {"$slice": 1}}),
    ({"a": 1}, {"c": 0}),
]


@pytest.mark.parametrize(("filter_spec", "projection"), NOT_COVERED)
def test_not_covered(coll: Any, filter_spec: Any, projection: Any) -> None:
    plan = coll.find(filter_spec, projection).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] != "PROJECTION_COVERED"


def test_null_keys_read_their_documents(db: Any) -> None:
    # b is null in one document and missing in another: both have a null key.
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.insert_many([{"_id": 1, "a": 1, "b": 2}, {"_id": 2, "a": 1}, {"_id": 3, "a": 1, "b": None}])
    projection = {"_id": 0, "a": 1, "b": 1}
    assert list(db.c.find({"a": 1}, projection)) == [{"a": 1}, {"a": 1, "b": None}, {"a": 1, "b": 2}]
    assert list(db.c.find({"a": 1, "b": {"$exists": False}}, {"_id": 0, "a": 1})) == [{"a": 1}]
    assert list(db.c.find({"a": 1, "b": {"$type": "null"}}, {"_id": 0, "a": 1})) == [{"a": 1}]
    explain = db.c.find({"a": 1}, projection).explain()
    assert explain["queryPlanner"]["winningPlan"]["stage"] == "PROJECTION_COVERED"
    assert explain["executionStats"]["totalDocsExamined"] == 2  # the two null keys


def test_multikey_and_lossy_indexes_never_cover(db: Any) -> None:
    db.c.create_index("m")
    db.c.create_index("f")
    db.c.insert_many([{"m": [1, 2], "f": 2.0}, {"m": 3, "f": 1.5}])
    for filter_spec, projection, expected in [
        ({"m": {"$gte": 1}}, {"_id": 0, "m": 1}, [{"m": [1, 2]}, {"m": 3}]),
        # 2.0 would come back from its key as the int 2.
        ({"f": {"$gte": 1}}, {"_id": 0, "f": 1}, [{"f": 1.5}, {"f": 2.0}]),
    ]:
        found = list(db.c.find(filter_spec, projection))
        assert found == expected and [type(d[next(iter(d))]) for d in found] == [
            type(d[next(iter(d))]) for d in expected
        ]
        plan = db.c.find(filter_spec, projection).explain()["queryPlanner"]["winningPlan"]
        assert plan["stage"] != "PROJECTION_COVERED"
