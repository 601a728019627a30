"""Numeric functions: $abs $ceil $floor $exp $ln $log $log10 $pow $sqrt
$round $trunc.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#arithmetic-expression-operators

Null or missing gives null; a non-number raises the operator's error. A
decimal operand gives a decimal; otherwise $exp, $ln, $log, $log10 and $sqrt
give doubles, $abs, $ceil, $floor, $round and $trunc keep the operand's type
(an int result that overflows becomes a long), and $pow of integers is an
integer when the result fits a long. $round rounds half to even; both it and
$trunc take a number of decimal places from -20 to 100.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bson import Int64

from foliodb.errors import location
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, INT64_MIN
from foliodb.query.expr.arithmetic import unary_numeric
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, nullish, operands, type_of
from foliodb.query.expr.numeric import (
    DECIMAL,
    Kind,
    coerce_to_long,
    decimal128,
    fits_long,
    int_or_long,
    integral,
    kind,
    show_double,
    to_decimal,
    to_double,
)


@unary_numeric("$abs")
def _abs(v: Any, k: Kind) -> Any:
    if k is Kind.DOUBLE:
        return abs(v)
    if k is Kind.DECIMAL:
        return decimal128(v.to_decimal().copy_abs())
    if v == INT64_MIN:
        raise location(28680, "can't take $abs of long long min")
    return Int64(abs(v)) if k is Kind.LONG else int_or_long(abs(v))


def _round_integral(v: Any, k: Kind, rounding: str) -> Any:
    if k is Kind.DOUBLE:
        if not math.isfinite(v):
            return v
        r = math.floor(v) if rounding == decimal.ROUND_FLOOR else math.ceil(v)
        return float(r) if r != 0 else math.copysign(0.0, v)
    if k is Kind.DECIMAL:
        d = v.to_decimal()
        return v if not d.is_finite() else decimal128(d.quantize(Decimal(1), rounding=rounding, context=DECIMAL))
    return v


@unary_numeric("$ceil")
def _ceil(v: Any, k: Kind) -> Any:
    return _round_integral(v, k, decimal.ROUND_CEILING)


@unary_numeric("$floor")
def _floor(v: Any, k: Kind) -> Any:
    return _round_integral(v, k, decimal.ROUND_FLOOR)


@unary_numeric("$exp")
def _exp(v: Any, k: Kind) -> Any:
    if k is Kind.DECIMAL:
        return decimal128(DECIMAL.exp(v.to_decimal()))
    try:
        return math.exp(to_double(v))
    except OverflowError:
        return math.inf


def _positive_or_nan(x: float) -> bool:
    return x > 0 or x != x


def _positive_decimal(d: Decimal) -> bool:
    """``d > 0``, False for NaN (which the decimal module refuses to order)."""
    return not d.is_nan() and d > 0


def _logarithm(
    name: str, code: int, of_decimal: Callable[[Decimal], Decimal], of_float: Callable[[float], float]
) -> None:
    """A logarithm of a positive number (NaN passes; a positive decimal stays decimal)."""

    @unary_numeric(name)
    def logarithm(v: Any, k: Kind) -> Any:
        if k is Kind.DECIMAL and _positive_decimal(v.to_decimal()):
            return decimal128(of_decimal(v.to_decimal()))
        x = to_double(v)
        if not _positive_or_nan(x):
            raise location(code, f"{name}'s argument must be a positive number, but is {show_double(x)}")
        return of_float(x)


_logarithm("$ln", 28766, DECIMAL.ln, math.log)
_logarithm("$log10", 28761, DECIMAL.log10, math.log10)


@unary_numeric("$sqrt")
def _sqrt(v: Any, k: Kind) -> Any:
    if k is Kind.DECIMAL:
        d = v.to_decimal()
        if not d.is_nan() and d < 0:
            raise location(28714, "$sqrt's argument must be greater than or equal to 0")
        return decimal128(DECIMAL.sqrt(d))
    x = to_double(v)
    if x < 0:
        raise location(28714, "$sqrt's argument must be greater than or equal to 0")
    return math.sqrt(x)


@EXPR_OPS.register("$log")
def expr_log(arg: Any, scope: Scope) -> Expr:
    number, base = operands(arg, "$log", 2, 2, scope)

    def log(doc: Any, vars: dict[str, Any]) -> Any:
        x, b = number(doc, vars), base(doc, vars)
        if nullish(x) or nullish(b):
            return None
        xk, bk = kind(x), kind(b)
        if xk is None:
            raise location(28756, f"$log's argument must be numeric, not {type_of(x)}")
        if bk is None:
            raise location(28757, f"$log's base must be numeric, not {type_of(b)}")
        if Kind.DECIMAL in (xk, bk):
            xd, bd = to_decimal(x), to_decimal(b)
            if _positive_decimal(xd) and _positive_decimal(bd) and bd != 1:
                return decimal128(DECIMAL.divide(DECIMAL.ln(xd), DECIMAL.ln(bd)))
        xf, bf = to_double(x), to_double(b)
        if not _positive_or_nan(xf):
            raise location(28758, f"$log's argument must be a positive number, but is {show_double(xf)}")
        if not ((bf > 0 and bf != 1) or bf != bf):
            raise location(28759, f"$log's base must be a positive number not equal to 1, but is {show_double(bf)}")
        return math.log(xf) / math.log(bf)

    return log


def c_pow(base: float, exponent: float) -> float:
    """C's ``pow``: NaN for a negative base and fractional exponent, a signed
    infinity on overflow."""
    try:
        return math.pow(base, exponent)
    except ValueError:
        return math.nan
    except OverflowError:
        odd = exponent.is_integer() and int(exponent) % 2 == 1
        return -math.inf if base < 0 and odd else math.inf


def power(base: Any, exponent: Any) -> Any:
    bk, ek = kind(base), kind(exponent)
    assert bk is not None and ek is not None
    if Kind.DECIMAL in (bk, ek):
        bd, ed = to_decimal(base), to_decimal(exponent)
        if bd.is_zero() and ed.is_signed():
            raise location(28764, "$pow cannot take a base of 0 and a negative exponent")
        result = DECIMAL.power(bd, ed)
        if result.is_finite() and not result.is_zero():
            # mongod's bid128_pow answers with all 34 digits: 10.0 ** -2 is 0.01000000000000000000000000000000000.
            result = result.quantize(Decimal(1).scaleb(result.adjusted() - 33), context=DECIMAL)
        return decimal128(result)
    bf, ef = to_double(base), to_double(exponent)
    if bf == 0 and ef < 0:
        raise location(28764, "$pow cannot take a base of 0 and a negative exponent")
    if Kind.DOUBLE in (bk, ek):
        return c_pow(bf, ef)
    b, e = int(base), int(exponent)

    def integer(n: int) -> Any:
        return Int64(n) if Kind.LONG in (bk, ek) else int_or_long(n)

    if b in (0, 1):
        return integer(1 if b == 1 or e == 0 else 0)
    if b == -1:
        return integer(1 if e % 2 == 0 else -1)
    if 0 <= e <= 63 and fits_long(b**e):
        return integer(b**e)
    return c_pow(float(b), float(e))


@EXPR_OPS.register("$pow")
def expr_pow(arg: Any, scope: Scope) -> Expr:
    base, exponent = operands(arg, "$pow", 2, 2, scope)

    def pow_(doc: Any, vars: dict[str, Any]) -> Any:
        b, e = base(doc, vars), exponent(doc, vars)
        if nullish(b) or nullish(e):
            return None
        if kind(b) is None:
            raise location(28762, f"$pow's base must be numeric, not {type_of(b)}")
        if kind(e) is None:
            raise location(28763, f"$pow's exponent must be numeric, not {type_of(e)}")
        return power(b, e)

    return pow_


def _round_to(name: str, rounding: str) -> None:
    def compile_round(arg: Any, scope: Scope) -> Expr:
        items = operands(arg, name, 1, 2, scope)
        number = items[0]
        places = items[1] if len(items) == 2 else None

        def round_(doc: Any, vars: dict[str, Any]) -> Any:
            v = number(doc, vars)
            if nullish(v):
                return None
            k = kind(v)
            if k is None:
                raise location(51081, f"{name} only supports numeric types, not {type_of(v)}")
            precision = 0
            if places is not None:
                p = places(doc, vars)
                if nullish(p):
                    return None
                precision = coerce_to_long(p)
                if not integral(p):
                    raise location(51082, f"precision argument to  {name} must be a integral value")
                if not -20 <= precision <= 100:
                    raise location(
                        51083, f"cannot apply {name} with precision value {precision} value must be in [-20, 100]"
                    )
            return _round_value(name, v, k, precision, rounding)

        return round_

    compile_round.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_round)


def _quantize(d: Decimal, precision: int, rounding: str) -> Decimal:
    """mongod's Decimal128::quantize to ``precision`` places: when that would take more than 34
    digits, the value itself, widened to 34 digits (its ``normalize()``), instead."""
    if d.is_finite() and not d.is_zero() and d.adjusted() + precision > 33:
        return d.quantize(Decimal(1).scaleb(d.adjusted() - 33), context=DECIMAL)
    return d.quantize(Decimal(1).scaleb(-precision), rounding=rounding, context=DECIMAL)


def _round_value(name: str, v: Any, k: Kind, precision: int, rounding: str) -> Any:
    quantum = Decimal(1).scaleb(-precision)
    if k is Kind.DECIMAL:
        d = v.to_decimal()
        return v if d.is_infinite() else decimal128(_quantize(d, precision, rounding))
    if k is Kind.DOUBLE:
        d = DECIMAL.create_decimal(Decimal(v)) if math.isfinite(v) else Decimal(v)
        if d.is_infinite():
            return v
        return float(_quantize(d, precision, rounding))
    if precision >= 0:
        return v
    out = Decimal(int(v)).quantize(quantum, rounding=rounding, context=DECIMAL)
    result = int(out) if out.is_finite() else None
    if result is None or not fits_long(result):
        raise location(
            51080, f"invalid conversion from Decimal128 result in {name} resulting from arguments: [{v}, {precision}]"
        )
    if k is Kind.LONG or not INT32_MIN <= result <= INT32_MAX:
        return Int64(result)
    return result


_round_to("$round", decimal.ROUND_HALF_EVEN)
_round_to("$trunc", decimal.ROUND_DOWN)
