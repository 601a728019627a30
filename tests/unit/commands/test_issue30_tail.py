"""Regression tests for the long tail MongoDB's own jstests (r4.2, run by scripts/jstests.py) found
after the first pass: each case checks mongod 8's documented or coded behaviour, cited beside it.

Sources: the manual pages named in each test, and mongod's source where the manual is silent
(file names given; mongodb/mongo on GitHub).
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure


def code_of(fn: Any) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details["errmsg"]


# -- aggregation -------------------------------------------------------------------------------------


def _nested_lookups(coll: str, depth: int) -> list[dict[str, Any]]:
    pipeline: list[dict[str, Any]] = []
    for _ in range(depth):
        pipeline = [{"$lookup": {"from": coll, "as": "out", "pipeline": pipeline}}]
    return pipeline


def test_sub_pipelines_nest_at_most_twenty_deep(db: Any) -> None:
    # expression_context.cpp copyForSubPipeline: internalMaxSubPipelineViewDepth (20), else
    # MaxSubPipelineDepthExceeded (232).
    db.c.insert_one({"_id": 1})
    assert len(list(db.c.aggregate(_nested_lookups("c", 20)))) == 1
    assert code_of(lambda: list(db.c.aggregate(_nested_lookups("c", 21))))[0] == 232
    # Views count: a $lookup from a view compiles the view's pipeline inside its own.
    db.command({"create": "v1", "viewOn": "c", "pipeline": _nested_lookups("c", 10)})
    db.command({"create": "v2", "viewOn": "v1", "pipeline": _nested_lookups("v1", 10)})
    assert len(list(db.v2.aggregate([]))) == 1
    db.command({"create": "v3", "viewOn": "v2", "pipeline": _nested_lookups("v2", 1)})
    assert code_of(lambda: list(db.v3.aggregate([])))[0] == 232


def test_text_score_only_where_its_pipeline_searched(db: Any) -> None:
    # Manual, $meta: textScore needs a $text search in the same pipeline; a $lookup sub-pipeline does
    # not see the outer one's (40218, "query requires text score metadata, but it is not available").
    db.outer.insert_one({"_id": 1, "a": "foo"})
    db.inner.insert_one({"_id": 1, "a": "bar apple banana"})
    db.outer.create_index([("a", "text")])
    db.inner.create_index([("a", "text")])
    inner_score = [{"$project": {"score": {"$meta": "textScore"}}}]
    bad = [
        {"$match": {"$text": {"$search": "foo"}}},
        {"$lookup": {"from": "inner", "as": "as", "pipeline": inner_score}},
    ]
    assert code_of(lambda: list(db.outer.aggregate(bad)))[0] == 40218
    assert code_of(lambda: list(db.outer.aggregate(inner_score)))[0] == 40218
    good = [
        {"$match": {"$text": {"$search": "foo"}}},
        {
            "$lookup": {
                "from": "inner",
                "as": "as",
                "pipeline": [{"$match": {"$text": {"$search": "bar apple banana hello"}}}, *inner_score],
            }
        },
    ]
    # Three of the four words, each once in three tokens: 3 * (0.5 + 0.5 / 3) = 2.
    assert list(db.outer.aggregate(good)) == [{"_id": 1, "a": "foo", "as": [{"_id": 1, "score": 2.0}]}]
    facet = [
        {"$match": {"$text": {"$search": "foo"}}},
        {"$facet": {"s": [{"$project": {"s": {"$meta": "textScore"}}}]}},
    ]
    assert list(db.outer.aggregate(facet)) == [{"s": [{"_id": 1, "s": 1.1}]}]


def test_a_missing_text_index_is_found_before_a_missing_text_score(db: Any) -> None:
    # mongod parses $text (looking up its text index: IndexNotFound) before dependency analysis (40218).
    db.outer.insert_one({"_id": 1, "a": "foo"})
    pipeline = [
        {"$match": {"$text": {"$search": "foo"}}},
        {"$lookup": {"from": "inner", "as": "as", "pipeline": [{"$project": {"s": {"$meta": "textScore"}}}]}},
    ]
    assert code_of(lambda: list(db.outer.aggregate(pipeline)))[0] == 27
    db.inner.create_index([("a", "text")])
    assert code_of(lambda: list(db.outer.aggregate(pipeline)))[0] == 27
    db.outer.create_index([("a", "text")])
    assert code_of(lambda: list(db.outer.aggregate(pipeline)))[0] == 40218


@pytest.mark.parametrize(
    ("date", "fmt", "message"),
    [
        # timelib (mongod's date parser): an ISO week or weekday without its ISO year is no date, and
        # ISO week dates do not mix with calendar dates.
        ("ISO Day 6", "ISO Day %u", "The parsed date was invalid"),
        ("ISO Week 52", "ISO Week %V", "The parsed date was invalid"),
        ("ISO Week 1, 2018", "ISO Week %V, %Y", "Mixing of ISO dates with natural dates is not allowed"),
        ("12/31/2018", "%m/%d/%G", "Mixing of ISO dates with natural dates is not allowed"),
    ],
)
def test_date_from_string_iso_week_errors(db: Any, date: str, fmt: str, message: str) -> None:
    db.c.insert_one({})
    pipeline = [{"$project": {"d": {"$dateFromString": {"dateString": date, "format": fmt}}}}]
    code, errmsg = code_of(lambda: list(db.c.aggregate(pipeline)))
    assert code == 241 and message in errmsg


def test_a_match_run_as_a_stage_reads_field_paths(db: Any) -> None:
    # SERVER-39109 (mongod's dependency analysis): a $match that runs as a stage before a stage naming
    # every needed field has its paths made FieldPaths, where "a.$c" is illegal (16410). The same $match
    # first in the pipeline is the query system's, where the path is legal.
    db.c.insert_one({"a": 1})
    project = {"$project": {"newAndUnrelatedField": "$dummy"}}
    assert code_of(lambda: list(db.c.aggregate([{"$limit": 10}, {"$match": {"a.$c": 4}}, project])))[0] == 16410
    assert list(db.c.aggregate([{"$match": {"a.$c": 4}}, project])) == []
    assert list(db.c.aggregate([{"$limit": 10}, {"$match": {"a.$c": 4}}])) == []
