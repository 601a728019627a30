"""Array keywords: minItems, maxItems, uniqueItems, items, additionalItems.

At the top level they are checked but have no effect (the value there is
always a document). ``additionalItems`` applies only when ``items`` is an
array of subschemas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import type_mismatch
from foliodb.query.jsonschema.arguments import Types, type_of
from foliodb.query.jsonschema.rules import Compile, Detail, Rule, Schema, leaf, length_rules, restrict
from foliodb.query.jsonschema.values import equality_key
from foliodb.query.paths import MISSING


def array_rules(schema: Mapping[str, Any], top: bool, types: Types | None, compile_sub: Compile) -> list[Rule]:
    rules = length_rules(schema, top, types, "array", (("minItems", int.__le__), ("maxItems", int.__ge__)))
    if "uniqueItems" in schema:
        unique = schema["uniqueItems"]
        if not isinstance(unique, bool):
            raise type_mismatch("$jsonSchema keyword 'uniqueItems' must be a boolean")
        if unique and not top:
            rules += restrict(
                "array",
                types,
                lambda v: _first_duplicate(v) is MISSING,
                lambda v: leaf(
                    "uniqueItems",
                    {"uniqueItems": True},
                    "found a duplicate item",
                    list(v),
                    duplicatedValue=_first_duplicate(v),
                ),
            )
    start: int | None = None  # where additionalItems begins, when items is an array
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, list):
            subs = []
            for item in items:
                if not isinstance(item, Mapping):
                    raise type_mismatch(
                        "$jsonSchema keyword 'items' requires that each element of the array is an object, "
                        f"but found a {type_of(item)}"
                    )
                subs.append(compile_sub(item, top=False))
            start = len(subs)
            if not top:
                rules += restrict("array", types, *_positional_items(subs))
        elif isinstance(items, Mapping):
            sub = compile_sub(items, top=False)
            if not top:
                reason = "At least one item did not match the sub-schema"
                rules += restrict("array", types, *_each_item(sub, 0, "items", reason))
        else:
            raise type_mismatch(f"$jsonSchema keyword 'items' must be an array or an object, not {type_of(items)}")
    if "additionalItems" in schema:
        extra = schema["additionalItems"]
        if isinstance(extra, bool):
            if start is not None and not top and not extra:
                first = start
                rules += restrict(
                    "array",
                    types,
                    lambda v: len(v) <= first,
                    lambda v: {
                        "operatorName": "additionalItems",
                        "specifiedAs": {"additionalItems": False},
                        "reason": "found additional items",
                        "additionalItems": list(v[first:]),
                    },
                )
        elif isinstance(extra, Mapping):
            sub = compile_sub(extra, top=False)
            if start is not None and not top:
                reason = "At least one additional item did not match the sub-schema"
                rules += restrict("array", types, *_each_item(sub, start, "additionalItems", reason))
        else:
            raise type_mismatch(
                "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, "
                f"but got a {type_of(extra)}"
            )
    return rules


def _first_duplicate(array: Any) -> Any:
    seen: set[bytes] = set()
    for value in array:
        key = equality_key(value)
        if key in seen:
            return value
        seen.add(key)
    return MISSING


def _each_item(
    sub: Schema, start: int, name: str, reason: str
) -> tuple[Callable[[Any], bool], Callable[[Any], Detail]]:
    ok = sub.ok

    def test(array: Any) -> bool:
        return all(ok(array[i]) for i in range(start, len(array)))

    def why(array: Any) -> Detail:
        index = next(i for i in range(start, len(array)) if not ok(array[i]))
        return {
            "operatorName": name,
            **sub.annotations,
            "reason": reason,
            "itemIndex": index,
            "details": sub.explain(array[index]),
        }

    return test, why


def _positional_items(subs: list[Schema]) -> tuple[Callable[[Any], bool], Callable[[Any], Detail]]:
    def failing(array: Any) -> list[int]:
        return [i for i, (sub, value) in enumerate(zip(subs, array, strict=False)) if not sub.ok(value)]

    def test(array: Any) -> bool:
        return all(sub.ok(value) for sub, value in zip(subs, array, strict=False))

    def why(array: Any) -> Detail:
        details = [{"itemIndex": i, "details": subs[i].explain(array[i])} for i in failing(array)]
        return {"operatorName": "items", "details": details}

    return test, why
