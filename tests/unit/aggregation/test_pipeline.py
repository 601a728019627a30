"""Pipeline compilation: stage-document errors, placement rules, reordering,
push-down and streaming.

Manual: https://www.mongodb.com/docs/manual/core/aggregation-pipeline/ and
https://www.mongodb.com/docs/manual/core/aggregation-pipeline-optimization/
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.aggregation import STAGES, compile_pipeline
from foliodb.errors import CommandError
from tests.unit.aggregation.runner import ContextOnly

PIPELINE = "https://www.mongodb.com/docs/manual/core/aggregation-pipeline/"
OPTIMIZATION = "https://www.mongodb.com/docs/manual/core/aggregation-pipeline-optimization/"
STAGES_PAGE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation-pipeline/"
SEARCH_PAGE = "https://www.mongodb.com/docs/atlas/atlas-search/aggregation-stages/search/"
OUT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/"
COLLSTATS = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/"
FACET = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/facet/"
TEXT = "https://www.mongodb.com/docs/manual/reference/operator/query/text/"


def compile_(pipeline: list[Any]) -> Any:
    return compile_pipeline(pipeline, ContextOnly())


# (pipeline, code, codeName or None, manual page)
ERRORS = [
    ([{"$foo": 1}], 40324, "Location40324", STAGES_PAGE),
    ([{"$match": {}, "$sort": {"a": 1}}], 40323, "Location40323", PIPELINE),
    ([{}], 40323, "Location40323", PIPELINE),
    ([5], 14, "TypeMismatch", PIPELINE),
    ([{"$score": {}}], 238, "NotImplemented", STAGES_PAGE),
    ([{"$search": {}}], 9, "FailedToParse", SEARCH_PAGE),
    ([{"$match": {}}, {"$rankFusion": {}}], 40602, "Location40602", STAGES_PAGE),
    ([{"$facet": {"a": [{"$search": {"text": {"query": "x", "path": "t"}}}]}}], 40600, "Location40600", FACET),
    ([{"$match": {}}, {"$changeStream": {}}], 40602, "Location40602", STAGES_PAGE),
    ([{"$out": "x"}, {"$match": {}}], 40601, "Location40601", OUT),
    ([{"$merge": {"into": "x"}}, {"$match": {}}], 40601, "Location40601", OUT),
    ([{"$match": {}}, {"$collStats": {}}], 40602, "Location40602", COLLSTATS),
    ([{"$match": {}}, {"$documents": []}], 40602, "Location40602", STAGES_PAGE),
    ([{"$facet": {"a": [{"$out": "x"}]}}], 40600, "Location40600", FACET),
    ([{"$facet": {"a": [{"$facet": {"b": [{"$limit": 1}]}}]}}], 40600, "Location40600", FACET),
    ([{"$facet": {"a": [{"$indexStats": {}}]}}], 40600, "Location40600", FACET),
    ([{"$match": {}}, {"$match": {"$text": {"$search": "x"}}}], 17313, "Location17313", TEXT),
    ([{"$facet": {"a": [{"$foo": 1}]}}], 40324, "Location40324", FACET),
]


@pytest.mark.parametrize(("pipeline", "code", "name", "page"), ERRORS)
def test_compile_errors(pipeline: list[Any], code: int, name: str, page: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_(pipeline)
    assert info.value.code == code
    assert info.value.code_name == name


def test_unknown_stage_message() -> None:
    with pytest.raises(CommandError) as info:
        compile_([{"$foo": {}}])
    assert info.value.errmsg == "Unrecognized pipeline stage name: '$foo'"


def test_registry_lists_unbuilt_stages() -> None:
    assert "$group" in STAGES
    assert {"$score", "$listSampledQueries"} <= STAGES.unbuilt
    assert {"$search", "$searchMeta", "$rankFusion", "$scoreFusion"} <= set(STAGES.names())


def shape(pipeline: list[Any]) -> list[tuple[str, Any]]:
    return [(stage.name, stage.spec) for stage in compile_(pipeline).stages]


# (pipeline, compiled stages as (name, spec), manual page)
REORDERED = [
    (
        [{"$project": {"a": 1}}, {"$match": {"a": 1}}],
        [("$match", {"a": 1}), ("$project", {"a": 1})],
        OPTIMIZATION + "#projection-optimization",
    ),
    (
        [{"$project": {"a": 1}}, {"$match": {"b": 1}}],
        [("$project", {"a": 1}), ("$match", {"b": 1})],
        OPTIMIZATION + "#projection-optimization",
    ),
    (
        [{"$project": {"a": 0}}, {"$match": {"b": 1}}],
        [("$match", {"b": 1}), ("$project", {"a": 0})],
        OPTIMIZATION + "#projection-optimization",
    ),
    (
        [{"$addFields": {"b": 1}}, {"$match": {"a": 1, "b": 2}}],
        [("$match", {"a": 1}), ("$addFields", {"b": 1}), ("$match", {"b": 2})],
        OPTIMIZATION + "#match-stage-splitting",
    ),
    (
        [{"$set": {"b.c": 1}}, {"$match": {"b.d": 1}}],
        [("$set", {"b.c": 1}), ("$match", {"b.d": 1})],
        OPTIMIZATION + "#match-stage-splitting",
    ),
    (
        [{"$sort": {"a": 1}}, {"$match": {"x": 1}}],
        [("$match", {"x": 1}), ("$sort", {"sortKey": {"a": 1}})],
        OPTIMIZATION + "#-sort----match-sequence-optimization",
    ),
    (
        [{"$sort": {"a": 1}}, {"$limit": 5}],
        [("$sort", {"sortKey": {"a": 1}, "limit": 5})],
        OPTIMIZATION + "#-sort----limit-coalescence",
    ),
    (
        [{"$sort": {"a": 1}}, {"$limit": 2}, {"$match": {"x": 1}}],
        [("$sort", {"sortKey": {"a": 1}, "limit": 2}), ("$match", {"x": 1})],
        OPTIMIZATION + "#-sort----limit-coalescence",
    ),
    (
        [{"$match": {"a": 1}}, {"$match": {"b": 1}}],
        [("$match", {"$and": [{"a": 1}, {"b": 1}]})],
        OPTIMIZATION + "#-match----match-coalescence",
    ),
    (
        [{"$skip": 2}, {"$limit": 3}],
        [("$limit", 5), ("$skip", 2)],
        OPTIMIZATION + "#-skip----limit-sequence-optimization",
    ),
    (
        [{"$sort": {"a": 1}}, {"$skip": 2}, {"$limit": 3}],
        [("$sort", {"sortKey": {"a": 1}, "limit": 5}), ("$skip", 2)],
        OPTIMIZATION + "#-sort----skip----limit-sequence",
    ),
    (
        [{"$limit": 10}, {"$limit": 4}],
        [("$limit", 4)],
        OPTIMIZATION + "#-limit----limit-coalescence",
    ),
    (
        [{"$skip": 1}, {"$skip": 4}],
        [("$skip", 5)],
        OPTIMIZATION + "#-skip----skip-coalescence",
    ),
    (
        [{"$unwind": "$a"}, {"$match": {"b": 1}}],
        [("$match", {"b": 1}), ("$unwind", "$a")],
        OPTIMIZATION,
    ),
    (
        [{"$unwind": "$a"}, {"$match": {"a.x": 1}}],
        [("$unwind", "$a"), ("$match", {"a.x": 1})],
        OPTIMIZATION,
    ),
    (
        [{"$project": {"a": 1}}, {"$match": {"$expr": {"$eq": ["$a", 1]}}}],
        [("$project", {"a": 1}), ("$match", {"$expr": {"$eq": ["$a", 1]}})],
        OPTIMIZATION + "#projection-optimization",
    ),
    (
        [{"$group": {"_id": "$a"}}, {"$match": {"_id": 1}}],
        [("$group", {"_id": "$a"}), ("$match", {"_id": 1})],
        OPTIMIZATION,
    ),
]


@pytest.mark.parametrize(("pipeline", "expected", "page"), REORDERED)
def test_reordering(pipeline: list[Any], expected: list[tuple[str, Any]], page: str) -> None:
    assert shape(pipeline) == expected


# (pipeline, (filter, sort, limit, projection), stages left for run(pushed=True))
PUSHDOWN = [
    # A plain $project right after the pushed stages is the find's projection (mongod pushes it down).
    ([{"$match": {"a": 1}}, {"$project": {"a": 1}}], ({"a": 1}, None, None, {"a": 1}), []),
    ([{"$project": {"a": 1}}, {"$match": {"a": 1}}], ({"a": 1}, None, None, {"a": 1}), []),
    ([{"$match": {"a": 1}}, {"$project": {"b": "$a"}}], ({"a": 1}, None, None, None), ["$project"]),
    ([{"$match": {"a": 1}}, {"$project": {"a": 0}}, {"$skip": 1}], ({"a": 1}, None, None, {"a": 0}), ["$skip"]),
    ([{"$match": {"a": 1}}, {"$sort": {"b": -1}}, {"$limit": 3}], ({"a": 1}, {"b": -1}, 3, None), []),
    ([{"$sort": {"b": 1}}, {"$match": {"a": 1}}], ({"a": 1}, {"b": 1}, None, None), []),
    ([{"$match": {"a": 1}}, {"$limit": 2}, {"$group": {"_id": 1}}], ({"a": 1}, None, 2, None), ["$group"]),
    ([{"$group": {"_id": 1}}, {"$match": {"_id": 1}}], (None, None, None, None), ["$group", "$match"]),
    ([], (None, None, None, None), []),
]


@pytest.mark.parametrize(("pipeline", "expected", "rest"), PUSHDOWN)
def test_pushdown(pipeline: list[Any], expected: tuple[Any, Any, Any, Any], rest: list[str]) -> None:
    p = compile_(pipeline)
    assert tuple(p.pushdown()) == expected
    assert p.leading_match() == expected[0]
    skipped = len(p.stages) - len(rest)
    assert [s.name for s in p.stages[skipped:]] == rest


def test_run_pushed_trusts_the_source() -> None:
    """With pushed=True the leading $match/$sort/$limit are the source's job."""
    p = compile_([{"$match": {"a": 1}}, {"$sort": {"a": 1}}, {"$limit": 1}, {"$project": {"_id": 0, "b": "$a"}}])
    source = [{"_id": 1, "a": 5}, {"_id": 2, "a": 6}]
    assert list(p.run(iter(source), pushed=True)) == [{"b": 5}, {"b": 6}]
    assert list(p.run(iter(source))) == []


def test_streaming_stages_read_lazily() -> None:
    consumed = 0

    def source() -> Iterator[dict[str, Any]]:
        nonlocal consumed
        for i in itertools.count():
            consumed += 1
            yield {"_id": i, "a": i % 2}

    p = compile_([{"$match": {"a": 1}}, {"$addFields": {"b": 1}}, {"$unwind": "$b"}, {"$limit": 3}])
    assert [d["_id"] for d in p.run(source())] == [1, 3, 5]
    assert consumed == 6


def test_blocking_stage_reads_everything_first() -> None:
    consumed = 0

    def source() -> Iterator[dict[str, Any]]:
        nonlocal consumed
        for i in range(10):
            consumed += 1
            yield {"_id": i}

    out = compile_([{"$group": {"_id": None, "n": {"$sum": 1}}}]).run(source())
    assert consumed == 0
    assert next(out) == {"_id": None, "n": 10}
    assert consumed == 10


def test_explain_lists_stages() -> None:
    p = compile_([{"$sort": {"a": 1}}, {"$limit": 2}, {"$project": {"a": 1}}])
    assert p.explain() == [{"$sort": {"sortKey": {"a": 1}, "limit": 2}}, {"$project": {"a": 1}}]


REORDERABLE = [
    [
        {"$addFields": {"c": {"$add": ["$a", "$b"]}}},
        {"$match": {"a": {"$gt": 0}, "c": {"$lt": 5}}},
        {"$unwind": "$tags"},
        {"$match": {"b": {"$ne": 2}}},
        {"$sort": {"tags": -1, "_id": 1}},
        {"$skip": 3},
        {"$limit": 7},
    ],
    [{"$project": {"a": 1, "tags": 1}}, {"$match": {"a": 1, "tags": {"$size": 2}}}, {"$skip": 1}, {"$skip": 1}],
    [{"$sort": {"b": 1, "_id": 1}}, {"$match": {"$or": [{"a": 0}, {"b": 4}]}}, {"$limit": 5}, {"$limit": 3}],
    [{"$unset": "b"}, {"$match": {"b": {"$exists": False}, "a": {"$in": [1, 2]}}}, {"$match": {"_id": {"$gte": 3}}}],
]

documents = st.lists(
    st.fixed_dictionaries(
        {
            "a": st.integers(0, 3),
            "b": st.one_of(st.integers(0, 5), st.none()),
            "tags": st.lists(st.integers(0, 4), max_size=3),
        }
    ),
    max_size=25,
).map(lambda docs: [{"_id": i, **d} for i, d in enumerate(docs)])


@settings(max_examples=40, deadline=None)
@given(documents, st.sampled_from(REORDERABLE))
def test_reordering_keeps_answers(docs: list[dict[str, Any]], pipeline: list[Any]) -> None:
    """OPTIMIZATION: the reordered pipeline and the literal one agree."""
    optimized = list(compile_(pipeline).run(iter(docs)))
    literal: Any = iter(docs)
    for stage in pipeline:  # each stage compiled alone: nothing to reorder
        literal = compile_([stage]).run(literal)
    assert optimized == list(literal)
