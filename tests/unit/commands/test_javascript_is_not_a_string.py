"""BSON JavaScript (``bson.Code``) is a ``str`` to Python but not a string to
MongoDB: where a command wants a name or a string, a JavaScript value gets
MongoDB's type error, never an internal one (Code is also unhashable, which
once crashed every place that used such a value as a key).
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Code

from foliodb.commands.executor import Executor

JS = Code("a")

COMMANDS: list[dict[str, Any]] = [
    {"find": JS},
    {"insert": JS, "documents": [{}]},
    {"create": JS},
    {"drop": JS},
    {"distinct": JS, "key": "a"},
    {"distinct": "c", "key": JS},
    {"find": "c", "filter": {"a": {"$regex": JS}}},
    {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": JS}]},
    *(
        {"aggregate": "c", "pipeline": [stage], "cursor": {}}
        for stage in (
            {"$count": JS},
            {"$out": JS},
            {"$merge": {"into": JS}},
            {"$unset": JS},
            {"$unset": [JS]},
            {"$unionWith": JS},
            {"$lookup": {"from": JS, "localField": "a", "foreignField": "a", "as": "m"}},
            {
                "$graphLookup": {
                    "from": JS,
                    "startWith": "$a",
                    "connectFromField": "a",
                    "connectToField": "a",
                    "as": "g",
                }
            },
            {"$densify": {"field": JS, "range": {"step": 1, "bounds": "full"}}},
            {"$facet": {"x": [{"$count": JS}]}},
        )
    ),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: repr(c)[:70])
def test_javascript_where_a_string_belongs_is_a_user_error(command: dict[str, Any]) -> None:
    executor = Executor.open(":memory:")
    try:
        executor.execute("db", {"insert": "c", "documents": [{"a": 1}]})
        reply = executor.execute("db", command)
        assert reply["ok"] == 0.0 and reply["code"] != 1, reply  # 1 is InternalError
    finally:
        executor.close()
