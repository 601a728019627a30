"""Object keywords: properties, patternProperties, additionalProperties,
required, minProperties, maxProperties, dependencies.

They apply to the top-level document and to any object value below it.
Property names are looked up as dotted paths (:func:`values.lookup`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import failed_to_parse, type_mismatch
from foliodb.query.bsontypes import is_string
from foliodb.query.jsonschema.arguments import Types, non_negative_long, type_of
from foliodb.query.jsonschema.rules import ANNOTATIONS, Compile, Detail, Rule, Schema, object_rule
from foliodb.query.jsonschema.values import as_object, lookup
from foliodb.query.paths import MISSING
from foliodb.query.pcre import compile_regex


def object_rules(schema: Mapping[str, Any], top: bool, types: Types | None, compile_sub: Compile) -> list[Rule]:
    required: list[str] = []
    if "required" in schema:
        required = _parse_required(schema["required"])
    rules: list[Rule] = []
    names: frozenset[str] = frozenset()
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, Mapping):
            raise type_mismatch("$jsonSchema keyword 'properties' must be an object")
        subs = []
        for name, sub in properties.items():
            if not isinstance(sub, Mapping):
                raise type_mismatch(f"Nested schema for $jsonSchema property '{name}' must be an object")
            subs.append((name, compile_sub(sub, top=False), name in required))
        names = frozenset(properties)
        rules += object_rule(top, types, *_properties(subs))
    if "patternProperties" in schema or "additionalProperties" in schema:
        rules += object_rule(top, types, *_allowed_properties(schema, names, compile_sub))
    if required:
        spec = schema["required"]
        missing_sorted = sorted(required)

        def missing(obj: Mapping[str, Any]) -> list[str]:
            return [name for name in missing_sorted if lookup(obj, name) is MISSING]

        rules += object_rule(
            top,
            types,
            lambda obj: not missing(obj),
            lambda obj: [
                {"operatorName": "required", "specifiedAs": {"required": spec}, "missingProperties": missing(obj)}
            ],
        )
    for keyword, fits in (("minProperties", int.__le__), ("maxProperties", int.__ge__)):
        if keyword in schema:
            spec = schema[keyword]
            limit = non_negative_long(keyword, spec)
            rules += object_rule(top, types, *_count_properties(keyword, spec, limit, fits))
    if "dependencies" in schema:
        rules.append(_dependencies(schema["dependencies"], top, compile_sub))
    return rules


def _count_properties(
    keyword: str, spec: Any, limit: int, fits: Callable[[int, int], bool]
) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any]], list[Detail]]]:
    return (
        lambda obj: fits(limit, len(obj)),
        lambda obj: [
            {
                "operatorName": keyword,
                "specifiedAs": {keyword: spec},
                "reason": "specified number of properties was not satisfied",
                "numberOfProperties": len(obj),
            }
        ],
    )


def _parse_required(arg: Any) -> list[str]:
    if not isinstance(arg, list):
        raise type_mismatch(
            f"$jsonSchema keyword 'required' must be an array, but found an element of type {type_of(arg)}"
        )
    names: list[str] = []
    for name in arg:
        if not is_string(name):
            raise type_mismatch(
                "$jsonSchema keyword 'required' must be an array of strings, "
                f"but found an element of type: {type_of(name)}"
            )
        if name in names:
            raise failed_to_parse("$jsonSchema keyword 'required' array cannot contain duplicate values")
        names.append(name)
    if not names:
        raise failed_to_parse("$jsonSchema keyword 'required' cannot be an empty array")
    return names


def _properties(
    subs: list[tuple[str, Schema, bool]],
) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any]], list[Detail]]]:
    def test(obj: Mapping[str, Any]) -> bool:
        for name, sub, required in subs:
            value = lookup(obj, name)
            if (required or value is not MISSING) and not sub.ok(value):
                return False
        return True

    def why(obj: Mapping[str, Any]) -> list[Detail]:
        failed = []
        for name, sub, required in subs:
            value = lookup(obj, name)
            if (required or value is not MISSING) and not sub.ok(value):
                details = sub.explain(value)
                if details:  # a missing required property is the required rule's to report
                    failed.append({"propertyName": name, **sub.annotations, "details": details})
        return [{"operatorName": "properties", "propertiesNotSatisfied": failed}] if failed else []

    return test, why


def _allowed_properties(
    schema: Mapping[str, Any], names: frozenset[str], compile_sub: Compile
) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any]], list[Detail]]]:
    """additionalProperties and patternProperties, judged together."""
    patterns: list[tuple[str, Callable[[str], Any], Schema]] = []
    if "patternProperties" in schema:
        spec = schema["patternProperties"]
        if not isinstance(spec, Mapping):
            raise type_mismatch("$jsonSchema keyword 'patternProperties' must be an object")
        for raw, sub in spec.items():
            if not isinstance(sub, Mapping):
                raise type_mismatch(
                    f"$jsonSchema keyword 'patternProperties' has property '{raw}' which is not an object"
                )
            patterns.append((raw, compile_regex(raw, "").search, compile_sub(sub, top=False)))
    extra: Schema | bool = True
    if "additionalProperties" in schema:
        spec = schema["additionalProperties"]
        if isinstance(spec, bool):
            extra = spec
        elif isinstance(spec, Mapping):
            extra = compile_sub(spec, top=False)
        else:
            raise type_mismatch("$jsonSchema keyword 'additionalProperties' must be an object or a boolean")

    def additional(obj: Mapping[str, Any]) -> list[str]:
        return [n for n in obj if n not in names and not any(search(n) for _, search, _ in patterns)]

    def test(obj: Mapping[str, Any]) -> bool:
        for name, value in obj.items():
            matched = False
            for _, search, sub in patterns:
                if search(name):
                    matched = True
                    if not sub.ok(value):
                        return False
            if not matched and name not in names and not _allowed_extra(extra, value):
                return False
        return True

    def why(obj: Mapping[str, Any]) -> list[Detail]:
        out: list[Detail] = []
        if extra is False:
            if additional(obj):
                out.append(
                    {
                        "operatorName": "additionalProperties",
                        "specifiedAs": {"additionalProperties": False},
                        "additionalProperties": additional(obj),
                    }
                )
        elif isinstance(extra, Schema):
            failing = [n for n in additional(obj) if not extra.ok(obj[n])]
            if failing:
                out.append(
                    {
                        "operatorName": "additionalProperties",
                        **extra.annotations,
                        "reason": "at least one additional property did not match the subschema",
                        "failingProperty": failing[0],
                        "details": extra.explain(obj[failing[0]]),
                    }
                )
        matched = []
        for raw, search, sub in patterns:
            for name, value in obj.items():
                if search(name) and not sub.ok(value):
                    matched.append(
                        {"propertyName": name, **sub.annotations, "regexMatched": raw, "details": sub.explain(value)}
                    )
                    break
        if matched:
            out.append({"operatorName": "patternProperties", "details": matched})
        return out

    return test, why


def _allowed_extra(extra: Schema | bool, value: Any) -> bool:
    """Does additionalProperties (true, false or a schema) allow ``value``?"""
    return extra if isinstance(extra, bool) else extra.ok(value)


def _dependencies(spec: Any, top: bool, compile_sub: Compile) -> Rule:
    if not isinstance(spec, Mapping):
        raise type_mismatch("$jsonSchema keyword 'dependencies' must be an object")
    deps: list[tuple[str, list[str] | Schema]] = []
    for name, dep in spec.items():
        if isinstance(dep, Mapping):
            deps.append((name, compile_sub(dep, top)))
        elif isinstance(dep, list):
            deps.append((name, _property_dependency(name, dep)))
        elif is_string(dep) and name in ANNOTATIONS:
            continue  # MongoDB allows annotations among the dependencies
        else:
            raise type_mismatch(
                f"property '{name}' in $jsonSchema keyword 'dependencies' must be either an object or an array"
            )
    annotations = {k: spec[k] for k in ANNOTATIONS if isinstance(spec.get(k), str)}

    def failing(value: Any) -> list[Detail]:
        obj = as_object(value)
        if obj is None:
            return []
        out: list[Detail] = []
        for name, dep in deps:
            if lookup(obj, name) is MISSING:
                continue
            if isinstance(dep, list):
                missing = [n for n in dep if lookup(obj, n) is MISSING]
                if missing:
                    out.append({"conditionalProperty": name, "missingProperties": missing})
            elif not dep.ok(value):
                out.append({"conditionalProperty": name, "details": dep.explain(value)})
        return out

    return Rule(
        lambda v: not failing(v),
        lambda v: [{"operatorName": "dependencies", **annotations, "failingDependencies": failing(v)}],
    )


def _property_dependency(name: str, names: list[Any]) -> list[str]:
    if not names:
        raise failed_to_parse(f"property '{name}' in $jsonSchema keyword 'dependencies' cannot be an empty array")
    seen: list[str] = []
    for n in names:
        if not is_string(n):
            raise type_mismatch(
                f"array '{name}' in $jsonSchema keyword 'dependencies' can only contain strings, "
                f"but found element of type: {type_of(n)}"
            )
        if n in seen:
            raise failed_to_parse(
                f"array '{name}' in $jsonSchema keyword 'dependencies' contains duplicate element: {n}"
            )
        seen.append(n)
    return seen
