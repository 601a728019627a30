"""Logical keywords and enum: allOf, anyOf, oneOf, not, enum.

At the top level ``enum`` considers only its document values (only a
document can equal the document matched).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import failed_to_parse, type_mismatch
from foliodb.query.jsonschema.arguments import subschema_list, type_of
from foliodb.query.jsonschema.rules import Compile, Detail, Rule, Schema, leaf, never
from foliodb.query.jsonschema.values import as_object, equality_key
from foliodb.query.paths import MISSING


def logical_rules(schema: Mapping[str, Any], top: bool, compile_sub: Compile) -> list[Rule]:
    rules: list[Rule] = []
    for keyword, combine in (("allOf", all), ("anyOf", any)):
        if keyword in schema:
            subs = [compile_sub(s, top) for s in subschema_list(keyword, schema[keyword])]
            rules.append(_combination(keyword, subs, combine))
    if "oneOf" in schema:
        rules.append(_one_of([compile_sub(s, top) for s in subschema_list("oneOf", schema["oneOf"])]))
    if "not" in schema:
        arg = schema["not"]
        if not isinstance(arg, Mapping):
            raise type_mismatch(
                f"$jsonSchema keyword 'not' must be an object, but found an element of type {type_of(arg)}"
            )
        ok = compile_sub(arg, top).ok
        detail = {"operatorName": "not", "reason": "child expression matched"}
        rules.append(Rule(lambda v: not ok(v), lambda v: [detail]))
    if "enum" in schema:
        rules.append(_enum(schema["enum"], top))
    return rules


def _entries(subs: list[Schema], value: Any, indexes: range | list[int]) -> list[Detail]:
    return [{"index": i, **subs[i].annotations, "details": subs[i].explain(value)} for i in indexes]


def _combination(keyword: str, subs: list[Schema], combine: Callable[[Any], bool]) -> Rule:
    oks = tuple(sub.ok for sub in subs)

    def why(value: Any) -> list[Detail]:
        failed = [i for i, ok in enumerate(oks) if not ok(value)]
        return [{"operatorName": keyword, "schemasNotSatisfied": _entries(subs, value, failed)}]

    return Rule(lambda v: combine(ok(v) for ok in oks), why)


def _one_of(subs: list[Schema]) -> Rule:
    oks = tuple(sub.ok for sub in subs)

    def matching(value: Any) -> list[int]:
        return [i for i, ok in enumerate(oks) if ok(value)]

    def why(value: Any) -> list[Detail]:
        matched = matching(value)
        if matched:
            reason = "more than one subschema matched"
            return [{"operatorName": "oneOf", "reason": reason, "matchingSchemaIndexes": matched}]
        return [{"operatorName": "oneOf", "schemasNotSatisfied": _entries(subs, value, range(len(subs)))}]

    return Rule(lambda v: len(matching(v)) == 1, why)


def _enum(arg: Any, top: bool) -> Rule:
    if not isinstance(arg, list):
        raise type_mismatch(f"$jsonSchema keyword 'enum' must be an array, but found an element of type {type_of(arg)}")
    if not arg:
        raise failed_to_parse("$jsonSchema keyword 'enum' cannot be an empty array")
    keys: set[bytes] = set()
    for value in arg:
        key = equality_key(value)
        if key in keys:
            raise failed_to_parse("$jsonSchema keyword 'enum' array cannot contain duplicate values.")
        keys.add(key)
    if top:
        # Only a document can equal the document being matched.
        keys = {equality_key(value) for value in arg if as_object(value) is not None}
        if not keys:
            reason = "expression always evaluates to false"
            detail = {"operatorName": "enum", "specifiedAs": {"enum": arg}, "reason": reason}
            return Rule(never, lambda v: [detail])

    def why(value: Any) -> list[Detail]:
        if value is MISSING:
            return []
        return [leaf("enum", {"enum": arg}, "value was not found in enum", value)]

    return Rule(lambda v: v is not MISSING and equality_key(v) in keys, why)
