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

from tests.concurrency.background import Background, pings_while, wait_for
from tests.concurrency.conftest import Deployment

# How late "promptly" may be: on a 2-core machine shared with other work a thread can wait
# seconds for a core. That an operation was interrupted, rather than run to its end, is shown
# by its error code (50, 11601, 237) and by the work it would otherwise take (each case says).
PROMPT = 5.0

# Exponential backtracking for a backtracking engine: every split of the a's is tried before failing at the "!".
BOMB = "(a|a)+$"
BOMB_TEXT = "a" * 40 + "!"


def _ops(admin: Any, **match: Any) -> list[dict[str, Any]]:
    return [op for op in admin.admin.command("currentOp")["inprog"] if all(op.get(k) == v for k, v in match.items())]


def _getmores(admin: Any, comment: str) -> list[dict[str, Any]]:
    """The running getMores of the cursor a command with this comment opened."""
    return [
        op
        for op in admin.admin.command("currentOp")["inprog"]
        if op.get("op") == "getmore" and op["cursor"]["originatingCommand"].get("comment") == comment
    ]


def _commented(admin: Any, comment: str) -> list[dict[str, Any]]:
    return [op for op in admin.admin.command("currentOp")["inprog"] if op.get("command", {}).get("comment") == comment]


def test_a_regex_bomb_stops_at_max_time_ms_and_the_rest_goes_on(deployment: Deployment) -> None:
    client, other = deployment.connect(), deployment.connect()
    client.test.s.insert_many([{"_id": i, "s": BOMB_TEXT} for i in range(3)])
    other.admin.command("ping")
    # 800 ms: under the 1 s match limit, so the deadline is what stops it.
    bomb = Background(lambda: list(client.test.s.find({"s": {"$regex": BOMB}}).max_time_ms(800)))
    pings = pings_while(bomb, other)
    bomb.join()
    assert isinstance(bomb.error, ExecutionTimeout) and bomb.error.code == 50
    # Generous bounds, for a loaded machine: unstopped, this match takes hours (2**40 splits);
    # a ping queued behind it would wait the whole 800 ms.
    assert bomb.seconds < 0.8 + 4.0
    # Against the bomb's own run, so that a load slowing both cannot fail it: half of it (0.4 s idle).
    assert pings and max(pings) < bomb.seconds / 2
    assert other.test.s.count_documents({}) == 3


def test_a_regex_bomb_without_max_time_ms_fails_at_the_match_limit(deployment: Deployment) -> None:
    client = deployment.connect()
    client.test.s.insert_one({"s": BOMB_TEXT})
    bomb = Background(lambda: list(client.test.s.find({"s": {"$regex": BOMB}})))
    bomb.join()
    assert isinstance(bomb.error, OperationFailure) and bomb.error.code == 51156
    assert bomb.seconds < 1.0 + 9.0  # generous, for a loaded machine: unbounded, it runs for hours


def test_the_issue_regexes_and_pcre_syntax_work(deployment: Deployment) -> None:
    """``(a+)+$`` is matched without backtracking blow-up; PCRE syntax Python's ``re`` rejects is accepted.

    https://www.mongodb.com/docs/manual/reference/operator/query/regex/ (PCRE 8.x syntax)."""
    client = deployment.connect()
    client.test.s.insert_many([{"_id": 1, "s": "a" * 40 + "!"}, {"_id": 2, "s": "aaa"}, {"_id": 3, "s": "Ωμέγα"}])
    # Answered, not stopped at the match limit (which would raise 51156): no blow-up.
    assert [d["_id"] for d in client.test.s.find({"s": {"$regex": "(a+)+$"}})] == [2]
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
    assert time.perf_counter() - started < 0.5 + PROMPT  # uninterrupted: minutes (200,000 copies of a growing array)


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
    assert running.finished is not None and time.perf_counter() - killed_at < PROMPT
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
    writer.test.big.insert_one({"_id": "during", "k": 5})
    assert build.running  # written without waiting for the build
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


def test_max_time_ms_bounds_a_cursors_work_not_its_idle_time(deployment: Deployment) -> None:
    """As mongod, a find's or aggregate's ``maxTimeMS`` is what its cursor may spend working, over
    the first batch and every getMore; the time the client holds the cursor between batches is free.

    https://www.mongodb.com/docs/manual/reference/method/cursor.maxTimeMS/ (processing time)."""
    client = deployment.connect()
    coll = client.test.cursor_time
    coll.insert_many([{"k": i} for i in range(1000)])
    idle = coll.find({}, batch_size=10).max_time_ms(200)
    seen = [next(idle)["k"] for _ in range(10)]
    time.sleep(0.4)  # past the limit, idle
    seen += [d["k"] for d in idle]
    assert sorted(seen) == list(range(1000))
    # $densify makes a million documents: the first getMore runs out of what the first batch left.
    dense = coll.aggregate([{"$densify": {"field": "k", "range": {"step": 0.001, "bounds": "full"}}}], maxTimeMS=200)
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout) as info:
        for _ in dense:
            pass
    assert info.value.code == 50
    assert time.perf_counter() - started < 0.2 + PROMPT  # uninterrupted: a million documents


def test_validate_stops_at_max_time_ms_and_killop(deployment: Deployment) -> None:
    """validate is interruptible, as mongod's (jstests/noPassthrough/validate_interrupt.js)."""
    client, admin = deployment.connect(), deployment.connect()
    coll = client.test.checked
    for start in range(0, 40_000, 20_000):
        coll.insert_many([{"_id": i, "k": i % 977, "a": [i, -i], "s": str(i)} for i in range(start, start + 20_000)])
    for key in ("k", "a", "s"):
        coll.create_index(key)
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout) as info:
        client.test.command("validate", "checked", full=True, maxTimeMS=50)
    assert info.value.code == 50 and time.perf_counter() - started < 0.05 + PROMPT
    running = Background(lambda: client.test.command("validate", "checked", full=True, comment="the-validate"))
    op = wait_for(lambda: _commented(admin, "the-validate"))[0]
    admin.admin.command("killOp", op=op["opid"])
    running.join()
    assert isinstance(running.error, OperationFailure) and running.error.code == 11601
    report = admin.test.command("validate", "checked")
    assert report["valid"] and report["nrecords"] == 40_000
    assert report["keysPerIndex"] == {"_id_": 40_000, "k_1": 40_000, "a_1": 79_999, "s_1": 40_000}  # [0, -0]: one key


def test_a_near_query_stops_at_max_time_ms(deployment: Deployment) -> None:
    """A $near search widens its ring until it holds the whole index; each ring is checked as it is
    read (unchecked, the last ring of these 80k points took 0.45 s here)."""
    client = deployment.connect()
    coll = client.test.places
    coll.insert_many([{"loc": [(i * 7919) % 360 - 180 + 0.5, (i * 104729) % 180 - 90 + 0.5]} for i in range(80_000)])
    coll.create_index([("loc", "2d")])
    searches = {
        "find": lambda: list(coll.find({"loc": {"$near": [0, 0]}}).limit(80_000).max_time_ms(50)),
        "geoNear": lambda: list(coll.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d"}}], maxTimeMS=50)),
    }
    for name, search in searches.items():
        started = time.perf_counter()
        with pytest.raises(ExecutionTimeout) as info:
            search()
        assert info.value.code == 50
        assert time.perf_counter() - started < 0.05 + PROMPT, name


def test_an_interrupted_write_command_fails_whole_and_leaves_nothing_of_it(deployment: Deployment) -> None:
    """As mongod, an interruption is not one write's error (in ``writeErrors``) but the command's:
    ``ok: 0`` with code 50 or 11601, ordered or not. Here the command's writes, one SQLite
    transaction, all roll back (mongod keeps those before the interruption, one document each)."""
    client, admin = deployment.connect(), deployment.connect()
    db = client.test
    db.w.insert_many([{"_id": i, "n": 0} for i in range(60_000)])
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout) as info:
        db.command("insert", "fresh", documents=[{"i": i} for i in range(100_000)], maxTimeMS=30)
    assert info.value.code == 50 and time.perf_counter() - started < PROMPT
    assert db.fresh.count_documents({}) == 0
    for ordered in (True, False):
        with pytest.raises(ExecutionTimeout):
            db.command(
                "delete",
                "w",
                deletes=[{"q": {"n": 1}, "limit": 0}, {"q": {}, "limit": 0}],
                ordered=ordered,
                maxTimeMS=20,
            )
    assert db.w.count_documents({}) == 60_000
    running = Background(lambda: db.w.update_many({}, {"$inc": {"n": 1}}, comment="the-update"))
    op = wait_for(lambda: _commented(admin, "the-update"))[0]
    admin.admin.command("killOp", op=op["opid"])
    running.join()
    error = running.error
    assert isinstance(error, OperationFailure) and error.code == 11601 and error.details["ok"] == 0.0
    assert admin.test.w.count_documents({"n": 0}) == 60_000
    assert admin.test.command("validate", "w")["valid"]


def _slow_where(coll: Any, millis: int) -> Any:
    """Documents marked ``slow`` take ``millis`` to match: mongod's ``sleep()`` in ``$where``."""
    return coll.find({"$where": f"if (this.slow) {{ sleep({millis}); }} return true;"}).sort("_id", 1)


def test_max_time_ms_js_getmore_cases(deployment: Deployment) -> None:
    """jstests/core/max_time_ms.js, scaled down: a cursor's getMores share what its find's
    maxTimeMS left; the first batch is fast, a later one slow."""
    client = deployment.connect()
    coll = client.test.mt
    coll.insert_many([{"_id": 0}, {"_id": 1}, {"_id": 2}, {"_id": 3, "slow": True}, {"_id": 4}, {"_id": 5}])
    # Batch 1 fast, batch 2 sleeps 20 s past a 400 ms limit: the getMore fails at the limit.
    cursor = _slow_where(coll, 20_000).batch_size(3).max_time_ms(400)
    assert [next(cursor)["_id"] for _ in range(3)] == [0, 1, 2]
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout) as info:
        next(cursor)
    assert info.value.code == 50 and time.perf_counter() - started < 10  # sleep() ends at the deadline, not its 20 s
    # The same with a 3 s limit passes.
    assert [d["_id"] for d in _slow_where(coll, 300).batch_size(3).max_time_ms(3000)] == list(range(6))
    # Many batches, each a little slow: together past the limit, though each alone is within it.
    many = client.test.mt_many
    many.insert_many([{"_id": 3 * i + j, **({"slow": True} if j == 2 else {})} for i in range(5) for j in range(3)])
    with pytest.raises(ExecutionTimeout):
        list(_slow_where(many, 150).batch_size(3).max_time_ms(450))
    assert len(list(_slow_where(many, 150).batch_size(3).max_time_ms(5000))) == 15


def test_current_op_shows_a_getmores_cursor_and_idle_cursors(deployment: Deployment) -> None:
    """A getMore's currentOp entry has its cursor (mongod's GenericCursor: originatingCommand,
    nDocsReturned, nBatchesReturned...); ``$currentOp: {idleCursors: true}`` lists the cursors no
    getMore is using (an embedded client lists its own: each has its cursors)."""
    client, admin = deployment.connect(), deployment.connect()
    client.test.gm.insert_many([{"_id": i} for i in range(30)])
    idle = client.test.gm.find({"_id": {"$gte": 0}}, comment="idle-one").batch_size(4)
    next(idle)
    (entry,) = [
        e
        for e in client.admin.aggregate([{"$currentOp": {"idleCursors": True}}, {"$match": {"type": "idleCursor"}}])
        if e["cursor"]["originatingCommand"].get("comment") == "idle-one"
    ]
    assert entry["ns"] == "test.gm" and entry["planSummary"].startswith("IXSCAN")
    shown = entry["cursor"]
    assert (shown["nDocsReturned"], shown["nBatchesReturned"]) == (4, 1)
    assert shown["originatingCommand"]["find"] == "gm" and shown["noCursorTimeout"] is False
    assert shown["tailable"] is False and shown["awaitData"] is False
    assert shown["createdDate"] <= shown["lastAccessDate"]
    # Not idle while a getMore works on it; the getMore's own entry shows it.
    slow = client.test.gm.find({"$where": "sleep(50); return true;"}, comment="busy-one").batch_size(2)
    next(slow)
    running = Background(lambda: list(slow))
    op = wait_for(lambda: _getmores(admin, "busy-one"))[0]
    assert op["ns"] == "test.gm" and op["command"]["collection"] == "gm" and op["planSummary"] == "COLLSCAN"
    assert op["cursor"]["operationUsingCursorId"] == op["opid"] and op["cursor"]["nBatchesReturned"] >= 1
    busy = [
        e
        for e in client.admin.aggregate([{"$currentOp": {"idleCursors": True}}, {"$match": {"type": "idleCursor"}}])
        if e["cursor"]["cursorId"] == op["cursor"]["cursorId"]
    ]
    assert not busy
    admin.admin.command("killOp", op=op["opid"])
    running.join()
    idle.close()


def test_kill_cursors_stops_the_getmore_using_the_cursor(deployment: Deployment) -> None:
    """As mongod: killCursors of a cursor a getMore is using interrupts that getMore, with
    CursorKilled (237), and the cursor is gone."""
    client, other = deployment.connect(), deployment.connect()
    client.test.kc.insert_many([{"_id": i} for i in range(40)])
    slow_after_two = "if (this._id >= 2) { sleep(1000); } return true;"  # a fast first batch, then 2 s getMores
    cursor = client.test.kc.find({"$where": slow_after_two}, comment="to-kill").sort("_id", 1).batch_size(2)
    next(cursor)
    running = Background(lambda: list(cursor))
    op = wait_for(lambda: _getmores(other, "to-kill"))[0]
    cursor_id = op["cursor"]["cursorId"]
    killed_at = time.perf_counter()
    if deployment.kind == "server":
        reply = other.test.command("killCursors", "kc", cursors=[cursor_id])
    else:  # an embedded client's cursors are its own
        reply = client.test.command("killCursors", "kc", cursors=[cursor_id])
    assert reply["cursorsKilled"] == [cursor_id]
    running.join()
    assert isinstance(running.error, OperationFailure) and running.error.code == 237
    assert time.perf_counter() - killed_at < PROMPT  # uninterrupted: 38 more documents of 1 s each


def test_current_op_truncates_a_large_command_as_mongod(deployment: Deployment) -> None:
    """The currentOp command truncates each op's command over 1000 bytes to its text, cut at
    1000 characters and ended with "...", keeping the comment (mongod's CurOp::reportState with
    truncateOps, which the command sets); ``$currentOp`` does that only with ``truncateOps: true``."""
    client, admin = deployment.connect(), deployment.connect()
    coll = client.test.tr
    coll.insert_one({"_id": 0, "slow": True})
    pad = "p" * 2000
    where = "if (this.slow) { sleep(3000); } return true;"
    running = Background(lambda: list(coll.find({"$where": where, "pad": {"$ne": pad}}, comment="big-one")))
    (op,) = wait_for(lambda: _commented(admin, "big-one"))
    shown = op["command"]
    assert set(shown) == {"$truncated", "comment"} and shown["comment"] == "big-one"
    text = shown["$truncated"]
    assert len(text) == 1000 and text.endswith("...")
    assert text.startswith('{ find: "tr", filter: { $where: "if (this.slow)') and "p" * 100 in text
    staged = [
        e for e in admin.admin.aggregate([{"$currentOp": {}}]) if e.get("command", {}).get("comment") == "big-one"
    ]
    assert staged[0]["command"]["filter"]["pad"] == {"$ne": pad}  # whole without truncateOps
    truncated = [
        e
        for e in admin.admin.aggregate([{"$currentOp": {"truncateOps": True}}])
        if e.get("command", {}).get("comment") == "big-one"
    ]
    assert truncated[0]["command"] == shown
    small = [e for e in admin.admin.command("currentOp")["inprog"] if e.get("command", {}).get("currentOp") == 1]
    assert small and "$truncated" not in small[0]["command"]  # a command under 1000 bytes stays whole
    admin.admin.command("killOp", op=op["opid"])
    running.join()


def test_a_getmores_originating_command_is_shown_and_truncated_alike(deployment: Deployment) -> None:
    # mongod's currentOp gives a getMore its cursor's originatingCommand at the top level and in
    # its cursor document, each truncated as the command is.
    client, admin = deployment.connect(), deployment.connect()
    coll = client.test.trc
    coll.insert_many([{"_id": 0}, {"_id": 1}, {"_id": 2}, {"_id": 3, "slow": True}])  # the second batch is slow
    pad = "q" * 2000
    where = "if (this.slow) { sleep(3000); } return true;"
    cursor = coll.find({"$where": where, "pad": {"$ne": pad}}, comment="big-cursor").sort("_id", 1).batch_size(2)
    assert [next(cursor)["_id"] for _ in range(2)] == [0, 1]
    idle = [
        e["cursor"]["originatingCommand"]
        for e in admin.admin.aggregate([{"$currentOp": {"idleCursors": True, "truncateOps": True}}])
        if e.get("type") == "idleCursor"
    ]
    if deployment.kind == "server":  # an embedded client lists its own cursors only
        assert [o["comment"] for o in idle] == ["big-cursor"] and idle[0]["$truncated"].endswith("...")
    running = Background(lambda: next(cursor))
    (op,) = wait_for(lambda: _getmores(admin, "big-cursor"))
    assert op["originatingCommand"] == op["cursor"]["originatingCommand"]
    assert set(op["originatingCommand"]) == {"$truncated", "comment"}
    assert op["originatingCommand"]["$truncated"].startswith('{ find: "trc", filter: { $where: ')
    admin.admin.command("killOp", op=op["opid"])
    running.join()
