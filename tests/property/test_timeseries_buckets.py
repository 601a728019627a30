"""Random measurements in a time-series collection: every query answers as a
filter over the measurements inserted would (plain Python), and every bucket
keeps the invariants of ``foliodb.engine.buckets`` (one meta value, times
within [control.min, control.min + span), control.min.<time> rounded down,
min/max bounding every value, at most 1000 measurements).

Manual: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import foliodb

BASE = dt.datetime(2024, 1, 1)
GRANULARITY = {"seconds": (3600, 60), "minutes": (86400, 3600), "hours": (2592000, 86400)}

measurement = st.fixed_dictionaries(
    {
        "t": st.integers(0, 40 * 86400).map(lambda s: BASE + dt.timedelta(seconds=s)),
        "m": st.sampled_from([None, 1, "a", {"k": 1}, {"k": 2, "j": 0}]),
        "v": st.integers(-5, 5),
    }
)
query = st.fixed_dictionaries(
    {
        "meta": st.sampled_from([None, 1, "a", {"k": 1}, {"j": 0, "k": 2}, "missing"]),
        "low": st.integers(0, 40 * 86400),
        "width": st.integers(0, 10 * 86400),
    }
)


def rounded(t: dt.datetime, rounding: int) -> dt.datetime:
    seconds = int((t - BASE).total_seconds())
    return BASE + dt.timedelta(seconds=seconds - seconds % rounding)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    granularity=st.sampled_from(sorted(GRANULARITY)),
    batches=st.lists(st.lists(measurement, min_size=1, max_size=30), min_size=1, max_size=4),
    queries=st.lists(query, min_size=1, max_size=4),
)
def test_buckets_hold_the_measurements(granularity: str, batches: list[list[dict[str, Any]]], queries: Any) -> None:
    client: Any = foliodb.MongoClient(":memory:")
    db = client.p
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m", "granularity": granularity})
    inserted: list[dict[str, Any]] = []
    for batch in batches:
        docs = [{k: v for k, v in m.items() if not (k == "m" and v is None)} for m in batch]  # None: no meta
        for i, doc in enumerate(docs):
            doc["_id"] = len(inserted) + i
        db.w.insert_many([dict(d) for d in docs])
        inserted.extend(docs)
    span, rounding = GRANULARITY[granularity]
    for bucket in db["system.buckets.w"].find():
        times = list(bucket["data"]["t"].values())
        assert 1 <= len(times) <= 1000
        low = bucket["control"]["min"]["t"]
        assert low == rounded(min(times), rounding)
        assert all(low <= t < low + dt.timedelta(seconds=span) for t in times)
        assert bucket["control"]["max"]["t"] == max(times)
        values = list(bucket["data"]["v"].values())
        assert (bucket["control"]["min"]["v"], bucket["control"]["max"]["v"]) == (min(values), max(values))
    for q in queries:
        low = BASE + dt.timedelta(seconds=q["low"])
        high = low + dt.timedelta(seconds=q["width"])
        flt: dict[str, Any] = {"t": {"$gte": low, "$lt": high}}
        if q["meta"] == "missing":
            flt["m"] = {"$exists": False}
        elif q["meta"] is not None:
            flt["m"] = q["meta"]

        def wanted(doc: dict[str, Any], q: Any = q, low: dt.datetime = low, high: dt.datetime = high) -> bool:
            if not low <= doc["t"] < high:
                return False
            if q["meta"] == "missing":
                return "m" not in doc
            if q["meta"] is None:
                return True
            # Meta documents are stored with sorted fields; {j, k} is how the query spells it.
            meta = doc.get("m")
            return (dict(sorted(meta.items())) if isinstance(meta, dict) else meta) == q["meta"]

        expected = sorted(d["_id"] for d in inserted if wanted(d))
        assert sorted(d["_id"] for d in db.w.find(flt)) == expected
    client.close()
