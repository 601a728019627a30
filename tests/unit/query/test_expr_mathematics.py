"""Numeric functions and trigonometry: $abs $ceil $floor $exp $ln $log $log10
$pow $sqrt $round $trunc, $sin ... $radiansToDegrees.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#arithmetic-expression-operators
and https://www.mongodb.com/docs/manual/reference/operator/aggregation/#trigonometry-expression-operators
"""

from __future__ import annotations

import datetime
import math

import bson
import pytest
from bson import Decimal128, Int64

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
INF, NAN = float("inf"), float("nan")


def url(name):
    return BASE + name + "/"


def evaluate(spec, doc=None):
    doc = {} if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, datetime.datetime(2024, 1, 1)))


def same(got, want):
    assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("abs"), {"$abs": -1}, 1),
        (url("abs"), {"$abs": -(2**31)}, Int64(2**31)),
        (url("abs"), {"$abs": Int64(-5)}, Int64(5)),
        (url("abs"), {"$abs": -0.5}, 0.5),
        (url("abs"), {"$abs": Decimal128("-1.50")}, Decimal128("1.50")),
        (url("abs"), {"$abs": None}, None),
        (url("abs"), {"$abs": "$missing"}, None),
        (url("ceil"), {"$ceil": 7.80}, 8.0),
        (url("ceil"), {"$ceil": -2.8}, -2.0),
        (url("ceil"), {"$ceil": 5}, 5),
        (url("ceil"), {"$ceil": Decimal128("1.01")}, Decimal128("2")),
        (url("ceil"), {"$ceil": INF}, INF),
        (url("floor"), {"$floor": -2.8}, -3.0),
        (url("floor"), {"$floor": Decimal128("-1.01")}, Decimal128("-2")),
        (url("floor"), {"$floor": Int64(3)}, Int64(3)),
        (url("exp"), {"$exp": 0}, 1.0),
        (url("exp"), {"$exp": 1000}, INF),
        (url("exp"), {"$exp": Decimal128("0")}, Decimal128("1")),
        (url("ln"), {"$ln": 1}, 0.0),
        (url("ln"), {"$ln": math.e}, 1.0),
        (url("ln"), {"$ln": NAN}, NAN),
        (url("ln"), {"$ln": Decimal128("1")}, Decimal128("0")),
        (url("log10"), {"$log10": 1000}, 3.0),
        (url("log10"), {"$log10": Decimal128("100")}, Decimal128("2")),
        (url("log"), {"$log": [100, 10]}, math.log(100) / math.log(10)),
        (url("log"), {"$log": [8, 2]}, 3.0),
        (url("log"), {"$log": [None, 2]}, None),
        (url("pow"), {"$pow": [5, 2]}, 25),
        (url("pow"), {"$pow": [5, -2]}, 0.04),
        (url("pow"), {"$pow": [-5, 0.5]}, NAN),
        (url("pow"), {"$pow": [2, 31]}, Int64(2**31)),
        (url("pow"), {"$pow": [Int64(2), 2]}, Int64(4)),
        (url("pow"), {"$pow": [2, 64]}, float(2**64)),
        (url("pow"), {"$pow": [-1, 2**40]}, Int64(1)),  # a long exponent makes a long result
        (url("pow"), {"$pow": [-1, 3]}, -1),
        (url("pow"), {"$pow": [0, 0]}, 1),
        (url("pow"), {"$pow": [2.0, 3]}, 8.0),
        # mongod's bid128_pow keeps 34 digits (MongoDB's own jstests, server18427.js: 10.0 ** -2 is
        # 0.01000000000000000000000000000000000, (-2) ** 2 is 4.000000000000000000000000000000000).
        (url("pow"), {"$pow": [Decimal128("2"), 10]}, Decimal128("1024.000000000000000000000000000000")),
        (url("pow"), {"$pow": [Decimal128("10.0"), -2]}, Decimal128("0.01000000000000000000000000000000000")),
        (url("pow"), {"$pow": [10, 400.0]}, INF),
        (url("sqrt"), {"$sqrt": 25}, 5.0),
        (url("sqrt"), {"$sqrt": Decimal128("2.25")}, Decimal128("1.5")),
        (url("sqrt"), {"$sqrt": NAN}, NAN),
        (url("round"), {"$round": [19.25, 1]}, 19.2),  # half to even
        (url("round"), {"$round": [28.73, -1]}, 30.0),
        (url("round"), {"$round": [34.32, -1]}, 30.0),
        (url("round"), {"$round": [-45.39, 1]}, -45.4),
        (url("round"), {"$round": [2.5]}, 2.0),
        (url("round"), {"$round": [3.5]}, 4.0),
        (url("round"), {"$round": [1234, -2]}, 1200),
        (url("round"), {"$round": [1250, -2]}, 1200),
        (url("round"), {"$round": [2**31 - 1, -1]}, Int64(2147483650)),  # an int result past int32 is a long
        (url("round"), {"$round": [Int64(15), -1]}, Int64(20)),
        (url("round"), {"$round": [7, 2]}, 7),
        (url("round"), {"$round": [Decimal128("1.255"), 2]}, Decimal128("1.26")),
        (url("round"), {"$round": [INF, 2]}, INF),
        (url("round"), {"$round": [1, None]}, None),
        (url("round"), {"$round": [2.25, 1.0]}, 2.2),
        (url("trunc"), {"$trunc": [19.25, 1]}, 19.2),
        (url("trunc"), {"$trunc": [-45.39, 1]}, -45.3),
        (url("trunc"), {"$trunc": [28.73, -1]}, 20.0),
        (url("trunc"), {"$trunc": -2.7}, -2.0),
        (url("trunc"), {"$trunc": [Int64(2**63 - 1), -1]}, Int64(9223372036854775800)),
        (url("trunc"), {"$trunc": [Decimal128("-1.999"), 0]}, Decimal128("-1")),
        (url("sin"), {"$sin": 0}, 0.0),
        (url("sin"), {"$sin": math.pi / 2}, 1.0),
        (url("cos"), {"$cos": 0}, 1.0),
        (url("tan"), {"$tan": 0.0}, 0.0),
        (url("asin"), {"$asin": 1}, math.pi / 2),
        (url("acos"), {"$acos": 1}, 0.0),
        (url("atan"), {"$atan": 1}, math.pi / 4),
        (url("atan"), {"$atan": INF}, math.pi / 2),
        (url("atan2"), {"$atan2": [1, -1]}, 3 * math.pi / 4),
        (url("atan2"), {"$atan2": [None, 1]}, None),
        (url("atanh"), {"$atanh": 1}, INF),
        (url("acosh"), {"$acosh": 1}, 0.0),
        (url("acosh"), {"$acosh": INF}, INF),
        (url("asinh"), {"$asinh": 0}, 0.0),
        (url("sinh"), {"$sinh": 1000}, INF),
        (url("cosh"), {"$cosh": -1000}, INF),
        (url("tanh"), {"$tanh": 0}, 0.0),
        (url("sin"), {"$sin": NAN}, NAN),
        (url("sin"), {"$sin": None}, None),
        (url("acosh"), {"$acosh": Decimal128("3")}, Decimal128("1.762747174039086050465218649959585")),
        (url("degreesToRadians"), {"$degreesToRadians": 180}, math.pi),
        (
            url("degreesToRadians"),
            {"$degreesToRadians": Decimal128("180")},
            Decimal128("3.141592653589793238462643383279503"),
        ),
        (url("radiansToDegrees"), {"$radiansToDegrees": math.pi}, 180.0),
        (
            url("radiansToDegrees"),
            {"$radiansToDegrees": Decimal128("1")},
            Decimal128("57.29577951308232087679815481410517"),
        ),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("name", "value", "want"),
    # 34 digits of mpmath-verified values: sin(1), cos(1), tan(1), asin(0.5), atan(1), atanh(0.5).
    [
        ("$sin", "1", "0.8414709848078965066525023216302990"),
        ("$cos", "1", "0.5403023058681397174009366074429766"),
        ("$tan", "1", "1.557407724654902230506974807458360"),
        ("$asin", "0.5", "0.5235987755982988730771072305465838"),
        ("$acos", "0", "1.570796326794896619231321691639751"),
        ("$atan", "1", "0.7853981633974483096156608458198757"),
        ("$atanh", "0.5", "0.5493061443340548456976226184612629"),
        ("$sinh", "1", "1.175201193643801456882381850595601"),
        ("$cosh", "1", "1.543080634815243778477905620757062"),
        ("$tanh", "1", "0.7615941559557648881194582826047936"),
        ("$asinh", "1", "0.8813735870195430252326093249797923"),
    ],
)
def test_decimal_trigonometry(name, value, want):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/sin/ (a decimal gives a decimal)
    same(evaluate({name: Decimal128(value)}), Decimal128(want))


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (url("abs"), {"$abs": "a"}, 28765, "$abs only supports numeric types, not string"),
        (url("abs"), {"$abs": Int64(-(2**63))}, 28680, "can't take $abs of long long min"),
        (url("ceil"), {"$ceil": [[1]]}, 28765, "$ceil only supports numeric types, not array"),
        (url("ln"), {"$ln": 0}, 28766, "$ln's argument must be a positive number, but is 0"),
        (url("ln"), {"$ln": Decimal128("-1")}, 28766, "$ln's argument must be a positive number, but is -1"),
        (url("log10"), {"$log10": -0.5}, 28761, "$log10's argument must be a positive number, but is -0.5"),
        (url("log"), {"$log": ["a", 2]}, 28756, "$log's argument must be numeric, not string"),
        (url("log"), {"$log": [2, "a"]}, 28757, "$log's base must be numeric, not string"),
        (url("log"), {"$log": [0, 2]}, 28758, "$log's argument must be a positive number, but is 0"),
        (url("log"), {"$log": [2, 1]}, 28759, "$log's base must be a positive number not equal to 1, but is 1"),
        (url("pow"), {"$pow": [0, -1]}, 28764, "$pow cannot take a base of 0 and a negative exponent"),
        (url("pow"), {"$pow": ["a", 1]}, 28762, "$pow's base must be numeric, not string"),
        (url("pow"), {"$pow": [1, "a"]}, 28763, "$pow's exponent must be numeric, not string"),
        (url("sqrt"), {"$sqrt": -1}, 28714, "$sqrt's argument must be greater than or equal to 0"),
        (url("round"), {"$round": ["a"]}, 51081, "$round only supports numeric types, not string"),
        (url("round"), {"$round": [1.5, 1.5]}, 51082, "precision argument to  $round must be a integral value"),
        (
            url("round"),
            {"$round": [1.5, 101]},
            51083,
            "cannot apply $round with precision value 101 value must be in [-20, 100]",
        ),
        (url("round"), {"$round": [1.5, "a"]}, 16004, "can't convert from BSON type string to long"),
        (
            url("round"),
            {"$round": [Int64(2**63 - 1), -1]},
            51080,
            "invalid conversion from Decimal128 result in $round resulting from arguments: [9223372036854775807, -1]",
        ),
        (url("sin"), {"$sin": INF}, 50989, "cannot apply $sin to inf, value must in (-inf,inf)"),
        (url("acos"), {"$acos": 2}, 50989, "cannot apply $acos to 2, value must in [-1,1]"),
        (url("asin"), {"$asin": Decimal128("-1.5")}, 50989, "cannot apply $asin to -1.5, value must in [-1,1]"),
        (url("atanh"), {"$atanh": -2}, 50989, "cannot apply $atanh to -2, value must in [-1,1]"),
        (url("acosh"), {"$acosh": 0.5}, 50989, "cannot apply $acosh to 0.5, value must in [1,inf]"),
        (url("atan2"), {"$atan2": ["a", 1]}, 51044, "$atan2 only supports numeric types, not string"),
        (url("atan2"), {"$atan2": [1, "a"]}, 51045, "$atan2 only supports numeric types, not string"),
        (
            url("degreesToRadians"),
            {"$degreesToRadians": True},
            28765,
            "$degreesToRadians only supports numeric types, not bool",
        ),
    ],
)
def test_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert (raised.value.code, raised.value.errmsg) == (code, message)


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"$pow": [1]}, 16020),
        ({"$log": [1]}, 16020),
        ({"$atan2": 1}, 16020),
        ({"$trunc": [1, 2, 3]}, 28667),
        ({"$sqrt": [1, 2]}, 16020),
    ],
)
def test_arity(spec, code):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/pow/ (two arguments)
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code
