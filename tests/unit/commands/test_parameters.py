"""getParameter / setParameter: the parameters drivers, tools and test
harnesses read, with the values FolioDB runs with, settable where FolioDB
honours a change.

Manual: https://www.mongodb.com/docs/manual/reference/command/getParameter/,
https://www.mongodb.com/docs/manual/reference/command/setParameter/,
https://www.mongodb.com/docs/manual/reference/parameters/ (names and defaults)
"""

from __future__ import annotations

from typing import Any

import pytest
from bson.son import SON
from pymongo.errors import OperationFailure

PARAMS = "https://www.mongodb.com/docs/manual/reference/parameters/"

# name -> (value, manual page); the defaults mongod documents, which FolioDB runs with.
EXPECTED = {
    "authenticationMechanisms": (["SCRAM-SHA-1", "SCRAM-SHA-256"], PARAMS + "#mongodb-parameter-param.authenticationMechanisms"),
    "cursorTimeoutMillis": (600_000, PARAMS + "#mongodb-parameter-param.cursorTimeoutMillis"),
    # FolioDB's own (docs/differences.md): the decoded-document cache's bound, as WiredTiger's cacheSizeGB.
    "documentCacheSizeMB": (256, "docs/differences.md"),
    "enableTestCommands": (False, PARAMS + "#mongodb-parameter-param.enableTestCommands"),
    "featureCompatibilityVersion": ({"version": "8.0"}, "https://www.mongodb.com/docs/manual/reference/command/setFeatureCompatibilityVersion/"),
    "internalQueryMaxBlockingSortMemoryUsageBytes": (100 * 1024 * 1024, PARAMS + "#mongodb-parameter-param.internalQueryMaxBlockingSortMemoryUsageBytes"),
    "jsHeapLimitMB": (1100, PARAMS + "#mongodb-parameter-param.jsHeapLimitMB"),
    "logComponentVerbosity": ({"verbosity": 0}, PARAMS + "#mongodb-parameter-param.logComponentVerbosity"),
    # FolioDB's own (mongod has no bound on all scripts together): twice the per-operation one.
    "jsHeapLimitTotalMB": (2200, "docs/security.md"),
    # FolioDB's own bounds on open cursors (mongod has none): docs/security.md's table of limits.
    "maxOpenCursorsPerConnection": (20_000, "docs/security.md"),
    "maxOpenCursorsPerUser": (50_000, "docs/security.md"),
    "notablescan": (False, PARAMS + "#mongodb-parameter-param.notablescan"),
    "requireApiVersion": (False, PARAMS + "#mongodb-parameter-param.requireApiVersion"),
    "scramIterationCount": (10_000, PARAMS + "#mongodb-parameter-param.scramIterationCount"),
    "scramSHA256IterationCount": (15_000, PARAMS + "#mongodb-parameter-param.scramSHA256IterationCount"),
    "ttlMonitorEnabled": (True, PARAMS + "#mongodb-parameter-param.ttlMonitorEnabled"),
    "ttlMonitorSleepSecs": (60, PARAMS + "#mongodb-parameter-param.ttlMonitorSleepSecs"),
}  # fmt: skip


def test_get_all_parameters(client: Any) -> None:
    reply = client.admin.command("getParameter", "*")
    assert reply.pop("ok") == 1.0
    assert reply == {name: value for name, (value, _page) in EXPECTED.items()}
    assert client.admin.command("getParameter", {"allParameters": True}) == {**reply, "ok": 1.0}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_get_one_parameter(client: Any, name: str) -> None:
    assert client.admin.command("getParameter", 1, **{name: 1}) == {name: EXPECTED[name][0], "ok": 1.0}


def test_show_details(client: Any) -> None:
    reply = client.admin.command(SON([("getParameter", {"showDetails": True}), ("requireApiVersion", 1)]))
    assert reply["requireApiVersion"] == {"value": False, "settableAtRuntime": True, "settableAtStartup": False}


SETTABLE = [
    ("ttlMonitorEnabled", False, False),
    ("ttlMonitorSleepSecs", 5, 5),
    ("requireApiVersion", 1, True),  # a number is a boolean, as mongod coerces it
    ("cursorTimeoutMillis", 1000, 1000),  # the cursor reaper's idle limit
    ("documentCacheSizeMB", 0, 0),  # 0: no document cache
]


@pytest.mark.parametrize(("name", "value", "stored"), SETTABLE)
def test_set_parameter(client: Any, name: str, value: Any, stored: Any) -> None:
    admin = client.admin
    previous = EXPECTED[name][0]
    assert admin.command(SON([("setParameter", 1), (name, value), ("apiVersion", "1")])) == {
        "was": previous,
        "ok": 1.0,
    }
    assert admin.command(SON([("getParameter", 1), (name, 1), ("apiVersion", "1")]))[name] == stored
    admin.command(SON([("setParameter", 1), (name, previous), ("apiVersion", "1")]))


REFUSED = [
    # (command, database, code): startup-only in mongod -> IllegalOperation; unknown -> InvalidOptions;
    # settable in mongod but fixed in FolioDB -> NotImplemented; admin only -> Unauthorized.
    ({"authenticationMechanisms": ["PLAIN"]}, "admin", 20),
    ({"featureCompatibilityVersion": "7.0"}, "admin", 20),
    ({"noSuchParameter": 1}, "admin", 72),
    ({}, "admin", 72),
    ({"notablescan": True}, "admin", 238),
    ({"cursorTimeoutMillis": 0}, "admin", 2),
    ({"documentCacheSizeMB": -1}, "admin", 2),
    ({"ttlMonitorSleepSecs": 0}, "admin", 2),
    ({"ttlMonitorEnabled": "yes"}, "admin", 2),
    ({"ttlMonitorEnabled": False}, "test", 13),
]


@pytest.mark.parametrize(("fields", "db", "code"), REFUSED)
def test_set_parameter_refused(client: Any, fields: dict[str, Any], db: str, code: int) -> None:
    with pytest.raises(OperationFailure) as err:
        client[db].command(SON([("setParameter", 1), *fields.items()]))
    assert err.value.code == code
    assert client.admin.command("getParameter", "*")["ttlMonitorEnabled"] is True  # nothing was set


def test_get_parameter_naming_none(client: Any) -> None:
    # mongosh's startup (mongodb-build-info) sends {getParameter: "foo"} and takes success as no signal.
    assert client.admin.command("getParameter", "foo") == {"ok": 1.0}


def test_get_parameter_refused(client: Any) -> None:
    with pytest.raises(OperationFailure) as err:
        client.admin.command("getParameter", 1, noSuchParameter=1)
    assert err.value.code == 72
    with pytest.raises(OperationFailure) as err:
        client.test.command("getParameter", "*")
    assert (err.value.code, err.value.details["errmsg"]) == (
        13,
        "getParameter may only be run against the admin database.",
    )
