"""The bucket recipe: count buckets (comments, timelines) and time buckets (IoT)."""

from __future__ import annotations

import datetime
import threading
from typing import Any

from foliodb.patterns import bucket

UTC = datetime.UTC


def test_count_buckets_roll_over_at_size_and_keep_order(db: Any) -> None:
    for n in range(7):
        bucket.append(db.comments, {"post_id": 1}, {"n": n}, size=3, totals={"chars": n})
    buckets = list(db.comments.find({"post_id": 1}, sort=[("_id", 1)]))
    # 7 comments in buckets of 3: 3 + 3 + 1, each with its own count and total.
    assert [b["count"] for b in buckets] == [3, 3, 1]
    assert [b["totals"]["chars"] for b in buckets] == [0 + 1 + 2, 3 + 4 + 5, 6]
    assert [c["n"] for c in bucket.items(db.comments, {"post_id": 1})] == list(range(7))
    assert [c["n"] for c in bucket.latest(db.comments, {"post_id": 1}, 4)] == [6, 5, 4, 3]


def test_keys_do_not_share_buckets(db: Any) -> None:
    bucket.append(db.comments, {"post_id": 1}, "a", size=10)
    bucket.append(db.comments, {"post_id": 2}, "b", size=10)
    assert list(bucket.items(db.comments, {"post_id": 1})) == ["a"]
    assert db.comments.count_documents({}) == 2


def test_two_writers_lose_nothing_and_never_overfill(db: Any) -> None:
    """The invariant the pattern relies on single-document atomicity for."""
    per_writer, size = 150, 20

    def write(who: str) -> None:
        for n in range(per_writer):
            bucket.append(db.readings, {"sensor": "s"}, {"who": who, "n": n}, size=size)

    threads = [threading.Thread(target=write, args=(who,)) for who in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = list(bucket.items(db.readings, {"sensor": "s"}))
    assert sorted((r["who"], r["n"]) for r in stored) == sorted((w, n) for w in "ab" for n in range(per_writer))
    for doc in db.readings.find():
        assert doc["count"] == len(doc["items"]) <= size
    # Each writer's own items stay in its order.
    for who in "ab":
        assert [r["n"] for r in stored if r["who"] == who] == list(range(per_writer))


def test_time_buckets_hold_an_hour_with_precomputed_aggregates(db: Any) -> None:
    start = datetime.datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    # 90 readings a minute apart: minutes 0-59 of 10:00, then 0-29 of 11:00.
    for minute in range(90):
        bucket.record(
            db.telemetry, {"flight": "AF1", "metric": "alt"}, start + datetime.timedelta(minutes=minute), minute
        )
    docs = list(db.telemetry.find({}, sort=[("window", 1)]))
    assert [d["window"].replace(tzinfo=UTC) for d in docs] == [start, start + datetime.timedelta(hours=1)]
    first, second = docs
    assert first["count"] == 60 and first["sum"] == sum(range(60)) and first["min"] == 0 and first["max"] == 59
    assert first["values"]["59"] == 59
    assert second["count"] == 30 and second["sum"] == sum(range(60, 90)) and second["values"]["0"] == 60
    averages = bucket.averages(
        db.telemetry, {"flight": "AF1", "metric": "alt"}, start, start + datetime.timedelta(days=1)
    )
    assert [a["avg"] for a in averages] == [sum(range(60)) / 60, sum(range(60, 90)) / 30]


def test_window_start() -> None:
    when = datetime.datetime(2026, 3, 1, 10, 37, 12, tzinfo=UTC)
    assert bucket.window_start(when) == datetime.datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert bucket.window_start(when, "day") == datetime.datetime(2026, 3, 1, tzinfo=UTC)
    assert bucket.window_start(when, "minute") == datetime.datetime(2026, 3, 1, 10, 37, tzinfo=UTC)


def test_filled_buckets_load_as_append_would_build_them(db: Any) -> None:
    db.comments.insert_many(bucket.filled({"post_id": 1}, [{"n": n} for n in range(7)], 3))
    assert [b["count"] for b in db.comments.find({}, sort=[("_id", 1)])] == [3, 3, 1]
    assert [c["n"] for c in bucket.items(db.comments, {"post_id": 1})] == list(range(7))
    bucket.append(db.comments, {"post_id": 1}, {"n": 7}, size=3)  # appends go on in the open bucket
    assert [b["count"] for b in db.comments.find({}, sort=[("_id", 1)])] == [3, 3, 2]
    assert [c["n"] for c in bucket.latest(db.comments, {"post_id": 1}, 2)] == [7, 6]
