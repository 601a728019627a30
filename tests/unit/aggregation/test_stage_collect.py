"""Stages over many documents: $sort $limit $skip $sample $facet $bucket
$bucketAuto $documents.

Expected results are worked out by hand from the manual page cited.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Decimal128

from foliodb.aggregation.pipeline import LIMITS
from foliodb.aggregation.stages.bucket import rounder
from tests.unit.aggregation.runner import pipeline_error, run_pipeline

AGG = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
SORT = AGG + "sort/"
LIMIT = AGG + "limit/"
SKIP = AGG + "skip/"
SAMPLE = AGG + "sample/"
FACET = AGG + "facet/"
BUCKET = AGG + "bucket/"
BUCKET_AUTO = AGG + "bucketAuto/"
DOCUMENTS = AGG + "documents/"

NUMS = [{"_id": i, "v": v} for i, v in enumerate([5, 3, 9, 1, 7, 3])]

# (pipeline, input, expected output in order, manual page)
ORDERED = [
    ([{"$sort": {"v": 1, "_id": -1}}], NUMS, [3, 5, 1, 0, 4, 2], SORT),
    ([{"$sort": {"v": -1}}, {"$limit": 2}], NUMS, [2, 4], SORT + "#-sort-operator-and-memory"),
    ([{"$sort": {"v": 1}}], NUMS, [3, 1, 5, 0, 4, 2], SORT + "#sort-consistency"),
    ([{"$limit": 2}], NUMS, [0, 1], LIMIT),
    ([{"$skip": 4}], NUMS, [4, 5], SKIP),
    ([{"$skip": 0}], NUMS, [0, 1, 2, 3, 4, 5], SKIP),
    ([{"$sort": {"v": 1}}, {"$skip": 1}, {"$limit": 3}], NUMS, [1, 5, 0], SKIP),
    ([{"$limit": 1.0}], NUMS, [0], LIMIT),
]


@pytest.mark.parametrize(("pipeline", "docs", "ids", "page"), ORDERED)
def test_ordering(pipeline: list[Any], docs: list[dict[str, Any]], ids: list[int], page: str) -> None:
    assert [d["_id"] for d in run_pipeline(pipeline, docs)] == ids


def test_sort_spills_with_allow_disk_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """SORT (#-sort-operator-and-memory): past 100 MB a sort spills, or fails with 292."""
    docs = [{"_id": i, "v": (i * 7919) % 1000, "pad": "x" * 50} for i in range(2000)]
    expected = sorted(docs, key=lambda d: (d["v"], d["_id"]))
    monkeypatch.setattr(LIMITS, "sort_bytes", 10_000)
    assert run_pipeline([{"$sort": {"v": 1}}], docs) == expected
    assert pipeline_error([{"$sort": {"v": 1}}], docs, allow_disk_use=False).code == 292


def test_limit_error_message() -> None:
    assert pipeline_error([{"$limit": -1}]).errmsg == (
        "invalid argument to $limit stage: Expected a non-negative number in: $limit: -1"
    )


def test_sample_size_and_membership() -> None:
    """SAMPLE: size documents, chosen from the input, no repeats."""
    out = run_pipeline([{"$sample": {"size": 4}}], NUMS)
    assert len(out) == 4 and len({d["_id"] for d in out}) == 4
    assert all(d in NUMS for d in out)
    assert len(run_pipeline([{"$sample": {"size": 50}}], NUMS)) == 6


def test_sample_is_random() -> None:
    firsts = {run_pipeline([{"$sample": {"size": 1}}], NUMS)[0]["_id"] for _ in range(60)}
    assert len(firsts) > 1


ARTISTS = [
    {"_id": 1, "last_name": "Bernard", "year_born": 1845},
    {"_id": 2, "last_name": "Rippl-Ronai", "year_born": 1861},
    {"_id": 3, "last_name": "Ostroumova", "year_born": 1871},
    {"_id": 4, "last_name": "Van Gogh", "year_born": 1853},
    {"_id": 5, "last_name": "Maurer", "year_born": 1868},
    {"_id": 6, "last_name": "Munch", "year_born": 1863},
    {"_id": 7, "last_name": "Klimt", "year_born": 1862},
    {"_id": 8, "last_name": "Hokusai", "year_born": 1760},
    {"_id": 9, "last_name": "Unknown"},
]

PRICES = ["199.99", "280.00", "76.04", "167.30", "483.00", "385.00", "159.00", "118.42"]
ARTWORK = [{"_id": i + 1, "price": Decimal128(p)} for i, p in enumerate(PRICES)]

# (pipeline, input, expected output in order, manual page)
COLLECTING = [
    (
        [
            {
                "$bucket": {
                    "groupBy": "$year_born",
                    "boundaries": [1840, 1850, 1860, 1870, 1880],
                    "default": "Other",
                    "output": {"count": {"$sum": 1}, "artists": {"$push": "$last_name"}},
                }
            }
        ],
        ARTISTS,
        [
            {"_id": 1840, "count": 1, "artists": ["Bernard"]},
            {"_id": 1850, "count": 1, "artists": ["Van Gogh"]},
            {"_id": 1860, "count": 4, "artists": ["Rippl-Ronai", "Maurer", "Munch", "Klimt"]},
            {"_id": 1870, "count": 1, "artists": ["Ostroumova"]},
            {"_id": "Other", "count": 2, "artists": ["Hokusai", "Unknown"]},
        ],
        BUCKET + "#bucket-by-year-and-filter-by-bucket-results",
    ),
    (
        [{"$bucket": {"groupBy": "$year_born", "boundaries": [1800, 1860, 1900], "default": 0}}],
        ARTISTS,
        [{"_id": 0, "count": 2}, {"_id": 1800, "count": 2}, {"_id": 1860, "count": 5}],
        BUCKET,
    ),
    (
        [{"$bucketAuto": {"groupBy": "$price", "buckets": 4}}],
        ARTWORK,
        [
            {"_id": {"min": Decimal128("76.04"), "max": Decimal128("159.00")}, "count": 2},
            {"_id": {"min": Decimal128("159.00"), "max": Decimal128("199.99")}, "count": 2},
            {"_id": {"min": Decimal128("199.99"), "max": Decimal128("385.00")}, "count": 2},
            {"_id": {"min": Decimal128("385.00"), "max": Decimal128("483.00")}, "count": 2},
        ],
        BUCKET_AUTO + "#single-facet-aggregation",
    ),
    (
        [
            {
                "$bucketAuto": {
                    "groupBy": "$v",
                    "buckets": 2,
                    "output": {"ids": {"$push": "$_id"}, "first": {"$first": "$_id"}},
                }
            }
        ],
        [{"_id": 1, "v": 3}, {"_id": 2, "v": 1}, {"_id": 3, "v": 3}, {"_id": 4, "v": 2}, {"_id": 5, "v": 3}],
        # size round(5/2)=3: [1, 2, 3] then the equal 3s stay together; input order inside a bucket.
        [{"_id": {"min": 1, "max": 3}, "ids": [1, 2, 3, 4, 5], "first": 1}],
        BUCKET_AUTO + "#behavior",
    ),
    (
        [{"$bucketAuto": {"groupBy": "$v", "buckets": 5}}],
        [{"v": 1}, {"v": 2}],
        [{"_id": {"min": 1, "max": 2}, "count": 1}, {"_id": {"min": 2, "max": 2}, "count": 1}],
        BUCKET_AUTO + "#behavior",
    ),
    (
        [{"$bucketAuto": {"groupBy": "$v", "buckets": 3, "granularity": "1-2-5"}}],
        [{"v": v} for v in range(1, 11)],
        [
            {"_id": {"min": 0.5, "max": 5.0}, "count": 4},
            {"_id": {"min": 5.0, "max": 10.0}, "count": 5},
            {"_id": {"min": 10.0, "max": 20.0}, "count": 1},
        ],
        BUCKET_AUTO + "#granularity",
    ),
    (
        [{"$facet": {"n": [{"$count": "n"}], "top": [{"$sort": {"v": -1}}, {"$limit": 1}, {"$project": {"_id": 1}}]}}],
        NUMS,
        [{"n": [{"n": 6}], "top": [{"_id": 2}]}],
        FACET,
    ),
    ([{"$facet": {"a": [{"$match": {"x": 1}}]}}], NUMS, [{"a": []}], FACET),
    (
        [{"$documents": [{"a": 1}, {"a": 2}]}, {"$set": {"b": {"$add": ["$a", 1]}}}],
        [{"ignored": True}],
        [{"a": 1, "b": 2}, {"a": 2, "b": 3}],
        DOCUMENTS,
    ),
    (
        [{"$documents": {"$map": {"input": {"$range": [0, 3]}, "in": {"n": "$$this"}}}}],
        [],
        [{"n": 0}, {"n": 1}, {"n": 2}],
        DOCUMENTS,
    ),
]


@pytest.mark.parametrize(("pipeline", "docs", "expected", "page"), COLLECTING)
def test_collecting(pipeline: list[Any], docs: list[dict[str, Any]], expected: list[Any], page: str) -> None:
    out = run_pipeline(pipeline, docs)
    assert out == expected
    assert [type(d["_id"]["min"]) for d in out if isinstance(d.get("_id"), dict)] == [
        type(d["_id"]["min"]) for d in expected if isinstance(d.get("_id"), dict)
    ]


# (series, value, rounded up, rounded down, manual page)
ROUNDING = [
    ("R5", 1.0, 1.6, 0.63, BUCKET_AUTO + "#renard-series"),
    ("R5", 25, 40.0, 16.0, BUCKET_AUTO + "#renard-series"),
    ("E6", 0.8, 1.0, 0.68, BUCKET_AUTO + "#e-series"),
    ("1-2-5", 3, 5.0, 2.0, BUCKET_AUTO + "#1-2-5-series"),
    ("1-2-5", 50, 100.0, 20.0, BUCKET_AUTO + "#1-2-5-series"),
    ("POWERSOF2", 4, 8, 2, BUCKET_AUTO + "#powers-of-two-series"),
    ("POWERSOF2", 5, 8, 4, BUCKET_AUTO + "#powers-of-two-series"),
    ("POWERSOF2", 0.3, 0.5, 0.25, BUCKET_AUTO + "#powers-of-two-series"),
    ("E12", Decimal128("3.3"), Decimal128("3.9"), Decimal128("2.7"), BUCKET_AUTO + "#e-series"),
    ("R10", 0, 0, 0, BUCKET_AUTO + "#considerations"),
]


@pytest.mark.parametrize(("series", "value", "up", "down", "page"), ROUNDING)
def test_granularity_rounding(series: str, value: Any, up: Any, down: Any, page: str) -> None:
    r = rounder(series)
    assert r.round_up(value) == pytest.approx(up) if isinstance(up, float) else r.round_up(value) == up
    assert r.round_down(value) == pytest.approx(down) if isinstance(down, float) else r.round_down(value) == down


# (stage, input, code, manual page)
ERRORS = [
    ({"$sort": 1}, [], 15973, SORT),
    ({"$sort": {}}, [], 15976, SORT),
    ({"$sort": {"a": 2}}, [], 15975, SORT),
    ({"$limit": "1"}, [], 5107201, LIMIT),
    ({"$limit": 1.5}, [], 5107201, LIMIT),
    ({"$limit": -1}, [], 5107201, LIMIT),
    ({"$limit": 0}, [], 15958, LIMIT),
    ({"$skip": "1"}, [], 5107200, SKIP),
    ({"$skip": 2.5}, [], 5107200, SKIP),
    ({"$skip": -1}, [], 5107200, SKIP),
    ({"$sample": 1}, [], 28745, SAMPLE),
    ({"$sample": {}}, [], 28749, SAMPLE),
    ({"$sample": {"size": "1"}}, [], 28746, SAMPLE),
    ({"$sample": {"size": -1}}, [], 28747, SAMPLE),
    ({"$sample": {"size": 0}}, [], 28747, SAMPLE),
    ({"$sample": {"size": 1, "x": 1}}, [], 28748, SAMPLE),
    ({"$facet": {}}, [], 40169, FACET),
    ({"$facet": {"a": 1}}, [], 40170, FACET),
    ({"$facet": {"a": [1]}}, [], 40171, FACET),
    ({"$facet": {"$a": [{"$limit": 1}]}}, [], 16410, FACET),
    ({"$bucket": 1}, [], 40201, BUCKET),
    ({"$bucket": {"groupBy": "$a"}}, [], 40198, BUCKET),
    ({"$bucket": {"groupBy": "a", "boundaries": [1, 2]}}, [], 40202, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": 1}}, [], 40200, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [1]}}, [], 40192, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [1, "a"]}}, [], 40193, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [2, 1]}}, [], 40194, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [1, 3], "default": 2}}, [], 40199, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [1, 3], "output": 1}}, [], 40196, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [1, 3], "x": 1}}, [], 40197, BUCKET),
    ({"$bucket": {"groupBy": "$a", "boundaries": [1, 3]}}, [{"a": 5}], 40066, BUCKET),
    ({"$bucketAuto": 1}, [], 40240, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a"}}, [], 40246, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "a", "buckets": 2}}, [], 40239, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": "2"}}, [], 40241, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 1.5}}, [], 40242, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 0}}, [], 40243, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "output": 1}}, [], 40244, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "x": 1}}, [], 40245, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "granularity": 1}}, [], 40261, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "granularity": "R7"}}, [], 40257, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "granularity": "R5"}}, [{"a": "x"}], 40258, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "granularity": "R5"}}, [{"a": float("nan")}], 40259, BUCKET_AUTO),
    ({"$bucketAuto": {"groupBy": "$a", "buckets": 2, "granularity": "R5"}}, [{"a": -1}], 40260, BUCKET_AUTO),
    ({"$documents": [1]}, [], 40228, DOCUMENTS),
]


@pytest.mark.parametrize(("stage", "docs", "code", "page"), ERRORS)
def test_errors(stage: dict[str, Any], docs: list[dict[str, Any]], code: int, page: str) -> None:
    assert pipeline_error([stage], docs).code == code
