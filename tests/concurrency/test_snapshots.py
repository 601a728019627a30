"""Concurrent readers see only states that existed; concurrent writers lose nothing.

Each write command below changes many documents at once, and runs as one
storage transaction; each read command reads one snapshot. So a reader,
whatever it runs beside, must see exactly one of the collection's committed
states - never half of an ``update_many``, never an index that disagrees with
its documents - and writers from many threads must all land.

Manual: https://www.mongodb.com/docs/manual/core/read-isolation-consistency-recency/
"""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import DuplicateKeyError

from tests.concurrency.conftest import Deployment

State = tuple[tuple[int, int, str, tuple[int, ...]], ...]

OPS = st.one_of(
    st.tuples(st.just("inc_all"), st.text("abcxyz", min_size=1, max_size=3)),
    st.tuples(st.just("insert"), st.integers(1, 30)),
    st.tuples(st.just("delete_mod"), st.integers(2, 5)),
    st.tuples(st.just("set_arr"), st.lists(st.integers(0, 9), max_size=4)),
)


def _state(docs: Any) -> State:
    return tuple(sorted((d["_id"], d["gen"], d["tag"], tuple(d["arr"])) for d in docs))


class Model:
    """The collection's contents as the single writer makes them, state after state."""

    def __init__(self) -> None:
        self.docs: dict[int, dict[str, Any]] = {}
        self.next_id = 0
        self.states: set[State] = {()}
        self.lock = threading.Lock()

    def record(self) -> None:
        with self.lock:
            self.states.add(_state(self.docs.values()))

    def known(self) -> set[State]:
        with self.lock:
            return set(self.states)


def _apply(coll: Any, model: Model, op: tuple[Any, Any]) -> None:
    """Change the model, record the state to come (before the write commits), then run the one command."""
    kind, arg = op
    if kind == "inc_all":
        for doc in model.docs.values():
            doc["gen"] += 1
            doc["tag"] = arg
        model.record()
        coll.update_many({}, {"$inc": {"gen": 1}, "$set": {"tag": arg}})
    elif kind == "insert":
        new = [{"_id": model.next_id + i, "gen": 0, "tag": "new", "arr": [i % 3]} for i in range(arg)]
        model.next_id += arg
        for doc in new:
            model.docs[doc["_id"]] = dict(doc)
        model.record()
        coll.insert_many(new)
    elif kind == "delete_mod":
        for _id in [i for i in model.docs if i % arg == 0]:
            del model.docs[_id]
        model.record()
        coll.delete_many({"_id": {"$mod": [arg, 0]}})
    else:
        for doc in model.docs.values():
            doc["arr"] = list(arg)
        model.record()
        coll.update_many({}, {"$set": {"arr": list(arg)}})


def _reader(coll: Any, model: Model, stop: threading.Event, seen: list[int], failures: list[str]) -> None:
    reads = (
        lambda: coll.find({}).batch_size(100_000),
        lambda: coll.find({"gen": {"$gte": 0}}).hint("gen_1").batch_size(100_000),
        lambda: coll.find({"$or": [{"arr": {"$size": 0}}, {"arr": {"$exists": True}}]}).batch_size(100_000),
        lambda: coll.aggregate([{"$match": {}}, {"$sort": {"_id": -1}}], batchSize=100_000),
    )
    n = 0
    while not stop.is_set():
        docs = list(reads[n % len(reads)]())
        observed = _state(docs)
        if observed not in model.known():
            failures.append(f"read {n % len(reads)} saw a state that never existed: {observed[:5]}...")
            return
        groups = list(coll.aggregate([{"$group": {"_id": None, "n": {"$sum": 1}, "gens": {"$addToSet": "$gen"}}}]))
        summary = (groups[0]["n"], tuple(sorted(groups[0]["gens"]))) if groups else (0, ())
        if summary not in {(len(state), tuple(sorted({d[1] for d in state}))) for state in model.known()}:
            failures.append(f"a $group saw counts and generations of no committed state: {summary}")
            return
        n += 1
    seen.append(n)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=5, max_size=25))
def test_readers_see_only_committed_states(deployment: Deployment, ops: list[tuple[Any, Any]]) -> None:
    writer_client = deployment.connect()
    coll = writer_client.test.snap
    coll.drop()
    coll.create_index("gen", name="gen_1")
    coll.create_index("arr")
    model = Model()
    stop = threading.Event()
    seen: list[int] = []
    failures: list[str] = []
    readers = [
        threading.Thread(target=_reader, args=(deployment.connect().test.snap, model, stop, seen, failures))
        for _ in range(3)
    ]
    for thread in readers:
        thread.start()
    for op in ops:
        _apply(coll, model, op)
    stop.set()
    for thread in readers:
        thread.join(timeout=60)
    assert not failures, failures[0]
    assert _state(coll.find({})) == _state(model.docs.values())
    assert writer_client.test.command("validate", "snap")["valid"]


def test_concurrent_writers_lose_nothing(deployment: Deployment) -> None:
    setup = deployment.connect()
    setup.test.counters.insert_one({"_id": "c", "n": 0})
    setup.test.uniq.create_index("u", unique=True)
    threads, increments, values = 8, 150, 60
    duplicates: list[int] = []
    errors: list[BaseException] = []

    def work(client: Any) -> None:
        try:
            for _ in range(increments):
                client.test.counters.update_one({"_id": "c"}, {"$inc": {"n": 1}})
            lost = 0
            for u in range(values):
                try:
                    client.test.uniq.insert_one({"u": u})
                except DuplicateKeyError:
                    lost += 1
            duplicates.append(lost)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(deployment.connect(),)) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    assert not errors, errors[0]
    assert setup.test.counters.find_one({"_id": "c"})["n"] == threads * increments
    assert sorted(d["u"] for d in setup.test.uniq.find()) == list(range(values))
    assert sum(duplicates) == (threads - 1) * values
    assert setup.test.command("validate", "uniq")["valid"]
