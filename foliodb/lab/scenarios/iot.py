"""IoT readings three ways: one document per reading; hourly buckets with the
minute values and pre-computed count, sum, min and max (the texts' design);
and a time-series collection (MongoDB 5+'s native buckets), when the database
has them.

The texts' claim: bucketing readings by hour is "tens of times" better.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

from pymongo.errors import OperationFailure

from foliodb.lab.scenario import Db, Design, Question, Scenario
from foliodb.patterns import bucket

START = datetime.datetime(2026, 1, 5)  # naive UTC, as BSON dates come back
DEVICES = 5
HOUR = datetime.timedelta(hours=1)
WEEK_HOURS = 168


def generate(size: int, rng: random.Random) -> dict[str, Any]:
    """One reading a minute for ``size * 10`` minutes from each of five devices;
    integer values, so sums and averages are exact in every design."""
    minutes = size * 10
    readings = [
        {"device": f"d{d}", "time": START + datetime.timedelta(minutes=m), "value": rng.randrange(1000)}
        for d in range(DEVICES)
        for m in range(minutes)
    ]
    return {"readings": readings, "minutes": [minutes]}


def _last_hour(data: dict[str, Any], rng: random.Random) -> tuple[str, datetime.datetime]:
    return f"d{rng.randrange(DEVICES)}", START + datetime.timedelta(minutes=rng.randrange(60, data["minutes"][0]))


def _week(data: dict[str, Any], rng: random.Random) -> tuple[str, datetime.datetime]:
    hours = max(1, data["minutes"][0] // 60 - WEEK_HOURS)
    return f"d{rng.randrange(DEVICES)}", START + datetime.timedelta(hours=rng.randrange(hours))


def _new_reading(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    data["minutes"][0] += 1  # later than every reading, one a minute
    return {
        "device": f"d{rng.randrange(DEVICES)}",
        "time": START + datetime.timedelta(minutes=data["minutes"][0]),
        "value": rng.randrange(1000),
    }


def _hourly(
    db: Db, collection: str, argument: tuple[str, datetime.datetime]
) -> list[tuple[datetime.datetime, float, int]]:
    device, since = argument
    pipeline: list[dict[str, Any]] = [
        {"$match": {"device": device, "time": {"$gte": since, "$lt": since + WEEK_HOURS * HOUR}}},
        {
            "$group": {
                "_id": {"$dateTrunc": {"date": "$time", "unit": "hour"}},
                "avg": {"$avg": "$value"},
                "n": {"$sum": 1},
            }
        },
        {"$sort": {"_id": 1}},
    ]
    return [(g["_id"], round(g["avg"], 9), g["n"]) for g in db[collection].aggregate(pipeline)]


def _recent(db: Db, collection: str, argument: tuple[str, datetime.datetime]) -> list[int]:
    device, until = argument
    query = {"device": device, "time": {"$gte": until - HOUR, "$lt": until}}
    return [r["value"] for r in db[collection].find(query, {"value": 1}, sort=[("time", 1)])]


# -- one document per reading ---------------------------------------------------


def load_flat(db: Db, data: dict[str, Any]) -> None:
    db.readings.insert_many(data["readings"])
    db.readings.create_index([("device", 1), ("time", 1)])


def recent_flat(db: Db, argument: tuple[str, datetime.datetime]) -> list[int]:
    return _recent(db, "readings", argument)


def hourly_flat(db: Db, argument: tuple[str, datetime.datetime]) -> list[tuple[datetime.datetime, float, int]]:
    return _hourly(db, "readings", argument)


def record_flat(db: Db, reading: dict[str, Any]) -> None:
    db.readings.insert_one(reading)


# -- hourly buckets -------------------------------------------------------------


def load_buckets(db: Db, data: dict[str, Any]) -> None:
    documents: dict[tuple[str, datetime.datetime], dict[str, Any]] = {}
    for r in data["readings"]:
        window = bucket.window_start(r["time"])
        doc = documents.setdefault(
            (r["device"], window),
            {
                "device": r["device"],
                "window": window,
                "values": {},
                "count": 0,
                "sum": 0,
                "min": r["value"],
                "max": r["value"],
            },
        )
        doc["values"][str(r["time"].minute)] = r["value"]
        doc["count"] += 1
        doc["sum"] += r["value"]
        doc["min"], doc["max"] = min(doc["min"], r["value"]), max(doc["max"], r["value"])
    db.hours.insert_many(list(documents.values()))
    db.hours.create_index([("device", 1), ("window", 1)], unique=True)


def recent_buckets(db: Db, argument: tuple[str, datetime.datetime]) -> list[int]:
    device, until = argument
    since = until - HOUR
    values = []
    for doc in db.hours.find(
        {"device": device, "window": {"$gte": bucket.window_start(since), "$lt": until}}, sort=[("window", 1)]
    ):
        for minute, value in sorted(doc["values"].items(), key=lambda kv: int(kv[0])):
            if since <= doc["window"] + datetime.timedelta(minutes=int(minute)) < until:
                values.append(value)
    return values


def hourly_buckets(db: Db, argument: tuple[str, datetime.datetime]) -> list[tuple[datetime.datetime, float, int]]:
    device, since = argument
    rows = bucket.averages(db.hours, {"device": device}, since, since + WEEK_HOURS * HOUR)
    return [(r["window"], round(r["avg"], 9), r["count"]) for r in rows]


def record_buckets(db: Db, reading: dict[str, Any]) -> None:
    bucket.record(db.hours, {"device": reading["device"]}, reading["time"], reading["value"])


# -- a time-series collection ---------------------------------------------------


def has_time_series(db: Db) -> bool:
    try:
        db.create_collection("probe", timeseries={"timeField": "time", "metaField": "device"})
    except OperationFailure:
        return False
    db.drop_collection("probe")
    return True


def load_series(db: Db, data: dict[str, Any]) -> None:
    db.create_collection("series", timeseries={"timeField": "time", "metaField": "device", "granularity": "minutes"})
    db.series.insert_many(data["readings"])
    db.series.create_index([("device", 1), ("time", 1)])


def recent_series(db: Db, argument: tuple[str, datetime.datetime]) -> list[int]:
    return _recent(db, "series", argument)


def hourly_series(db: Db, argument: tuple[str, datetime.datetime]) -> list[tuple[datetime.datetime, float, int]]:
    return _hourly(db, "series", argument)


def record_series(db: Db, reading: dict[str, Any]) -> None:
    db.series.insert_one(reading)


_QUESTIONS = ("last hour of a device", "hourly averages over a week", "record a reading")

SCENARIO = Scenario(
    name="iot",
    title="IoT: one document per reading, hourly buckets with pre-aggregates, a time-series collection",
    claim="Bucketing readings by hour (one document per device per hour, pre-computed sums) is tens of times better.",
    generate=generate,
    questions=(
        Question(_QUESTIONS[0], "read", 4, _last_hour),
        Question(_QUESTIONS[1], "read", 2, _week),
        Question(_QUESTIONS[2], "write", 4, _new_reading),
    ),
    designs=(
        Design(
            "reading",
            "one document per reading",
            load_flat,
            dict(zip(_QUESTIONS, (recent_flat, hourly_flat, record_flat), strict=True)),
        ),
        Design(
            "hourly",
            "a document per device per hour, minute values, count/sum/min/max",
            load_buckets,
            dict(zip(_QUESTIONS, (recent_buckets, hourly_buckets, record_buckets), strict=True)),
        ),
        Design(
            "timeseries",
            "a time-series collection (metaField device)",
            load_series,
            dict(zip(_QUESTIONS, (recent_series, hourly_series, record_series), strict=True)),
            has_time_series,
        ),
    ),
)
