"""explain of update, delete and findAndModify: the plan and what it would do.

Manual: https://www.mongodb.com/docs/manual/reference/command/explain/
("explain does not ... modify data": with executionStats the write is
worked out but not applied) and
https://www.mongodb.com/docs/manual/reference/explain-results/ (UPDATE's
nMatched, nWouldModify, nWouldUpsert; DELETE's nWouldDelete). Expected
counts are worked out by hand from the documents below.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.explain.plan_tree import stages

DOCS = [{"_id": n, "a": n % 3, "arr": [1, 2, 3]} for n in range(9)]


@pytest.fixture
def coll(db: Any) -> Any:
    db.c.create_index("a")
    db.c.insert_many(DOCS)
    return db.c


def _update(q: Any, u: Any, **options: Any) -> dict[str, Any]:
    return {"update": "c", "updates": [{"q": q, "u": u, **options}]}


# (command, winning plan stages, the write stage's executionStats counts, docs examined)
CASES = [
    (
        _update({"a": 1}, {"$set": {"b": 1}}, multi=True),
        ["UPDATE", "FETCH", "IXSCAN"],
        {"nMatched": 3, "nWouldModify": 3, "nWouldUpsert": 0},
        3,
    ),
    # Setting a field to its value modifies nothing.
    (
        _update({"a": 1}, {"$set": {"a": 1}}, multi=True),
        ["UPDATE", "FETCH", "IXSCAN"],
        {"nMatched": 3, "nWouldModify": 0, "nWouldUpsert": 0},
        3,
    ),
    # updateOne stops at the first match.
    (
        _update({"a": 1}, {"$set": {"b": 1}}),
        ["UPDATE", "FETCH", "IXSCAN"],
        {"nMatched": 1, "nWouldModify": 1, "nWouldUpsert": 0},
        1,
    ),
    (
        _update({"a": 7}, {"$set": {"b": 1}}, upsert=True),
        ["UPDATE", "FETCH", "IXSCAN"],
        {"nMatched": 0, "nWouldModify": 0, "nWouldUpsert": 1},
        0,
    ),
    # The positional operator, through the filter's array match.
    (
        _update({"arr": 2}, {"$set": {"arr.$": 9}}, multi=True),
        ["UPDATE", "COLLSCAN"],
        {"nMatched": 9, "nWouldModify": 9, "nWouldUpsert": 0},
        9,
    ),
    (
        _update({"_id": 4}, [{"$set": {"s": {"$add": ["$a", 1]}}}]),
        ["UPDATE", "IDHACK"],
        {"nMatched": 1, "nWouldModify": 1, "nWouldUpsert": 0},
        1,
    ),
    ({"delete": "c", "deletes": [{"q": {"a": 2}, "limit": 0}]}, ["DELETE", "FETCH", "IXSCAN"], {"nWouldDelete": 3}, 3),
    ({"delete": "c", "deletes": [{"q": {"a": 2}, "limit": 1}]}, ["DELETE", "FETCH", "IXSCAN"], {"nWouldDelete": 1}, 1),
    ({"delete": "c", "deletes": [{"q": {}, "limit": 0}]}, ["DELETE", "COLLSCAN"], {"nWouldDelete": 9}, 9),
    (
        {"findAndModify": "c", "query": {"a": 0}, "sort": {"_id": -1}, "update": {"$inc": {"n": 1}}},
        ["UPDATE", "SORT", "FETCH", "IXSCAN"],
        {"nMatched": 1, "nWouldModify": 1, "nWouldUpsert": 0},
        3,
    ),
    ({"findAndModify": "c", "query": {"a": 0}, "remove": True}, ["DELETE", "FETCH", "IXSCAN"], {"nWouldDelete": 1}, 1),
]


@pytest.mark.parametrize(("cmd", "plan", "counts", "docs"), CASES)
def test_write_explain_changes_nothing(db: Any, coll: Any, cmd: Any, plan: list[str], counts: Any, docs: int) -> None:
    explain = db.command({"explain": cmd, "verbosity": "executionStats"})
    assert stages(explain["queryPlanner"]["winningPlan"]) == plan
    stats = explain["executionStats"]
    root = stats["executionStages"]
    assert root["stage"] == plan[0]
    assert {k: root[k] for k in counts} == counts
    assert stats["nReturned"] == 0
    assert stats["totalDocsExamined"] == docs
    assert list(coll.find().sort("_id", 1)) == DOCS


def test_query_planner_verbosity_does_not_execute(db: Any, coll: Any) -> None:
    explain = db.command({"explain": _update({"a": 1}, {"$set": {"b": 1}}, multi=True), "verbosity": "queryPlanner"})
    assert "executionStats" not in explain
    assert stages(explain["queryPlanner"]["winningPlan"]) == ["UPDATE", "FETCH", "IXSCAN"]


def test_explained_upsert_creates_no_collection(db: Any) -> None:
    # jstests/core/explain_upsert.js: the collection still does not exist.
    cmd = {"update": "absent", "updates": [{"q": {"a": 1}, "u": {"a": 1}, "upsert": True}]}
    explain = db.command({"explain": cmd, "verbosity": "executionStats"})
    assert explain["executionStats"]["executionStages"]["nWouldUpsert"] == 1
    assert "absent" not in db.list_collection_names()


def test_text_filter_in_an_explained_update(db: Any) -> None:
    db.c.create_index([("t", "text")])
    db.c.insert_many([{"_id": 1, "t": "hello world"}, {"_id": 2, "t": "bye"}])
    cmd = _update({"$text": {"$search": "hello"}}, {"$set": {"x": 1}}, multi=True)
    root = db.command({"explain": cmd, "verbosity": "executionStats"})["executionStats"]["executionStages"]
    assert (root["nMatched"], root["nWouldModify"]) == (1, 1)
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "t": "hello world"}
