"""Values as ``$jsonSchema`` sees them: kinds, dotted property lookup,
field-order-blind equality and exact decimal arithmetic for numbers.

A keyword applies to values of its kind only (``KIND_TEST``); objects include
DBRefs (BSON stores one as a document) and arrays are values, never traversed.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping
from typing import Any

from bson import DBRef, Decimal128

from foliodb.query import bsontypes, keystring
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.paths import MISSING


def as_object(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, DBRef):
        return value.as_doc()
    return None


def is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _is_string(value: Any) -> bool:
    return is_string(value)


KIND_TEST: dict[str, Callable[[Any], bool]] = {
    "number": cmp.is_number,
    "string": _is_string,
    "array": is_array,
    "object": lambda v: as_object(v) is not None,
}
KIND_TYPES = {"number": bsontypes.NUMERIC_TYPES, "string": {"string"}, "array": {"array"}, "object": {"object"}}


def lookup(obj: Mapping[str, Any], name: str) -> Any:
    if "." not in name:
        return obj.get(name, MISSING)
    value: Any = obj
    for part in name.split("."):
        inner = as_object(value)
        if inner is None:
            return MISSING
        value = inner.get(part, MISSING)
    return value


def _unordered(value: Any) -> Any:
    """``value`` with every embedded document's fields sorted by name."""
    obj = as_object(value)
    if obj is not None:
        return {name: _unordered(obj[name]) for name in sorted(obj)}
    if is_array(value):
        return [_unordered(v) for v in value]
    return value


def equality_key(value: Any) -> bytes:
    """Equal for values MongoDB's field-order-blind equality calls equal."""
    return keystring.encode(_unordered(value))


_DOUBLE_DIGITS = 15  # MongoDB reads a double as a Decimal128 of 15 significant digits.


def as_decimal(value: Any) -> decimal.Decimal:
    if value.__class__ is Decimal128:
        return value.to_decimal()
    if isinstance(value, float):
        return decimal.Decimal(format(value, f".{_DOUBLE_DIGITS}g"))
    return decimal.Decimal(int(value))


def is_multiple(value: decimal.Decimal, divisor: decimal.Decimal) -> bool:
    if not value.is_finite():
        return False
    if not value:
        return True
    # Enough digits for the exact remainder (Decimal128's fmod is exact).
    low = min(int(value.as_tuple().exponent), int(divisor.as_tuple().exponent))  # both finite
    digits = max(value.adjusted(), divisor.adjusted()) - low + 2
    context = decimal.Context(prec=max(34, digits), traps=[])
    return context.remainder(value, divisor) == 0


def in_bound(value: Any, bound: Any, upper: bool, exclusive: bool) -> bool:
    # NaN equals only NaN and is otherwise neither below nor above anything.
    if cmp.is_nan(value) or cmp.is_nan(bound):
        return cmp.is_nan(value) and cmp.is_nan(bound) and not exclusive
    c = cmp.compare_numbers(value, bound)
    if upper:
        return c < 0 or (c == 0 and not exclusive)
    return c > 0 or (c == 0 and not exclusive)
