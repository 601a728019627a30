"""Trigonometry expressions: $sin $cos $tan $asin $acos $atan $atan2 $sinh
$cosh $tanh $asinh $acosh $atanh $degreesToRadians $radiansToDegrees.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#trigonometry-expression-operators

Integers and doubles give a double, a decimal gives a decimal (computed with
guard digits, then rounded to 34). Null or missing gives null; NaN gives
NaN. An input outside an operator's domain raises 50989, naming the domain
as MongoDB prints it (``[-1,1]``, ``(-inf,inf)``).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bson import Decimal128

from foliodb.errors import location
from foliodb.query.expr.arithmetic import unary_numeric
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, nullish, operands, type_of
from foliodb.query.expr.numeric import DECIMAL, Kind, decimal128, kind, show_double, to_decimal, to_double

_PI = Decimal("3.1415926535897932384626433832795028841971693993751058209749445923")
PI_OVER_180 = Decimal128("0.01745329251994329576923690768488613")
_180_OVER_PI = Decimal128("57.29577951308232087679815481410517")


# Decimal functions run in this context (see _register), 26 guard digits.
_GUARD = decimal.Context(prec=60, Emax=999999, Emin=-999999, traps=[])
_TINY = Decimal("1e-70")


def _sin_cos(x: Decimal) -> tuple[Decimal, Decimal]:
    # Reduce to about [-pi, pi] with enough digits for a large angle.
    wide = decimal.Context(prec=60 + max(0, x.adjusted()), traps=[])
    two_pi = 2 * _PI
    x = wide.subtract(x, wide.multiply(two_pi, wide.divide_int(wide.add(x, _PI), two_pi)))
    sin, cos = Decimal(0), Decimal(0)
    term_s, term_c, n, square = x, Decimal(1), 0, x * x
    while abs(term_s) > _TINY or abs(term_c) > _TINY:
        sin, cos = sin + term_s, cos + term_c
        n += 2
        term_s = -term_s * square / ((n + 1) * n)
        term_c = -term_c * square / (n * (n - 1))
    return sin, cos


def _tan(x: Decimal) -> Decimal:
    sin, cos = _sin_cos(x)
    return sin / cos


def _atan(x: Decimal) -> Decimal:
    if x.is_infinite():
        return (_PI / 2).copy_sign(x)
    if abs(x) > 1:
        return (_PI / 2).copy_sign(x) - _atan(1 / x)
    for _ in range(3):  # atan(x) = 2 atan(x / (1 + sqrt(1 + x^2))) shrinks x
        x = x / (1 + (1 + x * x).sqrt())
    total, term, n, square = Decimal(0), x, 1, x * x
    while abs(term) > _TINY:
        total += term / n
        term = -term * square
        n += 2
    return total * 8


def _asin(x: Decimal) -> Decimal:
    if abs(x) == 1:
        return (_PI / 2).copy_sign(x)
    return _atan(x / (1 - x * x).sqrt())


def _sinh(x: Decimal) -> Decimal:
    return (x.exp() - (-x).exp()) / 2


def _cosh(x: Decimal) -> Decimal:
    return (x.exp() + (-x).exp()) / 2


def _tanh(x: Decimal) -> Decimal:
    return Decimal(1).copy_sign(x) if abs(x) > 100 else _sinh(x) / _cosh(x)


def _asinh(x: Decimal) -> Decimal:
    if x.is_infinite():
        return x
    return -_asinh(-x) if x < 0 else (x + (x * x + 1).sqrt()).ln()


def _acosh(x: Decimal) -> Decimal:
    return x if x.is_infinite() else (x + (x * x - 1).sqrt()).ln()


def _atanh(x: Decimal) -> Decimal:
    if abs(x) == 1:
        return Decimal("Infinity").copy_sign(x)
    return ((1 + x) / (1 - x)).ln() / 2


def _c(fn: Callable[[float], float]) -> Callable[[float], float]:
    """A math function with C's answers where Python raises."""

    def c_fn(x: float) -> float:
        try:
            return fn(x)
        except OverflowError:
            return math.copysign(math.inf, x) if fn is not math.cosh else math.inf
        except ValueError:  # atanh(+-1)
            return math.copysign(math.inf, x)

    return c_fn


Domain = tuple[float, float, bool]  # low, high, closed
# name: (double function, decimal function, domain or None)
_FUNCTIONS: dict[str, tuple[Callable[[float], float], Callable[[Decimal], Decimal], Domain | None]] = {
    "$sin": (math.sin, lambda x: _sin_cos(x)[0], (-math.inf, math.inf, False)),
    "$cos": (math.cos, lambda x: _sin_cos(x)[1], (-math.inf, math.inf, False)),
    "$tan": (math.tan, _tan, (-math.inf, math.inf, False)),
    "$asin": (math.asin, _asin, (-1.0, 1.0, True)),
    "$acos": (math.acos, lambda x: _PI / 2 - _asin(x), (-1.0, 1.0, True)),
    "$atanh": (_c(math.atanh), _atanh, (-1.0, 1.0, True)),
    "$acosh": (math.acosh, _acosh, (1.0, math.inf, True)),
    "$atan": (math.atan, _atan, None),
    "$asinh": (math.asinh, _asinh, None),
    "$sinh": (_c(math.sinh), _sinh, None),
    "$cosh": (_c(math.cosh), _cosh, None),
    "$tanh": (math.tanh, _tanh, None),
}


def _check_domain(name: str, x: float | Decimal, domain: Domain) -> None:
    low, high, closed = domain
    inside = low <= x <= high if closed else low < x < high
    if not inside:
        shown = str(x) if isinstance(x, Decimal) else show_double(x)
        left, right = ("[", "]") if closed else ("(", ")")
        bounds = f"{left}{show_double(low)},{show_double(high)}{right}"
        raise location(50989, f"cannot apply {name} to {shown}, value must in {bounds}")


def _register(name: str) -> None:
    double_fn, decimal_fn, domain = _FUNCTIONS[name]

    def trig(v: Any, k: Kind) -> Any:
        if k is Kind.DECIMAL:
            d = v.to_decimal()
            if d.is_nan():
                return v
            if domain is not None:
                _check_domain(name, d, domain)
            with decimal.localcontext(_GUARD):
                return decimal128(decimal_fn(d))
        x = to_double(v)
        if x != x:
            return v
        if domain is not None:
            _check_domain(name, x, domain)
        return double_fn(x)

    unary_numeric(name)(trig)


for _name in _FUNCTIONS:
    _register(_name)


def _atan2_decimal(y: Decimal, x: Decimal) -> Decimal:
    if y.is_nan() or x.is_nan():
        return Decimal("NaN")
    if x.is_zero():
        return Decimal(0) if y.is_zero() else (_PI / 2).copy_sign(y)
    base = _atan(y / x)
    if x > 0:
        return base
    return base + _PI if not y.is_signed() else base - _PI


@EXPR_OPS.register("$atan2")
def expr_atan2(arg: Any, scope: Scope) -> Expr:
    first, second = operands(arg, "$atan2", 2, 2, scope)

    def atan2(doc: Any, vars: dict[str, Any]) -> Any:
        y = first(doc, vars)
        if nullish(y):
            return None
        if kind(y) is None:
            raise location(51044, f"$atan2 only supports numeric types, not {type_of(y)}")
        x = second(doc, vars)
        if nullish(x):
            return None
        if kind(x) is None:
            raise location(51045, f"$atan2 only supports numeric types, not {type_of(x)}")
        if Kind.DECIMAL in (kind(y), kind(x)):
            with decimal.localcontext(_GUARD):
                return decimal128(_atan2_decimal(to_decimal(y), to_decimal(x)))
        return math.atan2(to_double(y), to_double(x))

    return atan2


@unary_numeric("$degreesToRadians")
def _to_radians(v: Any, k: Kind) -> Any:
    if k is Kind.DECIMAL:
        return decimal128(DECIMAL.multiply(v.to_decimal(), PI_OVER_180.to_decimal()))
    return to_double(v) * (math.pi / 180.0)


@unary_numeric("$radiansToDegrees")
def _to_degrees(v: Any, k: Kind) -> Any:
    if k is Kind.DECIMAL:
        return decimal128(DECIMAL.multiply(v.to_decimal(), _180_OVER_PI.to_decimal()))
    return to_double(v) * (180.0 / math.pi)
