"""The JavaScript sandbox and its limits, scripting switched off, and mapReduce's privileges.

* Nothing outside the engine is reachable: mongod's server-side JavaScript
  has no file, network or process access, and neither does FolioDB's.
* ``jsHeapLimitMB`` bounds a context's heap: an allocating loop fails with
  JSInterpreterFailure (139)
  (https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.jsHeapLimitMB).
* ``maxTimeMS`` stops a script that never ends (MaxTimeMSExpired, 50)
  (https://www.mongodb.com/docs/manual/reference/method/cursor.maxTimeMS/); killOp is
  tested in tests/concurrency/test_javascript.py.
* With scripting off (``--noscripting``, ``security.javascriptEnabled: false``) mongod
  refuses ``$where`` when parsing (BadValue, "no globalScriptEngine in $where parsing")
  and the other JavaScript when it would run (31264)
  (https://www.mongodb.com/docs/manual/reference/configuration-options/#mongodb-setting-security.javascriptEnabled).
* mapReduce's "Access Control": find on the input; out replace needs insert and
  remove, merge and reduce insert and update on the output collection
  (https://www.mongodb.com/docs/manual/reference/command/mapReduce/#access-control).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

import foliodb
from foliodb.auth.command_table import authorize
from foliodb.auth.decision import Subject
from foliodb.auth.privileges import PrivilegeSet
from foliodb.auth.roles import privileges_of
from foliodb.errors import CommandError
from foliodb.javascript.runtime import Runtime

# Bound for a script that never ends unless interrupted: any bound shows that it stopped;
# this one leaves a loaded 2-core machine room, where a thread can wait seconds for a core.
ENDLESS = 30.0


def _value(db: Any, body: str) -> Any:
    spec = {"$function": {"body": body, "args": [], "lang": "js"}}
    (doc,) = db.c.aggregate([{"$limit": 1}, {"$project": {"_id": 0, "r": spec}}])
    return doc["r"]


@pytest.fixture
def one(db: Any) -> Any:
    db.c.insert_one({"_id": 1})
    return db


@pytest.mark.parametrize(
    "name",
    ["require", "load", "fetch", "process", "std", "os", "XMLHttpRequest", "WebSocket", "Deno", "Bun",
     "module", "exports", "setTimeout", "importScripts", "Worker", "print_r", "runProgram", "run", "ls", "cat"],
)  # fmt: skip
def test_no_host_access_is_defined(one: Any, name: str) -> None:
    assert _value(one, f"function() {{ return typeof {name} }}") == "undefined"


def test_modules_cannot_be_imported(one: Any) -> None:
    # A static import is not even valid in a script; a dynamic one finds no module loader.
    with pytest.raises(OperationFailure) as info:
        _value(one, "import * as os from 'os'")
    assert info.value.code == 139 and info.value.details["errmsg"].startswith("SyntaxError")
    js = Runtime(16)
    js.call(
        js.function(
            "function() { globalThis.r = 'pending'; import('os').then(() => { r = 'loaded' }, e => { r = 'refused' }) }"
        ),
        [],
    )
    while js._context.execute_pending_job():
        pass
    assert js.call(js.function("function() { return r }"), []) == "refused"


def test_an_allocating_loop_fails_at_the_heap_limit_and_the_next_operation_runs(client: Any, one: Any) -> None:
    client.admin.command("setParameter", 1, jsHeapLimitMB=16)
    started = time.perf_counter()
    with pytest.raises(OperationFailure) as info:
        _value(one, "function() { var a = []; while (true) a.push('x'.repeat(1000) + a.length); }")
    assert (info.value.code, info.value.details["errmsg"]) == (139, "Out of memory")
    assert time.perf_counter() - started < 10
    assert _value(one, "function() { return 1 + 1 }") == 2.0
    assert client.admin.command("getParameter", 1, jsHeapLimitMB=1)["jsHeapLimitMB"] == 16


def test_many_contexts_at_the_heap_limit_fail_cleanly() -> None:
    # The archived quickjs engine crashed the process when an allocation failed with the heap
    # almost full (its error object could not be built); where the limit falls depends on the
    # allocation sizes, so this steps them across many fresh contexts (among them, here, cases
    # where QuickJS-ng has no memory left for the error itself: a bare InternalError or null).
    for step in range(0, 2000, 7):
        js = Runtime(4)
        loop = js.function(f"function() {{ var a = []; while (true) a.push('x'.repeat({1000 + step}) + a.length) }}")
        with pytest.raises(CommandError) as info:
            js.call(loop, [])
        assert (info.value.code, info.value.errmsg) == (139, "Out of memory")


def test_throwing_null_is_not_out_of_memory(one: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        _value(one, "function() { throw null }")
    assert (info.value.code, info.value.details["errmsg"]) == (139, "null")


def test_a_script_cannot_catch_its_interruption(one: Any) -> None:
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout):
        list(one.c.find({"$where": "while (true) { try { for (;;) {} } catch (e) {} }"}).max_time_ms(200))
    assert time.perf_counter() - started < ENDLESS


def test_deep_recursion_is_an_error_not_a_crash(one: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        _value(one, "function() { function f(n) { return f(n + 1) + 1 } return f(0) }")
    # The engine's wording (SpiderMonkey's is "InternalError: too much recursion").
    assert (info.value.code, info.value.details["errmsg"]) == (139, "RangeError: Maximum call stack size exceeded")


@pytest.mark.parametrize(
    "run",
    [
        lambda db: list(db.c.find({"$where": "while (true) {}"}).max_time_ms(200)),
        lambda db: list(db.c.aggregate([{"$project": {"r": {"$function": {"body": "function() { for (;;); }", "args": [], "lang": "js"}}}}], maxTimeMS=200)),
        lambda db: db.command("mapReduce", "c", map="function() { while (1) {} }", reduce="function() {}", out={"inline": 1}, maxTimeMS=200),
        lambda db: list(db.c.aggregate([{"$group": {"_id": 1, "a": {"$accumulator": {
            "init": "function() { while (true) {} }", "accumulate": "function(s) { return s }", "accumulateArgs": [],
            "merge": "function(a) { return a }", "lang": "js"}}}}], maxTimeMS=200)),
    ],
    ids=["$where", "$function", "mapReduce", "$accumulator"],
)  # fmt: skip
def test_max_time_ms_stops_an_endless_script(one: Any, run: Any) -> None:
    started = time.perf_counter()
    with pytest.raises(ExecutionTimeout) as info:
        run(one)
    assert info.value.code == 50
    assert time.perf_counter() - started < ENDLESS


@pytest.fixture
def noscripting(tmp_path: Any) -> Iterator[Any]:
    client = foliodb.MongoClient(str(tmp_path / "data"), noscripting=True)
    client.test.c.insert_one({"_id": 1, "a": 1})
    yield client.test
    client.close()


def test_noscripting_refuses_where_as_mongod(noscripting: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        noscripting.c.find_one({"$where": "true"})
    assert (info.value.code, info.value.details["errmsg"]) == (2, "no globalScriptEngine in $where parsing")


@pytest.mark.parametrize(
    "run",
    [
        lambda db: list(db.c.aggregate([{"$project": {"r": {"$function": {"body": "function() { return 1 }", "args": [], "lang": "js"}}}}])),
        lambda db: db.command("mapReduce", "c", map="function() {}", reduce="function() {}", out={"inline": 1}),
        lambda db: list(db.c.aggregate([{"$group": {"_id": 1, "a": {"$accumulator": {
            "init": "function() { return 0 }", "accumulate": "function(s) { return s }", "accumulateArgs": [],
            "merge": "function(a) { return a }", "lang": "js"}}}}])),
    ],
    ids=["$function", "mapReduce", "$accumulator"],
)  # fmt: skip
def test_noscripting_refuses_the_other_javascript_with_31264(noscripting: Any, run: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        run(noscripting)
    assert (info.value.code, info.value.details["errmsg"]) == (
        31264,
        "Cannot run server-side javascript without the javascript engine enabled",
    )
    # Everything else still runs.
    assert noscripting.c.find_one({"a": 1}) == {"_id": 1, "a": 1}


def _subject(*roles: tuple[str, str]) -> Subject:
    return Subject(frozenset({("shop", "u")}), frozenset(roles), privileges_of(list(roles), lambda role, db: None))


MR = {"mapReduce": "orders", "map": "function() {}", "reduce": "function() {}"}


@pytest.mark.parametrize(
    ("roles", "out", "allowed"),
    [
        ([("read", "shop")], {"inline": 1}, True),
        ([("read", "shop")], "totals", False),
        ([("read", "shop")], {"merge": "totals"}, False),
        ([("readWrite", "shop")], "totals", True),
        ([("readWrite", "shop")], {"reduce": "totals"}, True),
        ([("readWrite", "shop")], {"replace": "totals", "db": "reports"}, False),
        ([("read", "shop"), ("readWrite", "reports")], {"merge": "totals", "db": "reports"}, True),
        ([("readWrite", "reports")], {"inline": 1}, False),  # no find on the input
    ],
)
def test_map_reduce_privileges(roles: list[tuple[str, str]], out: Any, allowed: bool) -> None:
    decision = authorize(_subject(*roles), "shop", {**MR, "out": out}, lambda db, name: None)
    assert (decision.refusal is None) is allowed, decision


def test_nobody_may_map_reduce() -> None:
    nobody = Subject(frozenset(), frozenset(), PrivilegeSet())
    assert authorize(nobody, "shop", {**MR, "out": {"inline": 1}}, lambda db, name: None).refusal is not None


def test_an_engine_other_than_quickjs_ng_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    # The archived wheel's extension, where an old install left it, outranks quickjs-ng's on import.
    import foliodb.javascript.runtime as runtime

    monkeypatch.setattr(runtime._quickjs, "__file__", "/site-packages/_quickjs.cpython-311-x86_64-linux-gnu.so")
    with pytest.raises(ImportError, match="pip uninstall quickjs quickjs-ng"):
        runtime._check_engine()
