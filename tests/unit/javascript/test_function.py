"""$function, and how BSON values cross into JavaScript and back.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/function/
Values follow mongod's conversion: a BSON int32 or double is a JavaScript
number and every number comes back a double; int64 is a NumberLong, dates
are Date, and the other BSON types are the shell's objects
(https://www.mongodb.com/docs/manual/reference/method/#constructors).
"""

from __future__ import annotations

import datetime
import hashlib
import math
from typing import Any

import pytest
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

FUNCTION = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/function/"


def call(db: Any, body: str, *args: Any) -> Any:
    """The value of one $function over literal arguments."""
    spec = {"$function": {"body": body, "args": [{"$literal": a} for a in args], "lang": "js"}}
    (doc,) = db.command(
        "aggregate", 1, pipeline=[{"$documents": [{}]}, {"$project": {"_id": 0, "r": spec}}], cursor={}
    )["cursor"]["firstBatch"]
    return doc["r"]


def test_the_manual_example(db: Any) -> None:
    # FUNCTION, "Example 1: Alternative to $where" and the $addFields example.
    assert hashlib.md5(b"Miss Ann Thrope").hexdigest() == "15b0a220baa16331e8d80e15367677ad"
    db.players.insert_many(
        [
            {"_id": 1, "name": "Miss Cheevous", "scores": [10, 5, 10]},
            {"_id": 2, "name": "Miss Ann Thrope", "scores": [10, 10, 10]},
            {"_id": 3, "name": "Mrs. Eppie Delta ", "scores": [9, 8, 8]},
        ]
    )
    found = {
        "$function": {
            "body": 'function(name) { return hex_md5(name) == "15b0a220baa16331e8d80e15367677ad" }',
            "args": ["$name"],
            "lang": "js",
        }
    }
    message = {
        "$function": {
            "body": "function(name, scores) { let total = Array.sum(scores); "
            "return `Hello ${name}.  Your total score is ${total}.` }",
            "args": ["$name", "$scores"],
            "lang": "js",
        }
    }
    out = list(
        db.players.aggregate([{"$addFields": {"isFound": found, "message": message}}, {"$project": {"scores": 0}}])
    )
    assert out == [
        {"_id": 1, "name": "Miss Cheevous", "isFound": False, "message": "Hello Miss Cheevous.  Your total score is 25."},
        {"_id": 2, "name": "Miss Ann Thrope", "isFound": True, "message": "Hello Miss Ann Thrope.  Your total score is 30."},
        {"_id": 3, "name": "Mrs. Eppie Delta ", "isFound": False, "message": "Hello Mrs. Eppie Delta .  Your total score is 25."},
    ]  # fmt: skip


def test_body_may_be_code_and_missing_arguments_are_null(db: Any) -> None:
    db.c.insert_one({"_id": 1, "a": 2})
    spec = {"$function": {"body": Code("function(a, b) { return [a * 3, b] }"), "args": ["$a", "$nope"], "lang": "js"}}
    assert list(db.c.aggregate([{"$project": {"r": spec}}])) == [{"_id": 1, "r": [6.0, None]}]


# Identity through JavaScript: what each BSON value comes back as (by mongod's rules, see the module docstring).
ROUND_TRIP = [
    (5, 5.0),
    (-0.0, -0.0),
    (2.5, 2.5),
    (Int64(9007199254740993), Int64(9007199254740993)),  # 2**53 + 1: exact, not through a double
    ("héllo", "héllo"),
    (True, True),
    (None, None),
    (datetime.datetime(2020, 1, 2, 3, 4, 5, 6000), datetime.datetime(2020, 1, 2, 3, 4, 5, 6000)),
    (ObjectId("507f1f77bcf86cd799439011"), ObjectId("507f1f77bcf86cd799439011")),
    (Decimal128("1.10"), Decimal128("1.10")),
    (Binary(b"\x01\x02", 5), Binary(b"\x01\x02", 5)),
    (b"\x00\xff", b"\x00\xff"),
    (Regex("^a.c", "i"), Regex("^a.c", "i")),
    (Timestamp(100, 7), Timestamp(100, 7)),
    (MinKey(), MinKey()),
    (MaxKey(), MaxKey()),
    ({"a": [1, {"b": Int64(2)}], "c": {}}, {"a": [1.0, {"b": Int64(2)}], "c": {}}),
]


@pytest.mark.parametrize(("value", "expected"), ROUND_TRIP, ids=repr)
def test_values_round_trip(db: Any, value: Any, expected: Any) -> None:
    got = call(db, "function(x) { return x }", value)
    assert got == expected and type(got) is type(expected)
    if isinstance(expected, float):
        assert math.copysign(1, got) == math.copysign(1, expected)


def test_non_finite_doubles_round_trip(db: Any) -> None:
    got = call(db, "function(a, b, c) { return [a, b, c, isNaN(a), b > 1e308] }", math.nan, math.inf, -math.inf)
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf, True, True]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("function() { return new Date(0) }", datetime.datetime(1970, 1, 1)),
        ("function() { return ISODate('2020-03-01T10:00:00Z') }", datetime.datetime(2020, 3, 1, 10)),
        ("function() { return NumberInt(7) }", 7),
        ("function() { return NumberInt('12').valueOf() + 1 }", 13.0),
        ("function() { return NumberLong('9223372036854775807') }", Int64(2**63 - 1)),
        ("function() { return NumberLong(5) + 1 }", 6.0),
        ("function() { return NumberDecimal('0.1') }", Decimal128("0.1")),
        ("function() { return ObjectId('507f1f77bcf86cd799439011') }", ObjectId("507f1f77bcf86cd799439011")),
        (
            "function() { return ObjectId('507f1f77bcf86cd799439011').getTimestamp() }",
            datetime.datetime(2012, 10, 17, 21, 13, 27),
        ),  # 0x507f1f77 s
        ("function() { return /ab+/i }", Regex("ab+", "i")),
        ("function() { return BinData(0, 'AQI=') }", b"\x01\x02"),
        ("function() { return undefined }", None),
        ("function() { return {a: undefined, b: [undefined]} }", {"a": None, "b": [None]}),
        (
            "function() { return tojson({a: NumberLong(2), b: [1, 'x'], o: ObjectId('507f1f77bcf86cd799439011')}) }",
            '{ "a" : NumberLong(2), "b" : [ 1, "x" ], "o" : ObjectId("507f1f77bcf86cd799439011") }',
        ),
        ("function() { return tojson(new Date(0)) }", 'ISODate("1970-01-01T00:00:00.000Z")'),
        ("function() { return ObjectId().str.length }", 24.0),
        ("function() { return Array.sum([1, 2, 3.5]) }", 6.5),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_shell_globals(db: Any, body: str, expected: Any) -> None:
    got = call(db, body)
    assert got == expected and type(got) is type(expected)


ERRORS = [
    (1, 31260, "$function requires an object as an argument, found: int"),
    ({"args": [], "lang": "js"}, 31261, "The body function must be specified."),
    ({"body": "$f", "args": [], "lang": "js"}, 31432, "The body function must be a constant expression"),
    ({"body": 5, "args": [], "lang": "js"}, 31262, "The body function must evaluate to type string or code"),
    ({"body": "function() {}", "lang": "js"}, 31263, "The args field must be specified."),
    ({"body": "function() {}", "args": []}, 31418, "The lang field must be specified."),
    ({"body": "function() {}", "args": [], "lang": "python"}, 31419, "Currently the only supported language specifier is 'js'."),
    ({"body": "function() {}", "args": 5, "lang": "js"}, 31266, "The args field must be of type array"),
    ({"body": "function() { throw new TypeError('no') }", "args": [], "lang": "js"}, 139, "TypeError: no"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "code", "message"), ERRORS, ids=repr)
def test_errors(db: Any, spec: Any, code: int, message: str) -> None:
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$project": {"r": {"$function": spec}}}]))
    # $project prefixes its operators' messages ("Invalid $project :: caused by :: ...").
    assert info.value.code == code and info.value.details["errmsg"].endswith(message)


def _as_mongod_returns(value: Any) -> Any:
    """What identity through JavaScript gives back: numbers become doubles (int64 stays)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, Int64)):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [_as_mongod_returns(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_mongod_returns(v) for k, v in value.items()}
    return value


_KEYS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00.$"), min_size=1, max_size=5)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**31), 2**31 - 1)
    | st.integers(-(2**63), 2**63 - 1).map(Int64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
    | st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    )
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=12
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_VALUES)
def test_identity_keeps_every_value_as_mongod_converts_it(db: Any, value: Any) -> None:
    got = call(db, "function(x) { return x }", value)
    assert got == _as_mongod_returns(value)


def test_not_in_a_validator(db: Any) -> None:
    # SERVER-46608 (MongoDB 4.4): $function is banned from schema validators.
    body = {"$function": {"body": "function() { return true }", "args": [], "lang": "js"}}
    for validator in ({"$expr": body}, {"$and": [{"a": 1}, {"$expr": {"$not": [body]}}]}):
        with pytest.raises(OperationFailure) as info:
            db.create_collection("v", validator=validator)
        assert (info.value.code, info.value.details["errmsg"]) == (
            4660800,
            "$function cannot be used inside a validator.",
        )
