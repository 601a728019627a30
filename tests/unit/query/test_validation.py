"""Collection validators: levels, actions, refused operators and the errInfo
MongoDB 5+ returns with DocumentValidationFailure (121).

Expected details are written out by hand from the manual pages cited.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

import foliodb.query.filter_ops.schema  # noqa: F401  (registers $jsonSchema)
from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter
from foliodb.query.validation import compile_validator
from tests.bson_values import documents

SCHEMA_VALIDATION = "https://www.mongodb.com/docs/manual/core/schema-validation/"
QUERY_OPERATORS = "https://www.mongodb.com/docs/manual/core/schema-validation/specify-query-expression-rules/"
LEVELS = "https://www.mongodb.com/docs/manual/core/schema-validation/specify-validation-level/"
INVALID = "https://www.mongodb.com/docs/manual/core/schema-validation/handle-invalid-documents/"
RULES = "https://www.mongodb.com/docs/manual/core/schema-validation/view-existing-validation-rules/"
CREATE = "https://www.mongodb.com/docs/manual/reference/command/create/"
JSON_SCHEMA = "https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/"
LIMITS = SCHEMA_VALIDATION + "#restrictions"


def failure(validator: dict[str, Any], doc: dict[str, Any]) -> CommandError:
    with pytest.raises(CommandError) as info:
        compile_validator(validator).check(doc)
    return info.value


def test_document_failed_validation_error() -> None:
    # INVALID: code 121, "Document failed validation", errInfo with the failing _id.
    error = failure({"a": 1}, {"_id": 7, "a": 2})
    assert (error.code, error.code_name, error.errmsg) == (
        121,
        "DocumentValidationFailure",
        "Document failed validation",
    )
    assert error.extra == {
        "errInfo": {
            "failingDocumentId": 7,
            "details": {
                "operatorName": "$eq",
                "specifiedAs": {"a": 1},
                "reason": "comparison failed",
                "consideredValue": 2,
            },
        }
    }
    assert error.to_write_error(0)["errInfo"]["failingDocumentId"] == 7


def test_passing_document() -> None:
    validator = compile_validator({"a": {"$gte": 1}})
    validator.check({"_id": 1, "a": 1})
    assert validator.error_info({"_id": 1, "a": 1}) is None


# (validator, failing document, details, manual page)
DETAILS: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]] = [
    (
        {"a": {"$eq": 2}},
        {"b": 1},
        {"operatorName": "$eq", "specifiedAs": {"a": {"$eq": 2}}, "reason": "field was missing"},
        INVALID,
    ),
    (
        {"a": {"$eq": 2}},
        {"a": [3, 4, 5]},
        {
            "operatorName": "$eq",
            "specifiedAs": {"a": {"$eq": 2}},
            "reason": "comparison failed",
            "consideredValues": [3, 4, 5],
        },
        INVALID,
    ),
    (
        {"a.b": {"$eq": 0}},
        {"a": [{"b": [1, 2]}, {"b": [3, 4]}]},
        {
            "operatorName": "$eq",
            "specifiedAs": {"a.b": {"$eq": 0}},
            "reason": "comparison failed",
            "consideredValues": [1, 2, 3, 4],
        },
        INVALID,
    ),
    (
        {"a": {"$eq": [1, 2]}},
        {"a": []},
        {
            "operatorName": "$eq",
            "specifiedAs": {"a": {"$eq": [1, 2]}},
            "reason": "comparison failed",
            "consideredValues": [],
        },
        INVALID,
    ),
    (
        {"a": {"$ne": 2}},
        {"a": 2},
        {
            "operatorName": "$ne",
            "specifiedAs": {"a": {"$ne": 2}},
            "reason": "comparison succeeded",
            "consideredValue": 2,
        },
        INVALID,
    ),
    (
        {"a": {"$lt": 0}},
        {"a": 1},
        {"operatorName": "$lt", "specifiedAs": {"a": {"$lt": 0}}, "reason": "comparison failed", "consideredValue": 1},
        INVALID,
    ),
    (
        {"a": {"$in": [1, 2, 3]}},
        {"a": 4},
        {
            "operatorName": "$in",
            "specifiedAs": {"a": {"$in": [1, 2, 3]}},
            "reason": "no matching value found in array",
            "consideredValue": 4,
        },
        INVALID,
    ),
    (
        {"a": {"$nin": [1, 2, 3]}},
        {"a": 3},
        {
            "operatorName": "$nin",
            "specifiedAs": {"a": {"$nin": [1, 2, 3]}},
            "reason": "matching value found in array",
            "consideredValue": 3,
        },
        INVALID,
    ),
    (
        {"a": {"$exists": True}},
        {"b": 1},
        {"operatorName": "$exists", "specifiedAs": {"a": {"$exists": True}}, "reason": "path does not exist"},
        INVALID,
    ),
    (
        {"a": {"$exists": False}},
        {"a": 1},
        {"operatorName": "$exists", "specifiedAs": {"a": {"$exists": False}}, "reason": "path does exist"},
        INVALID,
    ),
    (
        {"a": {"$type": "string"}},
        {"a": [1, 2.5]},
        {
            "operatorName": "$type",
            "specifiedAs": {"a": {"$type": "string"}},
            "reason": "type did not match",
            "consideredValues": [1, 2.5],
            "consideredTypes": ["double", "int"],
        },
        INVALID,
    ),
    (
        {"a": {"$regex": "^x", "$options": "i"}},
        {"a": 5},
        {
            "operatorName": "$regex",
            "specifiedAs": {"a": {"$regex": "^x", "$options": "i"}},
            "reason": "type did not match",
            "consideredType": "int",
            "expectedTypes": ["regex", "string", "symbol"],
            "consideredValue": 5,
        },
        INVALID,
    ),
    (
        {"a": {"$mod": [2, 0]}},
        {"a": 3},
        {
            "operatorName": "$mod",
            "specifiedAs": {"a": {"$mod": [2, 0]}},
            "reason": "$mod did not evaluate to expected remainder",
            "consideredValue": 3,
        },
        INVALID,
    ),
    (
        {"a": {"$size": 2}},
        {"a": 5},
        {
            "operatorName": "$size",
            "specifiedAs": {"a": {"$size": 2}},
            "reason": "type did not match",
            "consideredType": "int",
            "expectedType": "array",
            "consideredValue": 5,
        },
        INVALID,
    ),
    (
        {"a": {"$size": 2}},
        {"a": [1]},
        {
            "operatorName": "$size",
            "specifiedAs": {"a": {"$size": 2}},
            "reason": "array length was not equal to given size",
            "consideredValue": [1],
        },
        INVALID,
    ),
    (
        {"a": {"$all": [1, 2]}},
        {"a": [1]},
        {
            "operatorName": "$all",
            "specifiedAs": {"a": {"$all": [1, 2]}},
            "reason": "array did not contain all specified values",
            "consideredValue": [1],
        },
        INVALID,
    ),
    (
        {"a": {"$elemMatch": {"$gt": 5}}},
        {"a": [1, 2]},
        {
            "operatorName": "$elemMatch",
            "specifiedAs": {"a": {"$elemMatch": {"$gt": 5}}},
            "reason": "array did not satisfy the child predicate",
            "consideredValue": [1, 2],
        },
        INVALID,
    ),
    (
        {"a": {"$bitsAllSet": 3}},
        {"a": 1},
        {
            "operatorName": "$bitsAllSet",
            "specifiedAs": {"a": {"$bitsAllSet": 3}},
            "reason": "bitwise operator failed to match",
            "consideredValue": 1,
        },
        INVALID,
    ),
    # Several operators on one field, and several fields: an implicit $and.
    (
        {"a": {"$gt": 0, "$lt": 10}},
        {"a": 11},
        {
            "operatorName": "$and",
            "clausesNotSatisfied": [
                {
                    "index": 1,
                    "details": {
                        "operatorName": "$lt",
                        "specifiedAs": {"a": {"$lt": 10}},
                        "reason": "comparison failed",
                        "consideredValue": 11,
                    },
                }
            ],
        },
        INVALID,
    ),
    (
        {"a": 1, "b": 2, "$comment": "why"},
        {"a": 1, "b": 3},
        {
            "operatorName": "$and",
            "clausesNotSatisfied": [
                {
                    "index": 1,
                    "details": {
                        "operatorName": "$eq",
                        "specifiedAs": {"b": 2},
                        "reason": "comparison failed",
                        "consideredValue": 3,
                    },
                }
            ],
        },
        INVALID,
    ),
    (
        {"$and": [{"$and": [{"a": 1}]}, {"$and": [{"b": 1}]}]},
        {"a": 1, "b": 2},
        {
            "operatorName": "$and",
            "clausesNotSatisfied": [
                {
                    "index": 1,
                    "details": {
                        "operatorName": "$and",
                        "clausesNotSatisfied": [
                            {
                                "index": 0,
                                "details": {
                                    "operatorName": "$eq",
                                    "specifiedAs": {"b": 1},
                                    "reason": "comparison failed",
                                    "consideredValue": 2,
                                },
                            }
                        ],
                    },
                }
            ],
        },
        INVALID,
    ),
    # The manual's contacts example with query operators.
    (
        {
            "$or": [
                {"phone": {"$type": "string"}},
                {"email": {"$regex": "@mongodb\\.com$"}},
                {"status": {"$in": ["Unknown", "Incomplete"]}},
            ]
        },
        {"email": "info@mongodb.co"},
        {
            "operatorName": "$or",
            "clausesNotSatisfied": [
                {
                    "index": 0,
                    "details": {
                        "operatorName": "$type",
                        "specifiedAs": {"phone": {"$type": "string"}},
                        "reason": "field was missing",
                    },
                },
                {
                    "index": 1,
                    "details": {
                        "operatorName": "$regex",
                        "specifiedAs": {"email": {"$regex": "@mongodb\\.com$"}},
                        "reason": "regular expression did not match",
                        "consideredValue": "info@mongodb.co",
                    },
                },
                {
                    "index": 2,
                    "details": {
                        "operatorName": "$in",
                        "specifiedAs": {"status": {"$in": ["Unknown", "Incomplete"]}},
                        "reason": "field was missing",
                    },
                },
            ],
        },
        QUERY_OPERATORS,
    ),
    # Negations explain what matched.
    (
        {"$nor": [{"a": {"$gt": 10}}, {"b": {"$lt": 10}}]},
        {"a": 9, "b": 9},
        {
            "operatorName": "$nor",
            "clausesSatisfied": [
                {
                    "index": 1,
                    "details": {
                        "operatorName": "$lt",
                        "specifiedAs": {"b": {"$lt": 10}},
                        "reason": "comparison succeeded",
                        "consideredValue": 9,
                    },
                }
            ],
        },
        INVALID,
    ),
    (
        {"a": {"$not": {"$lt": 20, "$gt": 5}}},
        {"a": 10},
        {
            "operatorName": "$not",
            "details": {
                "operatorName": "$and",
                "clausesSatisfied": [
                    {
                        "index": 0,
                        "details": {
                            "operatorName": "$lt",
                            "specifiedAs": {"a": {"$lt": 20}},
                            "reason": "comparison succeeded",
                            "consideredValue": 10,
                        },
                    },
                    {
                        "index": 1,
                        "details": {
                            "operatorName": "$gt",
                            "specifiedAs": {"a": {"$gt": 5}},
                            "reason": "comparison succeeded",
                            "consideredValue": 10,
                        },
                    },
                ],
            },
        },
        INVALID,
    ),
    (
        {"$nor": [{"$or": [{"a": 1}, {"a": 2}]}]},
        {"a": 2},
        {
            "operatorName": "$nor",
            "clausesSatisfied": [
                {
                    "index": 0,
                    "details": {
                        "operatorName": "$or",
                        "clausesSatisfied": [
                            {
                                "index": 1,
                                "details": {
                                    "operatorName": "$eq",
                                    "specifiedAs": {"a": 2},
                                    "reason": "comparison succeeded",
                                    "consideredValue": 2,
                                },
                            }
                        ],
                    },
                }
            ],
        },
        INVALID,
    ),
    (
        {"$nor": [{"$jsonSchema": {"minimum": 1}}]},
        {"a": 2},
        {
            "operatorName": "$nor",
            "clausesSatisfied": [{"index": 0, "details": {"operatorName": "$jsonSchema", "reason": "schema matched"}}],
        },
        INVALID,
    ),
    (
        {"$expr": {"$eq": ["$a", "$b"]}},
        {"a": 1, "b": 2},
        {
            "operatorName": "$expr",
            "specifiedAs": {"$expr": {"$eq": ["$a", "$b"]}},
            "reason": "expression did not match",
            "expressionResult": False,
        },
        QUERY_OPERATORS,
    ),
    (
        {"$alwaysFalse": 1},
        {},
        {
            "operatorName": "$alwaysFalse",
            "specifiedAs": {"$alwaysFalse": 1},
            "reason": "expression always evaluates to false",
        },
        INVALID,
    ),
    # $jsonSchema beside query operators.
    (
        {"$jsonSchema": {"required": ["a"]}, "b": {"$gte": 1}},
        {"b": 0},
        {
            "operatorName": "$and",
            "clausesNotSatisfied": [
                {
                    "index": 0,
                    "details": {
                        "operatorName": "$jsonSchema",
                        "schemaRulesNotSatisfied": [
                            {"operatorName": "required", "specifiedAs": {"required": ["a"]}, "missingProperties": ["a"]}
                        ],
                    },
                },
                {
                    "index": 1,
                    "details": {
                        "operatorName": "$gte",
                        "specifiedAs": {"b": {"$gte": 1}},
                        "reason": "comparison failed",
                        "consideredValue": 0,
                    },
                },
            ],
        },
        SCHEMA_VALIDATION,
    ),
]


@pytest.mark.parametrize(("validator", "doc", "details", "manual"), DETAILS)
def test_details(validator: dict[str, Any], doc: dict[str, Any], details: dict[str, Any], manual: str) -> None:
    error = failure(validator, {"_id": 1, **doc})
    assert error.extra["errInfo"] == {"failingDocumentId": 1, "details": details}


def test_considered_values_are_capped_at_ten() -> None:
    # INVALID: long arrays are truncated in the details.
    error = failure({"a": {"$gt": 100}}, {"_id": 1, "a": list(range(12))})
    assert error.extra["errInfo"]["details"] == {
        "operatorName": "$gt",
        "specifiedAs": {"a": {"$gt": 100}},
        "reason": "comparison failed",
        "consideredValues": list(range(10)),
        "consideredValuesTruncated": True,
    }


def test_a_validator_that_raises_rejects_the_document() -> None:
    # INVALID: an expression that fails to evaluate fails validation, explained.
    validator = {"$expr": {"$switch": {"branches": [{"case": False, "then": 1}]}}}
    details = failure(validator, {"_id": 1}).extra["errInfo"]["details"]
    assert details["operatorName"] == "$expr"
    assert details["reason"] == "failed to evaluate aggregation expression"
    assert details["details"]["code"] == 40066
    # ... and in warn mode the write goes through.
    compile_validator(validator, action="warn").check({"_id": 1})


# --- levels and actions ------------------------------------------------------------------

VALIDATOR = {"$jsonSchema": {"required": ["name"], "properties": {"name": {"bsonType": "string"}}}}
VALID = {"_id": 1, "name": "ok"}
INVALID_DOC = {"_id": 2, "name": 5}

# (level, action, insert rejected, update of a valid doc checked, update of an invalid doc checked, manual page)
MODES: list[tuple[str, str, bool, bool, bool, str]] = [
    ("strict", "error", True, True, True, LEVELS),
    ("moderate", "error", True, True, False, LEVELS),
    ("off", "error", False, False, False, LEVELS),
    ("strict", "warn", False, True, True, INVALID),
    ("moderate", "warn", False, True, False, INVALID),
    ("strict", "errorAndLog", True, True, True, INVALID),
]


@pytest.mark.parametrize(("level", "action", "rejects", "checks_valid", "checks_invalid", "manual"), MODES)
def test_levels_and_actions(
    level: str, action: str, rejects: bool, checks_valid: bool, checks_invalid: bool, manual: str
) -> None:
    validator = compile_validator(VALIDATOR, level=level, action=action)
    assert (validator.level, validator.action) == (level, action)
    if rejects:
        with pytest.raises(CommandError):
            validator.check(INVALID_DOC)
    else:
        validator.check(INVALID_DOC)
    validator.check(VALID)
    assert validator.applies_to_update(VALID) is checks_valid
    assert validator.applies_to_update(INVALID_DOC) is checks_invalid


def test_warn_still_describes_the_failure() -> None:
    # INVALID: with "warn" MongoDB logs the same errInfo it would have returned.
    info = compile_validator(VALIDATOR, action="warn").error_info(INVALID_DOC)
    assert info == {
        "failingDocumentId": 2,
        "details": {
            "operatorName": "$jsonSchema",
            "schemaRulesNotSatisfied": [
                {
                    "operatorName": "properties",
                    "propertiesNotSatisfied": [
                        {
                            "propertyName": "name",
                            "details": [
                                {
                                    "operatorName": "bsonType",
                                    "specifiedAs": {"bsonType": "string"},
                                    "reason": "type did not match",
                                    "consideredValue": 5,
                                    "consideredType": "int",
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    }


# (validator, options, code, errmsg, manual page)
INVALID_OPTIONS: list[tuple[Any, dict[str, Any], int, str, str]] = [
    (
        {"a": 1},
        {"level": "loose"},
        2,
        "Enumeration value 'loose' for field 'create.validationLevel' is not a valid value.",
        CREATE,
    ),
    (
        {"a": 1},
        {"action": "ignore", "command": "collMod"},
        2,
        "Enumeration value 'ignore' for field 'collMod.validationAction' is not a valid value.",
        CREATE,
    ),
    (
        {"a": 1},
        {"level": 1},
        14,
        "BSON field 'create.validationLevel' is the wrong type 'int', expected type 'string'",
        CREATE,
    ),
    (7, {}, 14, "BSON field 'create.validator' is the wrong type 'int', expected type 'object'", CREATE),
    ({"$where": "this.a == 1"}, {}, 2, "$where is not allowed in this context", LIMITS),
    ({"$or": [{"$text": {"$search": "bob"}}]}, {}, 2, "$text is not allowed in this context", LIMITS),
    ({"loc": {"$near": [0, 0]}}, {}, 2, "$geoNear, $near, and $nearSphere are not allowed in this context", LIMITS),
    (
        {"a": {"$not": {"$nearSphere": [0, 0]}}},
        {},
        2,
        "$geoNear, $near, and $nearSphere are not allowed in this context",
        LIMITS,
    ),
    ({"$jsonSchema": {"invalid": 1}}, {}, 9, "Unknown $jsonSchema keyword: invalid", JSON_SCHEMA),
    (
        {"$jsonSchema": {"properties": {"ssn": {"encrypt": {}}}}},
        {},
        224,
        "Encryption-related validator keywords are not allowed in this context",
        JSON_SCHEMA,
    ),
]


@pytest.mark.parametrize(("validator", "options", "code", "errmsg", "manual"), INVALID_OPTIONS)
def test_invalid_validator_options(
    validator: Any, options: dict[str, Any], code: int, errmsg: str, manual: str
) -> None:
    with pytest.raises(CommandError) as info:
        compile_validator(validator, **options)
    assert (info.value.code, info.value.errmsg) == (code, errmsg)


def test_empty_validator_accepts_everything() -> None:
    # RULES: a collection whose validator is {} validates nothing.
    compile_validator({}).check({"_id": 1, "anything": [1, "x"]})


# --- the orders validator of the schema-design examples ----------------------------------

ORDERS = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["user_id", "items", "status"],
        "properties": {
            "user_id": {"bsonType": "objectId", "description": "the customer"},
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
}


def test_orders_validator_on_insert_and_update() -> None:
    # SCHEMA_VALIDATION: the validator runs on inserts and on updates' results.
    validator = compile_validator(ORDERS, level="moderate")
    good = {
        "_id": 1,
        "user_id": ObjectId("65a1b2c3d4e5f60718293a4b"),
        "status": "pending",
        "items": [{"sku": "A-1", "quantity": 2, "price": 9.5}],
    }
    validator.check(good)
    updated = {**good, "status": "lost", "user_id": "65a1b2c3d4e5f60718293a4b"}
    assert validator.applies_to_update(good)
    error = failure(ORDERS, updated)
    assert error.extra["errInfo"] == {
        "failingDocumentId": 1,
        "details": {
            "operatorName": "$jsonSchema",
            "schemaRulesNotSatisfied": [
                {
                    "operatorName": "properties",
                    "propertiesNotSatisfied": [
                        {
                            "propertyName": "user_id",
                            "description": "the customer",
                            "details": [
                                {
                                    "operatorName": "bsonType",
                                    "specifiedAs": {"bsonType": "objectId"},
                                    "reason": "type did not match",
                                    "consideredValue": "65a1b2c3d4e5f60718293a4b",
                                    "consideredType": "string",
                                }
                            ],
                        },
                        {
                            "propertyName": "status",
                            "details": [
                                {
                                    "operatorName": "enum",
                                    "specifiedAs": {
                                        "enum": ["pending", "processing", "shipped", "delivered", "cancelled"]
                                    },
                                    "reason": "value was not found in enum",
                                    "consideredValue": "lost",
                                }
                            ],
                        },
                    ],
                }
            ],
        },
    }
    # Under "moderate", a document that already failed may be updated freely.
    assert not validator.applies_to_update(updated)


VALIDATORS_UNDER_TEST = [
    ORDERS,
    {"a": {"$gt": 1, "$lt": 5}, "b": {"$in": [1, "x", None]}},
    {"$or": [{"a": {"$type": "string"}}, {"$nor": [{"b": {"$exists": True}}, {"c": {"$size": 1}}]}]},
    {"x": {"$not": {"$elemMatch": {"$gte": 0}}}, "$jsonSchema": {"properties": {"a": {"maxItems": 2}}}},
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(VALIDATORS_UNDER_TEST), documents())
def test_validator_agrees_with_the_filter(spec: dict[str, Any], doc: dict[str, Any]) -> None:
    # SCHEMA_VALIDATION: a validator is a query filter; it fails exactly the documents the filter does not match.
    validator = compile_validator(spec)
    matches = compile_filter(spec)(doc)
    assert validator.matches(doc) == matches
    assert (validator.error_info(doc) is None) == matches
