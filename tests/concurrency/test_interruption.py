"""Every long operation stops at ``maxTimeMS`` or ``killOp``, and leaves nothing half-done.

MongoDB checks for interruption throughout an operation: a command past its
``maxTimeMS`` fails with MaxTimeMSExpired (50), one marked by ``killOp``
with Interrupted (11601); ``currentOp`` shows what runs, with its plan and,
for an index build, its progress.

Manual: https://www.mongodb.com/docs/manual/reference/method/cursor.maxTimeMS/
https://www.mongodb.com/docs/manual/reference/command/killOp/
https://www.mongodb.com/docs/manual/reference/command/currentOp/
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

from tests.concurrency.background import Background, wait_for
from tests.concurrency.conftest import Deployment

# Exponential backtracking for a backtracking engine: every split of the a's is tried before failing at the "!".
BOMB = "(a|a)+$"
BOMB_TEXT = "a" * 40 + "!"


def _ops(admin: Any, **match: Any) -> list[dict[str, Any]]:
    return [op for op in admin.admin.command("currentOp")["inprog"] if all(op.get(k) == v for k, v in match.items())]


def _commented(admin: Any, comment: str) -> list[dict[str, Any]]:
    return [op for op in admin.admin.command("currentOp")["inprog"] if op.get("command", {}).get("comment") == comment]


def test_a_regex_bomb_stops_at_max_time_ms_and_the_rest_goes_on(deployment: Deployment) -> None:
    client, other = deployment.connect(), deployment.connect()
    client.test.s.insert_many([{"_id": i, "s": BOMB_TEXT} for i in range(3)])
    other.admin.command("ping")
    started = time.perf_counter()
    bomb = Background(lambda: list(client.test.s.find({"s": {"$regex": BOMB}}).max_time_ms(200)))
    pings = []
    while bomb.running:
        t = time.perf_counter()
        other.admin.command("ping")
        pings.append(time.perf_counter() - t)
        time.sleep(0.01)
    bomb.join()
    assert isinstance(bomb.error, ExecutionTimeout) and bomb.error.code == 50
    assert time.perf_counter() - started < 0.5 + 0.2  # the query stops within 500 ms of its limit
    assert pings and max(pings) < 0.1  # the server answered throughout
    assert other.test.s.count_documents({}) == 3


def test_a_regex_bomb_without_max_time_ms_fails_at_the_match_limit(deployment: Deployment) -> None:
    client = deployment.connect()
    client.test.s.insert_one({"s": BOMB_TEXT})
    started = time.perf_counter()
    with pytest.raises(OperationFailure) as info:
        list(client.test.s.find({"s": {"$regex": BOMB}}))
    assert info.value.code == 51156
    assert time.perf_counter() - started < 3.0


def test_the_issue_regexes_and_pcre_syntax_work(deployment: Deployment) -> None:
    """``(a+)+$`` is matched without backtracking blow-up; PCRE syntax Python's ``re`` rejects is accepted.

    https://www.mongodb.com/docs/manual/reference/operator/query/regex/ (PCRE 8.x syntax)."""
    client = deployment.connect()
    client.test.s.insert_many([{"_id": 1, "s": "a" * 40 + "!"}, {"_id": 2, "s": "aaa"}, {"_id": 3, "s": "Ωμέγα"}])
    started = time.perf_counter()
    assert [d["_id"] for d in client.test.s.find({"s": {"$regex": "(a+)+$"}})] == [2]
    assert time.perf_counter() - started < 1.0
    cases = {
        "a++$": [2],  # possessive quantifier
        "^(?>a+)$": [2],  # atomic group
        "^\\p{Greek}+$": [3],  # Unicode property
        "^[[:alpha:]]+$": [2, 3],  # POSIX class
        "(?x) ^ a a a $ # extended": [2],
        "^a(?i)AA$": [2],  # an inline flag past the start
    }
    for pattern, expected in cases.items():
        found = sorted(d["_id"] for d in client.test.s.find({"s": {"$regex": pattern}}))
        assert found == expected, pattern
    agg = client.test.s.aggregate(
        [{"$match": {"_id": 2}}, {"$project": {"m": {"$regexMatch": {"input": "$s", "regex": "a++"}}}}]
    )
    assert next(agg)["m"] is True


def test_reduce_stops_at_max_time_ms(deployment: Deployment) -> None:
    client = deployment.connect()
    client.test.r.insert_one({"_id": 1})
    slow = {
        "$reduce": {
            "input": {"$range": [0, 200_000]},
            "initialValue": [],
            "in": {"$concatArrays": ["$$value", ["$$this"]]},
        }
    }
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout) as info:
        list(client.test.r.aggregate([{"$project": {"n": {"$size": slow}}}], maxTimeMS=500))
    assert info.value.code == 50
    assert time.perf_counter() - started < 1.5


def test_kill_op_stops_a_group_and_leaves_the_data_valid(deployment: Deployment) -> None:
    client, admin = deployment.connect(), deployment.connect()
    coll = client.test.big
    coll.create_index("k")
    for start in range(0, 100_000, 20_000):
        coll.insert_many([{"_id": i, "k": i % 40_000, "v": i} for i in range(start, start + 20_000)])
    pipeline = [{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$count": "n"}]
    running = Background(lambda: list(coll.aggregate(pipeline, comment="the-group")))
    ops = wait_for(lambda: _commented(admin, "the-group"))
    op = ops[0]
    assert op["op"] == "command" and op["ns"] == "test.big" and op["active"] is True
    assert op["command"]["aggregate"] == "big" and op["waitingForLock"] is False
    assert isinstance(op["secs_running"], int) and isinstance(op["microsecs_running"], int)
    wait_for(lambda: (_commented(admin, "the-group") or [{}])[0].get("planSummary") == "COLLSCAN")
    killed_at = time.perf_counter()
    reply = admin.admin.command("killOp", op=op["opid"])
    assert (reply["info"], reply["ok"]) == ("attempting to kill op", 1.0)
    running.join()
    assert isinstance(running.error, OperationFailure) and running.error.code == 11601
    assert running.finished is not None and time.perf_counter() - killed_at < 1.0
    assert not _commented(admin, "the-group")
    report = admin.test.command("validate", "big")
    assert report["valid"] and report["nrecords"] == 100_000


def test_kill_op_stops_an_index_build_and_leaves_nothing_behind(deployment: Deployment) -> None:
    client, admin, writer = deployment.connect(), deployment.connect(), deployment.connect()
    coll = client.test.big
    for start in range(0, 60_000, 20_000):
        coll.insert_many([{"_id": i, "k": i % 997, "pad": "p" * 100} for i in range(start, start + 20_000)])
    build = Background(lambda: coll.create_index("k", name="k_1"))
    ops = wait_for(lambda: [op for op in _ops(admin, op="command") if "progress" in op])
    op = ops[0]
    assert op["command"]["createIndexes"] == "big" and op["progress"]["total"] == 60_000
    assert 0 < op["progress"]["done"] <= 60_000 and op["msg"].startswith("Index Build: scanning collection")
    # Writes go on during the build, maintained in the index being built.
    started = time.perf_counter()
    writer.test.big.insert_one({"_id": "during", "k": 5})
    assert time.perf_counter() - started < 0.5
    admin.admin.command("killOp", op=op["opid"])
    build.join()
    assert isinstance(build.error, OperationFailure) and build.error.code == 11601
    assert [ix["name"] for ix in admin.test.big.list_indexes()] == ["_id_"]
    report = admin.test.command("validate", "big")
    assert report["valid"] and report["nIndexes"] == 1 and report["nrecords"] == 60_001
    # The same build, not interrupted, gives an index equal to a collection scan.
    coll.create_index("k", name="k_1")
    hinted = [d["_id"] for d in admin.test.big.find({"k": 5}, {"_id": 1}).hint("k_1")]
    scanned = {d["_id"] for d in admin.test.big.find({"k": 5}, {"_id": 1}).hint({"$natural": 1})}
    assert len(hinted) == len(scanned) and set(hinted) == scanned and "during" in scanned
    assert admin.test.command("validate", "big")["valid"]
