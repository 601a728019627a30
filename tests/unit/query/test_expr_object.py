"""Object expressions ($mergeObjects $getField $setField $unsetField) and the
miscellaneous ones ($rand $meta $binarySize $bsonSize $tsSecond
$tsIncrement, bitwise operators).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#object-expression-operators
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson import Binary, Int64, Timestamp

from foliodb.errors import CommandError
from foliodb.query.expr import METADATA, Scope, compile_expression, root_variables
from foliodb.query.paths import MISSING

BASE = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
DOC = {
    "a": {"x": 1, "y": 2},
    "b": {"y": 3, "z": 4},
    "n": None,
    "s": "str",
    "price.usd": 45,
    "$price": 9,
    "docs": [{"q": 1}, None, {"q": 2, "r": 3}],
}


def url(name):
    return BASE + name + "/"


def evaluate(spec, doc=None, vars=None):
    doc = DOC if doc is None else doc
    variables = root_variables(doc, {}, datetime.datetime(2024, 1, 1))
    variables.update(vars or {})
    return compile_expression(spec, Scope())(doc, variables)


def same(got, want):
    if want is MISSING:
        assert got is MISSING
    else:
        assert bson.encode({"v": got}) == bson.encode({"v": want}), (got, want)


@pytest.mark.parametrize(
    ("source", "spec", "want"),
    [
        (url("mergeObjects"), {"$mergeObjects": ["$a", "$b"]}, {"x": 1, "y": 3, "z": 4}),
        (url("mergeObjects"), {"$mergeObjects": ["$b", "$a"]}, {"y": 2, "z": 4, "x": 1}),
        (url("mergeObjects"), {"$mergeObjects": ["$a", "$n", "$missing"]}, {"x": 1, "y": 2}),
        (url("mergeObjects"), {"$mergeObjects": "$docs"}, {"q": 2, "r": 3}),  # one array merges its elements
        (url("mergeObjects"), {"$mergeObjects": []}, {}),
        (url("mergeObjects"), {"$mergeObjects": "$n"}, {}),
        (url("getField"), {"$getField": "price.usd"}, 45),
        (url("getField"), {"$getField": {"$literal": "$price"}}, 9),
        (url("getField"), {"$getField": {"field": {"$literal": "$price"}, "input": "$$CURRENT"}}, 9),
        (url("getField"), {"$getField": {"field": "x", "input": "$a"}}, 1),
        (url("getField"), {"$getField": {"field": "nope", "input": "$a"}}, MISSING),
        (url("getField"), {"$getField": {"field": "x", "input": "$n"}}, None),
        (url("getField"), {"$getField": {"field": "x", "input": "$missing"}}, MISSING),
        (url("getField"), {"$getField": {"field": "x", "input": "$s"}}, MISSING),
        (
            url("setField"),
            {"$setField": {"field": "price.usd", "input": "$a", "value": 5}},
            {"x": 1, "y": 2, "price.usd": 5},
        ),
        (url("setField"), {"$setField": {"field": "x", "input": "$a", "value": 9}}, {"x": 9, "y": 2}),
        (url("setField"), {"$setField": {"field": "x", "input": "$a", "value": "$$REMOVE"}}, {"y": 2}),
        (url("setField"), {"$setField": {"field": "x", "input": "$n", "value": 1}}, None),
        (url("unsetField"), {"$unsetField": {"field": "y", "input": "$a"}}, {"x": 1}),
        (
            url("unsetField"),
            {"$unsetField": {"field": {"$literal": "$price"}, "input": "$$ROOT"}},
            {k: v for k, v in DOC.items() if k != "$price"},
        ),
        (url("binarySize"), {"$binarySize": "abc"}, 3),
        (url("binarySize"), {"$binarySize": "é"}, 2),
        (url("binarySize"), {"$binarySize": Binary(b"\x00\x01", 5)}, 2),
        (url("binarySize"), {"$binarySize": "$n"}, None),
        (url("bsonSize"), {"$bsonSize": "$a"}, len(bson.encode({"x": 1, "y": 2}))),
        (url("bsonSize"), {"$bsonSize": "$missing"}, None),
        (url("tsSecond"), {"$tsSecond": Timestamp(1622731060, 10)}, Int64(1622731060)),
        (url("tsIncrement"), {"$tsIncrement": Timestamp(1622731060, 10)}, Int64(10)),
        (url("tsIncrement"), {"$tsIncrement": "$n"}, None),
        (url("bitAnd"), {"$bitAnd": [0b1100, 0b1010]}, 0b1000),
        (url("bitAnd"), {"$bitAnd": [0b1100, Int64(0b1010)]}, Int64(0b1000)),
        (url("bitOr"), {"$bitOr": [0b1100, 0b1010]}, 0b1110),
        (url("bitXor"), {"$bitXor": [0b1100, 0b1010]}, 0b0110),
        (url("bitAnd"), {"$bitAnd": []}, -1),
        (url("bitOr"), {"$bitOr": [1, "$n"]}, None),
        (url("bitNot"), {"$bitNot": 5}, -6),
        (url("bitNot"), {"$bitNot": Int64(0)}, Int64(-1)),
        (url("bitNot"), {"$bitNot": "$missing"}, None),
        (url("meta"), {"$meta": "textScore"}, MISSING),  # no stage produced metadata
    ],
)
def test_values(source, spec, want):
    same(evaluate(spec), want)


def test_meta_reads_what_a_stage_provided():
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/meta/
    same(evaluate({"$meta": "textScore"}, vars={METADATA: {"textScore": 1.5}}), 1.5)


def test_rand_is_a_double_in_zero_one():
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/rand/
    values = {evaluate({"$rand": {}}) for _ in range(50)}
    assert all(isinstance(v, float) and 0 <= v < 1 for v in values) and len(values) > 1


@pytest.mark.parametrize(
    ("source", "spec", "code"),
    [
        (url("getField"), {"$getField": "$a"}, 5654600),
        (url("getField"), {"$getField": {"field": {"$concat": ["a", "b"]}, "input": "$a"}}, 5654601),
        (url("getField"), {"$getField": {"$concat": ["a", "b"]}}, 5654601),
        (url("getField"), {"$getField": {"field": "a"}}, 3041703),
        (url("getField"), {"$getField": 5}, 5654602),
        (url("getField"), {"$getField": {"field": "a", "bogus": 1}}, 3041701),
        (url("getField"), {"$getField": {"input": "$a"}}, 3041702),
        (url("setField"), {"$setField": 1}, 4161100),
        (url("setField"), {"$setField": {"field": "a", "input": {}, "value": 1, "x": 1}}, 4161101),
        (url("setField"), {"$setField": {"input": {}, "value": 1}}, 4161102),
        (url("setField"), {"$setField": {"field": "a", "input": {}}}, 4161103),
        (url("setField"), {"$setField": {"field": "a", "value": 1}}, 4161109),
        (url("setField"), {"$setField": {"field": "$a", "input": {}, "value": 1}}, 4161108),
        (url("setField"), {"$setField": {"field": ["a"], "input": {}, "value": 1}}, 4161106),
        (url("setField"), {"$setField": {"field": 1, "input": {}, "value": 1}}, 4161107),
        (url("unsetField"), {"$unsetField": {"field": "a", "input": {}, "value": 1}}, 4161101),
        (url("rand"), {"$rand": {"seed": 1}}, 3040501),
        (url("rand"), {"$rand": 1}, 10065),
        (url("meta"), {"$meta": 1}, 17307),
        (url("meta"), {"$meta": "bogus"}, 17308),
    ],
)
def test_parse_errors(source, spec, code):
    with pytest.raises(CommandError) as raised:
        compile_expression(spec)
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("source", "spec", "code", "message"),
    [
        (
            url("mergeObjects"),
            {"$mergeObjects": ["$a", "$s"]},
            40400,
            '$mergeObjects requires object inputs, but input "str" is of type string',
        ),
        (
            url("setField"),
            {"$setField": {"field": "a", "input": "$s", "value": 1}},
            4161105,
            "$setField requires 'input' to evaluate to type Object",
        ),
        (url("binarySize"), {"$binarySize": 1}, 51276, "$binarySize requires a string or BinData argument, found: int"),
        (url("bsonSize"), {"$bsonSize": "$s"}, 31393, "$bsonSize requires a document input, found: string"),
        (url("tsSecond"), {"$tsSecond": 1}, 5687301, " Argument to $tsSecond must be a timestamp, but is int"),
        (url("bitAnd"), {"$bitAnd": [1, 1.0]}, 14, "$bitAnd only supports int and long operands."),
        (url("bitNot"), {"$bitNot": 1.5}, 14, "$bitNot only supports int and long, not: double."),
        (url("bitNot"), {"$bitNot": "a"}, 28765, "$bitNot only supports numeric types, not string"),
    ],
)
def test_runtime_errors(source, spec, code, message):
    with pytest.raises(CommandError) as raised:
        evaluate(spec)
    assert (raised.value.code, raised.value.errmsg) == (code, message)
