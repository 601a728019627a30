"""The time-series bucket catalog (foliodb.engine.bucket_catalog) against what
else can write a dbpath: another process's client (its writes go through the
owner's engine, so the owner's catalog sees them), a foreign SQLite writer
(SQLite's data_version moves: the catalog starts again from storage), and the
size limit mongod closes buckets at.

Manual: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/
(bucket limits: 1000 measurements, timeseriesBucketMaxSize 125 KiB) and
https://www.mongodb.com/docs/manual/core/timeseries-collections/
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import foliodb
from foliodb.engine import bucket_catalog
from foliodb.engine.dbpath import DATA_FILE

T0 = dt.datetime(2024, 5, 18, 0, 0, 30)


def _counts(db: Any) -> list[int]:
    return sorted(len(b["data"]["t"]) for b in db["system.buckets.w"].find())


def _catalog(client: Any, db: str = "db") -> Any:
    engine = client._executor.engine
    with engine.reading():
        return engine.store(db, "system.buckets.w").bucket_catalog


def _insert_elsewhere(path: str, start: int) -> None:
    client = foliodb.MongoClient(path)
    try:
        for i in range(start, start + 5):
            client.db.w.insert_one({"t": T0 + dt.timedelta(seconds=i), "m": "a"})
    finally:
        client.close()


def test_another_process_fills_the_owners_buckets(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as owner:
        owner.db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
        owner.db.w.insert_one({"t": T0, "m": "a"})  # the owner's catalog now holds the bucket
        process = multiprocessing.get_context("spawn").Process(target=_insert_elsewhere, args=(path, 1))
        process.start()
        process.join(60)
        assert process.exitcode == 0
        owner.db.w.insert_one({"t": T0 + dt.timedelta(seconds=6), "m": "a"})
        assert _counts(owner.db) == [7]  # one bucket, nothing lost or doubled
        assert owner.db.w.count_documents({}) == 7


def test_a_foreign_sqlite_commit_drops_the_catalog(tmp_path: Path) -> None:
    path = tmp_path / "data"
    with foliodb.MongoClient(str(path)) as client:
        client.db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
        client.db.w.insert_one({"t": T0, "m": "a"})
        before = _catalog(client)
        client.db.w.insert_one({"t": T0, "m": "a"})
        assert _catalog(client) is before  # kept while nothing else wrote
        foreign = sqlite3.connect(path / DATA_FILE)
        foreign.execute("CREATE TABLE foreign_writer (x)")
        foreign.commit()
        foreign.close()
        client.db.w.insert_one({"t": T0, "m": "a"})
        assert _catalog(client) is not before
        assert _counts(client.db) == [3]


def test_buckets_close_at_the_size_limit(db: Any) -> None:
    """Measurements of 30,000 bytes: four fit under 128,000 bytes, but a bucket of
    fewer than 10 measurements (large ones) stays open up to 10 of them."""
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    db.w.insert_many([{"t": T0, "m": "a", "pad": "p" * 30_000} for _ in range(12)])
    assert _counts(db) == [2, 10]
    db.w.insert_many([{"t": T0, "m": "b", "small": i} for i in range(1200)])
    assert _counts(db) == [2, 10, 200, 1000]


def test_least_recently_used_series_are_forgotten(db: Any, client: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(bucket_catalog, "CATALOG_BYTES", 2_000)
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    for meta in range(10):
        db.w.insert_many([{"t": T0, "m": meta, "v": i} for i in range(20)])
    catalog = _catalog(client, db.name)
    assert catalog.size <= 2_000 and len(catalog.series) < 10
    for meta in range(10):  # forgotten series load again from storage
        db.w.insert_one({"t": T0, "m": meta, "v": 20})
    assert _counts(db) == [21] * 10


def test_drop_and_drop_database_start_a_new_catalog(client: Any, db: Any) -> None:
    """A collection made again under the same name has none of the old buckets."""
    for drop in (lambda: db.w.drop(), lambda: client.drop_database(db.name)):
        db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
        db.w.insert_many([{"t": T0, "m": "a"} for _ in range(3)])  # the catalog holds the bucket
        drop()
        db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
        db.w.insert_one({"t": T0, "m": "a"})
        assert _counts(db) == [1]
        db.w.drop()
