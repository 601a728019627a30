"""The cyclic collector's pause (foliodb/collector.py): held by any thread it keeps the
collector off, the last to leave restores what the first found, and a cursor's batch of
thousands of documents starts no collection while it is taken."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import foliodb
from foliodb.collector import PAUSED


@pytest.fixture
def collecting() -> Iterator[None]:
    """The collector on, with CPython's default thresholds, and as it was after."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(700, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        (gc.enable if enabled else gc.disable)()


def test_nested_pauses_restore_the_collector_once_the_outermost_ends(collecting: None) -> None:
    with PAUSED:
        assert not gc.isenabled()
        with PAUSED:
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off(collecting: None) -> None:
    gc.disable()
    with PAUSED:
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_exception_ends_the_pause(collecting: None) -> None:
    with pytest.raises(ZeroDivisionError), PAUSED:
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_the_collector_stays_off_while_any_thread_holds_the_pause(collecting: None) -> None:
    """Two threads whose pauses overlap: the first to leave must not switch it back on."""
    first_in, second_in, first_out, second_may_leave = (threading.Event() for _ in range(4))
    seen: dict[str, bool] = {}

    def first() -> None:
        with PAUSED:
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with PAUSED:
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = gc.isenabled()
            second_may_leave.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_out.wait(10)
    second_may_leave.set()
    for thread in threads:
        thread.join(10)
    assert seen == {"after the first left": False}
    assert gc.isenabled()


def test_a_large_batch_starts_no_collection_while_it_is_taken(collecting: None, tmp_path: Any) -> None:
    """5,000 documents of ~15 containers each: running, the collector would start about 100
    youngest-generation collections while the batch is gathered (one per 700 new containers)."""
    client = foliodb.MongoClient(str(tmp_path / "db"))
    coll = client.db.c
    coll.insert_many(
        [
            {"_id": i, "items": [{"sku": f"s{i}-{j}", "qty": j} for j in range(4)], "ship": {"city": "x"}}
            for i in range(5000)
        ]
    )
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        cursor = coll.find({}, batch_size=5000)
        found = list(cursor)
    finally:
        gc.callbacks.remove(count)
    assert [doc["_id"] for doc in found] == list(range(5000))
    assert found[4999]["items"][3] == {"sku": "s4999-3", "qty": 3}
    # One collection after the batch (its objects examined once) and a few of the client's own.
    assert len(started) <= 5, started
    client.close()


# Stages and operators whose work runs while a batch is taken (so with the collector paused):
# what they leave behind must go by reference counting alone, or a long batch would pile it up.
PIPELINES: dict[str, list[dict[str, Any]]] = {
    "group": [{"$group": {"_id": "$k", "n": {"$sum": 1}, "all": {"$push": "$v"}, "set": {"$addToSet": "$v"}}}],
    "unwind": [{"$unwind": "$items"}, {"$group": {"_id": "$items.sku", "q": {"$sum": "$items.qty"}}}],
    "sort and project": [{"$sort": {"v": -1}}, {"$project": {"s": {"$concat": ["$k", {"$toString": "$v"}]}}}],
    "onError": [{"$project": {"n": {"$convert": {"input": "$k", "to": "int", "onError": -1}}}}],
    "facet": [{"$facet": {"a": [{"$count": "n"}], "b": [{"$bucketAuto": {"groupBy": "$v", "buckets": 4}}]}}],
    "window": [{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"v": 1}, "output": {"r": {"$rank": {}}}}}],
    "lookup": [{"$lookup": {"from": "other", "localField": "k", "foreignField": "_id", "as": "o"}}],
    "function": [
        {"$project": {"w": {"$function": {"body": "function(v) { return [v, {v: v}] }", "args": ["$v"], "lang": "js"}}}}
    ],
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_a_batchs_work_leaves_no_reference_cycles(name: str, collecting: None, tmp_path: Any) -> None:
    client = foliodb.MongoClient(str(tmp_path / "db"))
    coll = client.db.c
    coll.insert_many(
        [
            {"_id": i, "k": f"k{i % 7}", "v": i * 1.5, "items": [{"sku": f"s{i % 13}", "qty": i % 5}]}
            for i in range(2000)
        ]
    )
    client.db.other.insert_many([{"_id": f"k{i}", "x": i} for i in range(7)])
    gc.collect()
    gc.disable()
    try:
        assert list(coll.aggregate(PIPELINES[name], allowDiskUse=True))
        left = gc.collect()
    finally:
        gc.enable()
    assert left < 100, f"{left} objects in cycles after {name} over 2,000 documents"  # not one a document
    client.close()


def test_overlapping_pauses_past_their_time_give_the_collector_back(
    collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads whose pauses keep overlapping make one pause that never ends: the first thread to
    enter it after ``max_seconds`` switches the collector on again (here at once)."""
    monkeypatch.setattr(PAUSED, "max_seconds", -1.0)
    with PAUSED:
        assert not gc.isenabled()
        with PAUSED:  # another thread's batch, entering the old pause
            assert gc.isenabled()
        assert gc.isenabled()
    assert gc.isenabled()
    with PAUSED:  # a new pause starts off again
        assert not gc.isenabled()
