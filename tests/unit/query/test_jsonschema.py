"""$jsonSchema: keywords, invalid schemas and MongoDB 5+'s validation details.

Expected results are written out by hand from the manual pages cited in each
table (and, for the details shapes, from the examples those pages show).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Decimal128, Int64, ObjectId, Regex
from hypothesis import given, settings
from hypothesis import strategies as st

import foliodb.query.filter_ops.schema  # noqa: F401  (registers $jsonSchema)
from foliodb.errors import CommandError
from foliodb.query import bsontypes
from foliodb.query.filter import compile_filter
from foliodb.query.jsonschema import compile_json_schema
from tests.bson_values import EDGE_VALUES, bson_values

OP = "https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/"
KEYWORDS = OP + "#available-keywords"
EXTENSIONS = OP + "#extensions"
OMISSIONS = OP + "#omissions"
TYPE_ALIASES = "https://www.mongodb.com/docs/manual/reference/operator/query/type/#available-types"
SPECIFY = "https://www.mongodb.com/docs/manual/core/schema-validation/specify-json-schema/"
INVALID = "https://www.mongodb.com/docs/manual/core/schema-validation/handle-invalid-documents/"
JSON_TYPES = "https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/#json-schema"
EQUALITY = "https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/"


def prop(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema applying ``schema`` to field ``a``."""
    return {"properties": {"a": schema}}


# (schema, document, matches, manual page)
MATCH_CASES: list[tuple[dict[str, Any], dict[str, Any], bool, str]] = [
    # bsonType: the $type aliases, one or an array; "number" is every numeric type.
    (prop({"bsonType": "int"}), {"a": 1}, True, TYPE_ALIASES),
    (prop({"bsonType": "int"}), {"a": 1.0}, False, TYPE_ALIASES),
    (prop({"bsonType": "int"}), {"a": Int64(1)}, False, TYPE_ALIASES),
    (prop({"bsonType": "long"}), {"a": 2**40}, True, TYPE_ALIASES),
    (prop({"bsonType": "int"}), {}, True, KEYWORDS),
    (prop({"bsonType": ["string", "null"]}), {"a": None}, True, KEYWORDS),
    (prop({"bsonType": ["string", "null"]}), {"a": 3}, False, KEYWORDS),
    (prop({"bsonType": "number"}), {"a": Decimal128("1")}, True, TYPE_ALIASES),
    (prop({"bsonType": "number"}), {"a": True}, False, TYPE_ALIASES),
    (prop({"bsonType": "objectId"}), {"a": ObjectId()}, True, TYPE_ALIASES),
    (prop({"bsonType": "date"}), {"a": datetime.datetime(2024, 1, 1)}, True, TYPE_ALIASES),
    (prop({"bsonType": "regex"}), {"a": Regex("x")}, True, TYPE_ALIASES),
    # An array is one value: its elements are not tried against bsonType.
    (prop({"bsonType": "string"}), {"a": ["x"]}, False, KEYWORDS),
    (prop({"bsonType": "array"}), {"a": ["x"]}, True, KEYWORDS),
    ({"bsonType": "object"}, {"a": 1}, True, KEYWORDS),
    # MongoDB stores only documents: a top-level type without object matches nothing.
    ({"bsonType": "string"}, {"a": 1}, False, KEYWORDS),
    ({"bsonType": ["string", "object"]}, {"a": 1}, True, KEYWORDS),
    # type: JSON types; "number" covers all BSON numbers, "boolean" is bool.
    (prop({"type": "number"}), {"a": Int64(5)}, True, JSON_TYPES),
    (prop({"type": "boolean"}), {"a": False}, True, JSON_TYPES),
    (prop({"type": "boolean"}), {"a": 0}, False, JSON_TYPES),
    (prop({"type": "object"}), {"a": {"b": 1}}, True, JSON_TYPES),
    (prop({"type": "array"}), {"a": []}, True, JSON_TYPES),
    (prop({"type": "null"}), {"a": None}, True, JSON_TYPES),
    (prop({"type": ["string", "number"]}), {"a": "x"}, True, JSON_TYPES),
    (prop({"type": "string"}), {"a": ObjectId()}, False, JSON_TYPES),
    # required
    ({"required": ["a", "b"]}, {"a": 1, "b": None}, True, KEYWORDS),
    ({"required": ["a", "b"]}, {"a": 1}, False, KEYWORDS),
    ({"properties": {"x": {"required": ["y"]}}}, {"x": {"z": 1}}, False, KEYWORDS),
    ({"properties": {"x": {"required": ["y"]}}}, {"x": 5}, True, KEYWORDS),
    # properties: an absent property is not checked unless required.
    ({"properties": {"a": {"bsonType": "int"}, "b": {"bsonType": "string"}}}, {"a": 1}, True, KEYWORDS),
    ({"required": ["b"], "properties": {"b": {"bsonType": "string"}}}, {"a": 1}, False, KEYWORDS),
    ({"properties": {"a": {"properties": {"b": {"minimum": 5}}}}}, {"a": {"b": 4}}, False, KEYWORDS),
    ({"properties": {"a": {"properties": {"b": {"minimum": 5}}}}}, {"a": [{"b": 4}]}, True, KEYWORDS),
    # patternProperties: names the regex finds (unanchored) must match its schema.
    ({"patternProperties": {"^s_": {"bsonType": "string"}}}, {"s_a": "x", "n": 1}, True, KEYWORDS),
    ({"patternProperties": {"^s_": {"bsonType": "string"}}}, {"s_a": 1}, False, KEYWORDS),
    ({"patternProperties": {"x": {"bsonType": "int"}}}, {"axb": "no"}, False, KEYWORDS),
    # additionalProperties: false, or a schema for names neither listed nor matched.
    ({"properties": {"_id": {}, "a": {}}, "additionalProperties": False}, {"_id": 1, "a": 1}, True, KEYWORDS),
    ({"properties": {"_id": {}, "a": {}}, "additionalProperties": False}, {"_id": 1, "b": 1}, False, KEYWORDS),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"_id": 1, "a": 1}, False, SPECIFY),
    ({"properties": {"_id": {}}, "additionalProperties": {"bsonType": "int"}}, {"_id": "k", "b": 1}, True, KEYWORDS),
    ({"properties": {"_id": {}}, "additionalProperties": {"bsonType": "int"}}, {"_id": "k", "b": "s"}, False, KEYWORDS),
    ({"patternProperties": {"^x": {}}, "additionalProperties": False}, {"xa": 1, "xb": 2}, True, KEYWORDS),
    ({"additionalProperties": True}, {"q": 1}, True, KEYWORDS),
    (prop({"additionalProperties": False}), {"a": {"b": 1}}, False, KEYWORDS),
    (prop({"additionalProperties": False}), {"a": "not an object"}, True, KEYWORDS),
    # minProperties / maxProperties count every field, _id included.
    ({"minProperties": 2}, {"_id": 1}, False, KEYWORDS),
    ({"maxProperties": 2}, {"_id": 1, "a": 1}, True, KEYWORDS),
    (prop({"maxProperties": 1}), {"a": {"x": 1, "y": 2}}, False, KEYWORDS),
    (prop({"maxProperties": 1}), {"a": 7}, True, KEYWORDS),
    # dependencies: property lists and schemas, applied when the property exists.
    ({"dependencies": {"card": ["billing"]}}, {"card": 1}, False, KEYWORDS),
    ({"dependencies": {"card": ["billing"]}}, {"card": 1, "billing": 2}, True, KEYWORDS),
    ({"dependencies": {"card": ["billing"]}}, {"billing": 2}, True, KEYWORDS),
    ({"dependencies": {"card": {"required": ["billing"]}}}, {"card": 1}, False, KEYWORDS),
    ({"dependencies": {"a": {"properties": {"b": {"bsonType": "int"}}}}}, {"a": 1, "b": "x"}, False, KEYWORDS),
    ({"dependencies": {"a": {"properties": {"b": {"bsonType": "int"}}}}}, {"b": "x"}, True, KEYWORDS),
    # enum: MongoDB equality; a missing field is not in the enum.
    (prop({"enum": ["A", "B"]}), {"a": "A"}, True, KEYWORDS),
    (prop({"enum": ["A", "B"]}), {"a": "C"}, False, KEYWORDS),
    (prop({"enum": ["A", "B"]}), {}, True, KEYWORDS),
    (prop({"enum": ["A", "B"]}), {"a": None}, False, KEYWORDS),
    ({"required": ["a"], "properties": {"a": {"enum": [None]}}}, {}, False, KEYWORDS),
    (prop({"enum": [1]}), {"a": 1.0}, True, EQUALITY),
    (prop({"enum": [1]}), {"a": Decimal128("1.00")}, True, EQUALITY),
    (prop({"enum": [{"x": 1, "y": 2}]}), {"a": {"y": 2, "x": 1}}, True, KEYWORDS),
    (prop({"enum": [[1, 2]]}), {"a": [2, 1]}, False, KEYWORDS),
    (prop({"enum": [1]}), {"a": [1]}, False, KEYWORDS),
    ({"enum": [{"_id": 1, "a": 1}]}, {"a": 1, "_id": 1}, True, KEYWORDS),
    ({"enum": ["x", 1]}, {"a": 1}, False, KEYWORDS),
    # minimum / maximum with draft 4's boolean exclusiveMinimum/exclusiveMaximum.
    (prop({"minimum": 1}), {"a": 1}, True, KEYWORDS),
    (prop({"minimum": 1}), {"a": 0.5}, False, KEYWORDS),
    (prop({"minimum": 1}), {"a": Decimal128("0.9")}, False, KEYWORDS),
    (prop({"minimum": 1}), {"a": "0"}, True, KEYWORDS),
    (prop({"minimum": 1, "exclusiveMinimum": True}), {"a": 1}, False, KEYWORDS),
    (prop({"minimum": 1, "exclusiveMinimum": False}), {"a": 1}, True, KEYWORDS),
    (prop({"maximum": 10}), {"a": Int64(11)}, False, KEYWORDS),
    (prop({"maximum": 10, "exclusiveMaximum": True}), {"a": 10}, False, KEYWORDS),
    (prop({"maximum": 10, "exclusiveMaximum": True}), {"a": 9.5}, True, KEYWORDS),
    (prop({"minimum": 0}), {"a": float("nan")}, False, KEYWORDS),
    (prop({"maximum": 0}), {"a": float("nan")}, False, KEYWORDS),
    ({"minimum": 5}, {"a": 1}, True, KEYWORDS),
    # multipleOf, in decimal arithmetic (a double read to 15 digits).
    (prop({"multipleOf": 2}), {"a": 4}, True, KEYWORDS),
    (prop({"multipleOf": 2}), {"a": 5}, False, KEYWORDS),
    (prop({"multipleOf": 2}), {"a": Decimal128("4.00")}, True, KEYWORDS),
    (prop({"multipleOf": 2}), {"a": "x"}, True, KEYWORDS),
    (prop({"multipleOf": 0.1}), {"a": 0.3}, True, KEYWORDS),
    (prop({"multipleOf": 0.1}), {"a": 0.35}, False, KEYWORDS),
    (prop({"multipleOf": 2.1}), {"a": 4.2}, True, KEYWORDS),
    (prop({"multipleOf": 3}), {"a": Int64(10**18)}, False, KEYWORDS),
    (prop({"multipleOf": 1}), {"a": float("inf")}, False, KEYWORDS),
    # minLength / maxLength count code points; other types are not strings.
    (prop({"maxLength": 1}), {"a": "é"}, True, KEYWORDS),
    (prop({"maxLength": 1}), {"a": "\U0001f600"}, True, KEYWORDS),
    (prop({"maxLength": 1}), {"a": "ab"}, False, KEYWORDS),
    (prop({"minLength": 2}), {"a": 5}, True, KEYWORDS),
    (prop({"minLength": 2}), {"a": "a"}, False, KEYWORDS),
    # pattern: an unanchored regex search, strings only.
    (prop({"pattern": "^a"}), {"a": "abc"}, True, KEYWORDS),
    (prop({"pattern": "^a"}), {"a": "xa"}, False, KEYWORDS),
    (prop({"pattern": "b"}), {"a": "abc"}, True, KEYWORDS),
    (prop({"pattern": "^a"}), {"a": 5}, True, KEYWORDS),
    ({"pattern": "^a"}, {"x": "b"}, True, KEYWORDS),
    # items: one schema for every element, or one schema per position.
    (prop({"items": {"bsonType": "int"}}), {"a": [1, 2]}, True, KEYWORDS),
    (prop({"items": {"bsonType": "int"}}), {"a": [1, "x"]}, False, KEYWORDS),
    (prop({"items": {"bsonType": "int"}}), {"a": "x"}, True, KEYWORDS),
    (prop({"items": [{"bsonType": "int"}, {"bsonType": "string"}]}), {"a": [1, "a"]}, True, KEYWORDS),
    (prop({"items": [{"bsonType": "int"}, {"bsonType": "string"}]}), {"a": [1]}, True, KEYWORDS),
    (prop({"items": [{"bsonType": "int"}, {"bsonType": "string"}]}), {"a": [1, 2]}, False, KEYWORDS),
    (prop({"items": [{"bsonType": "int"}, {"bsonType": "string"}]}), {"a": [1, "a", 3]}, True, KEYWORDS),
    # additionalItems applies past an array-form items, and only then.
    (prop({"items": [{}], "additionalItems": False}), {"a": [1]}, True, KEYWORDS),
    (prop({"items": [{}], "additionalItems": False}), {"a": [1, 2]}, False, KEYWORDS),
    (prop({"items": [{}], "additionalItems": {"bsonType": "string"}}), {"a": [1, "a", "b"]}, True, KEYWORDS),
    (prop({"items": [{}], "additionalItems": {"bsonType": "string"}}), {"a": [1, "a", 2]}, False, KEYWORDS),
    (prop({"items": {}, "additionalItems": False}), {"a": [1, 2]}, True, KEYWORDS),
    (prop({"additionalItems": False}), {"a": [1, 2]}, True, KEYWORDS),
    # minItems / maxItems / uniqueItems
    (prop({"minItems": 2}), {"a": [1]}, False, KEYWORDS),
    (prop({"maxItems": 1}), {"a": [1, 2]}, False, KEYWORDS),
    (prop({"maxItems": 1}), {"a": "ab"}, True, KEYWORDS),
    (prop({"uniqueItems": True}), {"a": [1, 2]}, True, KEYWORDS),
    (prop({"uniqueItems": True}), {"a": [1, 1.0]}, False, KEYWORDS),
    (prop({"uniqueItems": True}), {"a": [{"x": 1, "y": 2}, {"y": 2, "x": 1}]}, False, KEYWORDS),
    (prop({"uniqueItems": True}), {"a": ["a", "A"]}, True, KEYWORDS),
    (prop({"uniqueItems": False}), {"a": [1, 1]}, True, KEYWORDS),
    # allOf / anyOf / oneOf / not
    (prop({"allOf": [{"minimum": 1}, {"maximum": 3}]}), {"a": 2}, True, KEYWORDS),
    (prop({"allOf": [{"minimum": 1}, {"maximum": 3}]}), {"a": 4}, False, KEYWORDS),
    (prop({"anyOf": [{"bsonType": "string"}, {"maximum": 3}]}), {"a": 4}, False, KEYWORDS),
    (prop({"anyOf": [{"bsonType": "string"}, {"maximum": 3}]}), {"a": "x"}, True, KEYWORDS),
    (prop({"oneOf": [{"minimum": 1}, {"maximum": 3}]}), {"a": 2}, False, KEYWORDS),
    (prop({"oneOf": [{"minimum": 1}, {"maximum": 3}]}), {"a": 4}, True, KEYWORDS),
    (prop({"not": {"bsonType": "string"}}), {"a": "x"}, False, KEYWORDS),
    (prop({"not": {"bsonType": "string"}}), {"a": 1}, True, KEYWORDS),
    ({"not": {"required": ["a"]}}, {"a": 1}, False, KEYWORDS),
    ({"not": {"required": ["a"]}}, {}, True, KEYWORDS),
    ({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"b": 1}, True, KEYWORDS),
    # title / description annotate only.
    ({"title": "t", "description": "d", "properties": {"a": {"description": "x"}}}, {"a": 1}, True, KEYWORDS),
    ({}, {"anything": [1]}, True, OP),
]


@pytest.mark.parametrize(("schema", "doc", "expected", "manual"), MATCH_CASES)
def test_keyword_matching(schema: dict[str, Any], doc: dict[str, Any], expected: bool, manual: str) -> None:
    assert compile_json_schema(schema)(doc) is expected
    # The same schema as the $jsonSchema query operator.
    assert compile_filter({"$jsonSchema": schema})(doc) is expected


# (schema, code, errmsg, manual page)
INVALID_SCHEMAS: list[tuple[Any, int, str, str]] = [
    ({"foo": 1}, 9, "Unknown $jsonSchema keyword: foo", KEYWORDS),
    ({"$ref": "#/definitions/a"}, 9, "$jsonSchema keyword '$ref' is not currently supported", OMISSIONS),
    ({"$schema": "x"}, 9, "$jsonSchema keyword '$schema' is not currently supported", OMISSIONS),
    ({"default": 1}, 9, "$jsonSchema keyword 'default' is not currently supported", OMISSIONS),
    ({"definitions": {}}, 9, "$jsonSchema keyword 'definitions' is not currently supported", OMISSIONS),
    ({"format": "email"}, 9, "$jsonSchema keyword 'format' is not currently supported", OMISSIONS),
    ({"id": "x"}, 9, "$jsonSchema keyword 'id' is not currently supported", OMISSIONS),
    ({"type": "integer"}, 9, "$jsonSchema type 'integer' is not currently supported.", OMISSIONS),
    ({"bsonType": ["int", "integer"]}, 9, "$jsonSchema type 'integer' is not currently supported.", OMISSIONS),
    ({"type": "int"}, 2, "Unknown type name alias: int", JSON_TYPES),
    ({"bsonType": "foo"}, 2, "Unknown type name alias: foo", TYPE_ALIASES),
    (
        {"bsonType": "missing"},
        2,
        "'missing' is not a legal type name. To query for non-existence of a field, use {$exists:false}.",
        TYPE_ALIASES,
    ),
    ({"bsonType": []}, 9, "$jsonSchema keyword 'bsonType' must name at least one type", KEYWORDS),
    ({"bsonType": 1}, 14, "$jsonSchema keyword 'bsonType' must be either a string or an array of strings", KEYWORDS),
    ({"type": [1]}, 14, "$jsonSchema keyword 'type' array elements must be strings", KEYWORDS),
    ({"type": ["string", "string"]}, 9, "$jsonSchema keyword 'type' has duplicate value: string", KEYWORDS),
    (
        {"type": "object", "bsonType": "object"},
        9,
        "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'",
        EXTENSIONS,
    ),
    (
        {"encrypt": {}},
        224,
        "Encryption-related validator keywords are not allowed in this context",
        KEYWORDS,
    ),
    (
        {"bsonType": "binData", "encrypt": {}},
        9,
        "$jsonSchema keyword 'encrypt' cannot be used in conjunction with 'bsonType', "
        "'encrypt' implies type 'bsonType::BinData'",
        KEYWORDS,
    ),
    ({"minimum": "1"}, 14, "$jsonSchema keyword 'minimum' must be a number", KEYWORDS),
    ({"maximum": None}, 14, "$jsonSchema keyword 'maximum' must be a number", KEYWORDS),
    (
        {"exclusiveMinimum": True},
        9,
        "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present",
        KEYWORDS,
    ),
    ({"maximum": 1, "exclusiveMaximum": 1}, 14, "$jsonSchema keyword 'exclusiveMaximum' must be a boolean", KEYWORDS),
    ({"multipleOf": 0}, 9, "$jsonSchema keyword 'multipleOf' must have a positive value", KEYWORDS),
    ({"multipleOf": -1.5}, 9, "$jsonSchema keyword 'multipleOf' must have a positive value", KEYWORDS),
    ({"multipleOf": "2"}, 14, "$jsonSchema keyword 'multipleOf' must be a number", KEYWORDS),
    ({"minLength": -1}, 9, "Expected a non-negative number in: minLength: -1", KEYWORDS),
    ({"maxLength": 1.5}, 9, "Expected an integer: maxLength: 1.5", KEYWORDS),
    ({"minItems": "2"}, 9, 'Expected a number in: minItems: "2"', KEYWORDS),
    ({"maxProperties": float("nan")}, 9, "Expected an integer, but found NaN in: maxProperties: nan.0", KEYWORDS),
    ({"pattern": 1}, 14, "$jsonSchema keyword 'pattern' must be a string", KEYWORDS),
    (prop({"pattern": "a\x00b"}), 2, "Regular expression cannot contain an embedded null byte", KEYWORDS),
    (
        {"required": "a"},
        14,
        "$jsonSchema keyword 'required' must be an array, but found an element of type string",
        KEYWORDS,
    ),
    ({"required": []}, 9, "$jsonSchema keyword 'required' cannot be an empty array", KEYWORDS),
    ({"required": ["a", "a"]}, 9, "$jsonSchema keyword 'required' array cannot contain duplicate values", KEYWORDS),
    (
        {"required": [1]},
        14,
        "$jsonSchema keyword 'required' must be an array of strings, but found an element of type: int",
        KEYWORDS,
    ),
    ({"properties": 1}, 14, "$jsonSchema keyword 'properties' must be an object", KEYWORDS),
    ({"properties": {"a": 1}}, 14, "Nested schema for $jsonSchema property 'a' must be an object", KEYWORDS),
    (prop({"bogus": 1}), 9, "Unknown $jsonSchema keyword: bogus", KEYWORDS),
    (
        {"additionalProperties": 1},
        14,
        "$jsonSchema keyword 'additionalProperties' must be an object or a boolean",
        KEYWORDS,
    ),
    ({"patternProperties": []}, 14, "$jsonSchema keyword 'patternProperties' must be an object", KEYWORDS),
    (
        {"patternProperties": {"^a": 1}},
        14,
        "$jsonSchema keyword 'patternProperties' has property '^a' which is not an object",
        KEYWORDS,
    ),
    ({"dependencies": 1}, 14, "$jsonSchema keyword 'dependencies' must be an object", KEYWORDS),
    (
        {"dependencies": {"a": 1}},
        14,
        "property 'a' in $jsonSchema keyword 'dependencies' must be either an object or an array",
        KEYWORDS,
    ),
    (
        {"dependencies": {"a": []}},
        9,
        "property 'a' in $jsonSchema keyword 'dependencies' cannot be an empty array",
        KEYWORDS,
    ),
    (
        {"dependencies": {"a": [1]}},
        14,
        "array 'a' in $jsonSchema keyword 'dependencies' can only contain strings, but found element of type: int",
        KEYWORDS,
    ),
    (
        {"dependencies": {"a": ["b", "b"]}},
        9,
        "array 'a' in $jsonSchema keyword 'dependencies' contains duplicate element: b",
        KEYWORDS,
    ),
    ({"enum": []}, 9, "$jsonSchema keyword 'enum' cannot be an empty array", KEYWORDS),
    ({"enum": 1}, 14, "$jsonSchema keyword 'enum' must be an array, but found an element of type int", KEYWORDS),
    ({"enum": [1, 1.0]}, 9, "$jsonSchema keyword 'enum' array cannot contain duplicate values.", KEYWORDS),
    (
        {"enum": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]},
        9,
        "$jsonSchema keyword 'enum' array cannot contain duplicate values.",
        KEYWORDS,
    ),
    ({"allOf": []}, 2, "$jsonSchema keyword 'allOf' must be a non-empty array", KEYWORDS),
    ({"anyOf": {}}, 14, "$jsonSchema keyword 'anyOf' must be an array", KEYWORDS),
    (
        {"oneOf": [1]},
        14,
        "$jsonSchema keyword 'oneOf' must be an array of objects, but found an element of type int",
        KEYWORDS,
    ),
    ({"not": []}, 14, "$jsonSchema keyword 'not' must be an object, but found an element of type array", KEYWORDS),
    ({"items": 1}, 14, "$jsonSchema keyword 'items' must be an array or an object, not int", KEYWORDS),
    (
        {"items": ["x"]},
        14,
        "$jsonSchema keyword 'items' requires that each element of the array is an object, but found a string",
        KEYWORDS,
    ),
    (
        {"additionalItems": 1},
        14,
        "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a int",
        KEYWORDS,
    ),
    ({"uniqueItems": 1}, 14, "$jsonSchema keyword 'uniqueItems' must be a boolean", KEYWORDS),
    ({"title": 1}, 14, "$jsonSchema keyword 'title' must be of type string", KEYWORDS),
    ({"description": []}, 14, "$jsonSchema keyword 'description' must be of type string", KEYWORDS),
    (5, 14, "$jsonSchema must be an object", OP),
]


@pytest.mark.parametrize(("schema", "code", "errmsg", "manual"), INVALID_SCHEMAS)
def test_invalid_schema(schema: Any, code: int, errmsg: str, manual: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_json_schema(schema)
    assert (info.value.code, info.value.errmsg) == (code, errmsg)
    with pytest.raises(CommandError) as info:
        compile_filter({"$jsonSchema": schema})
    assert info.value.code == code


def test_invalid_regex_is_reported_with_its_location_code() -> None:
    # https://www.mongodb.com/docs/manual/reference/operator/query/regex/ (the pattern is a PCRE regex)
    with pytest.raises(CommandError) as info:
        compile_json_schema(prop({"pattern": "("}))
    assert info.value.code == 51091


def test_error_code_names() -> None:
    # https://www.mongodb.com/docs/manual/reference/error-codes/
    names = {}
    for schema in ({"foo": 1}, {"minimum": "x"}, {"allOf": []}, {"encrypt": {}}):
        with pytest.raises(CommandError) as info:
            compile_json_schema(schema)
        names[info.value.code] = info.value.code_name
    assert names == {9: "FailedToParse", 14: "TypeMismatch", 2: "BadValue", 224: "QueryFeatureNotAllowed"}


def test_top_level_scalar_keywords_are_still_checked() -> None:
    # KEYWORDS: the keyword's argument is validated even where it has no effect.
    with pytest.raises(CommandError) as info:
        compile_json_schema({"minLength": "x"})
    assert info.value.code == 9


# --- details (errInfo) ------------------------------------------------------------


def rules(*details: dict[str, Any]) -> dict[str, Any]:
    return {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": list(details)}


def props(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"operatorName": "properties", "propertiesNotSatisfied": list(entries)}


def failed(name: str, *details: dict[str, Any], **annotations: str) -> dict[str, Any]:
    return {"propertyName": name, **annotations, "details": list(details)}


def leaf(op: str, specified: dict[str, Any], reason: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"operatorName": op, "specifiedAs": specified, "reason": reason, "consideredValue": value, **extra}


def type_error(op: str, spec: Any, value: Any, type_name: str) -> dict[str, Any]:
    return leaf(op, {op: spec}, "type did not match", value, consideredType=type_name)


STUDENTS = {
    "bsonType": "object",
    "title": "Student Object Validation",
    "required": ["address", "major", "name", "year"],
    "properties": {
        "name": {"bsonType": "string", "description": "'name' must be a string and is required"},
        "year": {
            "bsonType": "int",
            "minimum": 2017,
            "maximum": 3017,
            "description": "'year' must be an integer in [ 2017, 3017 ] and is required",
        },
        "gpa": {"bsonType": ["double"], "description": "'gpa' must be a double if the field exists"},
    },
}

# (schema, failing document, details, manual page)
EXPLAIN_CASES: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]] = [
    # The manual's students example: gpa is an int where a double is required.
    (
        STUDENTS,
        {
            "name": "Alice",
            "year": 2019,
            "major": "History",
            "gpa": 3,
            "address": {"city": "NYC", "street": "33rd Street"},
        },
        {
            "operatorName": "$jsonSchema",
            "title": "Student Object Validation",
            "schemaRulesNotSatisfied": [
                props(
                    failed(
                        "gpa",
                        type_error("bsonType", ["double"], 3, "int"),
                        description="'gpa' must be a double if the field exists",
                    )
                )
            ],
        },
        SPECIFY,
    ),
    # The manual's contacts example: phone required, status in an enum.
    (
        {
            "bsonType": "object",
            "required": ["phone"],
            "properties": {
                "phone": {"bsonType": "string", "description": "must be a string and is required"},
                "status": {"enum": ["Unknown", "Incomplete"], "description": "can only be one of the enum values"},
            },
        },
        {"email": "info@mongodb.com", "status": "Complete"},
        rules(
            props(
                failed(
                    "status",
                    leaf("enum", {"enum": ["Unknown", "Incomplete"]}, "value was not found in enum", "Complete"),
                    description="can only be one of the enum values",
                )
            ),
            {"operatorName": "required", "specifiedAs": {"required": ["phone"]}, "missingProperties": ["phone"]},
        ),
        INVALID,
    ),
    # Rules come in MongoDB's order: maximum before minimum.
    (
        prop({"minimum": 10, "maximum": -10}),
        {"a": 5},
        rules(
            props(
                failed(
                    "a",
                    leaf("maximum", {"maximum": -10}, "comparison failed", 5),
                    leaf("minimum", {"minimum": 10}, "comparison failed", 5),
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"minimum": 1, "exclusiveMinimum": True}),
        {"a": 1},
        rules(props(failed("a", leaf("minimum", {"minimum": 1, "exclusiveMinimum": True}, "comparison failed", 1)))),
        KEYWORDS,
    ),
    # A keyword for another type than the stated one reports nothing: the type does.
    (
        {"type": "object", "properties": {"a": {"type": "string", "minimum": 5}}},
        {"a": 6},
        rules(props(failed("a", type_error("type", "string", 6, "int")))),
        KEYWORDS,
    ),
    (
        prop({"type": "string", "minLength": 4}),
        {"a": 1},
        rules(props(failed("a", type_error("type", "string", 1, "int")))),
        KEYWORDS,
    ),
    (
        prop({"type": "string", "minLength": 4}),
        {"a": "foo"},
        rules(
            props(failed("a", leaf("minLength", {"minLength": 4}, "specified string length was not satisfied", "foo")))
        ),
        KEYWORDS,
    ),
    (
        prop({"bsonType": "string"}),
        {"a": ["Mihai", "was", "here"]},
        rules(props(failed("a", type_error("bsonType", "string", ["Mihai", "was", "here"], "array")))),
        KEYWORDS,
    ),
    (
        prop({"pattern": "^S"}),
        {"a": "slow"},
        rules(props(failed("a", leaf("pattern", {"pattern": "^S"}, "regular expression did not match", "slow")))),
        KEYWORDS,
    ),
    (
        prop({"multipleOf": 2.1}),
        {"a": 1.1},
        rules(
            props(
                failed(
                    "a",
                    leaf(
                        "multipleOf",
                        {"multipleOf": 2.1},
                        "considered value is not a multiple of the specified value",
                        1.1,
                    ),
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"minItems": 2}),
        {"a": [1]},
        rules(
            props(
                failed(
                    "a", leaf("minItems", {"minItems": 2}, "array did not match specified length", [1], numberOfItems=1)
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"uniqueItems": True}),
        {"a": [1, 2, 3, 3, 4, 4]},
        rules(
            props(
                failed(
                    "a",
                    leaf(
                        "uniqueItems",
                        {"uniqueItems": True},
                        "found a duplicate item",
                        [1, 2, 3, 3, 4, 4],
                        duplicatedValue=3,
                    ),
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"items": {"type": "string"}}),
        {"a": [1, "A", {}]},
        rules(
            props(
                failed(
                    "a",
                    {
                        "operatorName": "items",
                        "reason": "At least one item did not match the sub-schema",
                        "itemIndex": 0,
                        "details": [type_error("type", "string", 1, "int")],
                    },
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"items": [{"bsonType": "int"}, {"bsonType": "string"}]}),
        {"a": ["x", 2]},
        rules(
            props(
                failed(
                    "a",
                    {
                        "operatorName": "items",
                        "details": [
                            {"itemIndex": 0, "details": [type_error("bsonType", "int", "x", "string")]},
                            {"itemIndex": 1, "details": [type_error("bsonType", "string", 2, "int")]},
                        ],
                    },
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"items": [{}], "additionalItems": False}),
        {"a": [1, 2, 3]},
        rules(
            props(
                failed(
                    "a",
                    {
                        "operatorName": "additionalItems",
                        "specifiedAs": {"additionalItems": False},
                        "reason": "found additional items",
                        "additionalItems": [2, 3],
                    },
                )
            )
        ),
        KEYWORDS,
    ),
    (
        prop({"items": [{}], "additionalItems": {"bsonType": "int"}}),
        {"a": [1, 2, "x"]},
        rules(
            props(
                failed(
                    "a",
                    {
                        "operatorName": "additionalItems",
                        "reason": "At least one additional item did not match the sub-schema",
                        "itemIndex": 2,
                        "details": [type_error("bsonType", "int", "x", "string")],
                    },
                )
            )
        ),
        KEYWORDS,
    ),
    (
        {"properties": {"_id": {}}, "additionalProperties": False},
        {"_id": 1, "b": 2, "c": 3},
        rules(
            {
                "operatorName": "additionalProperties",
                "specifiedAs": {"additionalProperties": False},
                "additionalProperties": ["b", "c"],
            }
        ),
        KEYWORDS,
    ),
    (
        {"properties": {"_id": {}}, "additionalProperties": {"bsonType": "int", "description": "ints only"}},
        {"_id": 1, "b": 2, "c": "x"},
        rules(
            {
                "operatorName": "additionalProperties",
                "description": "ints only",
                "reason": "at least one additional property did not match the subschema",
                "failingProperty": "c",
                "details": [type_error("bsonType", "int", "x", "string")],
            }
        ),
        KEYWORDS,
    ),
    (
        {"patternProperties": {"^s": {"bsonType": "string"}}},
        {"sa": 1, "sb": "ok"},
        rules(
            {
                "operatorName": "patternProperties",
                "details": [
                    {
                        "propertyName": "sa",
                        "regexMatched": "^s",
                        "details": [type_error("bsonType", "string", 1, "int")],
                    },
                ],
            }
        ),
        KEYWORDS,
    ),
    (
        {"minProperties": 3},
        {"_id": 1},
        rules(
            {
                "operatorName": "minProperties",
                "specifiedAs": {"minProperties": 3},
                "reason": "specified number of properties was not satisfied",
                "numberOfProperties": 1,
            }
        ),
        KEYWORDS,
    ),
    (
        {"dependencies": {"card": ["billing", "name"], "x": {"required": ["y"]}}},
        {"card": 1, "name": "n", "x": 1},
        rules(
            {
                "operatorName": "dependencies",
                "failingDependencies": [
                    {"conditionalProperty": "card", "missingProperties": ["billing"]},
                    {
                        "conditionalProperty": "x",
                        "details": [
                            {"operatorName": "required", "specifiedAs": {"required": ["y"]}, "missingProperties": ["y"]}
                        ],
                    },
                ],
            }
        ),
        KEYWORDS,
    ),
    (
        prop({"anyOf": [{"type": "string"}, {"maximum": 3}]}),
        {"a": 4},
        rules(
            props(
                failed(
                    "a",
                    {
                        "operatorName": "anyOf",
                        "schemasNotSatisfied": [
                            {"index": 0, "details": [type_error("type", "string", 4, "int")]},
                            {"index": 1, "details": [leaf("maximum", {"maximum": 3}, "comparison failed", 4)]},
                        ],
                    },
                )
            )
        ),
        KEYWORDS,
    ),
    (
        {"allOf": [{"properties": {"a": {"minimum": 1}}}, {"title": "b rule", "properties": {"b": {"minimum": 2}}}]},
        {"a": 1, "b": 0},
        rules(
            {
                "operatorName": "allOf",
                "schemasNotSatisfied": [
                    {
                        "index": 1,
                        "title": "b rule",
                        "details": [props(failed("b", leaf("minimum", {"minimum": 2}, "comparison failed", 0)))],
                    },
                ],
            }
        ),
        KEYWORDS,
    ),
    (
        prop({"oneOf": [{"minimum": 1}, {"maximum": 3}]}),
        {"a": 2},
        rules(
            props(
                failed(
                    "a",
                    {
                        "operatorName": "oneOf",
                        "reason": "more than one subschema matched",
                        "matchingSchemaIndexes": [0, 1],
                    },
                )
            )
        ),
        KEYWORDS,
    ),
    (
        {"not": {"properties": {"a": {"minimum": 3}}}},
        {"a": 6},
        rules({"operatorName": "not", "reason": "child expression matched"}),
        KEYWORDS,
    ),
    (
        {"enum": [{"a": 1, "b": 1}]},
        {"a": 0, "b": 1, "_id": 1},
        rules(leaf("enum", {"enum": [{"a": 1, "b": 1}]}, "value was not found in enum", {"a": 0, "b": 1, "_id": 1})),
        KEYWORDS,
    ),
    (
        {"enum": [1, "x"]},
        {"_id": 1},
        rules(
            {
                "operatorName": "enum",
                "specifiedAs": {"enum": [1, "x"]},
                "reason": "expression always evaluates to false",
            }
        ),
        KEYWORDS,
    ),
    # A top-level type without object: the whole schema always evaluates to false.
    (
        {"type": "number", "properties": {"a": {"minimum": 1}}},
        {"a": 1},
        {
            "operatorName": "$jsonSchema",
            "specifiedAs": {"$jsonSchema": {"type": "number", "properties": {"a": {"minimum": 1}}}},
            "reason": "expression always evaluates to false",
        },
        KEYWORDS,
    ),
    # A missing required property is the required rule's to report, even with a type.
    (
        {"required": ["a"], "properties": {"a": {"bsonType": "int", "enum": [1]}}},
        {"b": 1},
        rules({"operatorName": "required", "specifiedAs": {"required": ["a"]}, "missingProperties": ["a"]}),
        KEYWORDS,
    ),
    (
        {"required": ["b", "a"]},
        {},
        rules({"operatorName": "required", "specifiedAs": {"required": ["b", "a"]}, "missingProperties": ["a", "b"]}),
        KEYWORDS,
    ),
]


@pytest.mark.parametrize(("schema", "doc", "details", "manual"), EXPLAIN_CASES)
def test_explain(schema: dict[str, Any], doc: dict[str, Any], details: dict[str, Any], manual: str) -> None:
    check = compile_json_schema(schema)
    assert check(doc) is False
    assert check.explain(doc) == details


# --- the orders validator of the schema-design examples ------------------------------

ORDERS_SCHEMA: dict[str, Any] = {
    "bsonType": "object",
    "required": ["user_id", "items", "status"],
    "properties": {
        "user_id": {"bsonType": "objectId"},
        "items": {
            "bsonType": "array",
            "minItems": 1,
            "items": {
                "bsonType": "object",
                "required": ["sku", "quantity", "price"],
                "properties": {
                    "sku": {"bsonType": "string"},
                    "quantity": {"bsonType": "int", "minimum": 1},
                    "price": {"bsonType": "number"},
                },
            },
        },
        "status": {"enum": ["pending", "processing", "shipped", "delivered", "cancelled"]},
    },
}
USER = ObjectId("65a1b2c3d4e5f60718293a4b")


def order(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "_id": 1,
        "user_id": USER,
        "items": [{"sku": "A-1", "name": "Mug", "quantity": 2, "price": 9.5}],
        "status": "pending",
    }
    doc.update(changes)
    return doc


# (document, valid, manual page)
ORDERS: list[tuple[dict[str, Any], bool, str]] = [
    (order(), True, SPECIFY),
    (
        order(
            items=[{"sku": "A", "quantity": 1, "price": Decimal128("1.10")}, {"sku": "B", "quantity": 3, "price": 4}]
        ),
        True,
        SPECIFY,
    ),
    (order(status="shipped", total=19.0), True, SPECIFY),
    (order(user_id=str(USER)), False, SPECIFY),
    (order(items=[]), False, SPECIFY),
    (order(items={"sku": "A", "quantity": 1, "price": 1}), False, SPECIFY),
    (order(items=[{"sku": "A", "quantity": 0, "price": 1}]), False, SPECIFY),
    (order(items=[{"sku": "A", "quantity": 1.0, "price": 1}]), False, SPECIFY),
    (order(items=[{"sku": "A", "quantity": 1, "price": "1"}]), False, SPECIFY),
    (order(items=[{"sku": 7, "quantity": 1, "price": 1}]), False, SPECIFY),
    (order(items=[{"quantity": 1, "price": 1}]), False, SPECIFY),
    (order(status="lost"), False, SPECIFY),
    ({"_id": 2, "user_id": USER, "status": "pending"}, False, SPECIFY),
]


@pytest.mark.parametrize(("doc", "valid", "manual"), ORDERS)
def test_orders_validator(doc: dict[str, Any], valid: bool, manual: str) -> None:
    assert compile_json_schema(ORDERS_SCHEMA)(doc) is valid


def test_orders_validator_details() -> None:
    # INVALID: the details name the failing item and the rule it broke.
    doc = order(items=[{"sku": "A", "quantity": 1, "price": 1}, {"sku": "B", "quantity": 0, "price": 2}], status="lost")
    item_error = {
        "operatorName": "items",
        "reason": "At least one item did not match the sub-schema",
        "itemIndex": 1,
        "details": [props(failed("quantity", leaf("minimum", {"minimum": 1}, "comparison failed", 0)))],
    }
    status_error = leaf(
        "enum", {"enum": ORDERS_SCHEMA["properties"]["status"]["enum"]}, "value was not found in enum", "lost"
    )
    assert compile_json_schema(ORDERS_SCHEMA).explain(doc) == rules(
        props(failed("items", item_error), failed("status", status_error))
    )


# --- properties ------------------------------------------------------------------------


@pytest.mark.parametrize("value", EDGE_VALUES)
def test_bson_type_and_enum_accept_every_value_of_their_own(value: Any) -> None:
    # TYPE_ALIASES: every BSON value has its alias; KEYWORDS: enum uses MongoDB equality.
    alias = bsontypes.type_name(value)
    assert compile_json_schema({"required": ["a"], "properties": {"a": {"bsonType": alias, "enum": [value]}}})(
        {"a": value}
    )


SCHEMAS_UNDER_TEST = [
    ORDERS_SCHEMA,
    {
        "properties": {"a": {"anyOf": [{"bsonType": "string", "maxLength": 2}, {"items": {"minimum": 0}}]}},
        "dependencies": {"b": ["c"]},
        "patternProperties": {"^x": {"not": {"bsonType": "null"}}},
    },
    {"required": ["a"], "additionalProperties": {"uniqueItems": True}, "properties": {"_id": {}}},
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SCHEMAS_UNDER_TEST), st.dictionaries(st.sampled_from(["a", "b", "c", "xa"]), bson_values(8)))
def test_a_failing_document_is_always_explained(schema: dict[str, Any], doc: dict[str, Any]) -> None:
    # INVALID: a document that fails validation gets at least one unsatisfied rule.
    check = compile_json_schema(schema)
    assert check(doc) == compile_filter({"$jsonSchema": schema})(doc)
    if not check(doc):
        assert check.explain(doc)["schemaRulesNotSatisfied"]
