"""The ``sleep`` test command, the maxTime fail points and the bounds of ``maxTimeMS``, as
mongod answers them.

Sources: mongod's src/mongo/db/commands/sleep_command.cpp (its fields and error codes),
OperationContext's maxTimeAlwaysTimeOut/maxTimeNeverTimeOut fail points, and
jstests/core/max_time_ms.js (0 to 2^31-1 accepted, 2^31 and -1 BadValue; a 300 ms sleep
with maxTimeMS 100 fails with MaxTimeMSExpired; with maxTimeNeverTimeOut it succeeds).

No check here depends on the machine's load: what must not wait for a sleep runs while a
30 s sleep is still running (then killed), and what must stop early stops in under half
of what it would otherwise take.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from bson import Int64

from foliodb.commands import Executor
from foliodb.commands.replication import ReplicaSet


def _timed(executor: Executor, db: str, command: dict[str, Any]) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    reply = executor.execute(db, command)
    return reply, time.perf_counter() - started


def test_sleep_needs_test_commands_and_admin(tmp_path: Path, executor: Executor) -> None:
    plain = Executor.open(str(tmp_path / "plain"), ReplicaSet())
    try:
        reply = plain.execute("admin", {"sleep": 1, "millis": 1})
        assert (reply["code"], reply["errmsg"]) == (59, "no such command: 'sleep'")
    finally:
        plain.close()
    reply = executor.execute("test", {"sleep": 1, "millis": 1})
    assert (reply["code"], reply["errmsg"]) == (13, "sleep may only be run against the admin database.")


def _sleeping(executor: Executor, comment: str, **fields: Any) -> threading.Thread:
    """A 30 s sleep on another thread, running (in currentOp) when this returns."""
    sleeper = threading.Thread(
        target=lambda: executor.execute("admin", {"sleep": 1, "secs": 30, "comment": comment, **fields})
    )
    sleeper.start()
    assert _op(executor, comment)
    return sleeper


def _op(executor: Executor, comment: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    ops: list[dict[str, Any]] = []
    while not ops and time.monotonic() < deadline:
        inprog = executor.execute("admin", {"currentOp": 1})["inprog"]
        ops = [op for op in inprog if op.get("command", {}).get("comment") == comment]
    return ops


def _kill(executor: Executor, comment: str, sleeper: threading.Thread) -> None:
    executor.execute("admin", {"killOp": 1, "op": _op(executor, comment)[0]["opid"]})
    sleeper.join(10)
    assert not sleeper.is_alive()


def test_sleep_sleeps_for_secs_plus_millis(executor: Executor) -> None:
    reply, seconds = _timed(executor, "admin", {"sleep": 1, "millis": 150, "lock": "none"})
    assert reply == {"ok": 1.0} and seconds >= 0.15
    reply, seconds = _timed(executor, "admin", {"sleep": 1, "secs": 0.9, "millis": 100})
    # secs is truncated, as numberLong(): 0.1 s, where 0.9 + 0.1 would be 1.0 s. The margin is the
    # truncated 0.9 s itself, the most this check can give a loaded machine.
    assert reply == {"ok": 1.0} and 0.1 <= seconds < 1.0


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"secs": 1, "seconds": 1}, 51153, "Only one of 'secs' and 'seconds' may be specified"),
        ({"secs": "1"}, 34344, "'secs' must be a number."),
        ({"seconds": True}, 51154, "'seconds' must be a number."),
        ({"millis": None}, 34345, "'millis' must be a number."),
        ({"millis": 1, "w": True, "lock": "w"}, 34346, "Only one of 'w' and 'lock' may be set."),
        ({"millis": 1, "lock": "x"}, 34347, "'lock' must be one of 'r', 'ir', 'w', 'iw', 'none'."),
    ],
)
def test_sleep_argument_errors(executor: Executor, fields: dict[str, Any], code: int, message: str) -> None:
    reply = executor.execute("admin", {"sleep": 1, **fields})
    assert (reply["ok"], reply["code"], reply["errmsg"]) == (0.0, code, message)


def test_sleep_stops_at_max_time_ms_and_at_kill_op(executor: Executor) -> None:
    reply, seconds = _timed(executor, "admin", {"sleep": 1, "secs": 30, "maxTimeMS": 100, "lock": "none"})
    assert reply["code"] == 50 and seconds < 15  # at its limit, not at the end of its 30 s
    assert executor.execute("admin", {"sleep": 1, "millis": 300, "maxTimeMS": 10_000, "lock": "none"})["ok"] == 1.0
    replies: list[dict[str, Any]] = []
    sleeper = threading.Thread(
        target=lambda: replies.append(executor.execute("admin", {"sleep": 1, "secs": 30, "comment": "nap"}))
    )
    sleeper.start()
    deadline = time.monotonic() + 10
    ops: list[dict[str, Any]] = []
    while not ops and time.monotonic() < deadline:
        inprog = executor.execute("admin", {"currentOp": 1})["inprog"]
        ops = [op for op in inprog if op.get("command", {}).get("comment") == "nap"]
    assert ops and ops[0]["command"]["sleep"] == 1
    executor.execute("admin", {"killOp": 1, "op": ops[0]["opid"]})
    sleeper.join(5)
    assert not sleeper.is_alive() and replies[0]["code"] == 11601


@pytest.mark.parametrize("lock", [{"lock": "w"}, {"lock": "r"}, {"w": True}, {}])
def test_a_sleep_under_a_lock_holds_writers_back_not_readers(executor: Executor, lock: dict[str, Any]) -> None:
    executor.execute("test", {"insert": "c", "documents": [{"_id": 1}]})
    sleeper = _sleeping(executor, "locked", **lock)
    reply = executor.execute("test", {"find": "c", "filter": {"_id": 1}})
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}] and sleeper.is_alive()  # it did not wait for the sleep
    writes: list[tuple[dict[str, Any], float]] = []
    writer = threading.Thread(
        target=lambda: writes.append(_timed(executor, "test", {"insert": "c", "documents": [{"_id": 2}]}))
    )
    writer.start()
    deadline = time.monotonic() + 5
    waiting: list[dict[str, Any]] = []
    while not waiting and time.monotonic() < deadline:
        inprog = executor.execute("admin", {"currentOp": 1})["inprog"]
        waiting = [op for op in inprog if op.get("command", {}).get("insert") == "c" and op["waitingForLock"]]
    assert waiting and not writes  # the insert waits for the writer the sleep holds
    _kill(executor, "locked", sleeper)
    writer.join(10)
    (reply, _) = writes[0]
    assert reply == {"n": 1, "ok": 1.0}


def test_a_sleep_without_a_lock_holds_no_one_back(executor: Executor) -> None:
    sleeper = _sleeping(executor, "unlocked", lock="iw")
    reply = executor.execute("test", {"insert": "c", "documents": [{"_id": 1}]})
    assert reply == {"n": 1, "ok": 1.0} and sleeper.is_alive()  # written while the sleep runs
    _kill(executor, "unlocked", sleeper)


def _fail_point(executor: Executor, name: str, mode: Any) -> None:
    assert executor.execute("admin", {"configureFailPoint": name, "mode": mode})["ok"] == 1.0


def test_max_time_always_time_out(executor: Executor) -> None:
    executor.execute("test", {"insert": "c", "documents": [{"_id": i} for i in range(5)]})
    opened = executor.execute("test", {"find": "c", "batchSize": 2, "maxTimeMS": 60_000})
    _fail_point(executor, "maxTimeAlwaysTimeOut", "alwaysOn")
    try:
        assert executor.execute("admin", {"ping": 1, "maxTimeMS": 10_000})["code"] == 50
        assert executor.execute("test", {"find": "c", "maxTimeMS": 10_000})["code"] == 50
        assert executor.execute("admin", {"ping": 1})["ok"] == 1.0  # no deadline, nothing to expire
        # The getMore of a cursor opened with maxTimeMS runs on what is left of it: it expires too.
        more = {"getMore": opened["cursor"]["id"], "collection": "c"}
        assert executor.execute("test", more)["code"] == 50
    finally:
        _fail_point(executor, "maxTimeAlwaysTimeOut", "off")
    assert executor.execute("admin", {"ping": 1, "maxTimeMS": 10_000})["ok"] == 1.0


def test_max_time_never_time_out(executor: Executor) -> None:
    _fail_point(executor, "maxTimeNeverTimeOut", "alwaysOn")
    try:
        reply = executor.execute("admin", {"sleep": 1, "millis": 300, "maxTimeMS": 100, "lock": "none"})
        assert reply == {"ok": 1.0}
    finally:
        _fail_point(executor, "maxTimeNeverTimeOut", "off")
    assert executor.execute("admin", {"sleep": 1, "millis": 300, "maxTimeMS": 100, "lock": "none"})["code"] == 50


@pytest.mark.parametrize("value", [0, 2**31 - 1, Int64(2**31 - 1), 1000.0])
def test_max_time_ms_in_range(executor: Executor, value: Any) -> None:
    assert executor.execute("admin", {"ping": 1, "maxTimeMS": value})["ok"] == 1.0


# mongod's parseMaxTimeMS (src/mongo/db/query/max_time_ms_parser.cpp): the value as a long
# (safeNumberLong: a double truncated, clamped to the long range) within [0, INT_MAX], then
# integral when a double; anything but a number (null too) is "must be a number".
OUT_OF_RANGE = "{} value for maxTimeMS is out of range [0, 2147483647]"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**31, OUT_OF_RANGE.format(2147483648)),
        (Int64(2**31), OUT_OF_RANGE.format(2147483648)),
        (Int64(2**63 - 1), OUT_OF_RANGE.format(9223372036854775807)),
        (-1, OUT_OF_RANGE.format(-1)),
        (Int64(-1), OUT_OF_RANGE.format(-1)),
        (-14245345234123245.55, OUT_OF_RANGE.format(-14245345234123246)),
        (1.7976931348623157e308, OUT_OF_RANGE.format(9223372036854775807)),
        (-1.7976931348623157e308, OUT_OF_RANGE.format(-9223372036854775808)),
        (1000.5, "maxTimeMS has non-integral value"),
        (float("nan"), "maxTimeMS has non-integral value"),
        ("string", "maxTimeMS must be a number"),
        (None, "maxTimeMS must be a number"),
        (True, "maxTimeMS must be a number"),
        ([42], "maxTimeMS must be a number"),
    ],
)
def test_max_time_ms_errors(executor: Executor, value: Any, message: str) -> None:
    for command in ({"find": "c"}, {"aggregate": "c", "pipeline": [], "cursor": {}}):
        reply = executor.execute("test", {**command, "maxTimeMS": value})
        assert (reply["code"], reply["codeName"], reply["errmsg"]) == (2, "BadValue", message)


def test_list_commands_names_test_commands_only_when_they_exist(tmp_path: Path, executor: Executor) -> None:
    plain = Executor.open(str(tmp_path / "plain"), ReplicaSet())
    try:
        listed = plain.execute("admin", {"listCommands": 1})["commands"]
        assert "sleep" not in listed and "configureFailPoint" not in listed and "find" in listed
    finally:
        plain.close()
    listed = executor.execute("admin", {"listCommands": 1})["commands"]
    assert "sleep" in listed and "configureFailPoint" in listed
