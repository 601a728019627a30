"""$where: a JavaScript predicate on whole documents, ``this`` and ``obj`` being the document.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query/where/
Expected answers are worked out by hand from the documents.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

import pytest
from bson import Code, Int64, ObjectId
from pymongo.errors import OperationFailure

WHERE = "https://www.mongodb.com/docs/manual/reference/operator/query/where/"
PLAYERS = [
    {"_id": 12378, "name": "Steve", "username": "steveisawesome", "first_login": "2017-01-01"},
    {"_id": 2, "name": "Anya", "username": "anya", "first_login": "2001-02-02"},
]


def test_the_manual_example_finds_anya_by_the_md5_of_her_name(db: Any) -> None:
    # WHERE, "Example": hex_md5(this.name) == "9b53e667f30cd329dca1ec9e6a83e994" is Anya.
    assert hashlib.md5(b"Anya").hexdigest() == "9b53e667f30cd329dca1ec9e6a83e994"
    db.players.insert_many(PLAYERS)
    found = list(
        db.players.find({"$where": 'function() { return (hex_md5(this.name) == "9b53e667f30cd329dca1ec9e6a83e994") }'})
    )
    assert found == [PLAYERS[1]]


def test_the_manual_alternative_with_expr_and_function_agrees(db: Any) -> None:
    # WHERE, "Example": the same query as $expr with $function.
    db.players.insert_many(PLAYERS)
    body = 'function(name) { return hex_md5(name) == "9b53e667f30cd329dca1ec9e6a83e994"; }'
    spec = {"$expr": {"$function": {"body": body, "args": ["$name"], "lang": "js"}}}
    assert [d["_id"] for d in db.players.find(spec)] == [2]


@pytest.mark.parametrize(
    "code",
    [
        "this.a > 1",  # an expression (the body of a function returning it)
        "obj.a > 1",  # obj is the document too
        "function() { return this.a > 1 }",
        "function () { return obj.a > 1; }",
        "return this.a > 1;",  # statements
        Code("this.a > 1"),
    ],
    ids=repr,
)
def test_forms_of_where(db: Any, code: Any) -> None:
    db.c.insert_many([{"_id": i, "a": i} for i in range(4)])
    assert [d["_id"] for d in db.c.find({"$where": code})] == [2, 3]


def test_where_refuses_code_with_scope_and_empty_code(db: Any) -> None:
    # mongod 4.4+ (expression_where.cpp's parseWhereParams): 4649201 for code with scope, BadValue for empty code.
    db.c.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as info:
        db.c.find_one({"$where": Code("this.a > limit", {"limit": 1})})
    assert (info.value.code, info.value.details["errmsg"]) == (
        4649201,
        "$where no longer supports deprecated BSON type CodeWScope",
    )
    with pytest.raises(OperationFailure) as info:
        db.c.find_one({"$where": ""})
    assert (info.value.code, info.value.details["errmsg"]) == (2, "code for $where cannot be empty")


def test_where_combines_with_other_conditions_and_sees_bson_types(db: Any) -> None:
    oid = ObjectId("507f1f77bcf86cd799439011")
    db.c.insert_many(
        [
            {"_id": 1, "d": datetime.datetime(2020, 3, 1), "n": Int64(2**40), "o": oid, "tags": ["x", "y"]},
            {"_id": 2, "d": datetime.datetime(2021, 3, 1), "n": 5, "o": ObjectId(), "tags": []},
        ]
    )
    cases = {
        "this.d instanceof Date && this.d.getUTCFullYear() == 2020": [1],
        "this.n instanceof NumberLong && this.n > 1e12": [1],  # 2**40 = 1099511627776
        "typeof this.n == 'number'": [2],  # an int32 is a plain number
        'this.o.str == "507f1f77bcf86cd799439011"': [1],
        "this.o.equals(ObjectId('507f1f77bcf86cd799439011'))": [1],
        "Array.isArray(this.tags) && this.tags.length == 0": [2],
        "this.missing === undefined": [1, 2],
    }
    for code, ids in cases.items():
        assert [d["_id"] for d in db.c.find({"$where": code})] == ids, code
    assert [d["_id"] for d in db.c.find({"_id": {"$gt": 1}, "$where": "true"})] == [2]
    # count() is a find; count_documents() runs $match, where mongod refuses $where at any depth
    # (pymongo's count_documents docs: "$where" must become "$expr").
    assert db.command("count", "c", query={"$or": [{"_id": 1}, {"$where": "this._id == 2"}]})["n"] == 2
    with pytest.raises(OperationFailure) as info:
        db.c.count_documents({"$or": [{"_id": 1}, {"$where": "this._id == 2"}]})
    assert info.value.code == 2


def test_truthiness_follows_javascript(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "v": 0}, {"_id": 2, "v": "x"}, {"_id": 3, "v": None}, {"_id": 4, "v": [0]}])
    # JavaScript truthiness: 0, null and "" are false; a non-empty string and any array are true.
    assert [d["_id"] for d in db.c.find({"$where": "this.v"})] == [2, 4]


def test_updates_and_deletes_filter_with_where(db: Any) -> None:
    db.c.insert_many([{"_id": i, "a": i} for i in range(5)])
    assert db.c.update_many({"$where": "this.a % 2 == 0"}, {"$set": {"even": True}}).modified_count == 3
    assert db.c.delete_many({"$where": "this.a >= 3"}).deleted_count == 2
    assert sorted(d["_id"] for d in db.c.find({"even": True})) == [0, 2]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("throw new Error('boom')", "Error: boom"),
        ("this.a.b", "TypeError: cannot read property 'b' of undefined"),  # this.a is undefined
        ("nosuchname > 1", "ReferenceError: nosuchname is not defined"),  # SpiderMonkey's wording too
    ],
)
def test_errors_in_user_code_are_js_interpreter_failures(db: Any, code: str, message: str) -> None:
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"$where": code}))
    assert (info.value.code, info.value.details["codeName"], info.value.details["errmsg"]) == (
        139,
        "JSInterpreterFailure",
        message,
    )


def test_a_syntax_error_is_a_js_interpreter_failure(db: Any) -> None:
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"$where": "function( {"}))
    assert info.value.code == 139 and info.value.details["errmsg"].startswith("SyntaxError")


def test_where_is_refused_where_mongod_refuses_it(db: Any) -> None:
    # WHERE, "Restrictions": not in $elemMatch, nor inside an aggregation $match.
    db.c.insert_one({"a": [{"b": 1}]})
    with pytest.raises(OperationFailure) as info:
        db.c.find_one({"a": {"$elemMatch": {"$where": "true"}}})
    assert (info.value.code, info.value.details["errmsg"]) == (2, "$elemMatch cannot contain $where expression")
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$match": {"$where": "true"}}]))
    assert (info.value.code, info.value.details["errmsg"]) == (2, "$where is not allowed in this context")
    with pytest.raises(OperationFailure) as info:
        db.c.find_one({"$where": 1})
    assert (info.value.code, info.value.details["errmsg"]) == (2, "$where got bad type")
