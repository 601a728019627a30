"""Gap-filling stages: $densify and $fill.

Expected documents follow the manual examples cited, worked out by hand.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Int64

from tests.unit.aggregation.runner import pipeline_error, run_pipeline

AGG = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
DENSIFY = AGG + "densify/"
FILL = AGG + "fill/"

D = datetime.datetime

WEATHER = [
    {"metadata": {"sensorId": 5578}, "timestamp": D(2021, 5, 18, 0), "temp": 12},
    {"metadata": {"sensorId": 5578}, "timestamp": D(2021, 5, 18, 4), "temp": 11},
    {"metadata": {"sensorId": 5578}, "timestamp": D(2021, 5, 18, 8), "temp": 11},
    {"metadata": {"sensorId": 5578}, "timestamp": D(2021, 5, 18, 12), "temp": 12},
]

COFFEE = [
    {"altitude": 600, "variety": "Arabica Typica", "score": 68.3},
    {"altitude": 750, "variety": "Arabica Typica", "score": 69.5},
    {"altitude": 950, "variety": "Arabica Typica", "score": 70.5},
    {"altitude": 1250, "variety": "Gesha", "score": 88.15},
    {"altitude": 1700, "variety": "Gesha", "score": 85.5},
    {"altitude": 1600, "variety": "SL28", "score": 84.5},
    {"altitude": 1750, "variety": "SL28", "score": 85},
    {"altitude": 1950, "variety": "SL28", "score": 85},
]


def test_densify_time_series() -> None:
    """DENSIFY (#densify-time-series-data): hourly steps in [lower, upper)."""
    out = run_pipeline(
        [
            {
                "$densify": {
                    "field": "timestamp",
                    "range": {"step": 1, "unit": "hour", "bounds": [D(2021, 5, 18, 0), D(2021, 5, 18, 8)]},
                }
            }
        ],
        WEATHER,
    )
    assert out == [
        WEATHER[0],
        {"timestamp": D(2021, 5, 18, 1)},
        {"timestamp": D(2021, 5, 18, 2)},
        {"timestamp": D(2021, 5, 18, 3)},
        WEATHER[1],
        {"timestamp": D(2021, 5, 18, 5)},
        {"timestamp": D(2021, 5, 18, 6)},
        {"timestamp": D(2021, 5, 18, 7)},
        WEATHER[2],
        WEATHER[3],
    ]


def test_densify_partitions() -> None:
    """DENSIFY (#densifiction-with-partitions): "partition" bounds step from each partition's minimum."""
    out = run_pipeline(
        [
            {
                "$densify": {
                    "field": "altitude",
                    "partitionByFields": ["variety"],
                    "range": {"bounds": "partition", "step": 200},
                }
            }
        ],
        COFFEE,
    )
    assert out == [
        COFFEE[0],
        COFFEE[1],
        {"variety": "Arabica Typica", "altitude": 800},
        COFFEE[2],
        COFFEE[3],
        {"variety": "Gesha", "altitude": 1450},
        {"variety": "Gesha", "altitude": 1650},
        COFFEE[4],
        COFFEE[5],
        COFFEE[6],
        {"variety": "SL28", "altitude": 1800},
        COFFEE[7],
    ]


def test_densify_full_bounds() -> None:
    """DENSIFY (#densifiction-with-partitions): "full" bounds fill every
    partition over the range of all documents (600..1950 step 200)."""
    out = run_pipeline(
        [
            {
                "$densify": {
                    "field": "altitude",
                    "partitionByFields": ["variety"],
                    "range": {"bounds": "full", "step": 200},
                }
            }
        ],
        COFFEE,
    )
    grid = range(600, 1951, 200)
    expected = sorted(
        [(d["variety"], d["altitude"], True) for d in COFFEE]
        + [
            (v, a, False)
            for v in ("Arabica Typica", "Gesha", "SL28")
            for a in grid
            if not any(d["variety"] == v and d["altitude"] == a for d in COFFEE)
        ]
    )
    assert sorted((d["variety"], d["altitude"], "score" in d) for d in out) == expected


def test_densify_passes_documents_without_the_field() -> None:
    out = run_pipeline(
        [{"$densify": {"field": "v", "range": {"step": 2, "bounds": "full"}}}], [{"v": 1}, {"x": 1}, {"v": 6}]
    )
    assert out == [{"x": 1}, {"v": 1}, {"v": 3}, {"v": 5}, {"v": 6}]


def test_densify_number_types() -> None:
    out = run_pipeline([{"$densify": {"field": "v", "range": {"step": Int64(1), "bounds": [Int64(0), Int64(2)]}}}], [])
    assert out == [{"v": 0}, {"v": 1}] and all(type(d["v"]) is Int64 for d in out)


# (stage, input, code, manual page)
DENSIFY_ERRORS = [
    ({"$densify": 1}, [], 9, DENSIFY),
    ({"$densify": {"field": "v"}}, [], 40414, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}, "x": 1}}, [], 40415, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 0, "bounds": "full"}}}, [], 5733401, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1.5, "unit": "day", "bounds": "full"}}}, [], 6586400, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": [1]}}}, [], 5733403, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": [2, 1]}}}, [], 5733402, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "unit": "day", "bounds": [1, 2]}}}, [], 5733409, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": [1, 2.5]}}}, [], 5876900, DENSIFY),
    (
        {"$densify": {"field": "v", "range": {"step": 1, "bounds": [D(2020, 1, 1), D(2020, 1, 2)]}}},
        [],
        5733410,
        DENSIFY,
    ),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": "some"}}}, [], 5946802, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": 5}}}, [], 5733404, DENSIFY),
    ({"$densify": {"field": "v", "range": {"step": 1, "bounds": "partition"}}}, [], 5733408, DENSIFY),
    (
        {"$densify": {"field": "v", "partitionByFields": ["v"], "range": {"step": 1, "bounds": "full"}}},
        [],
        8993000,
        DENSIFY,
    ),
]


@pytest.mark.parametrize(("stage", "docs", "code", "page"), DENSIFY_ERRORS)
def test_densify_errors(stage: dict[str, Any], docs: list[dict[str, Any]], code: int, page: str) -> None:
    assert pipeline_error([stage], docs).code == code


SALES = [
    {"day": 1, "boots": 10, "sandals": None},
    {"day": 2, "sandals": 20},
    {"day": 3, "boots": None, "sandals": 30},
]


def test_fill_constant_value() -> None:
    """FILL (#fill-missing-field-values-with-a-constant-value)."""
    out = run_pipeline([{"$fill": {"output": {"boots": {"value": 0}, "sandals": {"value": 0}}}}], SALES)
    assert [(d["boots"], d["sandals"]) for d in out] == [(10, 0), (0, 20), (0, 30)]


def test_fill_linear_and_locf() -> None:
    """FILL (#fill-missing-field-values-with-linear-interpolation, ...-based-on-the-last-observed-value)."""
    stock = [
        {"time": D(2021, 3, 8, 9, 0), "price": 500, "qty": 1},
        {"time": D(2021, 3, 8, 10, 0)},
        {"time": D(2021, 3, 8, 11, 0), "price": 515, "qty": None},
        {"time": D(2021, 3, 8, 12, 0)},
        {"time": D(2021, 3, 8, 13, 0)},
        {"time": D(2021, 3, 8, 14, 0), "price": 485, "qty": 4},
    ]
    out = run_pipeline(
        [{"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}, "qty": {"method": "locf"}}}}],
        stock,
    )
    assert [d["price"] for d in out] == [500, 507.5, 515, 505.0, 495.0, 485]
    assert [d["qty"] for d in out] == [1, 1, 1, 1, 1, 4]


def test_fill_partitions() -> None:
    """FILL (#fill-data-for-distinct-partitions): partitionByFields keeps partitions apart."""
    docs = [
        {"shop": "a", "day": 1, "n": 5},
        {"shop": "b", "day": 1, "n": 7},
        {"shop": "a", "day": 2},
        {"shop": "b", "day": 2},
    ]
    out = run_pipeline(
        [{"$fill": {"sortBy": {"day": 1}, "partitionByFields": ["shop"], "output": {"n": {"method": "locf"}}}}], docs
    )
    assert sorted((d["shop"], d["day"], d["n"]) for d in out) == [("a", 1, 5), ("a", 2, 5), ("b", 1, 7), ("b", 2, 7)]


# (stage, code, manual page)
FILL_ERRORS = [
    ({"$fill": 1}, 9, FILL),
    ({"$fill": {"sortBy": {"a": 1}}}, 40414, FILL),
    ({"$fill": {"output": {}}}, 6050203, FILL),
    ({"$fill": {"output": {"a": 1}}}, 6050200, FILL),
    ({"$fill": {"output": {"a": {"method": "locf", "value": 1}}}}, 6050201, FILL),
    ({"$fill": {"output": {"a": {"method": "zero"}}}}, 6050202, FILL),
    ({"$fill": {"output": {"a": {"value": 1}}, "partitionBy": "$p", "partitionByFields": ["p"]}}, 6050204, FILL),
    ({"$fill": {"output": {"a": {"method": "linear"}}}}, 605001, FILL),
    ({"$fill": {"output": {"a": {"value": 1}}, "x": 1}}, 40415, FILL),
]


@pytest.mark.parametrize(("stage", "code", "page"), FILL_ERRORS)
def test_fill_errors(stage: dict[str, Any], code: int, page: str) -> None:
    assert pipeline_error([stage]).code == code
