"""Document-at-a-time stages: $match $project $addFields $set $unset
$replaceRoot $replaceWith $redact $unwind.

Expected documents are written out by hand from the manual page cited.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Int64

from tests.unit.aggregation.runner import NOW, pipeline_error, run_pipeline

AGG = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
MATCH = AGG + "match/"
PROJECT = AGG + "project/"
ADD_FIELDS = AGG + "addFields/"
SET = AGG + "set/"
UNSET = AGG + "unset/"
REPLACE_ROOT = AGG + "replaceRoot/"
REPLACE_WITH = AGG + "replaceWith/"
REDACT = AGG + "redact/"
UNWIND = AGG + "unwind/"
VARIABLES = "https://www.mongodb.com/docs/manual/reference/aggregation-variables/"

# (pipeline, input documents, expected output, manual page)
CASES = [
    ([{"$match": {"a": {"$gt": 1}}}], [{"a": 1}, {"a": 2}, {"a": [0, 5]}], [{"a": 2}, {"a": [0, 5]}], MATCH),
    ([{"$match": {"$expr": {"$gt": ["$a", "$b"]}}}], [{"a": 2, "b": 1}, {"a": 1, "b": 2}], [{"a": 2, "b": 1}], MATCH),
    ([{"$match": {"$expr": {"$eq": ["$a", "$$x"]}}}], [{"a": 1}, {"a": 2}], [{"a": 2}], MATCH),
    ([{"$project": {"a": 1}}], [{"_id": 1, "a": 2, "b": 3}], [{"_id": 1, "a": 2}], PROJECT),
    ([{"$project": {"_id": 0, "c": {"$add": ["$a", "$b"]}}}], [{"_id": 1, "a": 2, "b": 3}], [{"c": 5}], PROJECT),
    ([{"$project": {"b": 0}}], [{"_id": 1, "a": 2, "b": 3}], [{"_id": 1, "a": 2}], PROJECT),
    (
        [{"$addFields": {"c": {"$add": ["$a", 1]}, "a": 0}}],
        [{"_id": 1, "a": 2, "b": 3}],
        [{"_id": 1, "a": 0, "b": 3, "c": 3}],
        ADD_FIELDS,
    ),
    (
        [{"$addFields": {"specs.fuel": "unleaded"}}],
        [{"specs": {"doors": 4}}, {"specs": 5}, {}],
        [{"specs": {"doors": 4, "fuel": "unleaded"}}, {"specs": {"fuel": "unleaded"}}, {"specs": {"fuel": "unleaded"}}],
        ADD_FIELDS + "#adding-fields-to-an-embedded-document",
    ),
    (
        [{"$addFields": {"specs": {"fuel": "unleaded"}}}],
        [{"specs": {"doors": 4}}],
        [{"specs": {"doors": 4, "fuel": "unleaded"}}],
        ADD_FIELDS + "#adding-fields-to-an-embedded-document",
    ),
    (
        [{"$addFields": {"items.tax": {"$multiply": ["$rate", 2]}}}],
        [{"rate": 3, "items": [{"p": 1}, 7, [{"p": 2}]]}],
        [{"rate": 3, "items": [{"p": 1, "tax": 6}, {"tax": 6}, [{"p": 2, "tax": 6}]]}],
        ADD_FIELDS,
    ),
    ([{"$set": {"a": "$$REMOVE", "b": "$nope"}}], [{"a": 1, "b": 2, "c": 3}], [{"c": 3}], SET),
    ([{"$set": {"now": "$$NOW", "root": "$$ROOT.a"}}], [{"a": 1}], [{"a": 1, "now": NOW, "root": 1}], VARIABLES),
    ([{"$set": {"x": "$$x"}}], [{"a": 1}], [{"a": 1, "x": 2}], VARIABLES),
    ([{"$unset": "a"}], [{"_id": 1, "a": 1, "b": 2}], [{"_id": 1, "b": 2}], UNSET),
    ([{"$unset": ["a", "c.d"]}], [{"a": 1, "b": 2, "c": {"d": 1, "e": 2}}], [{"b": 2, "c": {"e": 2}}], UNSET),
    (
        [{"$replaceRoot": {"newRoot": "$inner"}}],
        [{"_id": 1, "inner": {"x": 1}}],
        [{"x": 1}],
        REPLACE_ROOT,
    ),
    (
        [{"$replaceRoot": {"newRoot": {"$mergeObjects": [{"d": 0}, "$$ROOT"]}}}],
        [{"a": 1}],
        [{"d": 0, "a": 1}],
        REPLACE_ROOT,
    ),
    ([{"$replaceWith": {"v": "$a"}}], [{"a": 1}, {}], [{"v": 1}, {}], REPLACE_WITH),
    (
        [{"$redact": {"$cond": [{"$eq": ["$level", 5]}, "$$PRUNE", "$$DESCEND"]}}],
        [
            {
                "_id": 1,
                "level": 1,
                "sub": {"level": 5, "x": 1},
                "list": [{"level": 5}, {"level": 2, "y": 1}, 3, [{"level": 5}]],
            }
        ],
        [{"_id": 1, "level": 1, "list": [{"level": 2, "y": 1}, 3, []]}],
        REDACT,
    ),
    (
        [{"$redact": {"$cond": [{"$eq": ["$level", 5]}, "$$PRUNE", "$$KEEP"]}}],
        [{"level": 1, "sub": {"level": 5}}, {"level": 5}],
        [{"level": 1, "sub": {"level": 5}}],
        REDACT,
    ),
    (
        [{"$unwind": "$sizes"}],
        [
            {"_id": 1, "sizes": ["S", "M"]},
            {"_id": 2, "sizes": []},
            {"_id": 3, "sizes": None},
            {"_id": 4},
            {"_id": 5, "sizes": "L"},
        ],
        [{"_id": 1, "sizes": "S"}, {"_id": 1, "sizes": "M"}, {"_id": 5, "sizes": "L"}],
        UNWIND,
    ),
    (
        [{"$unwind": {"path": "$sizes", "preserveNullAndEmptyArrays": True, "includeArrayIndex": "i"}}],
        [
            {"_id": 1, "sizes": ["S", "M"]},
            {"_id": 2, "sizes": []},
            {"_id": 3, "sizes": None},
            {"_id": 4},
            {"_id": 5, "sizes": "L"},
        ],
        [
            {"_id": 1, "sizes": "S", "i": Int64(0)},
            {"_id": 1, "sizes": "M", "i": Int64(1)},
            {"_id": 2, "i": None},
            {"_id": 3, "sizes": None, "i": None},
            {"_id": 4, "i": None},
            {"_id": 5, "sizes": "L", "i": None},
        ],
        UNWIND + "#preservenullandemptyarrays",
    ),
    (
        [{"$unwind": "$a.b"}],
        [{"a": {"b": [1, 2], "c": 0}}, {"a": [{"b": [3]}]}],
        [{"a": {"b": 1, "c": 0}}, {"a": {"b": 2, "c": 0}}],
        UNWIND,
    ),
]


@pytest.mark.parametrize(("pipeline", "docs", "expected", "page"), CASES)
def test_stage(pipeline: list[Any], docs: list[dict[str, Any]], expected: list[Any], page: str) -> None:
    out = run_pipeline(pipeline, docs, let={"x": 2})
    assert out == expected
    assert [list(d) for d in out] == [list(d) for d in expected]  # field order too


def test_input_documents_are_not_modified() -> None:
    docs = [{"a": {"b": 1}, "l": [1, 2]}]
    run_pipeline([{"$set": {"a.c": 1}}, {"$unwind": "$l"}, {"$unset": "a.b"}], docs)
    assert docs == [{"a": {"b": 1}, "l": [1, 2]}]


# (stage, input, code, manual page)
ERRORS = [
    ({"$match": 1}, [], 15959, MATCH),
    # mongod 4.2+ (expression_parser.cpp, parseWhere): BadValue, not the 2.x code 16395.
    ({"$match": {"$where": "true"}}, [], 2, MATCH),
    ({"$match": {"$or": [{"a": 1}, {"$where": "true"}]}}, [], 2, MATCH),
    ({"$project": 1}, [], 15969, PROJECT),
    ({"$project": {}}, [], 51272, PROJECT),
    ({"$addFields": 1}, [], 40272, ADD_FIELDS),
    ({"$addFields": {"$a": 1}}, [], 16410, ADD_FIELDS),
    ({"$addFields": {"a": 1, "a.b": 2}}, [], 40176, ADD_FIELDS),
    ({"$set": {"a": {}}}, [], 40180, SET),
    ({"$addFields": {"": 1}}, [], 40352, ADD_FIELDS),
    ({"$unset": 1}, [], 31002, UNSET),
    ({"$unset": ["a", 1]}, [], 31120, UNSET),
    ({"$replaceRoot": {"newRoot": "$a"}}, [{"a": 1}], 40228, REPLACE_ROOT),
    ({"$replaceRoot": {}}, [], 40414, REPLACE_ROOT),
    ({"$replaceRoot": {"newRoot": "$a", "x": 1}}, [], 40415, REPLACE_ROOT),
    ({"$replaceWith": "$a"}, [{}], 40228, REPLACE_WITH),
    ({"$redact": "$a"}, [{"a": 1}], 17053, REDACT),
    ({"$unwind": 1}, [], 15981, UNWIND),
    ({"$unwind": "a"}, [], 28818, UNWIND),
    ({"$unwind": {}}, [], 28812, UNWIND),
    ({"$unwind": {"path": 1}}, [], 28808, UNWIND),
    ({"$unwind": {"path": "$a", "preserveNullAndEmptyArrays": 1}}, [], 28809, UNWIND),
    ({"$unwind": {"path": "$a", "includeArrayIndex": 1}}, [], 28810, UNWIND),
    ({"$unwind": {"path": "$a", "includeArrayIndex": "$i"}}, [], 28822, UNWIND),
    ({"$unwind": {"path": "$a", "x": 1}}, [], 28811, UNWIND),
]


@pytest.mark.parametrize(("stage", "docs", "code", "page"), ERRORS)
def test_errors(stage: dict[str, Any], docs: list[dict[str, Any]], code: int, page: str) -> None:
    assert pipeline_error([stage], docs).code == code


def test_replace_root_error_message() -> None:
    error = pipeline_error([{"$replaceRoot": {"newRoot": "$a"}}], [{"_id": 1, "a": 1}])
    assert error.errmsg == (
        "'newRoot' expression must evaluate to an object, but resulting value was: 1. Type of resulting value: "
        "'int'. "
        "Input document: { _id: 1, a: 1 }"
    )


# (stage, errmsg, manual page)
MESSAGES = [
    (
        {"$addFields": {"a": 1, "a.b": 2}},
        "Invalid $addFields :: caused by :: specification contains two conflicting paths. "
        "Cannot specify both 'a.b' and 'a': { a: 1, a.b: 2 }",
        ADD_FIELDS,
    ),
    (
        {"$set": {"a.b": 1, "a": 2}},
        "Invalid $set :: caused by :: specification contains two conflicting paths. "
        "Cannot specify both 'a' and 'a.b': { a.b: 1, a: 2 }",
        SET,
    ),
    (
        {"$set": {"a": {}}},
        "Invalid $set :: caused by :: an empty object is not a valid value. Found empty object at path a",
        SET,
    ),
]


@pytest.mark.parametrize(("stage", "message", "page"), MESSAGES)
def test_error_messages(stage: dict[str, Any], message: str, page: str) -> None:
    assert pipeline_error([stage]).errmsg == message
