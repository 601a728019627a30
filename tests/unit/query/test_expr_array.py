"""Array expressions: element access, construction, search, $filter $map
$reduce $sortArray $zip, and the set operators.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#array-expression-operators
and https://www.mongodb.com/docs/manual/reference/operator/aggregation/#set-expression-operators
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Decimal128, Int64

from foliodb.errors import CommandError
from foliodb.query.expr import Scope, compile_expression, root_variables
from foliodb.query.paths import MISSING

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
DOC = {
    "items": [1, 2, 3],
    "docs": [{"a": 2, "b": "x"}, {"a": 1, "b": "y"}, {"b": "z"}],
    "n": None,
    "s": "str",
    "o": {"k": 1, "j": [2]},
}


def url(name):
    return BASE + name + "/"


def evaluate(spec, doc=None):
    doc = DOC if doc is None else doc
    return compile_expression(spec, Scope())(doc, root_variables(doc, {}, datetime.datetime(2024, 1, 1)))


def same(got, want):
    if want is MISSING:
        assert got is MISSING
    else:
        assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("arrayElemAt"), {"$arrayElemAt": [[1, 2, 3], 0]}, 1),
        (url("arrayElemAt"), {"$arrayElemAt": [[1, 2, 3], -1]}, 3),
        (url("arrayElemAt"), {"$arrayElemAt": [[1, 2, 3], 15]}, MISSING),
        (url("arrayElemAt"), {"$arrayElemAt": [[1, 2, 3], -4]}, MISSING),
        (url("arrayElemAt"), {"$arrayElemAt": [[1, 2, 3], 1.0]}, 2),
        (url("arrayElemAt"), {"$arrayElemAt": [[1, 2, 3], Decimal128("2")]}, 3),
        (url("arrayElemAt"), {"$arrayElemAt": ["$n", 0]}, None),
        (url("arrayElemAt"), {"$arrayElemAt": ["$items", "$missing"]}, None),
        (url("first-array-element"), {"$first": "$items"}, 1),
        (url("first-array-element"), {"$first": [[]]}, MISSING),
        (url("first-array-element"), {"$first": "$missing"}, None),
        (url("last-array-element"), {"$last": "$items"}, 3),
        (
            url("concatArrays"),
            {"$concatArrays": [["hello", " "], [["world"], "again"]]},
            ["hello", " ", ["world"], "again"],
        ),
        (url("concatArrays"), {"$concatArrays": []}, []),
        (url("concatArrays"), {"$concatArrays": [[1], "$n"]}, None),
        (url("in"), {"$in": ["abc", ["xyz", "abc"]]}, True),
        (url("in"), {"$in": ["xy", ["xyz", "abc"]]}, False),
        (url("in"), {"$in": [[1], [1, 2]]}, False),  # no array traversal
        (url("in"), {"$in": [[1], [[1], 2]]}, True),
        (url("in"), {"$in": [Int64(2), [2.0]]}, True),
        (url("in"), {"$in": ["$missing", [None]]}, False),
        (url("indexOfArray"), {"$indexOfArray": [["a", "abc"], "a"]}, 0),
        (url("indexOfArray"), {"$indexOfArray": [["a", "abc", "de", ["de"]], ["de"]]}, 3),
        (url("indexOfArray"), {"$indexOfArray": [[1, 2], 5]}, -1),
        (url("indexOfArray"), {"$indexOfArray": [[1, 2, 3, 2], 2, 2]}, 3),
        (url("indexOfArray"), {"$indexOfArray": [[1, 2, 3, 2], 2, 0, 1]}, -1),
        (url("indexOfArray"), {"$indexOfArray": [[1, 2, 3], 2, 5]}, -1),
        (url("indexOfArray"), {"$indexOfArray": [[1, 2, 3], 3, 0, 9]}, 2),
        (url("indexOfArray"), {"$indexOfArray": ["$n", 1]}, None),
        (url("indexOfArray"), {"$indexOfArray": [[None], "$n"]}, 0),
        (url("isArray"), {"$isArray": ["$items"]}, True),
        (url("isArray"), {"$isArray": "$s"}, False),
        (url("isArray"), {"$isArray": "$missing"}, False),
        (url("objectToArray"), {"$objectToArray": "$o"}, [{"k": "k", "v": 1}, {"k": "j", "v": [2]}]),
        (url("objectToArray"), {"$objectToArray": "$n"}, None),
        (url("arrayToObject"), {"$arrayToObject": [[["item", "abc123"], ["qty", 25]]]}, {"item": "abc123", "qty": 25}),
        (url("arrayToObject"), {"$arrayToObject": [[{"k": "item", "v": 1}, {"k": "item", "v": 2}]]}, {"item": 2}),
        (url("arrayToObject"), {"$arrayToObject": [[]]}, {}),
        (url("arrayToObject"), {"$arrayToObject": "$missing"}, None),
        (url("range"), {"$range": [0, 10, 2]}, [0, 2, 4, 6, 8]),
        (url("range"), {"$range": [10, 0, -2]}, [10, 8, 6, 4, 2]),
        (url("range"), {"$range": [0, 10, -2]}, []),
        (url("range"), {"$range": [0, 5]}, [0, 1, 2, 3, 4]),
        (url("range"), {"$range": [Int64(1), 3.0]}, [1, 2]),
        (url("reverseArray"), {"$reverseArray": "$items"}, [3, 2, 1]),
        (url("reverseArray"), {"$reverseArray": [[[1, 2], 3]]}, [3, [1, 2]]),
        (url("reverseArray"), {"$reverseArray": "$n"}, None),
        (url("size"), {"$size": "$items"}, 3),
        (url("size"), {"$size": [[]]}, 0),
        (url("slice"), {"$slice": [[1, 2, 3], 1, 1]}, [2]),
        (url("slice"), {"$slice": [[1, 2, 3], -2]}, [2, 3]),
        (url("slice"), {"$slice": [[1, 2, 3], 15, 2]}, []),
        (url("slice"), {"$slice": [[1, 2, 3], -15, 2]}, [1, 2]),
        (url("slice"), {"$slice": [[1, 2, 3], -15]}, [1, 2, 3]),
        (url("slice"), {"$slice": [[1, 2, 3], 0]}, []),
        (url("slice"), {"$slice": ["$n", 1]}, None),
        (url("slice"), {"$slice": [[1, 2], 0, None]}, None),
        (url("filter"), {"$filter": {"input": "$items", "as": "i", "cond": {"$gte": ["$$i", 2]}}}, [2, 3]),
        (url("filter"), {"$filter": {"input": "$items", "cond": {"$gte": ["$$this", 2]}, "limit": 1}}, [2]),
        (url("filter"), {"$filter": {"input": "$items", "cond": True, "limit": None}}, [1, 2, 3]),
        (url("filter"), {"$filter": {"input": [], "cond": True, "limit": "ignored for empty input"}}, []),
        (url("filter"), {"$filter": {"input": "$missing", "cond": True}}, None),
        (url("map"), {"$map": {"input": "$items", "as": "x", "in": {"$multiply": ["$$x", 10]}}}, [10, 20, 30]),
        (url("map"), {"$map": {"input": "$docs", "in": "$$this.a"}}, [2, 1, None]),  # missing becomes null
        (url("map"), {"$map": {"input": "$n", "in": 1}}, None),
        (
            url("reduce"),
            {"$reduce": {"input": ["a", "b", "c"], "initialValue": "", "in": {"$concat": ["$$value", "$$this"]}}},
            "abc",
        ),
        (url("reduce"), {"$reduce": {"input": [], "initialValue": 5, "in": 0}}, 5),
        (
            url("reduce"),
            {"$reduce": {"input": [[3, 4], [5]], "initialValue": [1], "in": {"$concatArrays": ["$$value", "$$this"]}}},
            [1, 3, 4, 5],
        ),
        (url("reduce"), {"$reduce": {"input": "$n", "initialValue": 0, "in": 1}}, None),
        (
            url("sortArray"),
            {"$sortArray": {"input": [20, 4, {"a": "x"}, "b", None], "sortBy": 1}},
            [None, 4, 20, "b", {"a": "x"}],
        ),
        (url("sortArray"), {"$sortArray": {"input": "$items", "sortBy": -1}}, [3, 2, 1]),
        (
            url("sortArray"),
            {"$sortArray": {"input": "$docs", "sortBy": {"a": -1}}},
            [{"a": 2, "b": "x"}, {"a": 1, "b": "y"}, {"b": "z"}],
        ),
        (
            url("sortArray"),
            {"$sortArray": {"input": "$docs", "sortBy": {"a": 1}}},
            [{"b": "z"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}],
        ),
        (
            url("sortArray"),
            {"$sortArray": {"input": [{"a": [5, 1]}, {"a": 3}], "sortBy": {"a": 1}}},
            [{"a": [5, 1]}, {"a": 3}],
        ),  # an array sorts by its least element ascending
        (url("sortArray"), {"$sortArray": {"input": "$n", "sortBy": 1}}, None),
        (url("zip"), {"$zip": {"inputs": [["a", "b"], [1, 2, 3]]}}, [["a", 1], ["b", 2]]),
        (
            url("zip"),
            {"$zip": {"inputs": [["a", "b"], [1, 2, 3]], "useLongestLength": True}},
            [["a", 1], ["b", 2], [None, 3]],
        ),
        (
            url("zip"),
            {"$zip": {"inputs": [["a"], [1, 2]], "useLongestLength": True, "defaults": ["d", 0]}},
            [["a", 1], ["d", 2]],
        ),
        (url("zip"), {"$zip": {"inputs": [[1], "$missing"]}}, None),
        (url("setEquals"), {"$setEquals": [["a", "b", "a"], ["b", "a"]]}, True),
        (url("setEquals"), {"$setEquals": [[1, 2], [1.0, Int64(2)], [Decimal128("2"), 1]]}, True),
        (url("setEquals"), {"$setEquals": [[1, [2]], [1, 2]]}, False),
        (url("setIntersection"), {"$setIntersection": [["b", "a", "c"], ["c", "a", "x"]]}, ["a", "c"]),
        (url("setIntersection"), {"$setIntersection": [[1, 2], []]}, []),
        (url("setIntersection"), {"$setIntersection": []}, []),
        (url("setIntersection"), {"$setIntersection": [[1], "$n"]}, None),
        (url("setUnion"), {"$setUnion": [["b", "a"], ["a", "c", 1]]}, [1, "a", "b", "c"]),
        (url("setUnion"), {"$setUnion": [[[1]], [[1]]]}, [[1]]),
        (url("setUnion"), {"$setUnion": [[1], "$missing"]}, None),
        (url("setDifference"), {"$setDifference": [["b", "a", "b", "c"], ["c"]]}, ["b", "a"]),
        (url("setDifference"), {"$setDifference": ["$n", [1]]}, None),
        (url("setIsSubset"), {"$setIsSubset": [["a", "a"], ["a", "b"]]}, True),
        (url("setIsSubset"), {"$setIsSubset": [["a", "c"], ["a", "b"]]}, False),
        (url("setIsSubset"), {"$setIsSubset": [[], []]}, True),
        (url("anyElementTrue"), {"$anyElementTrue": [[None, False, 0]]}, False),
        (url("anyElementTrue"), {"$anyElementTrue": [[[False]]]}, True),
        (url("allElementsTrue"), {"$allElementsTrue": [[True, 1, "x"]]}, True),
        (url("allElementsTrue"), {"$allElementsTrue": [[]]}, True),
        (url("allElementsTrue"), {"$allElementsTrue": [[1, None]]}, False),
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


def test_set_results_use_bson_order_and_keep_one_of_equal_values():
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setUnion/#behavior
    got = evaluate({"$setUnion": [[2, 1.0], [1, "a"]]})
    assert got == [1.0, 2, "a"] and type(got[0]) is float


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (
            url("arrayElemAt"),
            {"$arrayElemAt": ["$s", 0]},
            28689,
            "$arrayElemAt's first argument must be an array, but is string",
        ),
        (
            url("arrayElemAt"),
            {"$arrayElemAt": [[1], "a"]},
            28690,
            "$arrayElemAt's second argument must be a numeric value, but is string",
        ),
        (
            url("arrayElemAt"),
            {"$arrayElemAt": [[1], 0.5]},
            28691,
            "$arrayElemAt's second argument must be representable as a 32-bit integer: 0.5",
        ),
        (
            url("arrayElemAt"),
            {"$arrayElemAt": [[1], Int64(2**40)]},
            28691,
            "$arrayElemAt's second argument must be representable as a 32-bit integer: 1.09951e+12",
        ),
        (url("first-array-element"), {"$first": "$s"}, 28689, "$first's argument must be an array, but is string"),
        (url("concatArrays"), {"$concatArrays": [[1], 1]}, 28664, "$concatArrays only supports arrays, not int"),
        (url("in"), {"$in": [1, "$missing"]}, 40081, "$in requires an array as a second argument, found: missing"),
        (
            url("indexOfArray"),
            {"$indexOfArray": ["$s", 1]},
            40090,
            "$indexOfArray requires an array as a first argument, found: string",
        ),
        (
            url("indexOfArray"),
            {"$indexOfArray": [[1], 1, 0.5]},
            40096,
            "$indexOfArrayrequires an integral starting index, found a value of type: double, with value: 0.5",
        ),
        (
            url("indexOfArray"),
            {"$indexOfArray": [[1], 1, 0, -1]},
            40097,
            "$indexOfArray requires a nonnegative ending index, found: -1",
        ),
        (
            url("objectToArray"),
            {"$objectToArray": "$items"},
            40390,
            "$objectToArray requires a document input, found: array",
        ),
        (
            url("arrayToObject"),
            {"$arrayToObject": "$s"},
            40386,
            "$arrayToObject requires an array input, found: string",
        ),
        (
            url("arrayToObject"),
            {"$arrayToObject": [[1]]},
            40398,
            "Unrecognised input type format for $arrayToObject: int",
        ),
        (url("arrayToObject"), {"$arrayToObject": [[["a", 1], {"k": "b", "v": 2}]]}, 40396, None),
        (url("arrayToObject"), {"$arrayToObject": [[["a", 1, 2]]]}, 40397, None),
        (url("arrayToObject"), {"$arrayToObject": [[[1, 1]]]}, 40395, None),
        (url("arrayToObject"), {"$arrayToObject": [[{"k": "a", "v": 1}, ["b", 2]]]}, 40391, None),
        (url("arrayToObject"), {"$arrayToObject": [[{"k": "a"}]]}, 40392, None),
        (url("arrayToObject"), {"$arrayToObject": [[{"k": "a", "x": 1}]]}, 40393, None),
        (url("arrayToObject"), {"$arrayToObject": [[{"k": 1, "v": 1}]]}, 40394, None),
        (
            url("arrayToObject"),
            {"$arrayToObject": [[["a\x00", 1]]]},
            4940400,
            "Key field cannot contain an embedded null byte",
        ),
        (
            url("range"),
            {"$range": ["a", 1]},
            34443,
            "$range requires a numeric starting value, found value of type: string",
        ),
        (url("range"), {"$range": [0.5, 1]}, 34444, None),
        (url("range"), {"$range": [0, "a"]}, 34445, None),
        (url("range"), {"$range": [0, 2**31]}, 34446, None),
        (url("range"), {"$range": [0, 1, "a"]}, 34447, None),
        (url("range"), {"$range": [0, 1, 0.5]}, 34448, None),
        (url("range"), {"$range": [0, 1, 0]}, 34449, "$range requires a non-zero step value"),
        (url("range"), {"$range": [0, 2**31 - 1]}, 146, None),
        (url("reverseArray"), {"$reverseArray": "$s"}, 34435, None),
        (url("size"), {"$size": "$missing"}, 17124, "The argument to $size must be an array, but was of type: missing"),
        (
            url("slice"),
            {"$slice": ["$s", 1]},
            28724,
            "First argument to $slice must be an array, but is of type: string",
        ),
        (url("slice"), {"$slice": [[1], "a"]}, 28725, None),
        (url("slice"), {"$slice": [[1], 1.5]}, 28726, None),
        (url("slice"), {"$slice": [[1], 0, "a"]}, 28727, None),
        (url("slice"), {"$slice": [[1], 0, 1.5]}, 28728, None),
        (url("slice"), {"$slice": [[1], 0, 0]}, 28729, "Third argument to $slice must be positive: 0"),
        (
            url("filter"),
            {"$filter": {"input": "$s", "cond": True}},
            28651,
            "input to $filter must be an array not string",
        ),
        (
            url("filter"),
            {"$filter": {"input": [1], "cond": True, "limit": 0}},
            327392,
            "$filter: limit must be greater than 0: 0",
        ),
        (url("filter"), {"$filter": {"input": [1], "cond": True, "limit": 1.5}}, 327391, None),
        (url("map"), {"$map": {"input": "$s", "in": 1}}, 16883, "input to $map must be an array not string"),
        (
            url("reduce"),
            {"$reduce": {"input": "$s", "initialValue": 0, "in": 1}},
            40080,
            "$reduce requires that 'input' be an array, found: \"str\"",
        ),
        (url("sortArray"), {"$sortArray": {"input": "$s", "sortBy": 1}}, 2942504, None),
        (url("zip"), {"$zip": {"inputs": [[1], "$s"]}}, 34468, '$zip found a non-array expression in input: "str"'),
        (
            url("setEquals"),
            {"$setEquals": [[1], "$n"]},
            17044,
            "All operands of $setEquals must be arrays. 2-th argument is of type: null",
        ),
        (url("setIntersection"), {"$setIntersection": [[1], 1]}, 17047, None),
        (
            url("setUnion"),
            {"$setUnion": [1]},
            17043,
            "All operands of $setUnion must be arrays. One argument is of type: int",
        ),
        (url("setDifference"), {"$setDifference": [1, [1]]}, 17048, None),
        (url("setDifference"), {"$setDifference": [[1], 1]}, 17049, None),
        (url("setIsSubset"), {"$setIsSubset": ["$n", [1]]}, 17046, None),
        (url("setIsSubset"), {"$setIsSubset": [[1], 1]}, 17042, None),
        (
            url("anyElementTrue"),
            {"$anyElementTrue": [1]},
            17041,
            "$anyElementTrue's argument must be an array, but is int",
        ),
        (url("allElementsTrue"), {"$allElementsTrue": ["$missing"]}, 17040, None),
    ],
)
def test_runtime_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert raised.value.code == code
    if message is not None:
        assert raised.value.errmsg == message


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("filter"), {"$filter": []}, 28646),
        (url("filter"), {"$filter": {"input": [], "cond": 1, "bad": 1}}, 28647),
        (url("filter"), {"$filter": {"cond": 1}}, 28648),
        (url("filter"), {"$filter": {"input": []}}, 28650),
        (url("filter"), {"$filter": {"input": [], "as": "Bad", "cond": 1}}, 16867),
        (url("filter"), {"$filter": {"input": [], "as": 1, "cond": 1}}, 16866),
        (url("filter"), {"$filter": {"input": "$$this", "cond": 1}}, 17276),  # 'as' is not visible in 'input'
        (url("map"), {"$map": 1}, 16878),
        (url("map"), {"$map": {"input": [], "in": 1, "x": 1}}, 16879),
        (url("map"), {"$map": {"in": 1}}, 16880),
        (url("map"), {"$map": {"input": []}}, 16882),
        (url("reduce"), {"$reduce": 1}, 40075),
        (url("reduce"), {"$reduce": {"input": [], "initialValue": 0, "in": 1, "x": 1}}, 40076),
        (url("reduce"), {"$reduce": {"initialValue": 0, "in": 1}}, 40077),
        (url("reduce"), {"$reduce": {"input": [], "in": 1}}, 40078),
        (url("reduce"), {"$reduce": {"input": [], "initialValue": 0}}, 40079),
        (url("reduce"), {"$reduce": {"input": [], "initialValue": "$$value", "in": 1}}, 17276),
        (url("sortArray"), {"$sortArray": 1}, 2942500),
        (url("sortArray"), {"$sortArray": {"input": [], "sortBy": 1, "x": 1}}, 2942501),
        (url("sortArray"), {"$sortArray": {"sortBy": 1}}, 2942502),
        (url("sortArray"), {"$sortArray": {"input": []}}, 2942503),
        (url("sortArray"), {"$sortArray": {"input": [], "sortBy": {"a": 2}}}, 2942505),
        (url("sortArray"), {"$sortArray": {"input": [], "sortBy": 0}}, 2942506),
        (url("sortArray"), {"$sortArray": {"input": [], "sortBy": "a"}}, 2942507),
        (url("zip"), {"$zip": 1}, 34460),
        (url("zip"), {"$zip": {"inputs": 1}}, 34461),
        (url("zip"), {"$zip": {"inputs": [[1]], "defaults": 1}}, 34462),
        (url("zip"), {"$zip": {"inputs": [[1]], "useLongestLength": 1}}, 34463),
        (url("zip"), {"$zip": {"inputs": [[1]], "x": 1}}, 34464),
        (url("zip"), {"$zip": {"inputs": []}}, 34465),
        (url("zip"), {"$zip": {"inputs": [[1]], "defaults": [1]}}, 34466),
        (url("zip"), {"$zip": {"inputs": [[1]], "defaults": [1, 2], "useLongestLength": True}}, 34467),
        (url("setEquals"), {"$setEquals": [[1]]}, 17045),
        (url("setDifference"), {"$setDifference": [[1]]}, 16020),
        (url("isArray"), {"$isArray": [1, 2]}, 16020),
        (url("slice"), {"$slice": [[1]]}, 28667),
        (url("range"), {"$range": [1, 2, 3, 4]}, 28667),
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code
