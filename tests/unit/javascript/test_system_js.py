# ruff: noqa: F811
"""Stored JavaScript: the functions of a database's ``system.js`` are globals of its JavaScript contexts.

Manual: https://www.mongodb.com/docs/manual/tutorial/store-javascript-function-on-server/
(``{_id: name, value: <function>}``; "available for use from any JavaScript
context, such as mapReduce and $where"; code with scope "cannot be used").
Where the manual is silent, mongod's Scope::loadStored and
ExpressionContext::getJsExecWithScope decide: stored functions are loaded for
``$where`` and ``mapReduce`` only; a non-string ``_id`` fails with 10209, a
missing value with 10210, code with scope with 4546000; a value that is not
code is defined as it is; code that does not compile is left out.
Expected answers are worked out in Python from the documents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bson import Code, ObjectId
from pymongo.errors import OperationFailure

import foliodb
from foliodb.commands.executor import Executor
from tests.both_targets import client, db, server  # noqa: F401  (fixtures, which the tests' parameters name)

MANUAL = "https://www.mongodb.com/docs/manual/tutorial/store-javascript-function-on-server/"
NUMBERS = [{"value": v} for v in range(1, 7)]  # the manual's test_numbers
IS_EVEN = Code("function (num) { return num % 2 === 0; }")
ECHO = Code("function(x) { return x; }")


def _where_values(db: Any, code: str) -> list[Any]:
    return sorted(d["value"] for d in db.test_numbers.find({"$where": code}))


def test_the_manual_example_where_calls_the_stored_is_even(db: Any) -> None:
    # MANUAL, steps 1-4: isEven stored in system.js, called from $where.
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_many([{"_id": "echo", "value": ECHO}, {"_id": "isEven", "value": IS_EVEN}])
    expected = [d["value"] for d in NUMBERS if d["value"] % 2 == 0]
    assert _where_values(db, "function () { return isEven(this.value); }") == expected == [2, 4, 6]
    assert _where_values(db, "echo(this.value) === 3") == [3]


def test_map_reduce_map_reduce_and_finalize_see_the_stored_functions(db: Any) -> None:
    # MANUAL: "available ... such as mapReduce".
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_many(
        [
            {"_id": "isEven", "value": IS_EVEN},
            {"_id": "add", "value": Code("function (x, y) { return x + y; }")},
            {"_id": "tenfold", "value": Code("function (x) { return 10 * x; }")},
        ]
    )
    reply = db.command(
        "mapReduce",
        "test_numbers",
        map="function () { emit(isEven(this.value) ? 'even' : 'odd', this.value); }",
        reduce="function (k, vs) { return vs.reduce(add, 0); }",
        finalize="function (k, v) { return tenfold(v); }",
        out={"inline": 1},
    )
    sums: dict[str, int] = {}
    for d in NUMBERS:
        key = "even" if d["value"] % 2 == 0 else "odd"
        sums[key] = sums.get(key, 0) + d["value"]
    assert reply["results"] == [{"_id": k, "value": 10 * s} for k, s in sorted(sums.items())]
    assert sums == {"even": 12, "odd": 9}


def test_function_and_accumulator_do_not_see_them_as_mongod(db: Any) -> None:
    # mongod loads system.js for $where and mapReduce only ("Stored procedures are only loaded
    # for the $where expression and MapReduce command"); the manual names no other context.
    db.test_numbers.insert_one({"value": 1})
    db.system.js.insert_one({"_id": "isEven", "value": IS_EVEN})
    probe = "function () { return typeof isEven; }"
    pipeline = [
        {
            "$group": {
                "_id": None,
                "f": {"$first": {"$function": {"body": probe, "args": [], "lang": "js"}}},
                "a": {
                    "$accumulator": {
                        "init": probe,
                        "accumulate": "function (s) { return s; }",
                        "accumulateArgs": [],
                        "merge": "function (a, b) { return a; }",
                        "lang": "js",
                    }
                },
            }
        }
    ]
    assert list(db.test_numbers.aggregate(pipeline)) == [{"_id": None, "f": "undefined", "a": "undefined"}]


def test_code_with_scope_fails_the_operation_as_mongod(db: Any) -> None:
    # MANUAL: functions saved as JavaScript with scope "cannot be used by mapReduce and $where".
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_one({"_id": "over", "value": Code("function (x) { return x > k; }", {"k": 3})})
    message = (
        "BSON type 'CodeWithScope' not supported in system.js scripts. "
        "As an alternative use 'Code'. Script _id value: 'over'"
    )
    with pytest.raises(OperationFailure) as info:
        db.test_numbers.find_one({"$where": "true"})
    assert (info.value.code, info.value.details["errmsg"]) == (4546000, message)
    with pytest.raises(OperationFailure) as info:
        db.command("mapReduce", "test_numbers", map="function () {}", reduce="function () {}", out={"inline": 1})
    assert info.value.code == 4546000


def test_a_value_that_is_not_code_is_a_global_of_that_value(db: Any) -> None:
    # mongod defines each value as it is (Scope::setElement): a string stays a string, not a function.
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_many(
        [
            {"_id": "threshold", "value": 4},
            {"_id": "source", "value": "function (x) { return x; }"},
            {"_id": "when", "value": {"id": ObjectId("000000000000000000000001")}},
        ]
    )
    assert _where_values(db, "this.value > threshold") == [5, 6]
    assert _where_values(db, "typeof source === 'string' && when.id.str === '000000000000000000000001'") == [
        d["value"] for d in NUMBERS
    ]
    with pytest.raises(OperationFailure) as info:
        db.test_numbers.find_one({"$where": "source(this.value)"})
    assert info.value.code == 139  # JSInterpreterFailure: not a function


def test_names_that_are_not_strings_and_missing_values_fail_as_mongod(db: Any) -> None:
    db.test_numbers.insert_one({"value": 1})
    db.system.js.insert_one({"_id": 7, "value": ECHO})
    with pytest.raises(OperationFailure) as info:
        db.test_numbers.find_one({"$where": "true"})
    assert (info.value.code, info.value.details["errmsg"]) == (10209, "name has to be a string: _id: 7")
    db.system.js.delete_one({"_id": 7})
    db.system.js.insert_one({"_id": "nothing"})
    with pytest.raises(OperationFailure) as info:
        db.test_numbers.find_one({"$where": "true"})
    assert (info.value.code, info.value.details["errmsg"]) == (10210, "value has to be set")


def test_code_that_does_not_compile_is_left_out(db: Any) -> None:
    # mongod logs "unable to load stored JavaScript function" and loads the others.
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_many([{"_id": "broken", "value": Code("function ( {")}, {"_id": "isEven", "value": IS_EVEN}])
    assert _where_values(db, "typeof broken === 'undefined' && isEven(this.value)") == [2, 4, 6]


def test_the_shell_globals_are_not_replaced(db: Any) -> None:
    # The shell's types and helpers are found by name by the conversions: a stored function of
    # the same name is left out, and conversions and the built-ins keep working.
    oid = ObjectId("000000000000000000000007")
    db.c.insert_one({"_id": oid, "value": 2})
    db.system.js.insert_many(
        [
            {"_id": name, "value": Code("function () { return 'stored'; }")}
            for name in ("ObjectId", "tojson", "emit", "Math", "hex_md5", "__where")
        ]
    )
    probe = "this._id instanceof ObjectId && tojson(1) === '1' && Math.max(1, 2) === 2 && hex_md5('') !== 'stored'"
    assert [d["_id"] for d in db.c.find({"$where": probe})] == [oid]
    reply = db.command(
        "mapReduce", "c", map="function () { emit(this._id, this.value); }", reduce="function () {}", out={"inline": 1}
    )
    assert reply["results"] == [{"_id": oid, "value": 2}]


def test_a_stored_function_replaces_a_scope_variable_of_its_name(db: Any) -> None:
    # mongod makes the context with the scope, then loads system.js into it.
    db.c.insert_one({"value": 1})
    db.system.js.insert_one({"_id": "label", "value": Code("function () { return 'stored'; }")})
    reply = db.command(
        "mapReduce",
        "c",
        map="function () { emit(typeof label === 'function' ? label() : label, 1); }",
        reduce="function () {}",
        scope={"label": "scope", "other": "kept"},
        out={"inline": 1},
    )
    assert reply["results"] == [{"_id": "stored", "value": 1}]


def test_each_operation_reads_the_current_functions_of_its_own_database(db: Any, client: Any) -> None:
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_one({"_id": "pick", "value": Code("function (x) { return x === 1; }")})
    assert _where_values(db, "pick(this.value)") == [1]
    db.system.js.update_one({"_id": "pick"}, {"$set": {"value": Code("function (x) { return x > 4; }")}})
    assert _where_values(db, "pick(this.value)") == [5, 6]
    # Another database's system.js is not this one's.
    other = client[db.name + "_other"]
    other.drop_collection("test_numbers")
    other.test_numbers.insert_one({"value": 1})
    assert [d["value"] for d in other.test_numbers.find({"$where": "typeof pick === 'undefined'"})] == [1]
    db.system.js.delete_one({"_id": "pick"})
    with pytest.raises(OperationFailure) as info:
        db.test_numbers.find_one({"$where": "pick(this.value)"})
    assert info.value.code == 139  # ReferenceError: pick is not defined
    client.drop_database(other.name)


def test_writes_with_where_see_them(db: Any) -> None:
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_one({"_id": "isEven", "value": IS_EVEN})
    assert db.test_numbers.delete_many({"$where": "isEven(this.value)"}).deleted_count == 3
    assert sorted(d["value"] for d in db.test_numbers.find()) == [1, 3, 5]


def test_a_transaction_reads_system_js_in_its_snapshot(client: Any, db: Any) -> None:
    # A transaction cannot write system.js (263, as mongod), but reads it as it reads everything: in its snapshot.
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_one({"_id": "pick", "value": Code("function (x) { return x === 1; }")})
    with client.start_session() as session, session.start_transaction():
        assert db.test_numbers.count_documents({}, session=session) == 6  # the snapshot is taken
        db.system.js.update_one({"_id": "pick"}, {"$set": {"value": Code("function (x) { return x === 6; }")}})
        found = db.test_numbers.find({"$where": "pick(this.value)"}, session=session)
        assert [d["value"] for d in found] == [1]
    assert _where_values(db, "pick(this.value)") == [6]
    with client.start_session() as session:
        session.start_transaction()
        with pytest.raises(OperationFailure) as info:
            db.system.js.insert_one({"_id": "isEven", "value": IS_EVEN}, session=session)
        assert info.value.code == 263
        session.abort_transaction()


def test_a_snapshot_read_sees_its_snapshot_of_system_js(client: Any, db: Any) -> None:
    db.test_numbers.insert_many(NUMBERS)
    db.system.js.insert_one({"_id": "pick", "value": Code("function (x) { return x === 1; }")})
    with client.start_session(snapshot=True) as session:
        assert [d["value"] for d in db.test_numbers.find({"$where": "pick(this.value)"}, session=session)] == [1]
        db.system.js.update_one({"_id": "pick"}, {"$set": {"value": Code("function (x) { return x === 6; }")}})
        assert [d["value"] for d in db.test_numbers.find({"$where": "pick(this.value)"}, session=session)] == [1]
    assert _where_values(db, "pick(this.value)") == [6]


def test_system_js_is_read_only_by_contexts_that_load_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Operations without $where or mapReduce never read system.js; those with them read it once per context.
    reads: list[str] = []
    original = Executor.stored_javascript

    def counted(self: Executor, name: str) -> list[dict[str, Any]]:
        reads.append(name)
        return original(self, name)

    monkeypatch.setattr(Executor, "stored_javascript", counted)
    with foliodb.MongoClient(":memory:") as client:
        coll = client.shop.c
        coll.insert_many(NUMBERS)
        assert len(list(coll.find({"value": {"$gt": 2}}))) == 4
        list(
            coll.aggregate(
                [{"$project": {"r": {"$function": {"body": "function () { return 1 }", "args": [], "lang": "js"}}}}]
            )
        )
        assert reads == []
        assert len(list(coll.find({"$where": "this.value > 2"}))) == 4  # no system.js: a catalog lookup
        assert reads == ["shop"]


def test_noscripting_still_refuses_javascript(tmp_path: Path) -> None:
    with foliodb.MongoClient(str(tmp_path / "data"), noscripting=True) as client:
        db = client.test
        db.c.insert_one({"value": 2})
        db.system.js.insert_one({"_id": "isEven", "value": IS_EVEN})
        with pytest.raises(OperationFailure) as info:
            db.c.find_one({"$where": "isEven(this.value)"})
        assert (info.value.code, info.value.details["errmsg"]) == (2, "no globalScriptEngine in $where parsing")
        with pytest.raises(OperationFailure) as info:
            db.command("mapReduce", "c", map="function () {}", reduce="function () {}", out={"inline": 1})
        assert info.value.code == 31264
        assert db.system.js.find_one() == {"_id": "isEven", "value": IS_EVEN}
