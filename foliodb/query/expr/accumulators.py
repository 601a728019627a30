"""Accumulator-named expressions over arrays: $sum $avg $max $min $stdDevPop
$stdDevSamp $median $percentile $firstN $lastN $maxN $minN.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/sum/
(and avg/, max/, min/, stdDevPop/, stdDevSamp/, median/, percentile/,
firstN-array-element/, lastN/, maxN-array-element/, minN-array-element/)

With one argument that is an array, $sum...$stdDevSamp take its elements;
otherwise each argument is one value (an array argument among several is a
single non-numeric value). $sum and $avg ignore non-numbers ($sum of none is
0, $avg of none null); $max and $min ignore null and missing; $stdDevPop and
$stdDevSamp use numbers only and give null with too few. $median and
$percentile take numbers of an array (or one number) and answer with the
value at rank ceil(p * n) of the sorted numbers, as MongoDB does for
``method: "approximate"`` on small inputs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from bson import Int64

from foliodb.errors import bad_value, location
from foliodb.query.expr.array import is_array
from foliodb.query.expr.core import (
    EXPR_OPS,
    NOT_CONSTANT,
    Expr,
    Scope,
    compile_expression,
    constant_of,
    is_string,
    nullish,
    operands,
    show,
)
from foliodb.query.expr.numeric import (
    DECIMAL,
    Kind,
    decimal128,
    fits_long,
    int_or_long,
    is_number,
    kind,
    to_double,
    to_long,
)
from foliodb.query.idl import check_fields, wrong_type
from foliodb.query.paths import MISSING
from foliodb.query.render import render


def exact_sum(numbers: list[Any]) -> Any:
    """The sum of non-decimal numbers rounded once, as MongoDB's compensated
    summation gives it: int when all are ints and it fits, long when the
    widest is a long and it fits, else a double."""
    widest = max((kind(x) or Kind.INT for x in numbers), default=Kind.INT)
    if widest is not Kind.DOUBLE:  # integers only: Python's own sum is exact
        whole = sum(int(x) for x in numbers)
        if fits_long(whole):
            return int_or_long(whole) if widest is Kind.INT else Int64(whole)
        return float(whole)
    specials = [x for x in numbers if isinstance(x, float) and not math.isfinite(x)]
    if specials:
        return math.fsum(specials)  # NaN, or an infinity (NaN for inf - inf)
    if all(x.__class__ is float or -_EXACT_INT <= x <= _EXACT_INT for x in numbers):
        # Every number a double as it is: fsum rounds their exact sum once, as the fraction would
        # (a fraction per number was half of a $project summing an array of prices).
        try:
            return math.fsum(numbers)
        except OverflowError:
            pass  # an intermediate sum past the doubles: the fraction decides
    total = sum((Fraction(x) for x in numbers), Fraction(0))
    try:
        return float(total)
    except OverflowError:  # past the largest double: an infinity, as MongoDB's summation gives
        return math.inf if total > 0 else -math.inf


_EXACT_INT = 2**53  # integers up to this size are doubles exactly


def _sum(values: list[Any]) -> Any:
    numbers = [v for v in values if is_number(v)]
    decimals = [v.to_decimal() for v in numbers if kind(v) is Kind.DECIMAL]
    rest = exact_sum([v for v in numbers if kind(v) is not Kind.DECIMAL])
    if not decimals:
        return rest
    total = Decimal(0)
    for d in decimals:
        total = DECIMAL.add(total, d)
    other = rest if isinstance(rest, float) and not math.isfinite(rest) else Fraction(rest)
    extra = Decimal(other) if isinstance(other, float) else DECIMAL.divide(other.numerator, other.denominator)
    return decimal128(DECIMAL.add(total, extra))


def _avg(values: list[Any]) -> Any:
    numbers = [v for v in values if is_number(v)]
    if not numbers:
        return None
    total = _sum(numbers)
    if kind(total) is Kind.DECIMAL:
        return decimal128(DECIMAL.divide(total.to_decimal(), len(numbers)))
    return to_double(total) / len(numbers)


def _extreme(sign: int, compare: Callable[[Any, Any], int]) -> Callable[[list[Any]], Any]:
    def pick(values: list[Any]) -> Any:
        best: Any = MISSING
        for v in values:
            if nullish(v):
                continue
            if best is MISSING or compare(v, best) * sign > 0:
                best = v
        return None if best is MISSING else best

    return pick


def _std_dev(sample: bool) -> Callable[[list[Any]], Any]:
    def std_dev(values: list[Any]) -> Any:
        count, mean, m2 = 0, 0.0, 0.0
        for v in values:
            if not is_number(v):
                continue
            x = to_double(v)
            count += 1
            delta = x - mean
            if delta != 0:
                mean += delta / count
                m2 += delta * (x - mean)
        if count == 0 or (sample and count == 1):
            return None
        return math.sqrt(m2 / (count - 1 if sample else count))

    return std_dev


def _from_accumulator(name: str, make: Callable[[Scope], Callable[[list[Any]], Any]]) -> None:
    """``make(scope)``: the function of the values (given the scope, for its collation)."""

    def compile_accumulator(arg: Any, scope: Scope) -> Expr:
        items = operands(arg, name, 0, None, scope)
        accumulate = make(scope)

        def accumulator(doc: Any, vars: dict[str, Any]) -> Any:
            if len(items) == 1:
                v = items[0](doc, vars)
                return accumulate(list(v) if is_array(v) else [v])
            return accumulate([item(doc, vars) for item in items])

        return accumulator

    compile_accumulator.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_accumulator)


_from_accumulator("$sum", lambda scope: _sum)
_from_accumulator("$avg", lambda scope: _avg)
_from_accumulator("$max", lambda scope: _extreme(1, scope.compare))
_from_accumulator("$min", lambda scope: _extreme(-1, scope.compare))
_from_accumulator("$stdDevPop", lambda scope: _std_dev(False))
_from_accumulator("$stdDevSamp", lambda scope: _std_dev(True))


# --- $median, $percentile --------------------------------------------------------


def check_quantile_spec(name: str, arg: Mapping[str, Any]) -> None:
    """The fields of a $percentile/$median specification and its 'method',
    checked as MongoDB's IDL parser checks them (the accumulators of the
    same names share this)."""
    allowed = ("input", "p", "method") if name == "$percentile" else ("input", "method")
    check_fields(arg, name, allowed, allowed)
    method = arg["method"]
    if not is_string(method):
        raise wrong_type(f"{name}.method", method, "string")
    if method != "approximate":
        raise bad_value("Currently only 'approximate' can be used as percentile 'method'.")


def _percentiles(arg: Any, scope: Scope, name: str, code: int) -> tuple[Expr, list[float]]:
    if not isinstance(arg, Mapping):
        raise location(code, f"specification must be an object; found {name}: {render(arg)}")
    check_quantile_spec(name, arg)
    source = compile_expression(arg["input"], scope)
    if name == "$median":
        return source, [0.5]
    return source, _p_values(arg["p"], scope)


def _p_values(spec: Any, scope: Scope) -> list[float]:
    compile_expression(spec, scope)
    value = constant_of(spec)
    if value is NOT_CONSTANT and isinstance(spec, list):
        value = [constant_of(item) for item in spec]
        if any(v is NOT_CONSTANT for v in value):
            value = NOT_CONSTANT
    if value is NOT_CONSTANT:
        raise location(
            7750300, f"The $percentile 'p' field must be an array of constant values, but found value: {render(spec)}."
        )
    message = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
    if not is_array(value) or not value:
        raise location(7750301, message + show(value))
    ps = []
    for p in value:
        if not is_number(p):
            raise location(7750302, message + show(p))
        x = to_double(p)
        if not 0 <= x <= 1:
            raise location(7750303, message + format(x, "g"))
        ps.append(x)
    return ps


def discrete_percentile(samples: list[float], p: float) -> float:
    """The value of rank ceil(p * n) among the sorted samples."""
    n = len(samples)
    rank = n - 1 if p >= 1 else max(0, math.ceil(p * n) - 1)
    return samples[rank]


def _quantile(name: str, code: int) -> None:
    def compile_quantile(arg: Any, scope: Scope) -> Expr:
        source, ps = _percentiles(arg, scope, name, code)

        def quantile(doc: Any, vars: dict[str, Any]) -> Any:
            v = source(doc, vars)
            if is_number(v):
                samples = [to_double(v)]
            else:
                samples = sorted(to_double(x) for x in v if is_number(x)) if is_array(v) else []
            results = [discrete_percentile(samples, p) if samples else None for p in ps]
            return results[0] if name == "$median" else results

        return quantile

    compile_quantile.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_quantile)


_quantile("$percentile", 7436200)
_quantile("$median", 7436201)


# --- $firstN, $lastN, $maxN, $minN ----------------------------------------------------


def _n_of(value: Any) -> int:
    if not is_number(value):
        raise location(5787902, f"Value for 'n' must be of integral type, but found {show(value)}")
    n = to_long(value)
    if n != to_double(value):
        raise location(5787903, f"Value for 'n' must be of integral type, but found {show(value)}")
    if n <= 0:
        raise location(5787908, f"'n' must be greater than 0, found {n}")
    return n


def _n_operator(name: str, code: int, pick: Callable[[list[Any], int, Any], list[Any]]) -> None:
    """``pick(array, n, key)``: ``key`` orders values by the scope's comparison."""

    def compile_n(arg: Any, scope: Scope) -> Expr:
        if not isinstance(arg, Mapping):
            raise location(code, f"specification must be an object; found {name}: {render(arg)}")
        for key in arg:
            if key not in ("n", "input"):
                raise location(5787901, f"Unknown argument for 'n' operator: {key}")
        if "n" not in arg:
            raise location(5787906, "Missing value for 'n'")
        if "input" not in arg:
            raise location(5787907, "Missing value for 'input'")
        count, source = compile_expression(arg["n"], scope), compile_expression(arg["input"], scope)
        by_value = functools.cmp_to_key(scope.compare)

        def n_values(doc: Any, vars: dict[str, Any]) -> Any:
            n = _n_of(count(doc, vars))
            array = source(doc, vars)
            if not is_array(array):
                raise location(5788200, "Input must be an array")
            return pick(list(array), n, by_value)

        return n_values

    compile_n.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_n)


_n_operator("$firstN", 5787801, lambda a, n, key: a[:n])
_n_operator("$lastN", 5787801, lambda a, n, key: a[-n:])
_n_operator("$maxN", 5787900, lambda a, n, key: sorted((v for v in a if not nullish(v)), key=key, reverse=True)[:n])
_n_operator("$minN", 5787900, lambda a, n, key: sorted((v for v in a if not nullish(v)), key=key)[:n])
