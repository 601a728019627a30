"""Bad input gets MongoDB's error, never a Python exception (InternalError).

Random command documents - right command names, arguments of random shapes
and BSON types - go through the executor. Every reply must be a reply: ``ok``
1, or ``ok`` 0 with an integer ``code`` that is not InternalError (1), which
is what the executor answers when FolioDB itself raised.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foliodb.commands import Executor
from tests.bson_values import bson_values

OPERATORS = st.sampled_from(
    [
        "$eq",
        "$gt",
        "$in",
        "$nin",
        "$exists",
        "$type",
        "$regex",
        "$elemMatch",
        "$size",
        "$all",
        "$not",
        "$mod",
        "$and",
        "$or",
        "$expr",
        "$set",
        "$inc",
        "$push",
        "$unset",
        "$rename",
        "$each",
        "$slice",
        "$sort",
        "$pull",
        "$addToSet",
        "$match",
        "$group",
        "$project",
        "$unwind",
        "$sum",
        "$add",
        "$concat",
        "$cond",
        "$lookup",
        "$bitsAllSet",
        "$text",
        "$where",
        "$bogus",
        "$setOnInsert",
        "$currentDate",
        "$min",
        "$arrayElemAt",
        "$dateToString",
        "$toInt",
        "$filter",
        "$map",
        "$reduce",
        "$facet",
        "$bucket",
        "$sortByCount",
        "$limit",
    ]
)
KEYS = st.one_of(OPERATORS, st.sampled_from(["a", "b", "a.b", "a.0", "", "$", "a.$", "a.$[]", "_id", "x.$[e]"]))
SPECS = st.recursive(
    bson_values(max_leaves=3),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8,
)
DOCS = st.dictionaries(KEYS, SPECS, max_size=3)


def _command(name: str, a: Any, b: Any, c: Any) -> dict[str, Any]:
    return {
        "find": {"find": "c", "filter": a, "projection": b, "sort": c},
        "insert": {"insert": "c", "documents": [a, b]},
        "update": {"update": "c", "updates": [{"q": a, "u": b, "upsert": True, "arrayFilters": c}]},
        "update_pipeline": {"update": "c", "updates": [{"q": a, "u": [b, c]}]},
        "delete": {"delete": "c", "deletes": [{"q": a, "limit": 0}]},
        "aggregate": {"aggregate": "c", "pipeline": [a, b, c], "cursor": {}},
        "count": {"count": "c", "query": a},
        "distinct": {"distinct": "c", "key": "a", "query": a},
        "findAndModify": {"findAndModify": "c", "query": a, "update": b, "sort": c, "upsert": True, "new": True},
        "createIndexes": {"createIndexes": "c", "indexes": [{"key": a, "name": "i", "partialFilterExpression": b}]},
        "create": {"create": "v", "viewOn": "c", "pipeline": [a]},
    }[name]


NAMES = st.sampled_from(
    [
        "find",
        "insert",
        "update",
        "update_pipeline",
        "delete",
        "aggregate",
        "count",
        "distinct",
        "findAndModify",
        "createIndexes",
        "create",
    ]
)


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAMES, SPECS, DOCS, DOCS)
def test_random_commands_get_mongodb_errors(name: str, a: Any, b: Any, c: Any) -> None:
    executor = Executor.open(":memory:")
    try:
        executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "a": [1, {"b": 2}], "b": "x"}]})
        reply = executor.execute("db", _command(name, a, b, c))
        assert isinstance(reply, dict) and "ok" in reply, reply
        if not reply["ok"]:
            assert isinstance(reply["code"], int) and reply["code"] != 1, reply
        for error in reply.get("writeErrors", []):
            assert isinstance(error["code"], int) and error["code"] != 1, error
    finally:
        executor.close()
