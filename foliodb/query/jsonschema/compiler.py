"""Compiling a ``$jsonSchema``: the keyword set, one subschema's rules in
MongoDB's order, and :class:`JsonSchema`, the compiled whole with its errInfo
explanation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, failed_to_parse, type_mismatch
from foliodb.query import bsontypes
from foliodb.query.bsontypes import is_string
from foliodb.query.jsonschema.arguments import parse_types
from foliodb.query.jsonschema.arrays import array_rules
from foliodb.query.jsonschema.logical import logical_rules
from foliodb.query.jsonschema.objects import object_rules
from foliodb.query.jsonschema.rules import ANNOTATIONS, Detail, Rule, Schema, leaf, never, subschema
from foliodb.query.jsonschema.scalars import scalar_rules
from foliodb.query.paths import MISSING

_KEYWORDS = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "bsonType",
        "dependencies",
        "description",
        "encrypt",
        "encryptMetadata",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "pattern",
        "patternProperties",
        "properties",
        "required",
        "title",
        "type",
        "uniqueItems",
    }
)
# The manual's "Omissions": keywords MongoDB names and rejects.
_UNSUPPORTED = frozenset({"$ref", "$schema", "default", "definitions", "format", "id"})


def compile_json_schema(schema: Any) -> JsonSchema:
    """Check ``schema`` and compile it; raises CommandError as MongoDB does."""
    if not isinstance(schema, Mapping):
        raise type_mismatch("$jsonSchema must be an object")
    return JsonSchema(schema, compile_subschema(schema, top=True))


class JsonSchema:
    """A compiled ``$jsonSchema``: ``check(doc) -> bool``, ``check.explain(doc)``."""

    __slots__ = ("_root", "matches", "schema")

    def __init__(self, schema: Mapping[str, Any], root: Schema) -> None:
        self.schema = schema
        self._root = root
        self.matches: Callable[[Any], bool] = root.ok

    def __call__(self, doc: Any) -> bool:
        return self.matches(doc)

    def explain(self, doc: Any) -> Detail:
        """Why ``doc`` fails the schema, in MongoDB 5+'s errInfo ``details``
        shape (an empty rule list when it does not fail)."""
        details = self._root.explain(doc)
        if isinstance(details, dict):  # the schema matches nothing
            return details
        return {"operatorName": "$jsonSchema", **self._root.annotations, "schemaRulesNotSatisfied": details}


def compile_subschema(schema: Mapping[str, Any], top: bool) -> Schema:
    """One subschema's rules (``top``: the schema of the whole document)."""
    for keyword in schema:
        if keyword in _UNSUPPORTED:
            raise failed_to_parse(f"$jsonSchema keyword '{keyword}' is not currently supported")
        if keyword not in _KEYWORDS:
            raise failed_to_parse(f"Unknown $jsonSchema keyword: {keyword}")
    for keyword in ("description", "title"):
        if keyword in schema and not is_string(schema[keyword]):
            raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be of type string")
    if "type" in schema and "bsonType" in schema:
        raise failed_to_parse("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    type_keyword = "type" if "type" in schema else "bsonType" if "bsonType" in schema else None
    if type_keyword and "encrypt" in schema:
        raise failed_to_parse(
            f"$jsonSchema keyword 'encrypt' cannot be used in conjunction with '{type_keyword}', "
            "'encrypt' implies type 'bsonType::BinData'"
        )
    types = parse_types(type_keyword, schema[type_keyword]) if type_keyword else None

    rules = scalar_rules(schema, top, types) + array_rules(schema, top, types, compile_subschema)
    if "encrypt" in schema or "encryptMetadata" in schema:
        # Client-side field level encryption is not built; MongoDB answers the
        # same where it does not allow these keywords.
        raise CommandError(
            ErrorCode.QueryFeatureNotAllowed, "Encryption-related validator keywords are not allowed in this context"
        )
    rules += object_rules(schema, top, types, compile_subschema)
    rules += logical_rules(schema, top, compile_subschema)

    annotations = {k: schema[k] for k in ANNOTATIONS if k in schema}
    if types is not None and type_keyword is not None:
        if top:
            if "object" not in types.names:
                detail = {
                    "operatorName": "$jsonSchema",
                    "specifiedAs": {"$jsonSchema": schema},
                    "reason": "expression always evaluates to false",
                }
                return Schema(never, lambda v: detail, {})
        else:
            rules.append(_type_rule(type_keyword, schema[type_keyword], types.names))
    return subschema(rules, annotations)


def _type_rule(keyword: str, spec: Any, names: frozenset[str]) -> Rule:
    type_name = bsontypes.type_name

    def ok(value: Any) -> bool:
        return value is not MISSING and type_name(value) in names

    def why(value: Any) -> list[Detail]:
        if value is MISSING:
            return []
        return [leaf(keyword, {keyword: spec}, "type did not match", value, consideredType=type_name(value))]

    return Rule(ok, why)
