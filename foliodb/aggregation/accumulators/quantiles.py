"""$percentile and $median.

With ``method: "approximate"`` MongoDB uses a t-digest; on inputs where every
centroid holds one value (all but large inputs) that returns the *discrete*
percentile, the value at 0-based rank ``ceil(p*n) - 1`` of the sorted numeric
inputs (NaN skipped). FolioDB computes that discrete percentile exactly for
every input size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.accumulators.core import (
    ACCUMULATORS,
    Accumulator,
    const_start,
    constant_value,
    is_numeric,
    to_float,
    value_or_null,
)
from foliodb.errors import location
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.expr.accumulators import check_quantile_spec, discrete_percentile
from foliodb.query.paths import MISSING
from foliodb.query.render import render


class QuantileState:
    """The numeric inputs as doubles; discrete percentiles (see module doc)."""

    __slots__ = ("ps", "single", "values")

    def __init__(self, ps: tuple[float, ...], single: bool) -> None:
        self.ps = ps
        self.single = single
        self.values: list[float] = []

    def add(self, v: Any) -> int:
        if not is_numeric(v):
            return 0
        f = to_float(v)
        if f != f:
            return 0
        self.values.append(f)
        return 16

    def merge(self, other: QuantileState) -> None:
        self.values.extend(other.values)

    def result(self) -> Any:
        found = discrete_percentiles(self.values, self.ps)
        return found[0] if self.single else found


def discrete_percentiles(values: list[float], ps: tuple[float, ...]) -> list[Any]:
    if not values:
        return [None] * len(ps)
    values = sorted(values)
    return [discrete_percentile(values, p) for p in ps]


def quantile_args(name: str, arg: Any, scope: Scope) -> tuple[Expr, tuple[float, ...]]:
    """Parse ``{input, p, method}`` of $percentile / ``{input, method}`` of $median."""
    single = name == "$median"
    if not isinstance(arg, Mapping):
        raise location(7436100 if single else 7429703, f"specification must be an object; found {render(arg)}")
    check_quantile_spec(name, arg)
    value = compile_expression(arg["input"], scope)
    if single:
        return value, (0.5,)
    return value, _percentiles(arg["p"], scope)


def _percentiles(spec: Any, scope: Scope) -> tuple[float, ...]:
    p = constant_value(spec, scope)
    if p is MISSING:
        raise location(
            7750300, f"The $percentile 'p' field must be an array of constant values, but found value: {render(spec)}."
        )
    message = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
    if not isinstance(p, list) or not p:
        raise location(7750301, message + render(value_or_null(p)))
    out = []
    for item in p:
        if not is_numeric(item):
            raise location(7750302, message + render(item))
        f = to_float(item)
        if not 0 <= f <= 1:
            raise location(7750303, message + repr(f))
        out.append(f)
    return tuple(out)


@ACCUMULATORS.register("$percentile")
def acc_percentile(arg: Any, scope: Scope) -> Accumulator:
    value, ps = quantile_args("$percentile", arg, scope)
    return Accumulator("$percentile", value, const_start(lambda: QuantileState(ps, False)))


@ACCUMULATORS.register("$median")
def acc_median(arg: Any, scope: Scope) -> Accumulator:
    value, ps = quantile_args("$median", arg, scope)
    return Accumulator("$median", value, const_start(lambda: QuantileState(ps, True)))
