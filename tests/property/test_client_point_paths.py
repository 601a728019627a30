"""The embedded client's direct paths answer as its general path does.

``insert_one``, ``update_one``, ``delete_one`` and ``find_one`` of a client with
no session, retryable writes, listeners or concerns of its own run their
command through ``Executor.point`` (the command's point path, without the
executor's checks of fields such a command has none of). A client with a
command listener sends every command the general way
(``MongoClient._execute``; a listener changes nothing an operation does:
https://pymongo.readthedocs.io/en/stable/api/pymongo/monitoring.html). Random
sequences of operations run on both; their results and errors, the documents,
the oplog entries, the change events, ``top``'s counts and the opcounters must
agree, and the direct client must have taken the direct path.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

import foliodb
from foliodb.commands.executor import Executor
from tests.property.test_point_writes import _IDS, _UPDATES
from tests.sent_commands import SentCommands

_OPS = st.one_of(
    st.tuples(st.just("insert"), _IDS),
    st.tuples(st.just("update"), _IDS, st.integers(0, len(_UPDATES) - 1)),
    st.tuples(st.just("delete"), _IDS),
    st.tuples(st.just("find"), _IDS),
)


def _apply(coll: Any, op: tuple[Any, ...]) -> Any:
    """What the operation returned, or the error it raised (type, code, message, details)."""
    try:
        if op[0] == "insert":
            return coll.insert_one({"_id": op[1], "n": -1}).inserted_id
        if op[0] == "delete":
            return coll.delete_one({"_id": op[1]}).raw_result
        if op[0] == "find":
            return coll.find_one({"_id": op[1]})
        spec = copy.deepcopy(_UPDATES[op[2]][0])
        write = coll.update_one if next(iter(spec)).startswith("$") else coll.replace_one
        return write({"_id": op[1]}, spec).raw_result
    except PyMongoError as exc:
        details = dict(getattr(exc, "details", None) or {})
        return (type(exc).__name__, getattr(exc, "code", None), str(exc), details)


def _events(stream: Any) -> list[tuple[Any, ...]]:
    out = []
    while (change := stream.try_next()) is not None:
        out.append(
            (
                change["operationType"],
                change.get("documentKey"),
                change.get("fullDocument"),
                change.get("updateDescription"),
            )
        )
    return out


def _oplog(client: Any) -> list[tuple[Any, ...]]:
    return [(e["op"], e["ns"], e["o"], e.get("o2")) for e in client.local["oplog.rs"].find({"ns": "test.c"})]


def _counts(client: Any) -> tuple[Any, ...]:
    top = client.admin.command("top")["totals"].get("test.c", {})
    counts = {name: value["count"] for name, value in top.items()}
    return counts, client.admin.command("serverStatus")["opcounters"]


@pytest.fixture
def direct_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commands that went through ``Executor.point`` (the direct paths), in order."""
    calls: list[str] = []
    real_point = Executor.point

    def spy(
        self: Executor, db: str, command: dict[str, Any], handler: Any, owner: int | None = None, general: Any = None
    ) -> dict[str, Any]:
        calls.append(next(iter(command)))
        return real_point(self, db, command, handler, owner, general)

    monkeypatch.setattr(Executor, "point", spy)
    return calls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OPS, min_size=1, max_size=12))
def test_the_direct_paths_answer_as_the_general_path(ops: list[tuple[Any, ...]], direct_calls: list[str]) -> None:
    with (
        foliodb.MongoClient(":memory:") as direct,
        foliodb.MongoClient(":memory:", event_listeners=[SentCommands()]) as general,
    ):
        results: dict[str, list[Any]] = {}
        events: dict[str, list[Any]] = {}
        for label, client in (("direct", direct), ("general", general)):
            coll = client.test.c
            client.test.create_collection("c")
            # A short await: try_next returns once the events so far are read (the loop reads to "end").
            with coll.watch(full_document="updateLookup", max_await_time_ms=5) as stream:
                del direct_calls[:]
                results[label] = [_apply(coll, op) for op in ops]
                if label == "direct":
                    assert len(direct_calls) == len(ops)  # each took the direct path
                else:
                    assert direct_calls == []
                coll.insert_one({"_id": "end"})  # the stream's last event: every earlier one is in
                events[label] = []
                while not events[label] or events[label][-1][1] != {"_id": "end"}:
                    events[label] += _events(stream)
        assert results["direct"] == results["general"]
        assert events["direct"] == events["general"]
        assert list(direct.test.c.find()) == list(general.test.c.find())
        assert _oplog(direct) == _oplog(general)
        assert _counts(direct) == _counts(general)


def test_a_session_listeners_or_a_concern_take_the_general_path(direct_calls: list[str]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.c
        with client.start_session() as session:
            coll.insert_one({"_id": 1}, session=session)
        coll.with_options(write_concern=coll.write_concern.__class__(w=1, j=True)).insert_one({"_id": 2})
        coll.insert_one({"_id": 3}, comment="general")
        assert direct_calls == []
        coll.insert_one({"_id": 4})
        assert direct_calls == ["insert"]
