"""Type expressions: $convert and its $toX shortcuts, $type, $isNumber.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/
"""

from __future__ import annotations

import datetime
import uuid

import bson
import pytest
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables
from tests.bson_values import EDGE_VALUES

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
CONVERT = BASE + "convert/"
D = datetime.datetime
OID = ObjectId("5ab9cbfa31c2ab715d42129e")


def url(name):
    return BASE + name + "/"


def evaluate(spec, doc=None):
    doc = {"n": None} if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, D(2024, 1, 1)))


def same(got, want):
    assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


def convert(value, to, **options):
    return {"$convert": {"input": {"$literal": value}, "to": to, **options}}


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("toBool"), {"$toBool": 0}, False),
        (url("toBool"), {"$toBool": Decimal128("-0")}, False),
        (url("toBool"), {"$toBool": 0.5}, True),
        (url("toBool"), {"$toBool": ""}, True),  # any string is true
        (url("toBool"), {"$toBool": "false"}, True),
        (url("toBool"), {"$toBool": [[]]}, True),
        (url("toBool"), {"$toBool": D(1970, 1, 1)}, True),
        (url("toBool"), {"$toBool": MinKey()}, True),
        (url("toBool"), {"$toBool": "$n"}, None),
        (url("toInt"), {"$toInt": 2.5}, 2),
        (url("toInt"), {"$toInt": -2.5}, -2),
        (url("toInt"), {"$toInt": True}, 1),
        (url("toInt"), {"$toInt": Int64(5)}, 5),
        (url("toInt"), {"$toInt": Decimal128("5.5000")}, 5),
        (url("toInt"), {"$toInt": "-5"}, -5),
        (url("toInt"), {"$toInt": "$missing"}, None),
        (url("toLong"), {"$toLong": 5}, Int64(5)),
        (url("toLong"), {"$toLong": "9223372036854775807"}, Int64(2**63 - 1)),
        (url("toLong"), {"$toLong": D(2018, 3, 27, 5, 4, 47, 890000)}, Int64(1522127087890)),
        (url("toLong"), {"$toLong": False}, Int64(0)),
        (url("toDouble"), {"$toDouble": "5.5"}, 5.5),
        (url("toDouble"), {"$toDouble": "-Infinity"}, float("-inf")),
        (url("toDouble"), {"$toDouble": "1e10"}, 1e10),
        (url("toDouble"), {"$toDouble": Int64(2**53 + 1)}, float(2**53)),
        (url("toDouble"), {"$toDouble": D(1970, 1, 1, 0, 0, 1)}, 1000.0),
        (url("toDouble"), {"$toDouble": Decimal128("0.1")}, 0.1),
        (url("toDecimal"), {"$toDecimal": 9.99}, Decimal128("9.99000000000000")),
        (url("toDecimal"), {"$toDecimal": True}, Decimal128("1")),
        (url("toDecimal"), {"$toDecimal": "1.5E3"}, Decimal128("1.5E+3")),
        (url("toDecimal"), {"$toDecimal": D(1970, 1, 1, 0, 0, 2)}, Decimal128("2000")),
        (url("toString"), {"$toString": 2.5}, "2.5"),
        (url("toString"), {"$toString": 1.0}, "1"),
        (url("toString"), {"$toString": -0.0}, "-0"),
        (url("toString"), {"$toString": 1e16}, "1e+16"),
        (url("toString"), {"$toString": 0.1}, "0.1"),
        (url("toString"), {"$toString": float("nan")}, "NaN"),
        (url("toString"), {"$toString": Int64(-7)}, "-7"),
        (url("toString"), {"$toString": Decimal128("1E+3")}, "1E+3"),
        (url("toString"), {"$toString": True}, "true"),
        (url("toString"), {"$toString": OID}, "5ab9cbfa31c2ab715d42129e"),
        (url("toString"), {"$toString": D(2018, 3, 27, 16, 58, 51, 538000)}, "2018-03-27T16:58:51.538Z"),
        (url("toString"), {"$toString": Binary(b"hi", 0)}, "aGk="),
        (url("toString"), {"$toString": Binary(uuid.UUID(int=255).bytes, 4)}, "00000000-0000-0000-0000-0000000000ff"),
        (url("toObjectId"), {"$toObjectId": "5ab9cbfa31c2ab715d42129e"}, OID),
        (
            url("toUUID"),
            {"$toUUID": "0e3b9063-8abd-4eb3-9f9f-f4c59fd30a60"},
            Binary(uuid.UUID("0e3b9063-8abd-4eb3-9f9f-f4c59fd30a60").bytes, 4),
        ),
        (url("toUUID"), {"$toUUID": "$n"}, None),
        (url("toDate"), {"$toDate": 120000000000.5}, D(1973, 10, 20, 21, 20)),
        (url("toDate"), {"$toDate": Int64(1253372036000)}, D(2009, 9, 19, 14, 53, 56)),
        (url("toDate"), {"$toDate": Decimal128("1253372036000.50")}, D(2009, 9, 19, 14, 53, 56)),
        (url("toDate"), {"$toDate": "2018-03-03"}, D(2018, 3, 3)),
        (url("toDate"), {"$toDate": "2018-03-20 11:00:06 +0500"}, D(2018, 3, 20, 6, 0, 6)),
        (url("toDate"), {"$toDate": OID}, OID.generation_time.replace(tzinfo=None)),
        (url("toDate"), {"$toDate": Timestamp(1, 2)}, D(1970, 1, 1, 0, 0, 1)),
        (CONVERT, convert("5", "int"), 5),
        (CONVERT, convert("5", 16), 5),  # numeric type codes
        (CONVERT, convert(5, 2.0), "5"),
        (CONVERT, convert(5, {"type": "long"}), Int64(5)),
        (CONVERT, convert("abc", "int", onError="bad"), "bad"),
        (CONVERT, convert(None, "int", onNull="none"), "none"),
        (CONVERT, {"$convert": {"input": "$missing", "to": "int", "onNull": "none"}}, "none"),
        (CONVERT, convert(5, None), None),
        (CONVERT, convert(None, None, onNull=0), 0),
        (CONVERT, convert([1], "string", onError="bad"), "bad"),
        (CONVERT, convert(1, {"type": "binData", "subtype": 0}), b"\x01\x00\x00\x00"),
        (CONVERT, convert(Int64(1), "binData", byteOrder="big"), b"\x00" * 7 + b"\x01"),
        (CONVERT, convert(b"\x00\x01", "int", byteOrder="big"), 1),
        (CONVERT, convert(b"\x00\x00\x00\x00\x00\x00\xf0\x3f", "double"), 1.0),
        (CONVERT, convert("aGk=", "binData", format="base64"), b"hi"),
        (CONVERT, convert("6869", {"type": "binData", "subtype": 5}, format="hex"), Binary(b"hi", 5)),
        (CONVERT, convert(b"hi", "string", format="hex"), "6869"),
        (CONVERT, convert(b"hi", "string", format="utf8"), "hi"),
        (
            CONVERT,
            convert("00000000-0000-0000-0000-0000000000ff", {"type": "binData", "subtype": 4}, format="uuid"),
            Binary(uuid.UUID(int=255).bytes, 4),
        ),
        (CONVERT, convert(Binary(b"x", 5), {"type": "binData", "subtype": 5}), Binary(b"x", 5)),
        (url("type"), {"$type": 1}, "int"),
        (url("type"), {"$type": Int64(1)}, "long"),
        (url("type"), {"$type": 2**40}, "long"),
        (url("type"), {"$type": 1.0}, "double"),
        (url("type"), {"$type": Decimal128("1")}, "decimal"),
        (url("type"), {"$type": [[1]]}, "array"),
        (url("type"), {"$type": {"$literal": {"a": 1}}}, "object"),
        (url("type"), {"$type": "$n"}, "null"),
        (url("type"), {"$type": "$missing"}, "missing"),
        (url("type"), {"$type": Regex("a")}, "regex"),
        (url("type"), {"$type": Code("x")}, "javascript"),
        (url("type"), {"$type": Timestamp(1, 1)}, "timestamp"),
        (url("type"), {"$type": MaxKey()}, "maxKey"),
        (url("type"), {"$type": b"x"}, "binData"),
        (url("isNumber"), {"$isNumber": Decimal128("NaN")}, True),
        (url("isNumber"), {"$isNumber": "5"}, False),
        (url("isNumber"), {"$isNumber": "$missing"}, False),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (url("toInt"), {"$toInt": "abc"}, 241, None),
        (url("toInt"), {"$toInt": "1.5"}, 241, None),
        (url("toInt"), {"$toInt": " 1"}, 241, None),
        (url("toInt"), {"$toInt": "0x1A"}, 241, "Illegal hexadecimal input in $convert with no onError value: 0x1A"),
        (
            url("toInt"),
            {"$toInt": 2.0**31},
            241,
            "Conversion would overflow target type in $convert with no onError value: 2.14748e+09",
        ),
        (
            url("toInt"),
            {"$toInt": float("nan")},
            241,
            "Attempt to convert NaN value to integer type in $convert with no onError value",
        ),
        (
            url("toInt"),
            {"$toInt": Decimal128("Infinity")},
            241,
            "Attempt to convert infinity value to integer type in $convert with no onError value",
        ),
        (
            url("toInt"),
            {"$toInt": Int64(2**31)},
            241,
            "Conversion would overflow target type in $convert with no onError value: ",
        ),
        (
            url("toInt"),
            {"$toInt": D(2020, 1, 1)},
            241,
            "Unsupported conversion from date to int in $convert with no onError value",
        ),
        (url("toLong"), {"$toLong": 2.0**63}, 241, None),
        (
            url("toLong"),
            {"$toLong": Decimal128("1E+30")},
            241,
            "Conversion would overflow target type in $convert with no onError value: 1E+30",
        ),
        (url("toDouble"), {"$toDouble": "1e400"}, 241, None),
        (url("toDouble"), {"$toDouble": Decimal128("1E+400")}, 241, None),
        (
            url("toDouble"),
            {"$toDouble": OID},
            241,
            "Unsupported conversion from objectId to double in $convert with no onError value",
        ),
        (url("toDecimal"), {"$toDecimal": "abc"}, 241, None),
        (
            url("toDate"),
            {"$toDate": 5},
            241,
            "Unsupported conversion from int to date in $convert with no onError value",
        ),
        (url("toDate"), {"$toDate": "not a date"}, 241, None),
        (url("toDate"), {"$toDate": float("inf")}, 241, None),
        (
            url("toObjectId"),
            {"$toObjectId": "xyz"},
            241,
            "Failed to parse objectId 'xyz' in $convert with no onError value: "
            "Invalid string length for parsing to OID, expected 24 but found 3",
        ),
        (url("toObjectId"), {"$toObjectId": "zzzzzzzzzzzzzzzzzzzzzzzz"}, 241, None),
        (url("toUUID"), {"$toUUID": "not-a-uuid"}, 241, None),
        (
            url("toUUID"),
            {"$toUUID": True},
            241,
            "Unsupported conversion from bool to binData in $convert with no onError value",
        ),
        (
            url("toString"),
            {"$toString": [[1]]},
            241,
            "Unsupported conversion from array to string in $convert with no onError value",
        ),
        (url("toString"), {"$toString": MinKey()}, 241, None),
        (CONVERT, convert(1, "foo"), 2, "Unknown type name: foo"),
        (CONVERT, convert(1, 1.5), 9, "In $convert, numeric 'to' argument is not an integer"),
        (CONVERT, convert(1, 99), 9, "In $convert, numeric value for 'to' does not correspond to a BSON type: 99"),
        (CONVERT, convert(1, True), 9, "$convert's 'to' argument must be a string or number, but is bool"),
        (CONVERT, convert(None, "foo", onNull=1), 2, None),  # 'to' is checked before the null input
        (CONVERT, convert(1, "minKey"), 241, None),
        (
            CONVERT,
            convert("x", "binData"),
            4341115,
            "Format must be speficied when converting from 'string' to 'binData'",
        ),
        (CONVERT, convert(b"x", "string", format=1), 4341114, None),
        (CONVERT, convert(b"x", "string", format="base32"), 4341125, "Invalid 'format' argument for $convert: base32"),
        (CONVERT, convert("x", "binData", format="uuid"), 241, None),
        (CONVERT, convert("!!", "binData", format="base64"), 241, None),
        (
            CONVERT,
            convert(b"x", {"type": "binData", "subtype": 5}),
            241,
            "Conversions between different BinData subtypes are not supported",
        ),
        (CONVERT, convert(b"x", {"type": "binData", "subtype": 42}), 4341107, None),
        (CONVERT, convert(b"abc", "int"), 241, None),
        (CONVERT, convert(1, "int", byteOrder="middle"), 9130002, "Invalid 'byteOrder' argument for $convert: middle"),
    ],
)
def test_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert raised.value.code == code
    if message is not None:
        assert raised.value.errmsg == message


def test_conversion_failure_is_its_own_code_name():
    with pytest.raises(CommandError) as raised:
        evaluate({"$toInt": "abc"})
    assert raised.value.code_name == "ConversionFailure"


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"$convert": 1}, 9),
        ({"$convert": {"input": 1}}, 9),
        ({"$convert": {"to": "int"}}, 9),
        ({"$convert": {"input": 1, "to": "int", "bogus": 1}}, 9),
        ({"$toInt": [1, 2]}, 50723),
        ({"$toString": []}, 50723),
        ({"$type": [1, 2]}, 16020),
    ],
)
def test_parse_errors(spec, code):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/#syntax
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


@pytest.mark.parametrize("value", EDGE_VALUES)
def test_every_value_has_a_type_and_converts_to_bool(value):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/type/ and toBool/
    name = evaluate({"$type": {"$literal": value}})
    assert isinstance(name, str)
    assert evaluate({"$toBool": {"$literal": value}}) in (True, False, None)


@given(st.integers(-(2**63), 2**63 - 1))
def test_long_string_round_trip(n):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toLong/
    same(evaluate({"$toLong": {"$toString": Int64(n)}}), Int64(n))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_string_round_trip(x):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toDouble/
    assert evaluate({"$toDouble": {"$toString": x}}) == x
