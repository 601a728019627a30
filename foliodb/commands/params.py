"""Declarative checks of command fields, producing MongoDB's parse errors.

``field(cmd, "filter", "object", command="find")`` returns the value (or the
default) after checking its BSON type, raising TypeMismatch (14) with
MongoDB's message "BSON field 'find.filter' is the wrong type 'int', expected
type 'object'" otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Decimal128

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import bsontypes

_KINDS: dict[str, tuple[str, ...]] = {
    "object": ("object",),
    "array": ("array",),
    "string": ("string",),
    "bool": ("bool", "int", "long", "double", "decimal"),
    "number": ("int", "long", "double", "decimal"),
    "integer": ("int", "long", "double", "decimal"),
    "objectOrArray": ("object", "array"),
}

_MISSING = object()


def field(cmd: Mapping[str, Any], name: str, kind: str, command: str, default: Any = None) -> Any:
    value = cmd.get(name, _MISSING)
    if value is _MISSING or value is None:
        return default
    actual = bsontypes.type_name(value)
    if actual not in _KINDS[kind]:
        expected = {
            "bool": "bool",
            "integer": "[long, int, decimal, double]",
            "number": "[long, int, decimal, double]",
            "objectOrArray": "[object, array]",
        }.get(kind, kind)
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '{command}.{name}' is the wrong type '{actual}', expected type '{expected}'",
        )
    if kind == "bool":
        return bool(value)
    if kind == "integer":
        return as_int(value, f"{command}.{name}")
    return value


def as_int(value: Any, what: str) -> int:
    if isinstance(value, Decimal128):
        value = value.to_decimal()
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise CommandError(ErrorCode.BadValue, f"{what} must be a finite number")
    number = int(value)
    if isinstance(value, float) and number != value:
        raise CommandError(ErrorCode.BadValue, f"{what} must be a whole number, not {value}")
    return number


def non_negative(value: int, what: str) -> int:
    if value < 0:
        raise CommandError(ErrorCode.BadValue, f"{what} value must be non-negative, but received: {value}")
    return value
