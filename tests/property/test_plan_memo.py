"""The planner's memo of single-candidate shapes changes no answer and no plan.

A query whose shape (filter without values, sort, projection, collation) had
exactly one candidate index is planned next time from a memo: that index's
bounds rebuilt from the new values. Random steps mix queries with catalog
changes (indexes created, dropped, hidden, unhidden) and inserts that make an
index multikey; each query runs as it comes (through whatever the memo holds)
and again with the memo emptied (the planner in full), and both must return
the same documents in the same order with the same explain plans. The memo
is internal, so the test empties it through the engine; nothing else of the
engine is touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

import foliodb
from tests.property import test_indexed_equals_scan as indexed_equals_scan

# The scan-equivalence test's indexes, and a compound one that gives a sort on b after an equality on a.
INDEXES = [*indexed_equals_scan.INDEXES, ([("b", 1), ("a", 1)], {})]
FIELDS = ["a", "b", "c", "x"]
VALUES = st.one_of(st.integers(-3, 3), st.sampled_from([None, "a", "b", 1.5]))
DOCS = st.lists(st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, VALUES)), max_size=20)
OPS = ["$eq", "$eq", "$eq", "$gt", "$gte", "$lt", "$lte", "$ne", "$in", "$exists", "range"]


def _condition(op: str, value: Any, other: Any) -> Any:
    if op == "$eq":
        return value
    if op == "$in":
        return {"$in": [value, other]}
    if op == "$exists":
        return {"$exists": isinstance(value, int)}  # true or false, the same shape
    if op == "range":
        return {"$gte": value, "$lte": other}
    return {op: value}


@st.composite
def _query(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]], list[tuple[str, int]] | None]:
    """Two filters of one structure with their own values (often one shape), and a sort."""
    fields = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2, unique=True))
    ops = [draw(st.sampled_from(OPS)) for _ in fields]
    filters = [{f: _condition(op, draw(VALUES), draw(VALUES)) for f, op in zip(fields, ops, strict=True)} for _ in "12"]
    # Sorts often on a filtered field: an equality there lets its index give the order.
    sort_field = st.sampled_from(fields + FIELDS)
    sort = draw(st.one_of(st.none(), st.builds(lambda f, d: [(f, d)], sort_field, st.sampled_from([1, -1]))))
    return ("query", filters, sort)


STEPS = st.lists(
    st.one_of(
        _query(),
        _query(),
        _query(),
        st.tuples(st.sampled_from(["create", "drop", "hide", "unhide"]), st.integers(0, len(INDEXES) - 1)),
        st.tuples(st.just("insert"), st.sampled_from(FIELDS), VALUES),
    ),
    max_size=14,
)


def _store(client: Any) -> Any:
    engine = client._executor.engine
    with engine.reading():
        return engine.store("db", "c")


@contextmanager
def _memo_emptied(client: Any) -> Iterator[Callable[[], None]]:
    """A function that empties the collection's memo, for the block; the memo is then put back as it was."""
    store = _store(client)
    saved = dict(store.plan_memo.entries) if store is not None else {}

    def empty() -> None:
        if store is not None:
            store.plan_memo.entries.clear()

    yield empty
    empty()
    if store is not None:
        store.plan_memo.entries.update(saved)


def _answer(
    coll: Any, filter_spec: dict[str, Any], sort: list[tuple[str, int]] | None, before: Callable[[], None]
) -> tuple[Any, ...]:
    """The documents and explain's plans, with ``before`` run before each of the two queries."""
    cursor = coll.find(filter_spec)
    explain_cursor = coll.find(filter_spec)
    if sort is not None:
        cursor = cursor.sort(sort)
        explain_cursor = explain_cursor.sort(sort)
    before()
    docs = list(cursor)
    before()
    planner = explain_cursor.explain()["queryPlanner"]
    return docs, planner["winningPlan"], planner["rejectedPlans"]


def _change(coll: Any, step: tuple[Any, ...]) -> None:
    kind, which = step[0], step[1]
    key, options = INDEXES[which] if isinstance(which, int) else ([], {})
    name = "_".join(f"{f}_{d}" for f, d in key)
    present = name in coll.index_information()
    if kind == "create" and not present:
        coll.create_index(key, **options)
    elif kind == "drop" and present:
        coll.drop_index(name)
    elif kind in ("hide", "unhide") and present:
        coll.database.command("collMod", "c", index={"name": name, "hidden": kind == "hide"})
    elif kind == "insert":
        coll.insert_one({step[1]: [step[2], 9]})  # an array: its indexes become multikey


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS, st.lists(st.integers(0, len(INDEXES) - 1), unique=True), STEPS)
def test_a_memoized_plan_answers_as_the_full_planner(
    docs: list[dict[str, Any]], indexes: list[int], steps: list[Any]
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        coll.insert_many([{"_id": i, **d} for i, d in enumerate(docs)] or [{"_id": -1}])
        for step in [("create", which) for which in indexes] + steps:
            if step[0] != "query":
                try:
                    _change(coll, step)
                except OperationFailure as exc:  # a hashed index refuses arrays, as mongod's (16766)
                    assert exc.code == 16766
                continue
            _, filters, sort = step
            for filter_spec in filters:
                memoized = _answer(coll, filter_spec, sort, lambda: None)
                with _memo_emptied(client) as empty:
                    full = _answer(coll, filter_spec, sort, empty)
                assert memoized == full, (filter_spec, sort)


@pytest.fixture
def coll() -> Iterator[Any]:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        coll.insert_many([{"_id": i, "a": i % 5, "b": i % 3} for i in range(30)])
        yield coll


def _winning(coll: Any, filter_spec: dict[str, Any]) -> tuple[str, str | None]:
    plan = coll.find(filter_spec).explain()["queryPlanner"]["winningPlan"]
    while "inputStage" in plan:
        plan = plan["inputStage"]
    return plan["stage"], plan.get("indexName")


def _ids(coll: Any, filter_spec: dict[str, Any]) -> list[int]:
    return sorted(d["_id"] for d in coll.find(filter_spec))


def test_index_changes_end_the_memo(coll: Any) -> None:
    coll.create_index("a")
    coll.create_index("b")
    assert _ids(coll, {"a": 1}) == [1, 6, 11, 16, 21, 26]
    store = _store(coll.database.client)
    assert len(store.plan_memo.entries) == 1  # {a: <int>} had one candidate, a_1
    # Dropped: the next query of the shape scans the collection.
    coll.drop_index("a_1")
    assert _ids(coll, {"a": 2}) == [2, 7, 12, 17, 22, 27]
    assert _winning(coll, {"a": 2}) == ("COLLSCAN", None)
    # A new best index for the shape.
    coll.create_index([("a", 1), ("b", 1)])
    assert _ids(coll, {"a": 3}) == [3, 8, 13, 18, 23, 28]
    assert _winning(coll, {"a": 3}) == ("IXSCAN", "a_1_b_1")
    # Hidden, then unhidden (collMod).
    coll.database.command("collMod", "c", index={"name": "a_1_b_1", "hidden": True})
    assert _winning(coll, {"a": 4}) == ("COLLSCAN", None)
    assert _ids(coll, {"a": 4}) == [4, 9, 14, 19, 24, 29]
    coll.database.command("collMod", "c", index={"name": "a_1_b_1", "hidden": False})
    assert _winning(coll, {"a": 0}) == ("IXSCAN", "a_1_b_1")
    # A second index on the field: now two candidates, a trial, and the plan cache.
    coll.create_index([("a", 1), ("_id", 1)])
    assert _ids(coll, {"a": 1}) == [1, 6, 11, 16, 21, 26]
    assert len(list(coll.aggregate([{"$planCacheStats": {}}]))) == 1
    # Renamed and dropped collections leave nothing behind.
    coll.rename("d")
    assert _ids(coll.database.d, {"a": 1}) == [1, 6, 11, 16, 21, 26]
    coll.database.d.drop()
    coll.database.d.insert_many([{"_id": 1, "a": 1}])
    assert _winning(coll.database.d, {"a": 1}) == ("COLLSCAN", None)


def test_the_memo_is_bounded(coll: Any) -> None:
    coll.create_index("a")
    store = _store(coll.database.client)
    for n in range(300):
        # A different shape each: n fields beside a, none indexed.
        list(coll.find({"a": 1, f"f{n}": 1}))
    assert len(store.plan_memo.entries) == 256
    assert _ids(coll, {"a": 1, "f299": {"$exists": False}}) == [1, 6, 11, 16, 21, 26]


def test_an_index_the_values_bring_in_is_not_memoized_away(coll: Any) -> None:
    # x_1 gives the sort, but serves only queries implying its partial filter (a > 0): the
    # shape {a: {$gt: <number>}} sorted by x has one candidate or two, by the value.
    coll.create_index("a")
    coll.create_index("x", partialFilterExpression={"a": {"$gt": 0}})
    # (Two candidates cache their winner for the shape: the memo is seen only before that.)
    for bound, candidates in [(-2, 1), (-1, 1), (2, 2)]:
        explained = coll.find({"a": {"$gt": bound}}).sort("x", 1).explain()["queryPlanner"]
        assert 1 + len(explained["rejectedPlans"]) == candidates, bound
        assert [d["_id"] for d in coll.find({"a": {"$gt": bound}}).sort([("x", 1), ("_id", 1)])] == sorted(
            i for i in range(30) if i % 5 > bound
        )
