"""A cache entry outlives writes: it is patched with the records they changed (engine/cache.py).

1. ``Entry.patched`` against a plain model: the rows of a dict from record id to BSON, in
   record-id order, after any mix of changed, removed, added and untouched records; and its
   size is what a build of those rows counts.
2. Writes of every kind (inserts, a batch, a batch failing on a duplicate key, updates of
   one or many, replacements, deletes, updates whose filter no index serves, which scan the
   cache inside the write) between scans, on a client with the cache and one without: every
   answer the same, and the entry patched rather than built again.
"""

from __future__ import annotations

import threading
from typing import Any

import bson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError

import foliodb
from foliodb.engine.cache import Entry, entry_size
from tests.property.cache_pair import load_both

_BLOBS = st.dictionaries(st.integers(1, 40), st.integers(0, 5).map(lambda n: bson.encode({"n": n, "s": "x" * n})))


def _entry(records: dict[int, bytes]) -> Entry:
    rows = [(rid, data, bson.decode(data)) for rid, data in sorted(records.items())]
    return Entry(0, rows, entry_size(len(rows), sum(map(len, records.values()))), None)


@given(before=_BLOBS, after=_BLOBS, untouched=st.sets(st.integers(1, 40)))
def test_patched_rows_are_the_records_as_the_snapshot_has_them(
    before: dict[int, bytes], after: dict[int, bytes], untouched: set[int]
) -> None:
    # Records changed by the deltas: any id in either state, but for some left alone, which
    # keep their old version (as no write touched them, the snapshot has that one).
    changed = (before.keys() | after.keys()) - untouched
    expected = {rid: after[rid] for rid in changed if rid in after}
    expected |= {rid: before[rid] for rid in before.keys() - changed}
    entry = _entry(before)
    rows, size = entry.patched(((1, frozenset(changed)),), {rid: data for rid, data in after.items() if rid in changed})
    assert [(rid, data) for rid, data, _ in rows] == sorted(expected.items())
    assert all(doc == bson.decode(data) for _, data, doc in rows)
    assert size == _entry(expected).size
    assert [row[0] for row in entry.rows] == sorted(before)  # the old entry's rows are left as they were


_KEYS = st.integers(0, 11)
_VALUES = st.integers(-3, 3)
_WRITES = st.one_of(
    st.tuples(st.just("insert"), st.integers(12, 40), _VALUES),
    st.tuples(st.just("insert_many"), st.lists(st.integers(0, 40), min_size=1, max_size=4, unique=True), _VALUES),
    st.tuples(st.just("update"), _KEYS, _VALUES),
    st.tuples(st.just("update_many"), _VALUES, _VALUES),
    st.tuples(st.just("update_unindexed"), _VALUES, _VALUES),
    st.tuples(st.just("replace"), _KEYS, _VALUES),
    st.tuples(st.just("delete"), _KEYS),
    st.tuples(st.just("delete_many"), _VALUES),
)


def _write(coll: Any, op: tuple[Any, ...]) -> Any:
    """What the write reported (its counts, or the write errors of a failed batch)."""
    kind = op[0]
    if kind == "insert":
        if coll.find_one({"_id": op[1]}) is None:
            coll.insert_one({"_id": op[1], "a": op[2], "n": op[2], "s": f"v{op[2] % 2}"})
        return None
    if kind == "insert_many":
        try:
            coll.insert_many([{"_id": k, "a": op[2], "n": k} for k in op[1]], ordered=False)
        except BulkWriteError as exc:
            return exc.details["nInserted"], [error["index"] for error in exc.details["writeErrors"]]
        return None
    if kind == "update":
        return coll.update_one({"_id": op[1]}, {"$inc": {"n": op[2]}}).modified_count
    if kind == "update_many":
        return coll.update_many({"a": op[1]}, {"$set": {"a": op[2]}, "$inc": {"n": 1}}).modified_count
    if kind == "update_unindexed":  # the first by n descending: findAndModify's sort over the cached rows
        found = coll.find_one_and_update(
            {"a": {"$gte": op[1]}}, {"$set": {"s": f"u{op[2]}"}}, sort=[("n", -1), ("_id", 1)]
        )
        return found
    if kind == "replace":
        return coll.replace_one({"_id": op[1]}, {"a": op[2], "n": -op[2], "s": "r"}).modified_count
    if kind == "delete":
        return coll.delete_one({"_id": op[1]}).deleted_count
    return coll.delete_many({"n": {"$lt": op[1]}}).deleted_count


def _scans(coll: Any) -> Any:
    return (
        list(coll.find({})),
        list(coll.find({"n": {"$gt": 0}}, {"n": 1})),
        list(coll.find({"s": "v1"})),  # a needle
        list(coll.find({}).sort([("n", 1), ("_id", -1)])),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.lists(_VALUES, min_size=1, max_size=12), writes=st.lists(st.lists(_WRITES, max_size=3), max_size=8))
def test_scans_between_writes_equal_scans_without_the_cache(
    cached_and_uncached: tuple[Any, Any], start: list[int], writes: list[list[tuple[Any, ...]]]
) -> None:
    docs = [{"a": value, "n": value, "s": f"v{value % 2}"} for value in start]
    load_both(cached_and_uncached, docs)
    cached, uncached = (client.db.c for client in cached_and_uncached)
    status = cached_and_uncached[0].admin.command

    def builds_and_patches() -> tuple[int, int]:
        counts = status("serverStatus")["documentCache"]
        return counts["builds"], counts["patches"]

    builds = builds_and_patches()[0]
    for group in writes:
        contents = list(uncached.find({}))
        patches = builds_and_patches()[1]
        assert [_write(cached, op) for op in group] == [_write(uncached, op) for op in group]
        assert _scans(cached) == _scans(uncached)
        if list(uncached.find({})) != contents:  # the writes changed a record: the entry was patched
            assert builds_and_patches()[1] > patches
    assert builds_and_patches()[0] == builds  # the entry load_both built served every scan


def test_scans_beside_writers_see_one_committed_state(tmp_path: Any) -> None:
    """Writer threads add 1 to a document's ``n`` (half of them by a filter no index serves,
    which scans the cache inside the write) while reader threads scan the cached collection:
    each scan holds every document once, and the sum of ``n`` - the writes it sees - lies
    between the writes acknowledged before it began and those begun before it ended, never
    falling from one scan to the next."""
    size, writers, writes_each, readers = 300, 3, 150, 2
    with foliodb.MongoClient(str(tmp_path / "db")) as client:
        coll = client.db.c
        coll.insert_many([{"_id": i, "k": i, "n": 0} for i in range(size)])
        coll.count_documents({"n": {"$lt": 0}})
        coll.count_documents({"n": {"$lt": 0}})  # the entry, built
        started = acknowledged = 0
        lock = threading.Lock()
        stop = threading.Event()
        problems: list[str] = []

        def write(seed: int) -> None:
            nonlocal started, acknowledged
            for i in range(writes_each):
                key = (seed * 7919 + i * 104729) % size
                with lock:
                    started += 1
                if i % 2:
                    coll.update_one({"k": key}, {"$inc": {"n": 1}})
                else:
                    coll.update_one({"_id": key}, {"$inc": {"n": 1}})
                with lock:
                    acknowledged += 1

        def read() -> None:
            last = 0
            while not stop.is_set():
                with lock:
                    low = acknowledged
                docs = list(coll.find({"n": {"$gte": 0}}))
                with lock:
                    high = started
                total = sum(doc["n"] for doc in docs)
                if sorted(doc["_id"] for doc in docs) != list(range(size)):
                    problems.append("a scan without every document once")
                if not low <= total <= high or total < last:
                    problems.append(f"a scan saw {total} writes: acknowledged {low}, begun {high}, before {last}")
                last = total

        threads = [threading.Thread(target=read) for _ in range(readers)]
        threads += [threading.Thread(target=write, args=(seed,)) for seed in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads[readers:]:
            thread.join()
        stop.set()
        for thread in threads[:readers]:
            thread.join()
        assert problems == []
        assert sum(doc["n"] for doc in coll.find({})) == writers * writes_each
        assert client.admin.command("serverStatus")["documentCache"]["patches"] > 0
