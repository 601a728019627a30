"""$setWindowFields: windows, accumulators as window functions and the
window-only operators.

Expected values are worked out by hand from the manual page cited.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Int64

from tests.unit.aggregation.runner import pipeline_error, run_pipeline

AGG = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
SWF = AGG + "setWindowFields/"
WINDOW = SWF + "#window-operators"
RANK = AGG + "rank/"
DENSE = AGG + "denseRank/"
DOCNUM = AGG + "documentNumber/"
SHIFT = AGG + "shift/"
DERIVATIVE = AGG + "derivative/"
INTEGRAL = AGG + "integral/"
EMA = AGG + "expMovingAvg/"
COV_POP = AGG + "covariancePop/"
COV_SAMP = AGG + "covarianceSamp/"
LOCF = AGG + "locf/"
LINEAR = AGG + "linearFill/"

D = datetime.datetime

CAKES = [
    {
        "_id": 0,
        "type": "chocolate",
        "orderDate": D(2020, 5, 18, 14, 10, 30),
        "state": "CA",
        "price": 13,
        "quantity": 120,
    },
    {
        "_id": 1,
        "type": "chocolate",
        "orderDate": D(2021, 3, 20, 11, 30, 5),
        "state": "WA",
        "price": 14,
        "quantity": 140,
    },
    {"_id": 2, "type": "vanilla", "orderDate": D(2021, 1, 11, 6, 31, 15), "state": "CA", "price": 12, "quantity": 145},
    {"_id": 3, "type": "vanilla", "orderDate": D(2020, 2, 8, 13, 13, 23), "state": "WA", "price": 13, "quantity": 104},
    {
        "_id": 4,
        "type": "strawberry",
        "orderDate": D(2019, 5, 18, 16, 9, 1),
        "state": "CA",
        "price": 41,
        "quantity": 162,
    },
    {"_id": 5, "type": "strawberry", "orderDate": D(2019, 1, 8, 6, 12, 3), "state": "WA", "price": 43, "quantity": 134},
]

SERIES = [{"_id": i, "x": x, "v": v} for i, (x, v) in enumerate([(1, 10), (2, 20), (4, 30), (7, 40)])]


def window(output: dict[str, Any], sort_by: dict[str, Any] | None = None, partition_by: Any = None) -> list[Any]:
    spec: dict[str, Any] = {"output": output}
    if sort_by is not None:
        spec["sortBy"] = sort_by
    if partition_by is not None:
        spec["partitionBy"] = partition_by
    return [{"$setWindowFields": spec}]


def column(out: list[dict[str, Any]], name: str) -> list[Any]:
    return [d.get(name, "MISSING") for d in out]


# (stage, input, output field, values in output order, manual page)
CASES = [
    (
        window(
            {"c": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}, {"orderDate": 1}, "$state"
        ),
        CAKES,
        "c",
        [162, 282, 427, 134, 238, 378],
        SWF + "#use-documents-window-to-obtain-cumulative-quantity-for-each-state",
    ),
    (
        window({"a": {"$avg": "$v", "window": {"documents": [-1, 1]}}}, {"x": 1}),
        SERIES,
        "a",
        [15.0, 20.0, 30.0, 35.0],
        SWF + "#use-documents-window-to-obtain-moving-average-quantity-for-each-year",
    ),
    (window({"m": {"$max": "$v"}}), SERIES, "m", [40, 40, 40, 40], SWF + "#window-operators"),
    (
        window({"p": {"$push": "$x", "window": {"documents": ["unbounded", "current"]}}}, {"x": 1}),
        SERIES,
        "p",
        [[1], [1, 2], [1, 2, 4], [1, 2, 4, 7]],
        WINDOW,
    ),
    (
        window(
            {
                "m": {
                    "$mergeObjects": {"$arrayToObject": [[["k", "$x"]]]},
                    "window": {"documents": ["unbounded", "current"]},
                }
            },
            {"x": 1},
        ),
        SERIES[:2],
        "m",
        [{"k": 1}, {"k": 2}],
        WINDOW,
    ),
    (
        window({"s": {"$sum": "$v", "window": {"range": [-2, 0]}}}, {"x": 1}),
        SERIES,
        "s",
        [10, 30, 50, 40],
        SWF + "#use-a-range-window-with-a-positive-upper-bound",
    ),
    (
        window({"s": {"$push": "$x", "window": {"range": ["current", 3]}}}, {"x": 1}),
        SERIES,
        "s",
        [[1, 2, 4], [2, 4], [4, 7], [7]],
        SWF,
    ),
    (
        window({"s": {"$push": "$x", "window": {"documents": [1, 2]}}}, {"x": 1}),
        SERIES,
        "s",
        [[2, 4], [4, 7], [7], []],
        SWF,
    ),
    (
        window({"f": {"$first": "$v", "window": {"documents": [-1, 0]}}, "l": {"$last": "$nope"}}, {"x": 1}),
        SERIES,
        "f",
        [10, 10, 20, 30],
        WINDOW,
    ),
    (
        window(
            {
                "t": {
                    "$topN": {"n": 2, "sortBy": {"v": -1}, "output": "$x"},
                    "window": {"documents": ["unbounded", "current"]},
                }
            },
            {"x": 1},
        ),
        SERIES,
        "t",
        [[1], [2, 1], [4, 2], [7, 4]],
        WINDOW,
    ),
    (
        window(
            {"m": {"$median": {"input": "$v", "method": "approximate"}, "window": {"documents": [-1, 1]}}}, {"x": 1}
        ),
        SERIES,
        "m",
        [10.0, 20.0, 30.0, 30.0],
        WINDOW,
    ),
    (
        window({"r": {"$rank": {}}, "d": {"$denseRank": {}}, "n": {"$documentNumber": {}}}, {"s": -1}),
        [{"_id": 0, "s": 9}, {"_id": 1, "s": 7}, {"_id": 2, "s": 9}, {"_id": 3, "s": 5}],
        "r",
        [1, 1, 3, 4],
        RANK,
    ),
    (
        window({"d": {"$denseRank": {}}}, {"s": -1}),
        [{"_id": 0, "s": 9}, {"_id": 1, "s": 7}, {"_id": 2, "s": 9}, {"_id": 3, "s": 5}],
        "d",
        [1, 1, 2, 3],
        DENSE,
    ),
    (
        window({"n": {"$documentNumber": {}}}, {"s": -1}, "$g"),
        [{"g": 1, "s": 1}, {"g": 2, "s": 1}, {"g": 1, "s": 2}],
        "n",
        [1, 2, 1],
        DOCNUM,
    ),
    (
        window({"p": {"$shift": {"output": "$v", "by": -1, "default": "none"}}}, {"x": 1}),
        SERIES,
        "p",
        ["none", 10, 20, 30],
        SHIFT,
    ),
    (
        window({"p": {"$shift": {"output": "$v", "by": 2}}}, {"x": 1}),
        SERIES,
        "p",
        [30, 40, None, None],
        SHIFT,
    ),
    (
        window({"d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}}, {"t": 1}),
        [{"t": 0, "v": 0}, {"t": 10, "v": 5}, {"t": 20, "v": 20}],
        "d",
        [None, 0.5, 1.5],
        DERIVATIVE,
    ),
    (
        window({"d": {"$derivative": {"input": "$v", "unit": "second"}, "window": {"documents": [-1, 0]}}}, {"t": 1}),
        [{"t": D(2024, 1, 1), "v": 0}, {"t": D(2024, 1, 1, 0, 0, 10), "v": 50}],
        "d",
        [None, 5.0],
        DERIVATIVE,
    ),
    (
        window({"i": {"$integral": {"input": "$v"}, "window": {"documents": ["unbounded", "current"]}}}, {"t": 1}),
        [{"t": 0, "v": 0}, {"t": 2, "v": 2}, {"t": 4, "v": 4}],
        "i",
        [0, 2.0, 8.0],
        INTEGRAL,
    ),
    (
        window(
            {"i": {"$integral": {"input": "$v", "unit": "hour"}, "window": {"range": [-1, 0], "unit": "hour"}}},
            {"t": 1},
        ),
        [{"t": D(2024, 1, 1), "v": 10}, {"t": D(2024, 1, 1, 1), "v": 20}, {"t": D(2024, 1, 1, 3), "v": 20}],
        "i",
        [0.0, 15.0, 0.0],
        INTEGRAL,
    ),
    (
        window({"e": {"$expMovingAvg": {"input": "$v", "alpha": 0.5}}}, {"x": 1}),
        [{"x": 1, "v": 2}, {"x": 2, "v": 4}, {"x": 3, "v": "skip"}, {"x": 4, "v": 8}],
        "e",
        [2.0, 3.0, 3.0, 5.5],
        EMA,
    ),
    (
        window({"c": {"$covariancePop": ["$x", "$y"]}, "s": {"$covarianceSamp": ["$x", "$y"]}}),
        [{"x": 1, "y": 2}, {"x": 2, "y": 4}, {"x": 3, "y": 6}, {"x": "a", "y": 1}],
        "c",
        [4 / 3] * 4,
        COV_POP,
    ),
    (
        window({"s": {"$covarianceSamp": ["$x", "$y"]}}),
        [{"x": 1, "y": 2}, {"x": 2, "y": 4}, {"x": 3, "y": 6}],
        "s",
        [2.0, 2.0, 2.0],
        COV_SAMP,
    ),
    (
        window({"v": {"$locf": "$v"}}, {"x": 1}),
        [{"x": 1}, {"x": 2, "v": 1}, {"x": 3, "v": None}, {"x": 4}, {"x": 5, "v": 4}],
        "v",
        [None, 1, 1, 1, 4],
        LOCF,
    ),
    (
        window({"v": {"$linearFill": "$v"}}, {"x": 1}),
        [{"x": 1, "v": 10}, {"x": 2}, {"x": 3, "v": None}, {"x": 4, "v": 40}, {"x": 5}],
        "v",
        [10, 20.0, 30.0, 40, None],
        LINEAR,
    ),
]


@pytest.mark.parametrize(("pipeline", "docs", "field", "expected", "page"), CASES)
def test_window(pipeline: list[Any], docs: list[dict[str, Any]], field: str, expected: list[Any], page: str) -> None:
    out = run_pipeline(pipeline, docs)
    values = column(out, field)
    assert values == pytest.approx(expected) if all(isinstance(v, float) for v in expected) else values == expected
    assert [type(v) for v in values] == [type(v) for v in expected]


def test_output_documents_and_order() -> None:
    """SWF: documents come out grouped by partition in sortBy order, with the
    output fields added (nested paths too)."""
    out = run_pipeline(
        window({"w.n": {"$documentNumber": {}}, "last": {"$last": "$nope"}}, {"orderDate": 1}, "$state"),
        CAKES,
    )
    assert [d["_id"] for d in out] == [4, 0, 2, 5, 3, 1]
    assert out[0] == {**CAKES[4], "w": {"n": 1}, "last": None}


def test_range_window_with_calendar_unit() -> None:
    """SWF (#range-window-example-with-a-unit): month steps are calendar months."""
    docs = [{"d": D(2021, 1, 31)}, {"d": D(2021, 2, 28)}, {"d": D(2021, 3, 31)}, {"d": D(2021, 5, 1)}]
    out = run_pipeline(window({"n": {"$count": {}, "window": {"range": [-1, 0], "unit": "month"}}}, {"d": 1}), docs)
    assert column(out, "n") == [1, 2, 2, 1]


def test_partition_values() -> None:
    """SWF: missing partition key is the null partition; arrays are an error."""
    out = run_pipeline(window({"n": {"$count": {}}}, partition_by="$p"), [{"p": None}, {}, {"p": 1}])
    assert column(out, "n") == [2, 2, 1]
    assert pipeline_error(window({"n": {"$count": {}}}, partition_by="$p"), [{"p": [1]}]).code == 14


def test_rank_types() -> None:
    out = run_pipeline(window({"r": {"$rank": {}}}, {"s": 1}), [{"s": 1}])
    assert out[0]["r"] == 1 and type(out[0]["r"]) is int
    shifted = run_pipeline(window({"p": {"$shift": {"output": "$s", "by": Int64(0)}}}, {"s": 1}), [{"s": 4}])
    assert shifted[0]["p"] == 4


# (stage, input, code, manual page)
ERRORS = [
    (window({"a": {"$foo": 1}}), [], 9, SWF),
    (window({"a": {"window": {}}}), [], 9, SWF),
    (window({"a": 1}), [], 9, SWF),
    (window({"a": {"$sum": 1, "x": 1}}), [], 9, SWF),
    (window({"a": {"$sum": 1, "$avg": 1}}), [], 9, SWF),
    (window({"a": {"$sum": 1}, "a.b": {"$sum": 1}}), [], 6307900, SWF),
    ([{"$setWindowFields": {"sortBy": {"a": 1}}}], [], 40414, SWF),
    ([{"$setWindowFields": {"output": {}, "x": 1}}], [], 40415, SWF),
    ([{"$setWindowFields": 1}], [], 9, SWF),
    (window({"a": {"$sum": 1, "window": {"documents": [0, 1]}}}), [], 5339901, SWF + "#window-boundaries"),
    (window({"a": {"$sum": 1, "window": {"documents": [1, 0]}}}, {"x": 1}), [], 5339900, SWF),
    (window({"a": {"$sum": 1, "window": {"documents": [0, "x"]}}}, {"x": 1}), [], 9, SWF),
    (window({"a": {"$sum": 1, "window": {"documents": [0, 1.5]}}}, {"x": 1}), [], 9, SWF),
    (window({"a": {"$sum": 1, "window": {"documents": [0]}}}, {"x": 1}), [], 9, SWF),
    (window({"a": {"$sum": 1, "window": {"documents": [0, 1], "range": [0, 1]}}}, {"x": 1}), [], 9, SWF),
    (window({"a": {"$sum": 1, "window": {"documents": [0, 1], "unit": "day"}}}, {"x": 1}), [], 9, SWF),
    (window({"a": {"$sum": 1, "window": {"range": [0, 1]}}}, {"x": 1, "y": 1}), [], 5339902, SWF),
    (window({"a": {"$sum": 1, "window": {"range": [0, 1]}}}, {"x": -1}), [], 8947401, SWF),
    (window({"a": {"$sum": 1, "window": {"range": [0, 1]}}}, {"x": 1}), [{"x": "a"}], 5429414, SWF),
    (window({"a": {"$sum": 1, "window": {"range": [0, 1], "unit": "day"}}}, {"x": 1}), [{"x": 1}], 5429513, SWF),
    (window({"a": {"$sum": 1, "window": {"range": [0, 1.5], "unit": "day"}}}, {"x": 1}), [], 9, SWF),
    (window({"a": {"$rank": {}}}), [], 5371602, RANK),
    (window({"a": {"$rank": 1}}, {"x": 1}), [], 5371603, RANK),
    (window({"a": {"$rank": {}, "window": {}}}, {"x": 1}), [], 5371601, RANK),
    (window({"a": {"$rank": {}}}, {"x": 1, "y": 1}), [], 5371602, RANK),
    (window({"a": {"$shift": {"output": "$v"}}}, {"x": 1}), [], 9, SHIFT),
    (window({"a": {"$shift": {"by": 1}}}, {"x": 1}), [], 9, SHIFT),
    (window({"a": {"$shift": {"output": "$v", "by": 1}}}), [], 9, SHIFT),
    (window({"a": {"$shift": {"output": "$v", "by": 1.5}}}, {"x": 1}), [], 9, SHIFT),
    (window({"a": {"$shift": {"output": "$v", "by": 1, "default": "$v"}}}, {"x": 1}), [], 9, SHIFT),
    (window({"a": {"$shift": {"output": "$v", "by": 1}, "window": {}}}, {"x": 1}), [], 9, SHIFT),
    (window({"a": {"$derivative": {"input": "$v"}}}, {"x": 1}), [], 9, DERIVATIVE),
    (window({"a": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}}), [], 9, DERIVATIVE),
    (
        window({"a": {"$derivative": {"input": "$v", "unit": "month"}, "window": {"documents": [-1, 0]}}}, {"x": 1}),
        [],
        5490710,
        DERIVATIVE,
    ),
    (
        window({"a": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}}, {"x": 1}),
        [{"x": D(2024, 1, 1), "v": 1}],
        5624901,
        DERIVATIVE,
    ),
    (
        window({"a": {"$derivative": {"input": "$v", "unit": "day"}, "window": {"documents": [-1, 0]}}}, {"x": 1}),
        [{"x": 1, "v": 1}],
        5624900,
        DERIVATIVE,
    ),
    (window({"a": {"$integral": {"input": "$v"}}}, {"x": 1}), [{"x": 1, "v": "a"}], 5423900, INTEGRAL),
    (window({"a": {"$integral": {"input": "$v", "unit": "second"}}}, {"x": 1}), [{"x": 1, "v": 1}], 5423901, INTEGRAL),
    (window({"a": {"$expMovingAvg": {"input": "$v", "N": 0}}}, {"x": 1}), [], 9, EMA),
    (window({"a": {"$expMovingAvg": {"input": "$v", "N": 1.5}}}, {"x": 1}), [], 9, EMA),
    (window({"a": {"$expMovingAvg": {"input": "$v", "alpha": 1}}}, {"x": 1}), [], 9, EMA),
    (window({"a": {"$expMovingAvg": {"input": "$v", "N": 2}}}), [], 9, EMA),
    (window({"a": {"$expMovingAvg": {"input": "$v"}}}, {"x": 1}), [], 9, EMA),
    (window({"a": {"$locf": "$v", "window": {}}}, {"x": 1}), [], 9, LOCF),
    (window({"a": {"$linearFill": "$v"}}), [], 605001, LINEAR),
    (window({"a": {"$linearFill": "$v"}}, {"x": 1}), [{"x": 1, "v": 1}, {"x": 1, "v": 2}], 6050102, LINEAR),
]


@pytest.mark.parametrize(("pipeline", "docs", "code", "page"), ERRORS)
def test_errors(pipeline: list[Any], docs: list[dict[str, Any]], code: int, page: str) -> None:
    assert pipeline_error(pipeline, docs).code == code
