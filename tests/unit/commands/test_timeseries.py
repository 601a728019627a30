"""Time-series collections, embedded (and a few over the wire at the end).

Manual pages cited per test:
TS   https://www.mongodb.com/docs/manual/core/timeseries-collections/
CQ   https://www.mongodb.com/docs/manual/core/timeseries/timeseries-procedures/
     ("Create and Query a Time Series Collection")
GR   https://www.mongodb.com/docs/manual/core/timeseries/timeseries-granularity/
BK   https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/
LIM  https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/
TTL  https://www.mongodb.com/docs/manual/core/timeseries/timeseries-automatic-removal/
IDX  https://www.mongodb.com/docs/manual/core/timeseries/timeseries-secondary-index/

Expected values are worked out by hand (bucket boundaries) or with plain
Python over the inserted measurements, never by reading FolioDB back.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

T0 = dt.datetime(2024, 5, 18, 0, 0, 30)


def minutes(n: float) -> dt.timedelta:
    return dt.timedelta(minutes=n)


def make(db: Any, **options: Any) -> Any:
    ts = {"timeField": "t", "metaField": "m", **options.pop("ts", {})}
    return db.create_collection("w", timeseries=ts, **options)


def buckets(db: Any) -> list[dict[str, Any]]:
    return list(db["system.buckets.w"].find().sort("control.min.t", 1))


# -- create and listCollections ----------------------------------------------------


def test_create_lists_the_collection_and_its_buckets(db: Any) -> None:
    """GR "Retrieve the granularity": options.timeseries holds granularity and bucketMaxSpanSeconds."""
    db.create_collection(
        "w", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"}, expireAfterSeconds=86400
    )
    entries = {entry["name"]: entry for entry in db.list_collections()}
    assert entries["w"]["type"] == "timeseries"
    assert entries["w"]["options"] == {
        "timeseries": {"timeField": "t", "metaField": "m", "granularity": "minutes", "bucketMaxSpanSeconds": 86400},
        "expireAfterSeconds": 86400,
    }
    assert entries["system.buckets.w"]["type"] == "collection"
    assert entries["system.buckets.w"]["options"]["timeseries"] == entries["w"]["options"]["timeseries"]
    assert db.list_collection_names(filter={"type": "timeseries"}) == ["w"]


def test_default_granularity_is_seconds(db: Any) -> None:
    """TS: granularity defaults to "seconds" (bucket span one hour)."""
    db.create_collection("w", timeseries={"timeField": "t"})
    (entry,) = [e for e in db.list_collections() if e["name"] == "w"]
    assert entry["options"]["timeseries"] == {"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}


def test_custom_bucketing(db: Any) -> None:
    """GR "Using Custom Bucketing Parameters": equal bucketMaxSpanSeconds and bucketRoundingSeconds."""
    db.create_collection("w", timeseries={"timeField": "t", "bucketMaxSpanSeconds": 300, "bucketRoundingSeconds": 300})
    (entry,) = [e for e in db.list_collections() if e["name"] == "w"]
    assert entry["options"]["timeseries"] == {
        "timeField": "t",
        "bucketRoundingSeconds": 300,
        "bucketMaxSpanSeconds": 300,
    }
    # 00:04:59 and 00:05:00 fall on either side of a 300-second boundary.
    base = dt.datetime(2024, 1, 1)
    db.w.insert_many([{"t": base + dt.timedelta(seconds=299)}, {"t": base + dt.timedelta(seconds=300)}])
    assert [b["control"]["min"]["t"] for b in buckets(db)] == [base, base + dt.timedelta(seconds=300)]


@pytest.mark.parametrize(
    "timeseries, code",
    [
        ({}, 40414),  # timeField is required
        ({"timeField": "t", "other": 1}, 40415),
        ({"timeField": "t", "granularity": "days"}, 2),
        ({"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 60}, 72),
        ({"timeField": "t", "bucketMaxSpanSeconds": 60}, 72),  # needs bucketRoundingSeconds too
        ({"timeField": "t", "bucketMaxSpanSeconds": 60, "bucketRoundingSeconds": 30}, 72),
        ({"timeField": "t", "metaField": "t"}, 72),
        ({"timeField": 5}, 14),
        ("t", 14),
    ],
)
def test_bad_timeseries_options(db: Any, timeseries: Any, code: int) -> None:
    """LIM and the create command's timeseries fields."""
    with pytest.raises(OperationFailure) as info:
        db.create_collection("w", timeseries=timeseries)
    assert info.value.code == code
    assert "w" not in db.list_collection_names()


def test_expire_after_seconds_needs_a_timeseries_or_clustered_collection(db: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", expireAfterSeconds=5)
    assert info.value.code == 72


# -- buckets --------------------------------------------------------------------


def test_bucket_layout(db: Any) -> None:
    """BK: measurements of one meta value within the span share a bucket;
    control.min of the time is rounded down to the minute ("seconds")."""
    make(db)
    db.w.insert_many(
        [
            {"t": T0, "m": {"sensor": 1, "kind": "temp"}, "v": 12, "_id": 1},
            {"t": T0 + minutes(10), "m": {"kind": "temp", "sensor": 1}, "v": 10, "_id": 2},
            {"t": T0 + minutes(5), "m": {"sensor": 2, "kind": "temp"}, "_id": 3, "w": "x"},
        ]
    )
    first, second = sorted(buckets(db), key=lambda b: b["meta"]["sensor"])
    # The meta document's fields are sorted (LIM "metaField": MongoDB reorders them).
    assert first["meta"] == {"kind": "temp", "sensor": 1}
    assert list(first["meta"]) == ["kind", "sensor"]
    assert first["control"] == {
        "version": 1,
        "min": {"t": dt.datetime(2024, 5, 18, 0, 0), "v": 10, "_id": 1},
        "max": {"t": T0 + minutes(10), "v": 12, "_id": 2},
    }
    assert first["data"] == {"t": {"0": T0, "1": T0 + minutes(10)}, "v": {"0": 12, "1": 10}, "_id": {"0": 1, "1": 2}}
    assert second["data"] == {"t": {"0": T0 + minutes(5)}, "_id": {"0": 3}, "w": {"0": "x"}}
    assert second["control"]["min"]["t"] == dt.datetime(2024, 5, 18, 0, 5)


@pytest.mark.parametrize(
    "granularity, times, starts",
    [
        # seconds: span 1 hour from the minute; 01:00:30 is past 00:00:00 + 1h.
        ("seconds", ["00:00:30", "00:59:59", "01:00:30"], ["00:00:00", "01:00:00"]),
        # minutes: span 24 hours from the hour.
        ("minutes", ["00:10:00", "23:59:00", "2d 00:10:00"], ["00:00:00", "2d 00:00:00"]),
        # hours: span 30 days from the day.
        ("hours", ["10:00:00", "25d 10:00:00", "31d 00:00:00"], ["00:00:00", "31d 00:00:00"]),
    ],
)
def test_granularity_spans(db: Any, granularity: str, times: list[str], starts: list[str]) -> None:
    """GR table: "seconds" one hour, "minutes" 24 hours, "hours" 30 days; rounding
    to the minute, hour and day (BK)."""

    def at(text: str) -> dt.datetime:
        days, _, clock = text.rpartition(" ")
        h, m, s = map(int, clock.split(":"))
        return dt.datetime(2024, 1, 1) + dt.timedelta(days=int(days[:-1] or 1) - 1, hours=h, minutes=m, seconds=s)

    make(db, ts={"granularity": granularity})
    db.w.insert_many([{"t": at(text), "m": 1} for text in times])
    assert [b["control"]["min"]["t"] for b in buckets(db)] == [at(text) for text in starts]


def test_a_bucket_holds_at_most_1000_measurements(db: Any) -> None:
    """BK: a bucket closes at 1000 measurements (timeseriesBucketMaxCount)."""
    make(db)
    db.w.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": "a"} for i in range(1001)])
    db.w.insert_one({"t": T0 + dt.timedelta(seconds=1001), "m": "a"})
    assert sorted(len(b["data"]["t"]) for b in buckets(db)) == [2, 1000]


def test_later_inserts_reopen_a_bucket(db: Any) -> None:
    """BK: one insert at a time still fills the same bucket."""
    make(db)
    for i in range(5):
        db.w.insert_one({"t": T0 + minutes(i), "m": "a"})
    assert [len(b["data"]["t"]) for b in buckets(db)] == [5]


def test_missing_and_null_meta_are_different_buckets(db: Any) -> None:
    make(db)
    db.w.insert_many([{"t": T0}, {"t": T0, "m": None}, {"t": T0}])
    assert sorted(("meta" in b, len(b["data"]["t"])) for b in buckets(db)) == [(False, 2), (True, 1)]


# -- reading measurements ---------------------------------------------------------


def test_documents_read_as_inserted(db: Any) -> None:
    """CQ "Query a Time Series Collection": the time field, the meta field, the
    other fields, and a generated _id (the manual's findOne output)."""
    make(db)
    db.w.insert_one({"m": {"sensorId": 5578, "type": "temperature"}, "t": T0, "temp": 12})
    doc = db.w.find_one({"t": T0})
    assert list(doc) == ["t", "m", "temp", "_id"]
    assert doc["m"] == {"sensorId": 5578, "type": "temperature"} and doc["temp"] == 12


MEASUREMENTS = [{"_id": i, "t": T0 + minutes(17 * i), "m": {"sensor": i % 3}, "v": (i * 7) % 11} for i in range(60)]


# (query, the same query by hand over a measurement)
QUERIES: list[tuple[dict[str, Any], Any]] = [
    ({"m.sensor": 1}, lambda m: m["m"]["sensor"] == 1),
    ({"m": {"sensor": 2}}, lambda m: m["m"] == {"sensor": 2}),
    (
        {"t": {"$gte": T0 + minutes(200), "$lt": T0 + minutes(400)}},
        lambda m: T0 + minutes(200) <= m["t"] < T0 + minutes(400),
    ),
    (
        {"t": {"$gt": T0 + minutes(17 * 30)}, "m.sensor": {"$in": [0, 2]}},
        lambda m: m["t"] > T0 + minutes(17 * 30) and m["m"]["sensor"] in (0, 2),
    ),
    ({"t": {"$lte": T0 + minutes(17 * 5)}}, lambda m: m["t"] <= T0 + minutes(17 * 5)),
    ({"t": T0 + minutes(17 * 9)}, lambda m: m["t"] == T0 + minutes(17 * 9)),
    ({"$and": [{"m.sensor": 0}, {"v": {"$gt": 5}}]}, lambda m: m["m"]["sensor"] == 0 and m["v"] > 5),
    ({"v": 3}, lambda m: m["v"] == 3),
    ({"$or": [{"m.sensor": 1}, {"v": 0}]}, lambda m: m["m"]["sensor"] == 1 or m["v"] == 0),
]


@pytest.mark.parametrize("query, by_hand", QUERIES)
def test_queries_match_plain_python(db: Any, query: dict[str, Any], by_hand: Any) -> None:
    """TS: a time-series collection answers queries as the documents inserted."""
    make(db)
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    expected = sorted(m["_id"] for m in MEASUREMENTS if by_hand(m))
    assert expected  # every case selects something
    assert sorted(d["_id"] for d in db.w.find(query)) == expected
    assert db.w.count_documents(query) == len(expected)
    assert sorted(d["_id"] for d in db.w.aggregate([{"$match": query}])) == expected


def test_meta_and_time_predicates_prune_buckets(db: Any) -> None:
    """BK / "Query Optimization": predicates on the meta field and time field are
    checked on the buckets before unpacking."""
    make(db)
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    n_buckets = db["system.buckets.w"].count_documents({})
    plan = db.command(
        "explain",
        {
            "aggregate": "w",
            "pipeline": [{"$match": {"m": {"sensor": 1}, "t": {"$lt": T0 + minutes(60)}}}],
            "cursor": {},
        },
        verbosity="executionStats",
    )
    cursor = plan["stages"][0]["$cursor"]
    assert cursor["queryPlanner"]["namespace"].endswith("system.buckets.w")
    assert cursor["queryPlanner"]["parsedQuery"] == {
        "$and": [{"meta": {"sensor": 1}}, {"control.min.t": {"$lt": T0 + minutes(60)}}]
    }
    # Sensor 1's measurements from T0 + 17 min on fill 17-minute steps: one bucket starts before T0 + 60 min.
    assert cursor["executionStats"]["nReturned"] == 1 < n_buckets
    # The default {m: 1, t: 1} index, on the buckets {meta: 1, control.min.t: 1, control.max.t: 1}, serves it.
    assert "IXSCAN" in str(cursor["queryPlanner"]["winningPlan"])
    assert cursor["executionStats"]["totalDocsExamined"] < n_buckets


def test_sort_skip_limit_and_projection(db: Any) -> None:
    make(db)
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    got = list(db.w.find({"m.sensor": 2}, {"v": 1, "_id": 0}).sort("t", -1).skip(2).limit(3))
    expected = [
        {"v": m["v"]} for m in sorted(MEASUREMENTS, key=lambda m: m["t"], reverse=True) if m["m"]["sensor"] == 2
    ]
    assert got == expected[2:5]
    assert db.w.distinct("m.sensor") == [0, 1, 2]


# -- writes ---------------------------------------------------------------------


def test_time_field_must_be_a_date(db: Any) -> None:
    """LIM: the timeField must be present and a BSON date; BadValue (2)."""
    make(db)
    with pytest.raises(WriteError) as info:
        db.w.insert_one({"m": 1, "v": 1})
    assert info.value.code == 2
    assert info.value.details["errmsg"] == "'t' must be present and contain a valid BSON UTC datetime value"
    with pytest.raises(WriteError):
        db.w.insert_one({"t": "2024-05-18", "m": 1})
    with pytest.raises(BulkWriteError) as bulk:
        db.w.insert_many([{"t": T0}, {"t": 5}, {"t": T0}], ordered=False)
    assert bulk.value.details["nInserted"] == 2
    assert [e["index"] for e in bulk.value.details["writeErrors"]] == [1]
    with pytest.raises(BulkWriteError) as bulk:
        db.w.insert_many([{"t": T0}, {"t": 5}, {"t": T0}])
    assert bulk.value.details["nInserted"] == 1
    assert db.w.count_documents({}) == 3


def test_deletes(db: Any) -> None:
    """LIM "Updates and Deletes": since MongoDB 7.0 any delete filter works."""
    make(db)
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    assert db.w.delete_many({"v": {"$gte": 5}}).deleted_count == sum(m["v"] >= 5 for m in MEASUREMENTS)
    assert db.w.delete_one({"m.sensor": 0}).deleted_count == 1
    left = [m for m in MEASUREMENTS if m["v"] < 5]
    first_sensor0 = min((m for m in left if m["m"]["sensor"] == 0), key=lambda m: m["t"])
    expected = sorted(m["_id"] for m in left if m is not first_sensor0)
    assert sorted(d["_id"] for d in db.w.find()) == expected
    # Emptied buckets are removed, not left empty.
    assert all(b["data"]["t"] for b in buckets(db))
    db.w.delete_many({})
    assert db["system.buckets.w"].count_documents({}) == 0


def test_updates(db: Any) -> None:
    """LIM "Updates and Deletes": arbitrary updates since MongoDB 7.0; the time
    field must stay a date."""
    make(db)
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    result = db.w.update_many({"m.sensor": 1}, {"$inc": {"v": 100}})
    n1 = sum(m["m"]["sensor"] == 1 for m in MEASUREMENTS)
    assert (result.matched_count, result.modified_count) == (n1, n1)
    expected = {m["_id"]: m["v"] + 100 * (m["m"]["sensor"] == 1) for m in MEASUREMENTS}
    assert {d["_id"]: d["v"] for d in db.w.find()} == expected
    # An update may change the meta field: the measurement moves to that meta's bucket.
    assert db.w.update_one({"_id": 0}, {"$set": {"m": {"sensor": 9}}}).modified_count == 1
    assert db.w.find_one({"m.sensor": 9})["_id"] == 0
    assert any(b["meta"] == {"sensor": 9} for b in buckets(db))
    with pytest.raises(WriteError) as info:
        db.w.update_one({"_id": 1}, {"$unset": {"t": ""}})
    assert info.value.code == 2
    assert db.w.count_documents({}) == len(MEASUREMENTS)
    up = db.w.update_one({"_id": 500}, {"$set": {"t": T0, "v": 1}}, upsert=True)
    assert up.upserted_id == 500 and db.w.find_one({"_id": 500})["v"] == 1
    assert db.w.replace_one({"_id": 500}, {"t": T0, "v": 2}).modified_count == 1
    assert db.w.find_one({"_id": 500}) == {"t": T0, "v": 2, "_id": 500}


def test_drop_removes_the_buckets(db: Any) -> None:
    make(db)
    db.w.insert_one({"t": T0})
    db.w.drop()
    assert db.list_collection_names() == []


# -- indexes --------------------------------------------------------------------


def test_indexes_translate_to_bucket_indexes(db: Any) -> None:
    """IDX: indexes on the meta and time fields; listIndexes shows the user's
    key; the buckets collection shows its own (meta, control.min/max)."""
    make(db)
    assert [i["key"] for i in db.w.list_indexes()] == [{"m": 1, "t": 1}]  # created with the collection
    name = db.w.create_index([("m.sensor", 1), ("t", -1)])
    assert name == "m.sensor_1_t_-1"
    assert {i["name"]: i["key"] for i in db.w.list_indexes()}[name] == {"m.sensor": 1, "t": -1}
    bucket_keys = {i["name"]: i["key"] for i in db["system.buckets.w"].list_indexes()}
    assert bucket_keys[name] == {"meta.sensor": 1, "control.max.t": -1, "control.min.t": -1}
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    assert db.w.count_documents({"m.sensor": 2}) == 20
    db.w.drop_index([("m.sensor", 1), ("t", -1)])
    assert [i["name"] for i in db.w.list_indexes()] == ["m_1_t_1"]
    with pytest.raises(OperationFailure):
        db.w.create_index("v", unique=True)


# -- collMod --------------------------------------------------------------------


def test_granularity_only_gets_coarser(db: Any) -> None:
    """GR "Change Time Series Granularity": seconds -> minutes -> hours only."""
    make(db)
    db.w.insert_one({"t": T0, "m": 1})
    db.command("collMod", "w", timeseries={"granularity": "minutes"})
    (entry,) = [e for e in db.list_collections() if e["name"] == "w"]
    assert entry["options"]["timeseries"]["granularity"] == "minutes"
    assert entry["options"]["timeseries"]["bucketMaxSpanSeconds"] == 86400
    # The old bucket (rounded to the minute) still takes a measurement within its span.
    db.w.insert_one({"t": T0 + minutes(90), "m": 1})
    assert db.w.count_documents({}) == 2
    for finer in ("seconds",):
        with pytest.raises(OperationFailure) as info:
            db.command("collMod", "w", timeseries={"granularity": finer})
        assert info.value.code == 72
    db.command("collMod", "w", timeseries={"granularity": "hours"})
    with pytest.raises(OperationFailure) as info:
        db.command("collMod", "w", timeseries={"granularity": "minutes"})
    assert info.value.code == 72


def test_ttl_removes_expired_buckets(client: Any, db: Any) -> None:
    """TTL: a bucket goes when its newest measurement is older than expireAfterSeconds."""
    make(db, expireAfterSeconds=3600)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    db.w.insert_many(
        [
            {"t": now - dt.timedelta(hours=3), "m": "old"},
            {"t": now - dt.timedelta(hours=3), "m": "mixed"},
            {"t": now - dt.timedelta(minutes=50), "m": "mixed"},
            {"t": now, "m": "new"},
        ]
    )
    client.admin.command("setParameter", 1, ttlMonitorSleepSecs=1)
    deadline = time.monotonic() + 10
    while db.w.count_documents({"m": "old"}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert db.w.count_documents({"m": "old"}) == 0
    # "mixed" spans 3 h ago to 50 min ago: two buckets (span 1 h); only the older one expired.
    assert sorted(d["m"] for d in db.w.find()) == ["mixed", "new"]
    db.command("collMod", "w", expireAfterSeconds=60)
    (entry,) = [e for e in db.list_collections() if e["name"] == "w"]
    assert entry["options"]["expireAfterSeconds"] == 60


# -- over the wire --------------------------------------------------------------


def test_over_the_wire(wire: Any) -> None:
    """CQ through pymongo against ``foliodb serve``."""
    db = wire.tsw
    db.drop_collection("w")
    make(db, ts={"granularity": "minutes"})
    db.w.insert_many([dict(m) for m in MEASUREMENTS])
    assert sorted(d["_id"] for d in db.w.find({"m.sensor": 1})) == [m["_id"] for m in MEASUREMENTS if m["_id"] % 3 == 1]
    (entry,) = list(db.list_collections(filter={"name": "w"}))
    assert entry["type"] == "timeseries"
    with pytest.raises(WriteError) as info:
        db.w.insert_one({"v": 1})
    assert info.value.code == 2
    assert db.w.delete_many({"m.sensor": 0}).deleted_count == 20
    assert db.w.count_documents({}) == 40


def test_rename_is_refused(client: Any, db: Any) -> None:
    """LIM: a time-series collection cannot be renamed (IllegalOperation, 20)."""
    make(db)
    for source in ("w", "system.buckets.w"):
        with pytest.raises(OperationFailure) as info:
            client.admin.command("renameCollection", f"{db.name}.{source}", to=f"{db.name}.v")
        assert info.value.code == 20


def test_no_writes_in_a_transaction(client: Any, db: Any) -> None:
    """LIM "Transactions": a time-series collection cannot be written in a transaction (263)."""
    make(db)
    with client.start_session() as session, pytest.raises(OperationFailure) as info, session.start_transaction():
        db.w.insert_one({"t": T0}, session=session)
    assert info.value.code == 263
    assert db.w.count_documents({}) == 0


def test_out_to_a_time_series_collection(db: Any) -> None:
    """LIM "Aggregation $merge and $out": since 7.0.3 $out writes to a time-series
    collection (created with the stage's timeseries options)."""
    db.src.insert_many([{"t": T0 + minutes(i), "m": i % 2, "v": i} for i in range(6)])
    stage = {"$out": {"db": db.name, "coll": "w", "timeseries": {"timeField": "t", "metaField": "m"}}}
    list(db.src.aggregate([{"$match": {"v": {"$gte": 2}}}, {"$project": {"_id": 0}}, stage]))
    (entry,) = list(db.list_collections(filter={"name": "w"}))
    assert entry["type"] == "timeseries"
    assert sorted(d["v"] for d in db.w.find()) == [2, 3, 4, 5]
    assert db["system.buckets.w"].count_documents({}) == 2  # meta 0 and meta 1, within one hour
    # Again: the collection's measurements are replaced, not added to.
    list(db.src.aggregate([{"$match": {"v": 0}}, {"$project": {"_id": 0}}, stage]))
    assert [d["v"] for d in db.w.find()] == [0]
    with pytest.raises(OperationFailure) as info:
        list(db.src.aggregate([{"$out": {"db": db.name, "coll": "src", "timeseries": {"timeField": "t"}}}]))
    assert info.value.code == 72
    with pytest.raises(OperationFailure) as info:
        list(db.src.aggregate([{"$project": {"t": 0}}, stage]))
    assert info.value.code == 2
    assert [d["v"] for d in db.w.find()] == [0]  # a failed $out leaves the collection as it was


def test_times_before_1970_and_beyond_datetime(db: Any) -> None:
    """A bucket's control.min never follows its measurements, so time predicates
    find dates before the epoch and beyond Python's datetime range."""
    from bson.datetime_ms import DatetimeMS

    make(db)
    early = dt.datetime(1969, 12, 31, 23, 59, 30)
    db.w.insert_many([{"t": early, "m": 1}, {"t": DatetimeMS(-(10**15)), "m": 2}, {"t": DatetimeMS(10**15), "m": 3}])
    assert db["system.buckets.w"].find_one({"meta": 1})["control"]["min"]["t"] == dt.datetime(1969, 12, 31, 23, 59)
    assert [d["m"] for d in db.w.find({"t": {"$lte": early}}).sort("m", 1)] == [1, 2]
    assert [d["m"] for d in db.w.find({"t": DatetimeMS(-(10**15))})] == [2]
    assert [d["m"] for d in db.w.find({"t": {"$gt": dt.datetime(9999, 1, 1)}})] == [3]


def test_later_inserts_reopen_a_bucket_without_a_meta_field(db: Any) -> None:
    """BK: without a meta field (and so no meta index) buckets are still refilled,
    found through their _id (whose timestamp is the bucket's control.min)."""
    db.create_collection("w", timeseries={"timeField": "t"})
    for i in range(5):
        db.w.insert_one({"t": T0 + minutes(i)})
    db.w.insert_one({"t": T0 + minutes(61)})  # past the one-hour span from 00:00
    assert [len(b["data"]["t"]) for b in buckets(db)] == [5, 1]
    (first, _) = buckets(db)
    assert first["_id"].generation_time.replace(tzinfo=None) == dt.datetime(2024, 5, 18, 0, 0)
