"""Three designs for IoT telemetry, compared in one run: ``python -m benchmarks.timeseries``.

The flight-telemetry system of the schema-design texts: readings ``(flight,
metric, time, value)``, one a minute per source. The designs:

- ``reading``: one document per reading ``{flight, metric, time, value}``, an
  index on ``(flight, metric, time)``;
- ``hourly``: hand-made hourly buckets ``{flight, metric, hour, values:
  {"<minute>": value}, sum, count, avg}``, each reading a ``$set`` of its
  minute and ``$inc`` of sum and count (upserted), then ``avg`` recomputed;
  a unique index on ``(flight, metric, hour)``;
- ``timeseries``: a time-series collection (timeField ``time``, metaField
  ``source: {flight, metric}``, granularity ``minutes``).

The same two questions for each: the readings of one source in the last hour,
and one source's hourly averages over a week. Readings are written in arrival
order, :data:`BATCH` at a time (``insert_many``, or one ``bulk_write`` of the
bucket updates). Each design runs on a fresh dbpath; the report shows storage
(data plus indexes, bytes per reading), the write rate, and the median of
``--repeat`` runs of each question.

    python -m benchmarks.timeseries                       # 4 sources x 7 days x 1/min = 40,320 readings
    python -m benchmarks.timeseries --sources 2 --days 2 --repeat 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pymongo import UpdateOne

import foliodb

HOUR = dt.timedelta(hours=1)
BATCH = 100
START = dt.datetime(2024, 3, 4)


def readings(sources: int, days: int, every_minutes: int = 1) -> Iterator[dict[str, Any]]:
    """Readings in arrival order; values are exact quarters so every average is exact."""
    steps = days * 24 * 60 // every_minutes
    for step in range(steps):
        at = START + dt.timedelta(minutes=step * every_minutes)
        for source in range(sources):
            flight, metric = f"F{source // 2}", ("altitude", "speed")[source % 2]
            yield {"flight": flight, "metric": metric, "time": at, "value": ((step * 37 + source * 11) % 101) / 4}


class Reading:
    """One document per reading."""

    name = "reading"

    def __init__(self, db: Any) -> None:
        self.c = db.readings
        self.c.create_index([("flight", 1), ("metric", 1), ("time", 1)])

    def write(self, batch: list[dict[str, Any]]) -> None:
        self.c.insert_many([dict(r) for r in batch], ordered=False)

    def last_hour(self, flight: str, metric: str, end: dt.datetime) -> list[tuple[dt.datetime, float]]:
        found = self.c.find({"flight": flight, "metric": metric, "time": {"$gte": end - HOUR, "$lt": end}})
        return [(d["time"], d["value"]) for d in found.sort("time", 1)]

    def hourly_averages(self, flight: str, metric: str, start: dt.datetime, end: dt.datetime) -> list[tuple[Any, Any]]:
        pipeline = [
            {"$match": {"flight": flight, "metric": metric, "time": {"$gte": start, "$lt": end}}},
            {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "hour"}}, "avg": {"$avg": "$value"}}},
            {"$sort": {"_id": 1}},
        ]
        return [(d["_id"], d["avg"]) for d in self.c.aggregate(pipeline)]

    def sizes(self, db: Any) -> int:
        return _size(db, "readings")


class TimeSeries(Reading):
    """A time-series collection: the same queries as one document per reading."""

    name = "timeseries"

    def __init__(self, db: Any) -> None:
        self.c = db.create_collection(
            "telemetry", timeseries={"timeField": "time", "metaField": "source", "granularity": "minutes"}
        )

    def write(self, batch: list[dict[str, Any]]) -> None:
        self.c.insert_many(
            [
                {"time": r["time"], "source": {"flight": r["flight"], "metric": r["metric"]}, "value": r["value"]}
                for r in batch
            ],
            ordered=False,
        )

    def last_hour(self, flight: str, metric: str, end: dt.datetime) -> list[tuple[dt.datetime, float]]:
        query = {"source": {"flight": flight, "metric": metric}, "time": {"$gte": end - HOUR, "$lt": end}}
        return [(d["time"], d["value"]) for d in self.c.find(query).sort("time", 1)]

    def hourly_averages(self, flight: str, metric: str, start: dt.datetime, end: dt.datetime) -> list[tuple[Any, Any]]:
        pipeline = [
            {"$match": {"source": {"flight": flight, "metric": metric}, "time": {"$gte": start, "$lt": end}}},
            {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "hour"}}, "avg": {"$avg": "$value"}}},
            {"$sort": {"_id": 1}},
        ]
        return [(d["_id"], d["avg"]) for d in self.c.aggregate(pipeline)]

    def sizes(self, db: Any) -> int:
        return _size(db, "system.buckets.telemetry")


class Hourly:
    """Hand-made hourly buckets with pre-computed sum, count and average."""

    name = "hourly"

    def __init__(self, db: Any) -> None:
        self.c = db.hours
        self.c.create_index([("flight", 1), ("metric", 1), ("hour", 1)], unique=True)

    def write(self, batch: list[dict[str, Any]]) -> None:
        ops = []
        for r in batch:
            hour = r["time"].replace(minute=0, second=0, microsecond=0)
            key = {"flight": r["flight"], "metric": r["metric"], "hour": hour}
            ops.append(
                UpdateOne(
                    key,
                    {"$set": {f"values.{r['time'].minute}": r["value"]}, "$inc": {"sum": r["value"], "count": 1}},
                    upsert=True,
                )
            )
            ops.append(UpdateOne(key, [{"$set": {"avg": {"$divide": ["$sum", "$count"]}}}]))
        self.c.bulk_write(ops)

    def last_hour(self, flight: str, metric: str, end: dt.datetime) -> list[tuple[dt.datetime, float]]:
        start = end - HOUR
        query = {"flight": flight, "metric": metric, "hour": {"$gte": start.replace(minute=0, second=0), "$lt": end}}
        out = []
        for doc in self.c.find(query, {"hour": 1, "values": 1}):
            for minute, value in doc["values"].items():
                at = doc["hour"] + dt.timedelta(minutes=int(minute))
                if start <= at < end:
                    out.append((at, value))
        return sorted(out)

    def hourly_averages(self, flight: str, metric: str, start: dt.datetime, end: dt.datetime) -> list[tuple[Any, Any]]:
        query = {"flight": flight, "metric": metric, "hour": {"$gte": start, "$lt": end}}
        return [(d["hour"], d["avg"]) for d in self.c.find(query, {"hour": 1, "avg": 1}).sort("hour", 1)]

    def sizes(self, db: Any) -> int:
        return _size(db, "hours")


DESIGNS: tuple[type[Reading] | type[Hourly], ...] = (Reading, Hourly, TimeSeries)


def _size(db: Any, name: str) -> int:
    stats = db.command("collStats", name)
    return int(stats["storageSize"]) + int(stats["totalIndexSize"])


def run(sources: int, days: int, repeat: int) -> list[dict[str, Any]]:
    data = list(readings(sources, days))
    end = START + dt.timedelta(days=days)
    results = []
    for design_class in DESIGNS:
        with tempfile.TemporaryDirectory() as tmp:
            client: Any = foliodb.MongoClient(str(Path(tmp) / "data"))
            db = client.iot
            design = design_class(db)
            began = time.perf_counter()
            for i in range(0, len(data), BATCH):
                design.write(data[i : i + BATCH])
            write_seconds = time.perf_counter() - began
            timings: dict[str, list[float]] = {"last_hour": [], "hourly_averages": []}
            for _ in range(repeat):
                began = time.perf_counter()
                design.last_hour("F0", "speed", end)
                timings["last_hour"].append(time.perf_counter() - began)
                began = time.perf_counter()
                design.hourly_averages("F0", "speed", end - dt.timedelta(days=7), end)
                timings["hourly_averages"].append(time.perf_counter() - began)
            size = design.sizes(db)
            client.close()
        results.append(
            {
                "design": design_class.name,
                "readings": len(data),
                "bytes": size,
                "bytes_per_reading": size / len(data),
                "writes_per_second": len(data) / write_seconds,
                "last_hour_ms": statistics.median(timings["last_hour"]) * 1000,
                "hourly_averages_ms": statistics.median(timings["hourly_averages"]) * 1000,
            }
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=4)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    rows = run(args.sources, args.days, args.repeat)
    print(f"{rows[0]['readings']:,} readings ({args.sources} sources x {args.days} days x 1/min)")
    print(f"{'design':<12}{'storage':>12}{'B/reading':>11}{'readings/s':>12}{'last hour':>12}{'hourly avg':>12}")
    for row in rows:
        print(
            f"{row['design']:<12}{row['bytes'] / 1e6:>10.2f}MB{row['bytes_per_reading']:>11.1f}"
            f"{row['writes_per_second']:>12,.0f}{row['last_hour_ms']:>10.2f}ms{row['hourly_averages_ms']:>10.2f}ms"
        )


if __name__ == "__main__":
    main()
