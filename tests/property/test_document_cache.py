"""Reads through the decoded-document cache equal reads without it (engine/cache.py).

1. Random sequences of writes, scans and transactions run on two clients, one
   with the cache (the default) and one with ``documentCacheSizeMB: 0``; every
   read's answer must be the same. Transactions read their snapshot: a write
   committed outside after a transaction's first read is invisible to it
   (https://www.mongodb.com/docs/manual/core/read-isolation-consistency-recency/),
   with the cache as without.
2. Threads: writers move units between documents in transactions (the total
   never changes in any committed state) while readers scan, with filters and
   sorts the cache serves, and inside transactions; every scan must see one
   committed state: the same total, every document once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ReadPreference
from pymongo.errors import OperationFailure

import foliodb

_KEYS = st.integers(0, 7)
_VALUES = st.integers(-3, 3)

_OPS = st.one_of(
    st.tuples(st.just("insert"), _KEYS, _VALUES),
    st.tuples(st.just("update"), _KEYS, _VALUES),
    st.tuples(st.just("update_many"), _VALUES, _VALUES),
    st.tuples(st.just("delete"), _KEYS),
    st.tuples(st.just("scan_eq"), _VALUES),
    st.tuples(st.just("scan_str"), st.integers(0, 1)),  # a needle: tested on the BSON of cached rows
    st.tuples(st.just("scan_range"), _VALUES),
    st.tuples(st.just("sort"), st.integers(1, 4)),
    st.tuples(st.just("txn"), _KEYS, _VALUES, _VALUES),
)


def _read(coll: Any, op: tuple[Any, ...], session: Any = None) -> Any:
    if op[0] == "scan_eq":
        return list(coll.find({"a": op[1]}, session=session))
    if op[0] == "scan_str":
        return list(coll.find({"s": f"v{op[1]}"}, session=session))
    if op[0] == "scan_range":
        return list(coll.find({"n": {"$gt": op[1]}}, {"_id": 1, "n": 1}, session=session))
    return list(coll.find({}, session=session).sort([("n", -1), ("_id", 1)]).limit(op[1]))


def _apply(client: Any, op: tuple[Any, ...]) -> Any:
    """What the operation answered (reads) or None; a transaction's reads, before and after an
    outside write, and its own write."""
    coll = client.test.c
    kind = op[0]
    if kind == "insert":
        coll.update_one({"_id": op[1]}, {"$set": {"a": op[2], "n": op[2], "s": f"v{op[2] % 2}"}}, upsert=True)
    elif kind == "update":
        coll.update_one({"_id": op[1]}, {"$inc": {"n": op[2]}})
    elif kind == "update_many":
        coll.update_many({"a": op[1]}, {"$set": {"a": op[2]}})
    elif kind == "delete":
        coll.delete_one({"_id": op[1]})
    elif kind == "txn":
        with client.start_session() as session:
            session.start_transaction(read_preference=ReadPreference.PRIMARY)
            before = _read(coll, ("scan_range", -10), session)
            coll.update_one({"_id": op[1]}, {"$inc": {"n": 100}})  # outside: the snapshot must not see it
            after = _read(coll, ("scan_range", -10), session)
            coll.update_one({"_id": (op[1] + 1) % 8}, {"$set": {"a": op[2]}}, session=session)
            own = _read(coll, ("scan_eq", op[2]), session)
            if op[3] > 0:
                session.commit_transaction()
            else:
                session.abort_transaction()
            return before, after, own
    else:
        return _read(coll, op)
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OPS, min_size=1, max_size=25))
def test_reads_through_the_cache_equal_reads_without_it(ops: list[tuple[Any, ...]]) -> None:
    with foliodb.MongoClient(":memory:") as cached, foliodb.MongoClient(":memory:") as plain:
        plain.admin.command("setParameter", 1, documentCacheSizeMB=0)
        for client in (cached, plain):
            client.test.create_collection("c")
            client.test.c.insert_many([{"_id": k, "a": k % 3, "n": k, "s": f"v{k % 4}"} for k in range(0, 8, 2)])
        for op in ops:
            answer = _apply(cached, op)
            assert answer == _apply(plain, op), op
            if op[0] == "txn":
                before, after, _ = answer
                assert before == after  # the transaction's snapshot kept
        used = cached.admin.command("serverStatus")["documentCache"]
        assert used["hits"] + used["builds"] > 0 or not any(op[0] in ("scan_eq", "scan_range", "sort") for op in ops)
        assert plain.admin.command("serverStatus")["documentCache"]["builds"] == 0


DOCS = 30
UNITS = 10


def test_scans_see_one_committed_state_while_transactions_commit() -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.c
        coll.insert_many([{"_id": i, "n": UNITS} for i in range(DOCS)])
        total = DOCS * UNITS
        failures: list[str] = []
        done = threading.Event()

        def writer(seed: int) -> None:
            k = seed
            for _ in range(150):
                k = (k * 7 + 3) % DOCS
                with client.start_session() as session:
                    try:
                        with session.start_transaction():
                            coll.update_one({"_id": k}, {"$inc": {"n": -1}}, session=session)
                            coll.update_one({"_id": (k + 1) % DOCS}, {"$inc": {"n": 1}}, session=session)
                    except OperationFailure as exc:
                        if not exc.has_error_label("TransientTransactionError"):
                            failures.append(repr(exc))

        def reader(in_transaction: bool) -> None:
            while not done.is_set():
                if in_transaction:
                    with client.start_session() as session, session.start_transaction():
                        docs = list(coll.find({"n": {"$gt": -1000}}, session=session))
                        again = list(coll.find({"n": {"$gt": -1000}}, session=session))
                        if docs != again:
                            failures.append("a transaction's two reads differ")
                else:
                    docs = list(coll.find({"n": {"$gt": -1000}}))
                    top = list(coll.find({}).sort([("n", -1), ("_id", 1)]).limit(DOCS))
                    if sum(d["n"] for d in top) != total or len(top) != DOCS:
                        failures.append(f"a sorted scan saw {sum(d['n'] for d in top)} in {len(top)}")
                if sum(d["n"] for d in docs) != total or sorted(d["_id"] for d in docs) != list(range(DOCS)):
                    failures.append(f"a scan saw {sum(d['n'] for d in docs)} in {len(docs)} documents")

        writers = [threading.Thread(target=writer, args=(seed,)) for seed in (1, 2)]
        readers = [threading.Thread(target=reader, args=(flag,)) for flag in (False, False, True)]
        for thread in writers + readers:
            thread.start()
        for thread in writers:
            thread.join(timeout=120)
        done.set()
        for thread in readers:
            thread.join(timeout=120)
        assert failures == []
        assert sum(d["n"] for d in coll.find()) == total
        status = client.admin.command("serverStatus")["documentCache"]
        assert status["hits"] > 0  # the scans went through the cache
        assert status["bytes"] <= status["maxBytes"]


@pytest.mark.parametrize("size_mb", [0, 1])
def test_a_collection_larger_than_the_cache_is_not_kept(size_mb: int) -> None:
    # ~1,000 documents of ~1 KB: past a 1 MB cache, counted as decoded (engine/cache.py).
    with foliodb.MongoClient(":memory:") as client:
        client.admin.command("setParameter", 1, documentCacheSizeMB=size_mb)
        coll = client.test.c
        coll.insert_many([{"_id": i, "pad": "x" * 1000} for i in range(1000)])
        assert len(list(coll.find({"pad": {"$ne": "y"}}))) == 1000
        status = client.admin.command("serverStatus")["documentCache"]
        assert status["maxBytes"] == size_mb * 1024 * 1024
        assert status["bytes"] == 0 and status["collections"] == 0


def test_only_a_scan_that_reads_everything_builds_an_entry() -> None:
    # A find_one() or a limit stops early: decoding the whole collection for it would cost far
    # more than the scan (regression: find_one() on a 20,000-document collection decoded it all).
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.c
        coll.insert_many([{"_id": i, "n": i % 10} for i in range(500)])
        assert coll.find_one() == {"_id": 0, "n": 0}
        assert [d["_id"] for d in coll.find({"n": 3}).limit(2)] == [3, 13]
        assert client.admin.command("serverStatus")["documentCache"]["builds"] == 0
        assert len(list(coll.find({"n": 3}))) == 50  # no limit: the whole collection is read
        assert [d["_id"] for d in coll.find({}).sort("n", -1).limit(1)] == [9]  # a sort reads it all too
        status = client.admin.command("serverStatus")["documentCache"]
        assert (status["builds"], status["hits"]) == (1, 1)
        assert coll.find_one({"n": 4}) == {"_id": 4, "n": 4}  # built: a limit may read it
        assert client.admin.command("serverStatus")["documentCache"]["hits"] == 2
