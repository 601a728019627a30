"""Numbers in expressions: BSON's four numeric types and MongoDB's rules.

Python holds an int32 as ``int``, an int64 as ``bson.Int64`` (or as an
``int`` outside the int32 range, which is how pymongo encodes it), a double
as ``float`` and a Decimal128 as ``bson.Decimal128``; ``bool`` is not a
number. Arithmetic widens int -> long -> double -> decimal (:class:`Kind`):
an int result that overflows int32 becomes a long, a long result that
overflows int64 becomes a double, and any decimal operand makes the result
a decimal.

Decimal arithmetic happens in :data:`DECIMAL` (IEEE 754-2008 decimal128: 34
digits, half-even). A double meets a decimal with 15 significant digits, as
MongoDB's ``Decimal128(double)`` does, so ``2.5`` joins as ``2.50000000000000``.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from enum import IntEnum
from typing import Any

from bson import Decimal128, Int64
from bson.decimal128 import create_decimal128_context

from foliodb.errors import location
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from foliodb.query.expr.core import type_of

DECIMAL = create_decimal128_context()
# Decimal arithmetic that must not lose digits to the 34-digit context.
_WIDE = decimal.Context(prec=80, Emax=999999, Emin=-999999, traps=[])


class Kind(IntEnum):
    INT = 0
    LONG = 1
    DOUBLE = 2
    DECIMAL = 3


def kind(value: Any) -> Kind | None:
    """The numeric kind of a value, None for a non-number."""
    cls = value.__class__
    if cls is int:
        return Kind.INT if INT32_MIN <= value <= INT32_MAX else Kind.LONG
    if cls is float:
        return Kind.DOUBLE
    if cls is Int64:
        return Kind.LONG
    if cls is Decimal128:
        return Kind.DECIMAL
    return None


def is_number(value: Any) -> bool:
    return kind(value) is not None


def int_or_long(n: int) -> int:
    """An integer result: int32 when it fits, else int64 (``createIntOrLong``)."""
    return n if INT32_MIN <= n <= INT32_MAX else Int64(n)


def fits_long(n: int) -> bool:
    return INT64_MIN <= n <= INT64_MAX


def to_double(value: Any) -> float:
    if value.__class__ is Decimal128:
        return float(value.to_decimal())
    return float(value)


def double_to_decimal(x: float, digits: int = 15) -> Decimal:
    """A double as a decimal rounded to ``digits`` significant digits."""
    if not math.isfinite(x) or x == 0:
        return Decimal(x)
    exact = Decimal(x)
    exponent = exact.adjusted() - digits + 1
    rounded = exact.quantize(Decimal(1).scaleb(exponent), rounding=decimal.ROUND_HALF_EVEN, context=_WIDE)
    if rounded.adjusted() > exact.adjusted():  # 9.99...5 rounded up a digit
        rounded = exact.quantize(Decimal(1).scaleb(exponent + 1), rounding=decimal.ROUND_HALF_EVEN, context=_WIDE)
    return rounded


def to_decimal(value: Any) -> Decimal:
    """``coerceToDecimal``: exact for integers, 15 digits for a double."""
    cls = value.__class__
    if cls is Decimal128:
        d: Decimal = value.to_decimal()
        return d
    if cls is float:
        return double_to_decimal(value)
    return Decimal(int(value))


def decimal128(d: Decimal) -> Decimal128:
    """A Python decimal as a Decimal128, rounded to 34 digits."""
    return Decimal128(DECIMAL.create_decimal(d))


def to_long(value: Any) -> int:
    """``coerceToLong``: doubles truncate, decimals round half-even."""
    cls = value.__class__
    if cls is float:
        return int(value) if math.isfinite(value) else 0
    if cls is Decimal128:
        d = value.to_decimal()
        return int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN)) if d.is_finite() else 0
    return int(value)


def coerce_to_long(value: Any) -> int:
    """``Value::coerceToLong`` for any value: non-numbers raise 16004."""
    if kind(value) is None:
        raise location(16004, f"can't convert from BSON type {type_of(value)} to long")
    return to_long(value)


def _exact(value: Any) -> Decimal | None:
    """The exact value of a number as a decimal, None for NaN or infinity."""
    cls = value.__class__
    if cls is float:
        return Decimal(value) if math.isfinite(value) else None
    if cls is Decimal128:
        d = value.to_decimal()
        return d if d.is_finite() else None
    return Decimal(int(value))


def integral(value: Any) -> bool:
    """``Value::integral``: a number whose value is an int32 exactly."""
    d = _exact(value) if kind(value) is not None else None
    return d is not None and d == d.to_integral_value() and INT32_MIN <= d <= INT32_MAX


def integral64(value: Any) -> bool:
    """``Value::integral64Bit``: a number whose value is an int64 exactly."""
    d = _exact(value) if kind(value) is not None else None
    return d is not None and d == d.to_integral_value() and INT64_MIN <= d <= INT64_MAX


def show_double(x: float) -> str:
    """A double as MongoDB's messages print it (C's ``%g``)."""
    return format(x, "g")
