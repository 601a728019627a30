"""Bucket pattern: many small items grouped into fewer documents.

Two kinds, as the texts describe them:

* count buckets (comments of a post, posts of a timeline): a document per
  ``key`` holding at most ``size`` items, ``{**key, count, items: [...]}``;
* time buckets (IoT readings): a document per ``key`` per window (an hour by
  default), ``{**key, window, values: {"<minute>": v}, count, sum, min, max}``.

Both are one upsert: the filter matches an open bucket, the update appends and
maintains the pre-computed fields in the same atomic write. Invariant: no bucket
ever holds more than ``size`` items, and no appended item is lost, whatever the
number of concurrent writers. When two writers find no open bucket at once, both
upserts insert, leaving two partly filled buckets: harmless for reads, which
gather every bucket of a key. A unique index on the key and a bucket number
would avoid that at the cost of a retry loop; the texts accept the simpler form.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from bson import ObjectId

from foliodb.patterns._types import Coll, Session

WINDOWS = {"minute": 60, "hour": 3600, "day": 86400}


def append(
    buckets: Coll,
    key: Mapping[str, Any],
    item: Any,
    *,
    size: int = 100,
    totals: Mapping[str, float] | None = None,
    session: Session = None,
) -> None:
    """Push ``item`` into the open bucket of ``key`` (fewer than ``size`` items),
    opening a new bucket when all are full; ``totals`` are added (``$inc``) to the
    bucket's pre-computed sums in the same write."""
    if size < 1:
        raise ValueError("size must be at least 1")
    increments = {"count": 1, **{f"totals.{name}": value for name, value in (totals or {}).items()}}
    buckets.update_one(
        {**key, "count": {"$lt": size}},
        {"$push": {"items": item}, "$inc": increments},
        upsert=True,
        session=session,
    )


def filled(key: Mapping[str, Any], items: Sequence[Any], size: int) -> list[dict[str, Any]]:
    """The buckets :func:`append` builds when ``items`` are appended to ``key`` in
    order, as documents to load in one ``insert_many`` (their ObjectIds increase
    in that order, the order :func:`items` and :func:`latest` read)."""
    chunks = [list(items[start : start + size]) for start in range(0, len(items), size)]
    return [{"_id": ObjectId(), **key, "count": len(chunk), "items": chunk} for chunk in chunks]


def items(buckets: Coll, key: Mapping[str, Any], *, session: Session = None) -> Iterator[Any]:
    """Every item of ``key`` in append order: buckets in the order they opened
    (their ObjectId ``_id``), items in each bucket in push order."""
    for bucket in buckets.find(key, {"items": 1}, sort=[("_id", 1)], session=session):
        yield from bucket["items"]


def latest(buckets: Coll, key: Mapping[str, Any], n: int, *, session: Session = None) -> list[Any]:
    """The last ``n`` items of ``key``, newest first, reading only the newest buckets."""
    found: list[Any] = []
    for bucket in buckets.find(key, {"items": 1}, sort=[("_id", -1)], session=session):
        found.extend(reversed(bucket["items"]))
        if len(found) >= n:
            break
    return found[:n]


def window_start(when: datetime.datetime, window: str = "hour") -> datetime.datetime:
    """The start of the window holding ``when``: the bucket's ``window`` field."""
    seconds = WINDOWS[window]
    epoch = datetime.datetime(1970, 1, 1, tzinfo=when.tzinfo)
    offset = int((when - epoch).total_seconds()) // seconds * seconds
    return epoch + datetime.timedelta(seconds=offset)


def record(
    buckets: Coll,
    key: Mapping[str, Any],
    when: datetime.datetime,
    value: float,
    *,
    window: str = "hour",
    session: Session = None,
) -> None:
    """Store one reading in its time bucket: ``values.<slot>`` set (the slot is
    the minute of the hour, or the second of the minute, or the minute of the day),
    ``count``/``sum`` incremented and ``min``/``max`` kept, in one upsert.

    A second reading for the same slot replaces the value but still counts in
    ``sum`` and ``count``: record each slot once (the texts' one reading a minute)."""
    start = window_start(when, window)
    slot_seconds = 1 if window == "minute" else 60
    slot = int((when - start).total_seconds()) // slot_seconds
    buckets.update_one(
        {**key, "window": start},
        {
            "$set": {f"values.{slot}": value},
            "$inc": {"count": 1, "sum": value},
            "$min": {"min": value},
            "$max": {"max": value},
        },
        upsert=True,
        session=session,
    )


def averages(
    buckets: Coll,
    key: Mapping[str, Any],
    since: datetime.datetime,
    until: datetime.datetime,
    *,
    session: Session = None,
) -> list[dict[str, Any]]:
    """``{window, avg, count, min, max}`` of each bucket of ``key`` whose window
    starts in [since, until), oldest first: read from the pre-computed fields,
    without touching the readings."""
    pipeline: list[dict[str, Any]] = [
        {"$match": {**key, "window": {"$gte": since, "$lt": until}}},
        {"$sort": {"window": 1}},
        {
            "$project": {
                "_id": 0,
                "window": 1,
                "count": 1,
                "min": 1,
                "max": 1,
                "avg": {"$divide": ["$sum", "$count"]},
            }
        },
    ]
    return list(buckets.aggregate(pipeline, session=session))
