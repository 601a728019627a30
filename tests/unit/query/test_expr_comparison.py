"""Comparison, boolean and conditional expressions.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#comparison-expression-operators
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Decimal128, Int64, MaxKey, MinKey

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables
from foliodb.query.paths import MISSING

NOW = datetime.datetime(2024, 1, 1)
CMP = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/cmp/"
EQ = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/eq/"
ORDER = "https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/"
AND = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/and/"
OR = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/or/"
NOT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/not/"
COND = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/cond/"
IFNULL = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/ifNull/"
SWITCH = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/switch/"
DOC = {"qty": 250, "n": None, "s": "abc", "arr": [1, 2]}


def evaluate(spec, doc=None):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, NOW))


def same(got, want):
    if want is MISSING:
        assert got is MISSING
    else:
        assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (CMP, {"$cmp": ["$qty", 250]}, 0),
        (CMP, {"$cmp": ["$qty", 300]}, -1),
        (CMP, {"$cmp": ["$qty", 100]}, 1),
        (ORDER, {"$cmp": ["a", 1]}, 1),  # strings sort after numbers
        (ORDER, {"$cmp": [[1], {"a": 1}]}, 1),  # arrays after objects
        (ORDER, {"$cmp": [MinKey(), None]}, -1),
        (ORDER, {"$cmp": [MaxKey(), NOW]}, 1),
        (EQ, {"$eq": ["$qty", 250]}, True),
        (EQ, {"$eq": [1, 1.0]}, True),
        (EQ, {"$eq": [Int64(1), Decimal128("1.00")]}, True),
        (EQ, {"$eq": ["$arr", [1, 2]]}, True),
        (EQ, {"$eq": ["$arr", 1]}, False),  # no array traversal, unlike queries
        (EQ, {"$eq": ["$missing", None]}, False),  # missing is below null
        (EQ, {"$eq": ["$n", None]}, True),
        (EQ, {"$lte": ["$missing", None]}, True),
        (EQ, {"$lt": ["$missing", None]}, True),
        (EQ, {"$gt": ["$n", "$missing"]}, True),
        (EQ, {"$eq": ["$missing", "$alsoMissing"]}, True),
        (EQ, {"$ne": ["$s", "abc"]}, False),
        (EQ, {"$gte": [float("nan"), float("-inf")]}, False),  # NaN sorts below every number
        (EQ, {"$eq": [float("nan"), float("nan")]}, True),
        (AND, {"$and": [1, "green"]}, True),
        (AND, {"$and": []}, True),
        (AND, {"$and": [[], None]}, False),
        (AND, {"$and": [0, {"$divide": [1, 0]}]}, False),  # stops at the first false
        (OR, {"$or": [0, "$missing", Decimal128("0")]}, False),
        (OR, {"$or": []}, False),
        (OR, {"$or": [1, {"$divide": [1, 0]}]}, True),
        (NOT, {"$not": [[False]]}, False),  # an array is true
        (NOT, {"$not": ["$missing"]}, True),
        (NOT, {"$not": 0}, True),
        (COND, {"$cond": {"if": {"$gte": ["$qty", 250]}, "then": 30, "else": 20}}, 30),
        (COND, {"$cond": [{"$lt": ["$qty", 250]}, 30, 20]}, 20),
        (COND, {"$cond": [True, "$missing", 1]}, MISSING),
        (COND, {"$cond": [False, {"$divide": [1, 0]}, "ok"]}, "ok"),
        (IFNULL, {"$ifNull": ["$n", "Unspecified"]}, "Unspecified"),
        (IFNULL, {"$ifNull": ["$missing", "$n", "x"]}, "x"),
        (IFNULL, {"$ifNull": ["$s", "x"]}, "abc"),
        (IFNULL, {"$ifNull": ["$n", "$missing"]}, MISSING),  # the last value as it is
        (IFNULL, {"$ifNull": [0, 1]}, 0),
        (
            SWITCH,
            {
                "$switch": {
                    "branches": [{"case": {"$eq": ["$s", "x"]}, "then": 1}, {"case": {"$eq": ["$s", "abc"]}, "then": 2}]
                }
            },
            2,
        ),
        (SWITCH, {"$switch": {"branches": [{"case": False, "then": 1}], "default": "d"}}, "d"),
        (SWITCH, {"$switch": {"branches": [{"case": 1, "then": 1}], "default": {"$divide": [1, 0]}}}, 1),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (CMP, {"$cmp": [1]}, 16020),
        (EQ, {"$eq": [1, 2, 3]}, 16020),
        (NOT, {"$not": [1, 2]}, 16020),
        (COND, {"$cond": [1, 2]}, 16020),
        (COND, {"$cond": {"if": 1, "then": 2}}, 17082),
        (COND, {"$cond": {"then": 2, "else": 3}}, 17080),
        (COND, {"$cond": {"if": 1, "else": 3}}, 17081),
        (COND, {"$cond": {"if": 1, "then": 2, "else": 3, "x": 4}}, 17083),
        (IFNULL, {"$ifNull": ["$a"]}, 1257300),
        (SWITCH, {"$switch": 1}, 40060),
        (SWITCH, {"$switch": {"branches": {}}}, 40061),
        (SWITCH, {"$switch": {"branches": [1]}}, 40062),
        (SWITCH, {"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}}, 40063),
        (SWITCH, {"$switch": {"branches": [{"then": 1}]}}, 40064),
        (SWITCH, {"$switch": {"branches": [{"case": 1}]}}, 40065),
        (SWITCH, {"$switch": {"branches": [{"case": 1, "then": 1}], "other": 1}}, 40067),
        (SWITCH, {"$switch": {"branches": []}}, 40068),
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


def test_switch_without_a_match_or_default_fails_at_run_time():
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/switch/#behavior
    with pytest.raises(CommandError) as raised:
        evaluate({"$switch": {"branches": [{"case": False, "then": 1}]}})
    assert raised.value.code == 40066


def test_messages_name_types():
    with pytest.raises(CommandError) as raised:
        compile_expression({"$switch": {"branches": [5]}})
    assert raised.value.errmsg == "$switch expected each branch to be an object, found: int"
    with pytest.raises(CommandError) as raised:
        compile_expression({"$ifNull": ["$a"]})
    assert raised.value.errmsg == "$ifNull needs at least two arguments, had: 1"
