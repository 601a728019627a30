"""Arithmetic expressions: $add $subtract $multiply $divide $mod.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#arithmetic-expression-operators

Result types follow :mod:`foliodb.query.expr.numeric` (int -> long on int32
overflow, long -> double on int64 overflow, decimal wins). A null or missing
operand makes the result null; other non-numbers raise the operator's error.
``$add`` and ``$subtract`` also take one date (milliseconds are added to it),
and a date minus a date is their distance in milliseconds (a long).
Numeric functions ($abs, $pow, $round...) are in
:mod:`foliodb.query.expr.mathematics`.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

from bson import Int64

from foliodb.errors import CommandError, ErrorCode, bad_value, location, type_mismatch
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, nullish, operands, type_of
from foliodb.query.expr.numeric import (
    DECIMAL,
    Kind,
    decimal128,
    double_to_decimal,
    fits_long,
    int_or_long,
    kind,
    to_decimal,
    to_double,
)
from foliodb.query.expr.timezones import date_ms, is_date, to_date

_TWO_63 = 2.0**63


def _date_overflow() -> CommandError:
    return CommandError(ErrorCode.Overflow, "date overflow")


def llround(x: float) -> int:
    """C's ``llround``: half away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def millis_of(value: Any) -> int:
    """A number as milliseconds to add to a date (``date overflow`` if it
    cannot be one)."""
    k = kind(value)
    if k is Kind.DOUBLE:
        if not -_TWO_63 <= value < _TWO_63:
            raise _date_overflow()
        return llround(value)
    if k is Kind.DECIMAL:
        d = value.to_decimal()
        if not d.is_finite():
            raise _date_overflow()
        n = int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
        if not fits_long(n):
            raise _date_overflow()
        return n
    return int(value)


def _checked_date(ms: int) -> int:
    if not fits_long(ms):
        raise _date_overflow()
    return ms


class _Sum:
    """``$add``'s running total: one sum per numeric kind, widened as operands
    arrive, and milliseconds once a date has been seen."""

    __slots__ = ("date", "decimal", "double", "long", "widest")

    def __init__(self) -> None:
        self.long = 0
        self.double = 0.0
        self.decimal = Decimal(0)
        self.widest = Kind.INT
        self.date = False

    def add(self, value: Any) -> None:
        if is_date(value):
            if self.date:
                raise location(16612, "only one date allowed in an $add expression")
            before = self.value()
            self.date = True
            self.long = _checked_date(millis_of(before) + date_ms(value))
            return
        if self.date:
            self.long = _checked_date(self.long + millis_of(value))
            return
        k = kind(value)
        assert k is not None
        old, self.widest = self.widest, max(self.widest, k)
        if self.widest is Kind.DOUBLE and old < Kind.DOUBLE:
            self.double = float(self.long)
        elif self.widest is Kind.DECIMAL and old < Kind.DECIMAL:
            self.decimal = double_to_decimal(self.double) if old is Kind.DOUBLE else Decimal(self.long)
        if self.widest <= Kind.LONG:
            # Exact, past the long range too: mongod sums integers exactly (its double-double
            # summation) and makes a double only of a total that does not fit, rounded once.
            self.long += int(value)
        elif self.widest is Kind.DOUBLE:
            self.double += to_double(value)
        else:
            self.decimal = DECIMAL.add(self.decimal, to_decimal(value))

    def value(self) -> Any:
        if self.date:
            return to_date(self.long)
        if self.widest <= Kind.LONG and not fits_long(self.long):
            return float(self.long)
        if self.widest is Kind.INT:
            return int_or_long(self.long)
        if self.widest is Kind.LONG:
            return Int64(self.long)
        if self.widest is Kind.DOUBLE:
            return self.double
        return decimal128(self.decimal)


@EXPR_OPS.register("$add")
def expr_add(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$add", 0, None, scope)

    def add(doc: Any, vars: dict[str, Any]) -> Any:
        total = _Sum()
        for item in items:
            v = item(doc, vars)
            if nullish(v):
                return None
            if kind(v) is None and not is_date(v):
                raise type_mismatch(f"$add only supports numeric or date types, not {type_of(v)}")
            total.add(v)
        return total.value()

    return add


def subtract(lhs: Any, rhs: Any) -> Any:
    lk, rk = kind(lhs), kind(rhs)
    if lk is not None and rk is not None:
        widest = max(lk, rk)
        if widest is Kind.DECIMAL:
            return decimal128(DECIMAL.subtract(to_decimal(lhs), to_decimal(rhs)))
        if widest is Kind.DOUBLE:
            return to_double(lhs) - to_double(rhs)
        diff = int(lhs) - int(rhs)
        if widest is Kind.LONG:
            return Int64(diff) if fits_long(diff) else to_double(lhs) - to_double(rhs)
        return int_or_long(diff)
    if nullish(lhs) or nullish(rhs):
        return None
    if is_date(lhs):
        if is_date(rhs):
            return Int64(date_ms(lhs) - date_ms(rhs))
        if rk is None:
            raise type_mismatch(f"can't $subtract {type_of(rhs)} from Date")
        return to_date(_checked_date(date_ms(lhs) - millis_of(rhs)))
    raise type_mismatch(f"can't $subtract {type_of(rhs)} from {type_of(lhs)}")


@EXPR_OPS.register("$subtract")
def expr_subtract(arg: Any, scope: Scope) -> Expr:
    left, right = operands(arg, "$subtract", 2, 2, scope)
    return lambda doc, vars: subtract(left(doc, vars), right(doc, vars))


class _Product:
    __slots__ = ("decimal", "double", "kind", "long")

    def __init__(self) -> None:
        self.double = 1.0
        self.long = 1
        self.decimal = Decimal(1)
        self.kind = Kind.INT

    def multiply(self, value: Any, k: Kind) -> None:
        old, self.kind = self.kind, max(self.kind, k)
        if self.kind is Kind.DECIMAL:
            if old is not Kind.DECIMAL:
                self.decimal = double_to_decimal(self.double) if old is Kind.DOUBLE else Decimal(self.long)
            self.decimal = DECIMAL.multiply(self.decimal, to_decimal(value))
            return
        self.double *= to_double(value)
        if self.kind is not Kind.DOUBLE:
            product = self.long * int(value)
            if fits_long(product):
                self.long = product
            else:
                self.kind = Kind.DOUBLE

    def value(self) -> Any:
        if self.kind is Kind.INT:
            return int_or_long(self.long)
        if self.kind is Kind.LONG:
            return Int64(self.long)
        if self.kind is Kind.DOUBLE:
            return self.double
        return decimal128(self.decimal)


def _multiplied(values: Iterable[Any]) -> Any:
    """The product of ``values`` (read in turn: the first null ends it, unread the rest)."""
    product = _Product()
    for v in values:
        if nullish(v):
            return None
        k = kind(v)
        if k is None:
            raise type_mismatch(f"$multiply only supports numeric types, not {type_of(v)}")
        product.multiply(v, k)
    return product.value()


@EXPR_OPS.register("$multiply")
def expr_multiply(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$multiply", 0, None, scope)
    if len(items) != 2:
        return lambda doc, vars: _multiplied(item(doc, vars) for item in items)
    first, second = items

    def multiply(doc: Any, vars: dict[str, Any]) -> Any:
        # A double by a double or an int (a price by a quantity, say): Python's product, which
        # is 1.0 * a * b as the general path computes it (an int made a double first).
        a = first(doc, vars)
        kind_a = a.__class__
        if kind_a is float or kind_a is int:
            b = second(doc, vars)
            kind_b = b.__class__
            if (kind_a is float and (kind_b is float or kind_b is int)) or (kind_a is int and kind_b is float):
                return a * b
            return _multiplied((a, b))
        return _multiplied(_then(a, second, doc, vars))

    return multiply


def _then(value: Any, expr: Expr, doc: Any, vars: dict[str, Any]) -> Iterator[Any]:
    """``value``, then ``expr``'s value, evaluated only when asked for."""
    yield value
    yield expr(doc, vars)


def divide(lhs: Any, rhs: Any) -> Any:
    lk, rk = kind(lhs), kind(rhs)
    if lk is not None and rk is not None:
        if Kind.DECIMAL in (lk, rk):
            denominator = to_decimal(rhs)
            if denominator.is_zero():
                raise bad_value("can't $divide by zero")
            return decimal128(DECIMAL.divide(to_decimal(lhs), denominator))
        d = to_double(rhs)
        if d == 0:
            raise bad_value("can't $divide by zero")
        return to_double(lhs) / d
    if nullish(lhs) or nullish(rhs):
        return None
    raise type_mismatch(f"$divide only supports numeric types, not {type_of(lhs)} and {type_of(rhs)}")


@EXPR_OPS.register("$divide")
def expr_divide(arg: Any, scope: Scope) -> Expr:
    left, right = operands(arg, "$divide", 2, 2, scope)
    return lambda doc, vars: divide(left(doc, vars), right(doc, vars))


def _c_remainder(a: int, b: int) -> int:
    """C's ``%``: the remainder takes the dividend's sign."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def c_fmod(a: float, b: float) -> float:
    try:
        return math.fmod(a, b)
    except ValueError:  # fmod(inf, b): C answers NaN
        return math.nan


def mod(lhs: Any, rhs: Any) -> Any:
    lk, rk = kind(lhs), kind(rhs)
    if lk is not None and rk is not None:
        if Kind.DECIMAL in (lk, rk):
            divisor = to_decimal(rhs)
            if divisor.is_zero():
                raise location(5733415, "can't $mod by zero")
            return decimal128(DECIMAL.remainder(to_decimal(lhs), divisor))
        right = to_double(rhs)
        if right == 0:
            raise location(16610, "can't $mod by zero")
        # mongod's ExpressionMod: fmod unless the divisor is a double holding an int32 (Value::integral),
        # which divides as an integer: int % 3.0 is an int, long % 3.0 a long.
        if lk is Kind.DOUBLE or (rk is Kind.DOUBLE and not (INT32_MIN <= right <= INT32_MAX and right.is_integer())):
            return c_fmod(to_double(lhs), right)
        remainder = _c_remainder(int(lhs), int(rhs))
        return Int64(remainder) if Kind.LONG in (lk, rk) else remainder
    if nullish(lhs) or nullish(rhs):
        return None
    raise location(16611, f"$mod only supports numeric types, not {type_of(lhs)} and {type_of(rhs)}")


@EXPR_OPS.register("$mod")
def expr_mod(arg: Any, scope: Scope) -> Expr:
    left, right = operands(arg, "$mod", 2, 2, scope)
    return lambda doc, vars: mod(left(doc, vars), right(doc, vars))


NumericFn = Callable[[Any, Kind], Any]


def unary_numeric(name: str) -> Callable[[NumericFn], NumericFn]:
    """Register ``fn(value, kind)`` as a one-operand numeric operator: null and
    missing give null, a non-number raises 28765."""

    def register(fn: NumericFn) -> NumericFn:
        def compile_unary(arg: Any, scope: Scope) -> Expr:
            (operand,) = operands(arg, name, 1, 1, scope)

            def unary(doc: Any, vars: dict[str, Any]) -> Any:
                v = operand(doc, vars)
                if nullish(v):
                    return None
                k = kind(v)
                if k is None:
                    raise location(28765, f"{name} only supports numeric types, not {type_of(v)}")
                return fn(v, k)

            return unary

        compile_unary.__name__ = f"expr_{name[1:]}"
        EXPR_OPS.register(name)(compile_unary)
        return fn

    return register
