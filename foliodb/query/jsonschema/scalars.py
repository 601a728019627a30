"""String and number keywords: pattern, maxLength, minLength, multipleOf,
maximum/exclusiveMaximum, minimum/exclusiveMinimum.

At the top level they are checked but have no effect (the value there is
always a document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import bad_value, failed_to_parse, type_mismatch
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.jsonschema.arguments import Types
from foliodb.query.jsonschema.rules import Detail, Rule, leaf, length_rules, restrict
from foliodb.query.jsonschema.values import as_decimal, in_bound, is_multiple
from foliodb.query.pcre import compile_regex


def scalar_rules(schema: Mapping[str, Any], top: bool, types: Types | None) -> list[Rule]:
    rules: list[Rule] = []
    if "pattern" in schema:
        pattern = schema["pattern"]
        if not is_string(pattern):
            raise type_mismatch("$jsonSchema keyword 'pattern' must be a string")
        if not top:
            if "\x00" in pattern:
                raise bad_value("Regular expression cannot contain an embedded null byte")
            search = compile_regex(pattern, "").search
            rules += restrict(
                "string",
                types,
                lambda v: search(v) is not None,
                lambda v: leaf("pattern", {"pattern": pattern}, "regular expression did not match", v),
            )
    rules += length_rules(schema, top, types, "string", (("maxLength", int.__ge__), ("minLength", int.__le__)))
    if "multipleOf" in schema:
        arg = schema["multipleOf"]
        if not cmp.is_number(arg):
            raise type_mismatch("$jsonSchema keyword 'multipleOf' must be a number")
        divisor = as_decimal(arg)
        if divisor.is_signed() or divisor.is_zero():
            raise failed_to_parse("$jsonSchema keyword 'multipleOf' must have a positive value")
        if not top:
            if divisor.is_nan():
                raise bad_value("divisor cannot be NaN")
            if divisor.is_infinite():
                raise bad_value("divisor cannot be infinite")
            reason = "considered value is not a multiple of the specified value"
            rules += restrict(
                "number",
                types,
                lambda v: is_multiple(as_decimal(v), divisor),
                lambda v: leaf("multipleOf", {"multipleOf": arg}, reason, v),
            )
    for bound, upper in (("maximum", True), ("minimum", False)):
        exclusive_keyword = "exclusiveMaximum" if upper else "exclusiveMinimum"
        if bound not in schema:
            if exclusive_keyword in schema:
                raise failed_to_parse(
                    f"$jsonSchema keyword '{bound}' must be a present if {exclusive_keyword} is present"
                )
            continue
        exclusive = schema.get(exclusive_keyword, False)
        if not isinstance(exclusive, bool):
            raise type_mismatch(f"$jsonSchema keyword '{exclusive_keyword}' must be a boolean")
        limit = schema[bound]
        if not cmp.is_number(limit):
            raise type_mismatch(f"$jsonSchema keyword '{bound}' must be a number")
        if not top:
            specified = {bound: limit, exclusive_keyword: True} if exclusive else {bound: limit}
            rules += _bound_rule(bound, specified, limit, upper, exclusive, types)
    return rules


def _bound_rule(
    name: str, specified: Detail, limit: Any, upper: bool, exclusive: bool, types: Types | None
) -> list[Rule]:
    return restrict(
        "number",
        types,
        lambda v: in_bound(v, limit, upper, exclusive),
        lambda v: leaf(name, specified, "comparison failed", v),
    )
