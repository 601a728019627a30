"""The bucket catalog never diverges from storage: random sequences of inserts
(ordered and unordered, one or many, some invalid, some large), deletes,
updates, failed writes (rolled back after the catalog changed), rolled-back
updates, direct deletes of buckets, collMod of the granularity and reopening
the dbpath leave exactly the buckets that the manual's bucketing rules give,
worked out here in plain Python (a model of buckets; ``foliodb.engine`` is
not used for it), and a twin collection whose catalog is dropped before
every command (so each insert loads its buckets from storage, as before the
catalog) ends with the same buckets.

The rules (https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/,
https://www.mongodb.com/docs/manual/core/timeseries/timeseries-granularity/):
a measurement goes to a bucket of its meta value whose span
``[control.min, control.min + bucketMaxSpanSeconds)`` holds its time, with
fewer than 1000 measurements and room under the size limit
(timeseriesBucketMaxSize, 128,000 bytes of measurements, unless the bucket
holds fewer than 10: then up to 12 MiB); control.min is the earliest time
rounded down to bucketRoundingSeconds. Where the manual leaves the choice
open FolioDB takes the earliest control.min, then the oldest bucket; an
update re-inserts its results in the order it visits the buckets (record-id
order: the order they were made).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

import foliodb
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode

BASE = dt.datetime(2024, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
GRANULARITY = {"seconds": (3600, 60), "minutes": (86400, 3600), "hours": (2592000, 86400)}
COARSER = {"seconds": "minutes", "minutes": "hours", "hours": "hours"}
NAMES = ("w", "x")
METAS: list[Any] = ["none", None, 1, "a", {"k": 1}, {"k": 2, "j": 0}]  # "none": no meta field


def millis(t: dt.datetime) -> int:
    return (t - EPOCH) // dt.timedelta(milliseconds=1)


@dataclass
class ModelBucket:
    meta: bytes
    seq: int  # creation order
    measurements: list[dict[str, Any]] = field(default_factory=list)  # without the meta field
    size: int = 0
    min_time: int = 0


class Model:
    """Buckets by the manual's rules, in plain Python."""

    def __init__(self, granularity: str) -> None:
        self.granularity = granularity
        self.buckets: list[ModelBucket] = []
        self.seq = 0

    def span_ms(self) -> int:
        return GRANULARITY[self.granularity][0] * 1000

    def rounded(self, ms: int) -> int:
        rounding = GRANULARITY[self.granularity][1] * 1000
        return ms - ms % rounding

    def insert(self, doc: dict[str, Any]) -> None:
        meta = bson.encode({"m": _sorted(doc["m"])}) if "m" in doc else b""
        rest = {k: v for k, v in doc.items() if k != "m"}
        size = len(bson.encode({"m": rest})) - 8
        t = millis(rest["t"])
        fitting = [
            b
            for b in self.buckets
            if b.meta == meta
            and len(b.measurements) < 1000
            and b.min_time <= t < b.min_time + self.span_ms()
            and (b.size + size <= 128_000 or (len(b.measurements) < 10 and b.size + size <= 12 * 1024 * 1024))
        ]
        if fitting:
            bucket = min(fitting, key=lambda b: (b.min_time, b.seq))
        else:
            self.seq += 1
            bucket = ModelBucket(meta, self.seq, min_time=self.rounded(t))
            self.buckets.append(bucket)
        bucket.measurements.append(rest)
        bucket.size += size
        bucket.min_time = min(bucket.min_time, self.rounded(t))

    def remove(self, keep: Any) -> list[dict[str, Any]]:
        """Remove the measurements ``keep`` refuses, visiting the buckets in the order made; those removed."""
        removed = []
        for bucket in self.buckets:
            kept = [m for m in bucket.measurements if keep(m)]
            removed += [
                m | ({"m": bson.decode(bucket.meta)["m"]} if bucket.meta else {})
                for m in bucket.measurements
                if not keep(m)
            ]
            if len(kept) != len(bucket.measurements):
                bucket.measurements = kept
                bucket.size = sum(len(bson.encode({"m": m})) - 8 for m in kept)
                if kept:
                    bucket.min_time = min(self.rounded(millis(m["t"])) for m in kept)
        self.buckets = [b for b in self.buckets if b.measurements]
        return removed

    def view(self) -> list[tuple[Any, ...]]:
        return sorted((b.meta, b.min_time, tuple(m["_id"] for m in b.measurements)) for b in self.buckets)

    def holding(self, measurement_id: int) -> ModelBucket:
        return next(b for b in self.buckets if any(m["_id"] == measurement_id for m in b.measurements))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return value


def stored(db: Any, name: str) -> list[tuple[Any, ...]]:
    """The stored buckets as (meta key, control.min millis, measurement _ids in order); each checked whole."""
    out = []
    for bucket in db[f"system.buckets.{name}"].find():
        ids = bucket["data"]["_id"]
        out.append(
            (
                bson.encode({"m": bucket["meta"]}) if "meta" in bucket else b"",
                millis(bucket["control"]["min"]["t"]),
                tuple(ids[str(i)] for i in range(len(ids))),
            )
        )
    return sorted(out)


@contextmanager
def failing_bucket_write(after: int) -> Iterator[None]:
    """Bucket writes fail after ``after`` succeed (a storage failure once the catalog has changed)."""
    calls = [0]
    insert, update = CollectionStore.insert, CollectionStore.update

    def fail_later(original: Any) -> Any:
        def wrapper(self: CollectionStore, *args: Any, **kwargs: Any) -> Any:
            if self.info.name.startswith("system.buckets."):
                calls[0] += 1
                if calls[0] > after:
                    raise CommandError(ErrorCode.InternalError, "injected storage failure")
            return original(self, *args, **kwargs)

        return wrapper

    CollectionStore.insert = fail_later(insert)  # type: ignore[method-assign]
    CollectionStore.update = fail_later(update)  # type: ignore[method-assign]
    try:
        yield
    finally:
        CollectionStore.insert = insert  # type: ignore[method-assign]
        CollectionStore.update = update  # type: ignore[method-assign]


measurement = st.fixed_dictionaries(
    {
        "t": st.integers(0, 3 * 86400).map(lambda s: BASE + dt.timedelta(seconds=s)),
        "m": st.sampled_from(METAS),
        "v": st.integers(0, 4),
        "pad": st.sampled_from([0, 0, 0, 0, 20_000, 70_000]),
    }
)
operation = st.one_of(
    st.tuples(st.just("insert"), st.lists(measurement, min_size=1, max_size=25), st.booleans(), st.booleans()),
    st.tuples(st.just("many"), st.sampled_from(METAS), st.integers(0, 86400)),
    st.tuples(st.just("delete"), st.integers(0, 4)),
    st.tuples(st.just("update"), st.integers(0, 4), st.integers(0, 4)),
    st.tuples(st.just("bad update"), st.integers(0, 4)),
    st.tuples(st.just("fail"), st.lists(measurement, min_size=1, max_size=10), st.integers(0, 3)),
    st.tuples(st.just("direct delete")),
    st.tuples(st.just("collMod")),
    st.tuples(st.just("reopen")),
)


class Run:
    """The same operations on ``w`` (the catalog as it is) and ``x`` (its catalog
    dropped before every command), each beside its model."""

    def __init__(self, path: str, granularity: str) -> None:
        self.path = path
        self.models = {name: Model(granularity) for name in NAMES}
        self.next_id = 0
        self.open()
        for name in NAMES:
            self.db.create_collection(name, timeseries={"timeField": "t", "metaField": "m", "granularity": granularity})

    def open(self) -> None:
        self.client: Any = foliodb.MongoClient(self.path)
        self.db = self.client.p

    def collection(self, name: str) -> Any:
        if name == "x":
            engine = self.client._executor.engine
            with engine.reading():
                engine.store("p", "system.buckets.x").bucket_catalog = None
        return self.db[name]

    def documents(self, drawn: list[dict[str, Any]]) -> list[dict[str, Any]]:
        docs = []
        for m in drawn:
            doc: dict[str, Any] = {"_id": self.next_id, "t": m["t"], "v": m["v"]}
            if m["m"] != "none":
                doc["m"] = m["m"]
            if m["pad"]:
                doc["pad"] = "p" * m["pad"]
            self.next_id += 1
            docs.append(doc)
        return docs

    def apply(self, op: tuple[Any, ...]) -> None:
        first_id = self.next_id
        for name in NAMES:
            self.next_id = first_id  # both collections get the same measurements
            self.apply_to(name, self.models[name], op)
        if op[0] == "reopen":
            self.client.close()
            self.open()
        self.next_id = first_id + 2000

    def apply_to(self, name: str, model: Model, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "insert":
            _, drawn, ordered, invalid = op
            docs = self.documents(drawn)
            if invalid and len(docs) > 1:
                del docs[len(docs) // 2]["t"]  # not a measurement: refused
            end = next((i for i, d in enumerate(docs) if "t" not in d), len(docs)) if ordered else len(docs)
            for doc in docs[:end]:
                if "t" in doc:
                    model.insert(doc)
            if len(docs) == 1:
                self.collection(name).insert_one(dict(docs[0]))
            else:
                with pytest.raises(BulkWriteError) if invalid else _nothing():
                    self.collection(name).insert_many([dict(d) for d in docs], ordered=ordered)
        elif kind == "many":
            # Over 1000 measurements of one meta value at one time: the count limit.
            _, meta, second = op
            docs = self.documents([{"t": BASE + dt.timedelta(seconds=second), "m": meta, "v": 9, "pad": 0}] * 1003)
            for doc in docs:
                model.insert(doc)
            self.collection(name).insert_many([dict(d) for d in docs])
        elif kind == "delete":
            model.remove(lambda m: m["v"] != op[1])
            self.collection(name).delete_many({"v": op[1]})
        elif kind == "update":
            _, old, new = op
            # An update visits the buckets in record-id order (the order they were made) and
            # inserts its results in that order (the manual leaves the order open).
            removed = model.remove(lambda m: m["v"] != old)
            for doc in removed:
                model.insert({**doc, "v": new})
            self.collection(name).update_many({"v": old}, {"$set": {"v": new}})
        elif kind == "bad update":
            # Results without a time are no measurements: the update rolls back after removing them.
            matches = any(m["v"] == op[1] for b in model.buckets for m in b.measurements)
            with pytest.raises(WriteError) if matches else _nothing():
                self.collection(name).update_many({"v": op[1]}, {"$unset": {"t": ""}})
        elif kind == "fail":
            # A storage failure once the catalog has changed: the whole insert rolls back.
            _, drawn, after = op
            docs = self.documents(drawn)
            collection = self.collection(name)
            with failing_bucket_write(after):
                try:
                    collection.insert_many([dict(d) for d in docs])
                except OperationFailure:
                    return
            for doc in docs:
                model.insert(doc)
        elif kind == "direct delete":
            if not model.buckets:
                return
            target = min(m["_id"] for b in model.buckets for m in b.measurements)
            model.buckets.remove(model.holding(target))
            buckets = self.db[f"system.buckets.{name}"]
            found = next(b for b in buckets.find() if target in b["data"]["_id"].values())
            buckets.delete_one({"_id": found["_id"]})
        elif kind == "collMod":
            model.granularity = COARSER[model.granularity]
            self.db.command("collMod", name, timeseries={"granularity": model.granularity})


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(granularity=st.sampled_from(sorted(GRANULARITY)), operations=st.lists(operation, min_size=1, max_size=12))
def test_the_catalog_keeps_the_buckets_storage_would(granularity: str, operations: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(tmp + "/db", granularity)
        try:
            for op in operations:
                run.apply(op)
                for name in NAMES:
                    assert stored(run.db, name) == run.models[name].view(), (name, op[0])
            # The same measurements either way, whatever buckets an update's order made.
            assert sorted(run.db.w.find(), key=lambda d: d["_id"]) == sorted(run.db.x.find(), key=lambda d: d["_id"])
        finally:
            run.client.close()
