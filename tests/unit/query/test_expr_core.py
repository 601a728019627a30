"""Expression compilation: field paths, variables, literals, arity, unknown
operators, missing vs null, and the $let/$literal operators.

Manual: https://www.mongodb.com/docs/manual/meta/aggregation-quick-reference/#expressions
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Int64, MinKey

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compare_values, compile_expression, root_variables, truthy
from foliodb.query.paths import MISSING

NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, 10000)
EXPRESSIONS = "https://www.mongodb.com/docs/manual/meta/aggregation-quick-reference/#expressions"
VARIABLES = "https://www.mongodb.com/docs/manual/reference/aggregation-variables/"
LET = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/let/"
LITERAL = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/literal/"
FIELD_PATHS = "https://www.mongodb.com/docs/manual/core/field-paths/"
DOC = {"a": 1, "b": {"c": [{"d": 1}, {"d": 2}, {"e": 3}, 7]}, "n": None, "arr": [[{"x": 1}], {"x": 2}]}


def evaluate(spec, doc=None, **let):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope(frozenset(let)))(doc, root_variables(doc, let, NOW))


def same(got, want):
    if want is MISSING:
        assert got is MISSING
    else:
        assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (FIELD_PATHS, "$a", 1),
        (FIELD_PATHS, "$b.c.d", [1, 2]),  # arrays map; missing and scalars dropped
        (FIELD_PATHS, "$arr.x", [[1], 2]),  # nested arrays keep their shape
        (FIELD_PATHS, "$zz", MISSING),
        (FIELD_PATHS, "$n", None),
        (FIELD_PATHS, "$a.b", MISSING),
        (VARIABLES, "$$ROOT.a", 1),
        (VARIABLES, "$$CURRENT.b.c.e", [3]),
        (VARIABLES, "$$NOW", NOW),
        (VARIABLES, "$$REMOVE", MISSING),
        (EXPRESSIONS, "plain", "plain"),
        (EXPRESSIONS, {"x": "$a", "y": "$zz", "z": {"$literal": "$a"}}, {"x": 1, "z": "$a"}),
        (EXPRESSIONS, ["$a", "$zz", 2], [1, None, 2]),  # missing array elements become null
        (EXPRESSIONS, {}, {}),
        (LITERAL, {"$literal": {"$add": [1, 2]}}, {"$add": [1, 2]}),
        (LITERAL, {"$const": "$x"}, "$x"),
        (LET, {"$let": {"vars": {"x": 2, "y": "$a"}, "in": {"$add": ["$$x", "$$y"]}}}, 3),
        (LET, {"$let": {"vars": {"x": 1}, "in": {"$let": {"vars": {"x": {"$add": ["$$x", 1]}}, "in": "$$x"}}}}, 2),
        (LET, {"$let": {"vars": {"doc": "$b"}, "in": "$$doc.c.d"}}, [1, 2]),
        (VARIABLES, {"$let": {"vars": {"CURRENT": "$b"}, "in": "$c.e"}}, [3]),  # CURRENT may be rebound
        (VARIABLES, {"$let": {"vars": {"CURRENT": "$b"}, "in": "$$ROOT.a"}}, 1),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


def test_let_variables_come_from_the_caller():
    # https://www.mongodb.com/docs/manual/reference/command/aggregate/ (let)
    same(evaluate({"$multiply": ["$$k", 2]}, k=Int64(21)), Int64(42))


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (EXPRESSIONS, {"$add": [1], "$sub": 2}, 15983),
        (EXPRESSIONS, {"$noSuchOperator": 1}, 168),
        (EXPRESSIONS, {"a": 1, "$b": 2}, 16410),
        (EXPRESSIONS, {"a.b": 1}, 16412),
        (FIELD_PATHS, "$", 16872),
        (FIELD_PATHS, "$a..b", 15998),
        (FIELD_PATHS, "$$", 16866),
        (VARIABLES, "$$undefinedVar", 17276),
        (VARIABLES, "$$9x", 16867),
        (VARIABLES, "$$a-b", 16868),
        (LET, {"$let": 1}, 16874),
        (LET, {"$let": {"vars": {}, "in": 1, "x": 1}}, 16875),
        (LET, {"$let": {"in": 1}}, 16876),
        (LET, {"$let": {"vars": {}}}, 16877),
        (LET, {"$let": {"vars": 1, "in": 1}}, 10065),
        (LET, {"$let": {"vars": {"X": 1}, "in": 1}}, 16867),
        (LET, {"$let": {"vars": {"x": 1}, "in": "$$y"}}, 17276),
        (LET, {"$let": {"vars": {"x": "$$x"}, "in": 1}}, 17276),  # a variable cannot see itself
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        ({"$abs": [1, 2]}, 16020, "Expression $abs takes exactly 1 arguments. 2 were passed in."),
        ({"$eq": [1]}, 16020, "Expression $eq takes exactly 2 arguments. 1 were passed in."),
        (
            {"$round": [1, 2, 3]},
            28667,
            "Expression $round takes at least 1 arguments, and at most 2, but 3 were passed in.",
        ),
        (
            {"$indexOfArray": [[1]]},
            28667,
            "Expression $indexOfArray takes at least 2 arguments, and at most 4, but 1 were passed in.",
        ),
    ],
)
def test_arity_errors(spec, code, message):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/abs/ (one argument); mongod's
    # ExpressionFixedArity answers 16020, ExpressionRangedArity (optional arguments) 28667.
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert (raised.value.code, raised.value.errmsg) == (code, message)


def test_unknown_and_unbuilt_errors_name_the_operator():
    with pytest.raises(CommandError) as raised:
        compile_expression({"$bogus": 1})
    assert raised.value.errmsg == "Unrecognized expression '$bogus'"
    assert raised.value.code_name == "InvalidPipelineOperator"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, False),
        (MISSING, False),
        (False, False),
        (0, False),
        (0.0, False),
        (Int64(0), False),
        (bson.Decimal128("0"), False),
        (bson.Decimal128("-0"), False),
        (True, True),
        (1, True),
        (float("nan"), True),
        ("", True),
        ([], True),
        ({}, True),
        (NOW, True),
    ],
)
def test_truthy(value, want):
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/and/#behavior
    assert truthy(value) is want


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (MISSING, None, -1),
        (None, MISSING, 1),
        (MISSING, MISSING, 0),
        (MinKey(), MISSING, -1),
        (MISSING, MinKey(), 1),
        (MISSING, 0, -1),
        (1, 1.0, 0),
        ("a", 1, 1),
    ],
)
def test_compare_values_puts_missing_below_null(a, b, want):
    # https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/ (missing compares as undefined)
    assert compare_values(a, b) == want


def test_each_evaluation_sees_its_own_variables():
    # Compile once, run twice with different $$ROOT: the closure never keeps a document.
    fn = compile_expression({"$add": ["$a", "$$ROOT.a"]})
    assert fn({"a": 1}, root_variables({"a": 1}, {}, NOW)) == 2
    assert fn({"a": 5}, root_variables({"a": 5}, {}, NOW)) == 10


def test_to_hashed_index_key_is_mongodbs_hash():
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toHashedIndexKey/
    assert compile_expression({"$toHashedIndexKey": "string to hash"})({}, {}) == 763543691661428748
