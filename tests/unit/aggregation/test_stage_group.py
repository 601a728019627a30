"""$group, $count, $sortByCount, and $group's spilling.

Expected results are computed by hand or with plain Python from the manual
pages cited.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest
from bson import Int64

from foliodb.aggregation.pipeline import LIMITS
from tests.unit.aggregation.runner import pipeline_error, run_pipeline

GROUP = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/group/"
COUNT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/count/"
SORT_BY_COUNT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/sortByCount/"
PUSH = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/push/"


def by_id(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs, key=lambda d: repr(d.get("_id")))


# (pipeline, input, expected output (any order), manual page)
CASES = [
    (
        [{"$group": {"_id": "$k", "n": {"$sum": 1}}}],
        [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": "1"}],
        [{"_id": 1, "n": 3}, {"_id": "1", "n": 1}],
        GROUP,
    ),
    (
        [{"$group": {"_id": "$k", "n": {"$sum": 1}}}],
        [{"k": None}, {}, {"k": 2}],
        [{"_id": None, "n": 2}, {"_id": 2, "n": 1}],
        GROUP + "#group-by-null",
    ),
    (
        [{"$group": {"_id": {"a": "$a", "b": "$b"}, "total": {"$sum": "$v"}}}],
        [{"a": 1, "b": 2, "v": 3}, {"a": 1, "b": 2, "v": 4}, {"a": 1, "v": 5}],
        [{"_id": {"a": 1}, "total": 5}, {"_id": {"a": 1, "b": 2}, "total": 7}],
        GROUP + "#group-by-multiple-fields",
    ),
    (
        [{"$group": {"_id": None}}],
        [{"a": 1}, {"a": 2}],
        [{"_id": None}],
        GROUP,
    ),
    (
        [{"$group": {"_id": "$a"}}],
        [{"a": 2}, {"a": 1}, {"a": 2}],
        [{"_id": 1}, {"_id": 2}],
        GROUP + "#retrieve-distinct-values",
    ),
    ([{"$count": "n"}], [{"a": 1}] * 4, [{"n": 4}], COUNT),
    ([{"$count": "n"}], [], [], COUNT),
    (
        [{"$sortByCount": "$tag"}],
        [{"tag": "x"}, {"tag": "y"}, {"tag": "x"}, {"tag": "x"}, {"tag": "y"}, {"tag": "z"}],
        [{"_id": "x", "count": 3}, {"_id": "y", "count": 2}, {"_id": "z", "count": 1}],
        SORT_BY_COUNT,
    ),
]


@pytest.mark.parametrize(("pipeline", "docs", "expected", "page"), CASES)
def test_grouping(pipeline: list[Any], docs: list[dict[str, Any]], expected: list[Any], page: str) -> None:
    assert by_id(run_pipeline(pipeline, docs)) == by_id(expected)


def test_sort_by_count_is_ordered() -> None:
    docs = [{"t": t} for t in "abbccc"]
    assert run_pipeline([{"$sortByCount": "$t"}], docs) == [
        {"_id": "c", "count": 3},
        {"_id": "b", "count": 2},
        {"_id": "a", "count": 1},
    ]


def test_first_group_key_is_kept() -> None:
    out = run_pipeline([{"$group": {"_id": "$k"}}], [{"k": 1.0}, {"k": 1}])
    assert out == [{"_id": 1.0}] and isinstance(out[0]["_id"], float)


# (stage, code, manual page)
ERRORS = [
    ({"$group": 1}, 15947, GROUP),
    ({"$group": {"n": {"$sum": 1}}}, 15955, GROUP),
    ({"$group": {"_id": None, "n": 1}}, 40234, GROUP),
    ({"$group": {"_id": None, "a.b": {"$sum": 1}}}, 40235, GROUP),
    ({"$group": {"_id": None, "$a": {"$sum": 1}}}, 40236, GROUP),
    ({"$group": {"_id": None, "a": {"$sum": 1, "$avg": 1}}}, 40238, GROUP),
    ({"$count": 1}, 40156, COUNT),
    ({"$count": ""}, 40157, COUNT),
    ({"$count": "$n"}, 40158, COUNT),
    ({"$count": "a.b"}, 40160, COUNT),
    ({"$sortByCount": "tag"}, 40148, SORT_BY_COUNT),
    ({"$sortByCount": {"a": 1}}, 40147, SORT_BY_COUNT),
    ({"$sortByCount": 1}, 40149, SORT_BY_COUNT),
]


@pytest.mark.parametrize(("stage", "code", "page"), ERRORS)
def test_errors(stage: dict[str, Any], code: int, page: str) -> None:
    assert pipeline_error([stage]).code == code


SPILL_PIPELINE = [
    {
        "$group": {
            "_id": "$k",
            "n": {"$sum": 1},
            "total": {"$sum": "$v"},
            "avg": {"$avg": "$v"},
            "first": {"$first": "$i"},
            "last": {"$last": "$i"},
            "pushed": {"$push": "$i"},
            "set": {"$addToSet": {"$mod": ["$v", 3]}},
            "min": {"$min": "$v"},
            "top2": {"$topN": {"n": 2, "sortBy": {"v": -1, "i": 1}, "output": "$i"}},
            "median": {"$median": {"input": "$v", "method": "approximate"}},
        }
    }
]


def spill_docs() -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [{"i": i, "k": rng.randrange(40), "v": rng.randrange(1000)} for i in range(3000)]


def expected_groups(docs: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    members: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for d in docs:
        members[d["k"]].append(d)
    out = {}
    for k, ds in members.items():
        vs = [d["v"] for d in ds]
        ordered = sorted(ds, key=lambda d: (-d["v"], d["i"]))
        out[k] = {
            "_id": k,
            "n": len(ds),
            "total": sum(vs),
            "avg": sum(vs) / len(vs),
            "first": ds[0]["i"],
            "last": ds[-1]["i"],
            "pushed": [d["i"] for d in ds],
            "set": sorted({v % 3 for v in vs}),
            "min": min(vs),
            "top2": [d["i"] for d in ordered[:2]],
            "median": float(sorted(vs)[max(0, -(-len(vs) // 2) - 1)]),
        }
    return out


def normalized(docs: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {d["_id"]: {**d, "set": sorted(d["set"])} for d in docs}


def test_group_spills_to_disk_and_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    """GROUP (#-group-and-memory-restrictions): past the limit, with
    allowDiskUse, partial groups spill and merge to the same answer."""
    docs = spill_docs()
    expected = expected_groups(docs)
    assert normalized(run_pipeline(SPILL_PIPELINE, docs)) == expected
    monkeypatch.setattr(LIMITS, "group_bytes", 20_000)
    assert normalized(run_pipeline(SPILL_PIPELINE, docs)) == expected


def test_group_over_the_limit_without_disk_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LIMITS, "group_bytes", 20_000)
    error = pipeline_error(SPILL_PIPELINE, spill_docs(), allow_disk_use=False)
    assert error.code == 292
    assert error.code_name == "QueryExceededMemoryLimitNoDiskUseAllowed"


def test_push_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """PUSH: a single $push past its memory limit fails with ExceededMemoryLimit."""
    monkeypatch.setattr(LIMITS, "push_bytes", 1000)
    error = pipeline_error([{"$group": {"_id": None, "a": {"$push": "$s"}}}], [{"s": "x" * 100}] * 20)
    assert error.code == 146
    assert error.code_name == "ExceededMemoryLimit"
