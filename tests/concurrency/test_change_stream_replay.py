"""A change stream is the exact history of committed writes, in commit order.

Random writes (some grouped in transactions that commit or abort, some that
fail on a duplicate key) run on several collections while a client-wide
change stream is read in another thread. The stream must yield exactly the
committed changes, in the order they committed; and replaying its events
from the first token onto an empty database, using only what the events say
(``fullDocument`` of inserts and replacements, the ``updateDescription`` of
updates, the ``documentKey`` of deletes), must rebuild the same documents.

Event shapes: https://www.mongodb.com/docs/manual/reference/change-events/
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymongo.errors import DuplicateKeyError, OperationFailure

from tests.concurrency.conftest import Deployment

COLLECTIONS = ("a", "b", "c")
KEYS = st.integers(0, 5)
VALUES = st.one_of(st.integers(-3, 3), st.text("xy", max_size=2), st.lists(st.integers(0, 3), max_size=4))
FIELDS = st.sampled_from(["p", "q", "arr", "sub"])

WRITE = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(COLLECTIONS), KEYS, VALUES),
    st.tuples(st.just("set"), st.sampled_from(COLLECTIONS), KEYS, st.tuples(FIELDS, VALUES)),
    st.tuples(st.just("set_nested"), st.sampled_from(COLLECTIONS), KEYS, VALUES),
    st.tuples(st.just("unset"), st.sampled_from(COLLECTIONS), KEYS, FIELDS),
    st.tuples(st.just("push"), st.sampled_from(COLLECTIONS), KEYS, st.integers(0, 9)),
    st.tuples(st.just("truncate"), st.sampled_from(COLLECTIONS), KEYS, st.integers(0, 2)),
    st.tuples(st.just("replace"), st.sampled_from(COLLECTIONS), KEYS, VALUES),
    st.tuples(st.just("delete"), st.sampled_from(COLLECTIONS), KEYS, st.none()),
)
STEP = st.one_of(
    WRITE.map(lambda write: ("alone", [write])),
    st.tuples(st.sampled_from(["commit", "abort"]), st.lists(WRITE, min_size=1, max_size=4)),
)

_databases = itertools.count()


def _run(db: Any, write: tuple[str, str, int, Any], session: Any = None) -> list[tuple[str, str, int]]:
    """Run one write; the changes it makes, as (operationType, collection, _id). A write
    that fails (a duplicate key; $push onto a non-array, 2; a path through a non-document,
    28) changes nothing, and inside a transaction aborts it: it raises there."""
    try:
        return _write(db, write, session)
    except (DuplicateKeyError, OperationFailure) as exc:
        assert isinstance(exc, DuplicateKeyError) or exc.code in (2, 28), exc
        if session is not None:
            raise
        return []


def _write(db: Any, write: tuple[str, str, int, Any], session: Any) -> list[tuple[str, str, int]]:
    kind, name, key, arg = write
    coll = db[name]
    if kind == "insert":
        coll.insert_one({"_id": key, "v": arg}, session=session)
        return [("insert", name, key)]
    if kind == "delete":
        return [("delete", name, key)] if coll.delete_one({"_id": key}, session=session).deleted_count else []
    if kind == "replace":
        result = coll.replace_one({"_id": key}, {"r": arg}, session=session)
        # modified, not matched: mongod logs no entry (so no event) for a replacement by an identical document.
        return [("replace", name, key)] if result.modified_count else []
    update: Any = {
        "set": lambda: {"$set": {arg[0]: arg[1]}},
        "set_nested": lambda: {"$set": {"sub.deep": arg}},
        "unset": lambda: {"$unset": {arg: ""}},
        "push": lambda: {"$push": {"arr": arg}},
        # A pipeline that shortens an array: a truncatedArrays entry where arr is an array.
        "truncate": lambda: [{"$set": {"arr": {"$cond": [{"$isArray": "$arr"}, {"$slice": ["$arr", arg]}, "$arr"]}}}],
    }[kind]()
    result = coll.update_one({"_id": key}, update, session=session)
    return [("update", name, key)] if result.modified_count else []


def _replay(target: Any, event: dict[str, Any]) -> None:
    coll = target[event["ns"]["coll"]]
    key = event["documentKey"]
    kind = event["operationType"]
    if kind == "insert":
        coll.insert_one(event["fullDocument"])
    elif kind == "replace":
        coll.replace_one(key, event["fullDocument"])
    elif kind == "delete":
        coll.delete_one(key)
    else:
        assert kind == "update", event
        change = event["updateDescription"]
        for truncated in change["truncatedArrays"]:
            coll.update_one(key, {"$push": {truncated["field"]: {"$each": [], "$slice": truncated["newSize"]}}})
        update: dict[str, Any] = {}
        if change["updatedFields"]:
            update["$set"] = change["updatedFields"]
        if change["removedFields"]:
            update["$unset"] = dict.fromkeys(change["removedFields"], "")
        if update:
            coll.update_one(key, update)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=25))
@example(  # every kind of event, an array truncated, in and out of a transaction
    steps=[
        ("alone", [("insert", "a", 1, [1, 2, 3])]),
        ("alone", [("push", "a", 1, 4)]),
        ("commit", [("set", "a", 1, ("arr", [5, 6, 7])), ("truncate", "a", 1, 1), ("set_nested", "a", 1, 2)]),
        ("abort", [("delete", "a", 1, None)]),
        ("alone", [("unset", "a", 1, "sub")]),
        ("commit", [("insert", "b", 2, "x"), ("replace", "b", 2, 3), ("insert", "c", 3, 0), ("delete", "c", 3, None)]),
    ]
)
@example(
    steps=[("alone", [("insert", "a", 0, 0)]), ("alone", [("replace", "a", 0, 0)]), ("alone", [("replace", "a", 0, 0)])]
)
def test_a_stream_is_the_committed_history_and_replays_it(deployment: Deployment, steps: list[Any]) -> None:
    writer, reader = deployment.connect(), deployment.connect()
    name = f"replay{next(_databases)}"
    db = writer[name]
    expected: list[tuple[str, str, int]] = []
    events: list[dict[str, Any]] = []
    done = threading.Event()
    pipeline = [{"$match": {"ns.db": name}}]
    with reader.watch(pipeline, max_await_time_ms=50) as stream:

        def read() -> None:  # concurrently with the writes, until the sentinel arrives
            while True:
                event = stream.try_next()
                if event is None:
                    continue
                events.append(event)
                if event["ns"]["coll"] == "sentinel":
                    done.set()
                    return

        thread = threading.Thread(target=read)
        thread.start()
        for how, writes in steps:
            if how == "alone":
                expected.extend(_run(db, writes[0]))
                continue
            with writer.start_session() as session:
                session.start_transaction()
                try:
                    made = [change for write in writes for change in _run(db, write, session)]
                except (DuplicateKeyError, OperationFailure):
                    session.abort_transaction()  # the failed write aborted it: nothing of it committed
                    continue
                if how == "commit":
                    session.commit_transaction()
                    expected.extend(made)
                else:
                    session.abort_transaction()
        db.sentinel.insert_one({"_id": "end"})
        assert done.wait(30), "the stream never delivered the sentinel"
        thread.join()
    seen = [(e["operationType"], e["ns"]["coll"], e["documentKey"]["_id"]) for e in events[:-1]]
    assert seen == expected
    times = [(e["clusterTime"].time, e["clusterTime"].inc) for e in events]
    assert times == sorted(times)

    target = writer[f"{name}_copy"]
    first = events[0]["_id"]
    with reader.watch(pipeline, start_after=None, resume_after=first) as again:
        replayed = [events[0]]
        while len(replayed) < len(events):
            event = again.try_next()
            if event is not None:
                replayed.append(event)
    assert [e["_id"] for e in replayed] == [e["_id"] for e in events]  # the same history, from the first token
    for event in replayed[:-1]:
        _replay(target, event)
    for coll in COLLECTIONS:
        assert list(target[coll].find().sort("_id")) == list(db[coll].find().sort("_id")), coll
