"""Checking ``$jsonSchema`` keyword arguments shared by several keywords:
counts, type names, lists of subschemas. Errors are MongoDB's (FailedToParse,
TypeMismatch, BadValue) with its messages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bson import Decimal128

from foliodb.errors import bad_value, failed_to_parse, type_mismatch
from foliodb.query import bsontypes
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.render import render

_JSON_TYPES = {"array": "array", "boolean": "bool", "null": "null", "object": "object", "string": "string"}


def type_of(value: Any) -> str:
    return bsontypes.type_name(value)


def _element(name: str, value: Any) -> str:
    return f"{name}: {value}" if value.__class__ is Decimal128 else f"{name}: {render(value)}"


def non_negative_long(name: str, value: Any) -> int:
    """MongoDB's parseIntegerElementToNonNegativeLong."""
    where = _element(name, value)
    if not cmp.is_number(value):
        raise failed_to_parse(f"Expected a number in: {where}")
    if isinstance(value, float):
        if math.isnan(value):
            raise failed_to_parse(f"Expected an integer, but found NaN in: {where}")
        if value >= 2.0**63 or value < -(2.0**63):
            raise failed_to_parse(f"Cannot represent as a 64-bit integer: {where}")
        if value != int(value):
            raise failed_to_parse(f"Expected an integer: {where}")
        n = int(value)
    elif value.__class__ is Decimal128:
        d = value.to_decimal()
        if not d.is_finite() or d != d.to_integral_value() or not bsontypes.INT64_MIN <= d <= bsontypes.INT64_MAX:
            raise failed_to_parse(f"Cannot represent as a 64-bit integer: {where}")
        n = int(d)
    else:
        n = int(value)
    if n < 0:
        raise failed_to_parse(f"Expected a non-negative number in: {where}")
    return n


@dataclass(frozen=True, slots=True)
class Types:
    names: frozenset[str]
    single: str | None  # the one type named ("number" for all numbers), if only one


def parse_types(keyword: str, spec: Any) -> Types:
    if not isinstance(spec, (str, list)):
        raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be either a string or an array of strings")
    aliases: list[str] = []
    for alias in [spec] if is_string(spec) else spec:
        if not is_string(alias):
            raise type_mismatch(f"$jsonSchema keyword '{keyword}' array elements must be strings")
        if alias == "integer":
            raise failed_to_parse("$jsonSchema type 'integer' is not currently supported.")
        if alias in aliases:
            raise failed_to_parse(f"$jsonSchema keyword '{keyword}' has duplicate value: {alias}")
        aliases.append(alias)
    known = _JSON_TYPES if keyword == "type" else {name: name for name in bsontypes.TYPE_NUMBERS}
    names: set[str] = set()
    for alias in sorted(aliases):  # MongoDB resolves them in sorted order
        if alias == "number":
            names |= bsontypes.NUMERIC_TYPES
        elif alias in known:
            names.add(known[alias])
        elif alias == "missing":
            raise bad_value(
                "'missing' is not a legal type name. To query for non-existence of a field, use {$exists:false}."
            )
        else:
            raise bad_value(f"Unknown type name alias: {alias}")
    if not names:
        raise failed_to_parse(f"$jsonSchema keyword '{keyword}' must name at least one type")
    single = known.get(aliases[0], aliases[0]) if len(aliases) == 1 else None
    return Types(frozenset(names), single)


def subschema_list(keyword: str, arg: Any) -> list[Mapping[str, Any]]:
    if not isinstance(arg, list):
        raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be an array")
    if not arg:
        raise bad_value(f"$jsonSchema keyword '{keyword}' must be a non-empty array")
    for item in arg:
        if not isinstance(item, Mapping):
            raise type_mismatch(
                f"$jsonSchema keyword '{keyword}' must be an array of objects, "
                f"but found an element of type {type_of(item)}"
            )
    return arg
