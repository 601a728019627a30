"""Arithmetic update operators: $inc $mul, and MongoDB's numeric result types.

Manual: https://www.mongodb.com/docs/manual/reference/operator/update/inc/
and https://www.mongodb.com/docs/manual/reference/operator/update/mul/

Result types follow MongoDB's SafeNum:

* int32 with int32 gives int32, widened to int64 when it overflows;
* int64 with an integer gives int64; overflowing int64 is an error (BadValue);
* a double with any integer or double gives a double;
* a Decimal128 with anything gives a Decimal128 (34 digits, ties to even),
  a double entering it as its 15-significant-digit decimal.

pymongo decodes int32 as ``int`` and int64 as ``Int64``; an ``int`` outside
the int32 range is an int64. int64 results are always returned as ``Int64``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import Any

from bson import Decimal128, Int64
from bson.decimal128 import create_decimal128_context

from foliodb.errors import CommandError, ErrorCode, bad_value
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, type_name
from foliodb.query.context import Context
from foliodb.query.render import render
from foliodb.query.update_ops.core import UPDATE_OPS, Modifier, Where

_DECIMAL128 = create_decimal128_context()


def is_int32(value: Any) -> bool:
    return value.__class__ is int and INT32_MIN <= value <= INT32_MAX


def double_to_decimal(value: float) -> Decimal:
    """A double as MongoDB's Decimal128(double): rounded to 15 significant
    digits (0.1 becomes 0.100000000000000)."""
    exact = Decimal(value)
    if not exact.is_finite() or not exact:
        return exact
    return exact.quantize(Decimal(1).scaleb(exact.adjusted() - 14), rounding=ROUND_HALF_EVEN)


def _to_decimal(value: Any) -> Decimal:
    if value.__class__ is Decimal128:
        return value.to_decimal()
    if value.__class__ is float:
        return double_to_decimal(value)
    return Decimal(int(value))


def arithmetic(a: Any, b: Any, op: Callable[[Any, Any], Any]) -> Any:
    """``op(a, b)`` with MongoDB's result type; None when an int64 overflows."""
    if a.__class__ is Decimal128 or b.__class__ is Decimal128:
        with localcontext(_DECIMAL128):
            return Decimal128(op(_to_decimal(a), _to_decimal(b)))
    if a.__class__ is float or b.__class__ is float:
        return op(float(a), float(b))
    result = op(int(a), int(b))
    if is_int32(a) and is_int32(b) and INT32_MIN <= result <= INT32_MAX:
        return result
    if INT64_MIN <= result <= INT64_MAX:
        return Int64(result)
    return None


def _debug(value: Any) -> str:
    # SafeNum::debugString of the integer that overflowed.
    return f"(NumberInt){value}" if is_int32(value) else f"(NumberLong){int(value)}"


def _arithmetic_node(name: str, verb: str, path: str, arg: Any, op: Callable[[Any, Any], Any]) -> Modifier:
    if not cmp.is_number(arg):
        raise CommandError(
            ErrorCode.TypeMismatch, f"Cannot {verb} with non-numeric argument: {{{path}: {render(arg)}}}"
        )

    def update(old: Any, where: Where) -> Any:
        if not cmp.is_number(old):
            raise CommandError(
                ErrorCode.TypeMismatch,
                f"Cannot apply {name} to a value of non-numeric type. {{{where.id_text()}}} has the field "
                f"'{where.field}' of non-numeric type {type_name(old)}",
            )
        result = arithmetic(arg, old, op)
        if result is None:
            raise bad_value(
                f"Failed to apply {name} operations to current value ({_debug(old)}) for document {{{where.id_text()}}}"
            )
        return result

    # A missing field counts as zero: $inc sets the argument, $mul a zero of its type.
    created = arg if op is operator.add else arithmetic(arg, 0, op)
    return Modifier(update=update, create=lambda where: created)


@UPDATE_OPS.register("$inc")
def update_inc(path: str, arg: Any, ctx: Context) -> Modifier:
    return _arithmetic_node("$inc", "increment", path, arg, operator.add)


@UPDATE_OPS.register("$mul")
def update_mul(path: str, arg: Any, ctx: Context) -> Modifier:
    return _arithmetic_node("$mul", "multiply", path, arg, operator.mul)
