"""Real time series stored one reading per document: bucket them, one
document per source per hour with a field per minute and the sum, count
and average pre-computed (the texts' IoT and flight telemetry).

A collection is a time series when its documents are small (at most
:data:`SMALL_READING` bytes on average), many (at least
:data:`MIN_READINGS`), carry a measurement (a number in most documents,
beside the source and the time), and, for the sources checked, a date field advances
per source at a steady rate: at least :data:`STEADY_SHARE` of the intervals
between a source's consecutive readings lie within :data:`TOLERANCE` of
their median, and the median is at most :data:`MAX_INTERVAL` (so an hour's
bucket merges a dozen readings or more). A date field and a low-cardinality
field are not enough: orders by status, or users' events, arrive at
irregular times. A time-series collection (MongoDB's own bucketing) is left
alone.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/bucket-pattern/
"""

from __future__ import annotations

import datetime
import itertools
import statistics
from collections import Counter
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count

MIN_READINGS = 5_000
SMALL_READING = 512
STEADY_SHARE = 0.8
TOLERANCE = 0.25
MAX_INTERVAL = datetime.timedelta(minutes=5)
SOURCES_CHECKED = 3
READINGS_CHECKED = 100
PRESENT = 0.95


def rule_one_document_per_event(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if profile.options.get("type") == "timeseries" or "timeseries" in profile.options:
            continue
        if profile.count < MIN_READINGS or profile.avg_bytes > SMALL_READING:
            continue
        sampled = max(len(profile.documents), 1)
        top = [s for s in profile.fields.values() if "." not in s.path and s.present >= PRESENT * sampled]
        dates = [s.path for s in top if s.share("date") >= PRESENT]
        sources = [
            s.path
            for s in top
            if s.path != "_id"
            and s.path not in dates
            and (s.share("objectId") + s.share("string") + s.share("number")) >= PRESENT
            and 2 <= len(set(map(repr, s.values))) <= sampled // 10
        ]
        measured = [s.path for s in top if s.path not in ("_id", *dates) and s.share("number") >= PRESENT]
        for time_path in dates:
            for source in sources:
                if not [m for m in measured if m != source]:
                    continue
                steady = _steady_interval(ctx, profile, source, time_path)
                if steady is not None:
                    yield _finding(ctx, profile, source, time_path, steady)
                    break
            else:
                continue
            break


def _steady_interval(
    ctx: Context, profile: CollectionProfile, source: str, time_path: str
) -> datetime.timedelta | None:
    """The median interval between a source's readings, when every checked source reads steadily."""
    common = Counter(repr(v) for v in profile.fields[source].values).most_common(SOURCES_CHECKED)
    by_repr = {repr(v): v for v in profile.fields[source].values}
    medians = []
    for text, _ in common:
        cursor = ctx.database[profile.name].find({source: by_repr[text]}, {time_path: 1, "_id": 0})
        times = sorted(
            d[time_path] for d in cursor.limit(READINGS_CHECKED) if isinstance(d.get(time_path), datetime.datetime)
        )
        gaps = [b - a for a, b in itertools.pairwise(times)]
        if len(gaps) < 10:
            return None
        median = statistics.median(gaps)
        if not datetime.timedelta(0) < median <= MAX_INTERVAL:
            return None
        close = sum(1 for g in gaps if abs(g - median) <= TOLERANCE * median)
        if close < STEADY_SHARE * len(gaps):
            return None
        medians.append(median)
    return statistics.median(medians) if medians else None


def _finding(
    ctx: Context, profile: CollectionProfile, source: str, time_path: str, interval: datetime.timedelta
) -> Finding:
    per_hour = datetime.timedelta(hours=1) / interval
    measured = [
        s.path
        for s in profile.fields.values()
        if "." not in s.path and s.path not in (source, time_path, "_id") and s.share("number") >= 0.5
    ]
    value = measured[0] if measured else "value"
    sources = _sources(ctx, profile, source)
    bucket: dict[str, Any] = {
        source: "<source>",
        "hour": "<the hour>",
        "values": {"0": "<minute 0>", "59": "<minute 59>"},
        "count": 60,
        "sum": "<sum>",
        "avg": "<sum / count>",
    }
    target = f"{profile.name}_hourly"
    return Finding(
        collection=profile.name,
        path=time_path,
        problem="one-document-per-event",
        recommendation="bucket",
        severity="medium",
        summary=(
            f"{count(profile.count)} readings of about {round(profile.avg_bytes)} bytes, one every "
            f"{interval.total_seconds():g} s per {source}: a time series kept one document per reading."
        ),
        evidence={
            "documents": profile.count,
            "avg_bytes": round(profile.avg_bytes),
            "time_field": time_path,
            "source_field": source,
            "sources": sources[0],
            "sources_exact": sources[1],
            "median_interval_seconds": interval.total_seconds(),
            "readings_per_source_hour": round(per_hour, 1),
            "measurements": measured,
        },
        change=Change(
            f"Write each reading into its source's bucket for the hour in {target}: set the minute's "
            f"field and $inc the sum and count (an upsert makes the bucket).",
            [
                call(
                    target,
                    "updateOne",
                    {source: "<source>", "hour": "<the hour>"},
                    {"$set": {"values.<minute>": f"<{value}>"}, "$inc": {"sum": f"<{value}>", "count": 1}},
                    {"upsert": True},
                ),
                call(target, "createIndex", {source: 1, "hour": 1}, {"unique": True}),
            ],
            bucket,
        ),
        effect=(
            f"About {per_hour:.0f} times fewer documents and index entries (about "
            f"{count(round(profile.count / per_hour))} buckets); hourly sums and averages are read, not computed."
        ),
    )


def _sources(ctx: Context, profile: CollectionProfile, source: str) -> tuple[int, bool]:
    if ctx.exact(profile.name):
        found = next(
            iter(ctx.database[profile.name].aggregate([{"$group": {"_id": f"${source}"}}, {"$count": "n"}])), None
        )
        return (int(found["n"]) if found else 0), True
    return len(set(map(repr, profile.fields[source].values))), False
