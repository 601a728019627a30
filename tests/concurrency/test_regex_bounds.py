"""Regular expressions within mongod's limits, on every matching path, never holding the server.

mongod refuses a pattern longer than 32,761 bytes with 51091 (jstests/core/regex_limit.js,
which also matches one of exactly that length against a 100,000-character string); an
aggregation expression reports the same compile failure as 51111. A literal pattern is a
substring search; a pathological one stops at the match limit (51156), at ``maxTimeMS`` or at
``killOp``, while other connections are answered.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query/regex/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/regexMatch/
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest
from bson import Regex
from pymongo.errors import OperationFailure

from tests.concurrency.background import Background, pings_while, wait_for
from tests.concurrency.conftest import Deployment

LIMIT = 32761  # mongod's longest pattern, in bytes


def _code(call: Any) -> int:
    with pytest.raises(OperationFailure) as info:
        call()
    return int(info.value.code or 0)


def test_the_pattern_length_limit_is_mongods(deployment: Deployment) -> None:
    coll = deployment.connect().test.regex_limit
    coll.insert_one({"z": "c" * 100_000})
    longest, too_long = "c" * LIMIT, "c" * (LIMIT + 1)
    assert coll.count_documents({"z": {"$regex": longest}}) == 1
    assert coll.count_documents({"z": {"$in": [Regex(longest)]}}) == 1
    assert _code(lambda: list(coll.find({"z": {"$regex": too_long}}))) == 51091
    assert _code(lambda: list(coll.find({"z": {"$in": [Regex(too_long)]}}))) == 51091
    # Bytes, not characters: 16,381 two-byte characters and one more are 32,763 bytes.
    assert _code(lambda: list(coll.find({"z": {"$regex": "é" * 16_381 + "c"}}))) == 51091
    match = {"$project": {"m": {"$regexMatch": {"input": "$z", "regex": too_long}}}}
    assert _code(lambda: list(coll.aggregate([match]))) == 51111


def test_a_long_literal_pattern_is_a_substring_search(deployment: Deployment) -> None:
    """3,000 characters of literal over 100,000: mongod's regex_limit.js shape. A Boyer-Moore
    set-up cubic in the literal took seconds; a substring search is a few hundred microseconds,
    so the long pattern costs about what a one-character one does (measured interleaved)."""
    coll = deployment.connect().test.literal
    coll.insert_many([{"_id": 1, "z": "c" * 100_000}, {"_id": 2, "z": "d" * 100_000}])
    times: dict[str, list[float]] = {"short": [], "long": []}
    for round_ in range(5):
        # A new pattern each round: nothing the engine prepared for the last one helps.
        for name, pattern in (("short", "c"), ("long", "c" * (3_000 - round_))):
            started = time.perf_counter()
            found = [d["_id"] for d in coll.find({"z": {"$regex": pattern}}, {"_id": 1})]
            times[name].append(time.perf_counter() - started)
            assert found == [1]
    assert statistics.median(times["long"]) < 10 * statistics.median(times["short"]) + 0.05, times


def test_long_literal_runs_inside_a_pattern_are_cheap(deployment: Deployment) -> None:
    coll = deployment.connect().test.runs
    coll.insert_one({"_id": 1, "z": "d" * 100_000 + "c" * 4_000 + "x"})
    times: list[float] = []
    for tail in (".", "x$", "(?:x|y)"):
        started = time.perf_counter()
        assert coll.count_documents({"z": {"$regex": "c" * 4_000 + tail}}) == 1
        times.append(time.perf_counter() - started)
    # Unsplit, each took 18 s (the engine's set-up, which no timeout stops); generous for load.
    assert max(times) < 3.0, times


def test_a_pathological_regex_stops_at_the_bound_and_others_are_answered(deployment: Deployment) -> None:
    client, other = deployment.connect(), deployment.connect()
    coll = client.test.bomb
    coll.insert_one({"_id": 1, "s": "x" * 5_000})
    other.admin.command("ping")
    bomb = Background(lambda: list(coll.find({"s": {"$in": ["no", Regex("(x+x+)+y")]}})))
    pings = pings_while(bomb, other)
    bomb.join()
    assert isinstance(bomb.error, OperationFailure) and bomb.error.code == 51156
    # A ping waiting behind the match would wait the whole of it: bounded against the match's own
    # run (half of it, 0.5 s idle), so a load slowing both cannot fail it; unstopped, it runs for hours.
    assert pings and max(pings) < bomb.seconds / 2, (pings, bomb.seconds)
    assert bomb.seconds < 1.0 + 9.0


def test_a_long_patterns_set_up_holds_no_one(deployment: Deployment) -> None:
    """The engine's Boyer-Moore set-up for a long required literal held the interpreter lock
    (pings on other connections waited 2.9 s behind a 3,000-character pattern)."""
    client, other = deployment.connect(), deployment.connect()
    coll = client.test.setup
    coll.insert_one({"_id": 1, "z": "c" * 100_000})
    other.admin.command("ping")
    search = Background(lambda: [coll.count_documents({"z": {"$regex": "c" * n + "."}}) for n in range(3_000, 3_004)])
    pings = pings_while(search, other)
    assert search.join() == [1, 1, 1, 1]
    assert pings and max(pings) < 0.5, pings  # generous for a loaded machine; it was seconds


def test_kill_op_stops_a_match_before_its_limit(deployment: Deployment) -> None:
    client, admin = deployment.connect(), deployment.connect()
    coll = client.test.killed
    coll.insert_one({"_id": 1, "s": "x" * 5_000})
    pattern = {"$regexFindAll": {"input": "$s", "regex": "(x+x+)+y"}}
    running = Background(lambda: list(coll.aggregate([{"$project": {"m": pattern}}], comment="the-regex")))
    ops = wait_for(
        lambda: [
            op
            for op in admin.admin.command("currentOp")["inprog"]
            if op.get("command", {}).get("comment") == "the-regex"
        ]
    )
    admin.admin.command("killOp", op=ops[0]["opid"])
    running.join()
    # Interrupted, not the match limit's 51156: the kill was seen between the match's slices.
    assert isinstance(running.error, OperationFailure) and running.error.code == 11601


def test_pcre2_start_options_are_accepted(deployment: Deployment) -> None:
    coll = deployment.connect().test.verbs
    coll.insert_many([{"_id": 1, "s": "héllo"}, {"_id": 2, "s": "abc"}])
    assert [d["_id"] for d in coll.find({"s": {"$regex": "(*UTF8)^h.llo$"}})] == [1]
    assert [d["_id"] for d in coll.find({"s": {"$regex": "(*UCP)^\\w+$"}}, sort=[("_id", 1)])] == [1, 2]
    assert [d["_id"] for d in coll.find({"s": {"$regex": "(*UTF)(*UCP)b"}})] == [2]
