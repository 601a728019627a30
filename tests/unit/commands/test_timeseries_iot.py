"""The IoT / flight-telemetry example in three designs answers the same
questions identically: one document per reading, hand-made hourly buckets
with pre-computed averages (the schema-design texts' "one document per source
per hour, one field per minute, with pre-computed sum/count/average"), and a
time-series collection (https://www.mongodb.com/docs/manual/core/timeseries-collections/).

The designs are the ones ``benchmarks/timeseries.py`` measures; the expected
answers are computed here in plain Python from the readings.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

import pytest

from benchmarks.timeseries import DESIGNS, START, readings

DAYS = 7
EVERY = 15  # minutes between readings of one source
DATA = list(readings(sources=3, days=DAYS, every_minutes=EVERY))
END = START + dt.timedelta(days=DAYS)


def expected_last_hour(flight: str, metric: str, end: dt.datetime) -> list[tuple[dt.datetime, float]]:
    return sorted(
        (r["time"], r["value"])
        for r in DATA
        if r["flight"] == flight and r["metric"] == metric and end - dt.timedelta(hours=1) <= r["time"] < end
    )


def expected_hourly(flight: str, metric: str) -> list[tuple[dt.datetime, float]]:
    by_hour: dict[dt.datetime, list[float]] = defaultdict(list)
    for r in DATA:
        if r["flight"] == flight and r["metric"] == metric:
            by_hour[r["time"].replace(minute=0)].append(r["value"])
    return [(hour, sum(values) / len(values)) for hour, values in sorted(by_hour.items())]


@pytest.fixture(scope="module")
def loaded() -> Any:
    import foliodb

    client: Any = foliodb.MongoClient(":memory:")
    designs = {}
    for i, design_class in enumerate(DESIGNS):
        design = design_class(client[f"iot{i}"])
        for start in range(0, len(DATA), 100):
            design.write(DATA[start : start + 100])
        designs[design_class.name] = design
    yield designs
    client.close()


@pytest.mark.parametrize("name", [d.name for d in DESIGNS])
@pytest.mark.parametrize("flight, metric", [("F0", "speed"), ("F1", "altitude")])
def test_last_hour_of_a_source(loaded: Any, name: str, flight: str, metric: str) -> None:
    for end in (END, START + dt.timedelta(hours=30, minutes=25)):
        expected = expected_last_hour(flight, metric, end)
        assert len(expected) == 4  # one reading every 15 minutes
        assert loaded[name].last_hour(flight, metric, end) == expected


@pytest.mark.parametrize("name", [d.name for d in DESIGNS])
def test_hourly_averages_over_a_week(loaded: Any, name: str) -> None:
    expected = expected_hourly("F0", "speed")
    assert len(expected) == DAYS * 24
    assert loaded[name].hourly_averages("F0", "speed", START, END) == expected
