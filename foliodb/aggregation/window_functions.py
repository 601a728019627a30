"""The window-only functions of ``$setWindowFields``: $rank $denseRank
$documentNumber $shift $derivative $integral $expMovingAvg $covariancePop
$covarianceSamp $locf $linearFill.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/setWindowFields/#window-operators

Each is a compiler registered in :data:`foliodb.aggregation.window.WINDOW_FUNCTIONS`
returning a :class:`foliodb.aggregation.window.WindowFunction`. Arithmetic
goes through the expression operators' helpers (``$subtract``, ``$divide``...)
so result types are MongoDB's: a rate or an integral is a double (a decimal
when an input is one), dates subtract to milliseconds. ``$expMovingAvg``
computes in Decimal128 as MongoDB does and returns a double unless an input
was a decimal.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from bson import Decimal128

from foliodb.aggregation.accumulators import ACCUMULATORS, SumState, constant_value, is_numeric
from foliodb.aggregation.window import (
    CALENDAR_MONTHS,
    UNIT_MILLIS,
    WHOLE,
    WINDOW_FUNCTIONS,
    Bounds,
    Doc,
    SortBy,
    VarsFor,
    WindowFunction,
    add_numbers,
    failed,
    is_integral,
    multiply_numbers,
    number_of,
    output_value,
    parse_bounds,
    parse_time_unit,
    range_values,
    split_function,
    window_spans,
)
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.compare import DATE, bracket, compare, is_nan
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.expr.arithmetic import divide, subtract
from foliodb.query.expr.numeric import DECIMAL, decimal128, to_decimal
from foliodb.query.paths import MISSING
from foliodb.query.render import render
from foliodb.query.reshape import get_path

# --- rank family ---------------------------------------------------------------


def _rank_family(name: str) -> None:
    def compile_fn(fn_name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
        if len(spec) != 1:
            raise location(5371601, "Rank style window functions take no other arguments")
        arg = spec[fn_name]
        if not isinstance(arg, Mapping) or arg:
            raise location(5371603, f"{fn_name} must be specified with '{{}}' as the value")
        if sort_by is None or len(sort_by.spec) != 1:
            raise location(
                5371602, f"{fn_name} must be specified with a top level sortBy expression with exactly one element"
            )
        return _Rank(fn_name, sort_by.key)

    compile_fn.__name__ = f"window_{name[1:]}"
    WINDOW_FUNCTIONS.register(name)(compile_fn)


class _Rank(WindowFunction):
    def __init__(self, name: str, key: Callable[[Any], bytes]) -> None:
        self.name = name
        self.key = key

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        if self.name == "$documentNumber":
            return list(range(1, len(partition) + 1))
        out = []
        previous: bytes | None = None
        rank = dense = 0
        for i, doc in enumerate(partition):
            k = self.key(doc)
            if k != previous:
                rank = i + 1
                dense += 1
                previous = k
            out.append(rank if self.name == "$rank" else dense)
        return out


for _name in ("$rank", "$denseRank", "$documentNumber"):
    _rank_family(_name)


# --- $shift ----------------------------------------------------------------------


@WINDOW_FUNCTIONS.register("$shift")
def window_shift(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    arg: Any = MISSING
    for key, value in spec.items():
        if key == "window":
            raise failed("$shift does not accept a 'window' field")
        if key == name:
            arg = value
        elif key in ACCUMULATORS or key in WINDOW_FUNCTIONS:
            raise failed("Cannot specify multiple functions in window function spec")
        else:
            raise failed(f"Window function found an unknown argument: {key}")
    if not isinstance(arg, Mapping):
        raise failed("Argument to $shift must be an object")
    output: Expr | None = None
    by: int | None = None
    default: Any = None
    for key, value in arg.items():
        if key == "output":
            output = compile_expression(value, scope)
        elif key == "default":
            default = constant_value(value, scope)
            if default is MISSING:
                raise failed("'$shift:default' expression must yield a constant value.")
        elif key == "by":
            if not is_numeric(value) or not is_integral(value) or not -(2**31) <= number_of(value) < 2**31:
                raise failed(f"'$shift:by' field must be an integer, but found  by: {render(value)}")
            by = int(number_of(value))
        else:
            raise failed(f"Unknown argument in {name}")
    if output is None:
        raise failed(f"{name} requires an 'output' expression.")
    if by is None:
        raise failed(f"{name} requires 'by' as an integer value.")
    if sort_by is None:
        raise failed(f"'{name}' requires a sortBy")
    return _Shift(output, by, default)


class _Shift(WindowFunction):
    def __init__(self, output: Expr, by: int, default: Any) -> None:
        self.output = output
        self.by = by
        self.default = default

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        n = len(partition)
        out = []
        for i in range(n):
            j = i + self.by
            if 0 <= j < n:
                doc = partition[j]
                out.append(output_value(self.output(doc, vars_for(doc))))
            else:
                out.append(self.default)
        return out


# --- functions with an input and a unit -----------------------------------------


def _single_sort_field(name: str, sort_by: SortBy | None) -> tuple[str, ...]:
    if sort_by is None:
        raise failed(f"{name} requires a sortBy")
    if len(sort_by.spec) != 1:
        raise failed(f"{name} requires a non-compound sortBy")
    if not sort_by.fields:
        raise failed(f"{name} requires a non-expression sortBy")
    return tuple(sort_by.fields[0][0].split("."))


def _unit_args(name: str, arg: Any, scope: Scope) -> tuple[Expr, int | None]:
    if not isinstance(arg, Mapping):
        raise failed(f"{name} expects an object, but got a {type_name(arg)}: {render(arg)}")
    value: Expr | None = None
    unit: int | None = None
    for key, spec in arg.items():
        if key == "input":
            value = compile_expression(spec, scope)
        elif key == "unit":
            if not is_string(spec):
                raise failed(f"unit' must be a string, but got {type_name(spec)}")
            parsed = parse_time_unit(spec)
            if parsed in CALENDAR_MONTHS:
                raise location(5490710, "unit must be 'week' or smaller")
            unit = UNIT_MILLIS[parsed]
        else:
            raise failed(f"{name} got unexpected argument: {key}")
    if value is None:
        raise failed(f"{name} requires an 'input' expression")
    return value, unit


def _window_arg(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> tuple[Any, Bounds | None]:
    arg: Any = MISSING
    bounds: Bounds | None = None
    for key, value in spec.items():
        if key == "window":
            if bounds is not None:
                raise failed(f"There can be only one 'window' field for {name}")
            bounds = parse_bounds(value, sort_by, scope)
        elif key == name:
            arg = value
        else:
            raise failed(f"{name} got unexpected argument: {key}")
    return arg, bounds


class _OverSortField(WindowFunction):
    """A function of (sortBy field, input) points: $derivative, $integral."""

    def __init__(self, value: Expr, unit: int | None, bounds: Bounds, field: tuple[str, ...]) -> None:
        self.value = value
        self.unit = unit  # milliseconds per 'unit' when the sortBy field is a date
        self.bounds = bounds
        self.field = field

    @classmethod
    def compile(
        cls, name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope, bounds_required: bool
    ) -> WindowFunction:
        field = _single_sort_field(name, sort_by)
        arg, bounds = _window_arg(name, spec, sort_by, scope)
        value, unit = _unit_args(name, arg, scope)
        if bounds is None:
            if bounds_required:
                raise failed(f"{name} requires explicit window bounds")
            bounds = WHOLE
        return cls(value, unit, bounds, field)

    def _spans(self, partition: list[Doc]) -> list[tuple[int, int]]:
        """Each document's window as a [lo, hi) range of positions."""
        values = range_values(partition, self.field, self.bounds.unit) if self.bounds.kind == "range" else None
        return window_spans(self.bounds, len(partition), values)


@WINDOW_FUNCTIONS.register("$derivative")
def window_derivative(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    return _Derivative.compile(name, spec, sort_by, scope, bounds_required=True)


class _Derivative(_OverSortField):
    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        out: list[Any] = []
        for lo, hi in self._spans(partition):
            if hi - lo < 1:
                out.append(None)
                continue
            left, right = partition[lo], partition[hi - 1]
            t0, t1 = get_path(left, self.field), get_path(right, self.field)
            if self.unit is not None:
                if bracket(t0) != DATE or bracket(t1) != DATE:
                    raise location(5624900, "$derivative with 'unit' expects the sortBy field to be a Date")
            else:
                if bracket(t0) == DATE or bracket(t1) == DATE:
                    raise location(5624901, "$derivative where the sortBy is a Date requires an 'unit'")
                if not (is_numeric(t0) and is_numeric(t1)):
                    raise location(5624902, "$derivative (with no 'unit') expects the sortBy field to be numeric")
            y0 = output_value(self.value(left, vars_for(left)))
            y1 = output_value(self.value(right, vars_for(right)))
            rise = subtract(y1, y0)
            if rise is None:
                raise location(5624903, "$derivative input must not be null or missing")
            try:
                result = divide(rise, subtract(t1, t0))
            except CommandError as error:
                if error.code != ErrorCode.BadValue:
                    raise
                out.append(None)  # a window of one point: no rate
                continue
            if self.unit is not None:
                result = multiply_numbers(result, self.unit)
            out.append(result)
        return out


@WINDOW_FUNCTIONS.register("$integral")
def window_integral(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    return _Integral.compile(name, spec, sort_by, scope, bounds_required=False)


class _Integral(_OverSortField):
    """Trapezoidal rule over the window's (sortBy, input) points."""

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        points = []
        for doc in partition:
            x = get_path(doc, self.field)
            y = self.value(doc, vars_for(doc))
            if not (is_numeric(y) and (is_numeric(x) or bracket(x) == DATE)):
                raise location(
                    5423900,
                    "The input value of $integral window function must be a vector of 2 value, the first value "
                    "must be numeric or date type and the second must be numeric.",
                )
            if self.unit is not None and bracket(x) != DATE:
                raise location(5423901, "$integral with 'outputUnit' expects the sortBy field to be a Date")
            if self.unit is None and not is_numeric(x):
                raise location(5423902, "$integral (with no 'outputUnit') expects the sortBy field to be numeric")
            points.append((x, y))
        # Area of each segment between consecutive documents (MongoDB's
        # trapezoid: (y0 + y1) * (x1 - x0) / 2.0, zero where a value is NaN).
        segments = [_trapezoid(points[i - 1], points[i]) for i in range(1, len(points))]
        nan = [any(is_nan(v) for v in point) for point in points]
        out: list[Any] = []
        for lo, hi in self._spans(partition):
            if hi - lo < 1:
                out.append(None)
                continue
            if any(nan[lo:hi]):
                out.append(math.nan)
                continue
            total = SumState()
            for segment in segments[lo : hi - 1]:
                total.add(segment)
            result = total.result()
            out.append(result if self.unit is None else divide(result, self.unit))
        return out


def _trapezoid(p0: tuple[Any, Any], p1: tuple[Any, Any]) -> Any:
    (x0, y0), (x1, y1) = p0, p1
    if any(is_nan(v) for v in (x0, y0, x1, y1)):
        return 0
    return divide(multiply_numbers(add_numbers(y0, y1), subtract(x1, x0)), 2.0)


# --- $expMovingAvg ----------------------------------------------------------------


@WINDOW_FUNCTIONS.register("$expMovingAvg")
def window_expMovingAvg(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    arg = spec.get(name)
    if len(spec) != 1 or not isinstance(arg, Mapping):
        raise failed("$expMovingAvg must have exactly one argument that is an object")
    if len(arg) != 2 or "input" not in arg:
        raise failed(
            "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or "
            "an 'alpha' field"
        )
    if sort_by is None:
        raise failed("$expMovingAvg requires an explicit 'sortBy'")
    value = compile_expression(arg["input"], scope)
    if "N" in arg:
        n = arg["N"]
        if not is_numeric(n):
            raise failed(f"'N' field must be an integer, but found type {type_name(n)}")
        if not is_integral(n):
            raise failed(
                f"'N' field must be an integer, but found  N: {render(n)}. To use a non-integer, use the "
                "'alpha' argument instead"
            )
        if int(number_of(n)) <= 0:
            raise failed(f"'N' must be greater than zero. Got {int(number_of(n))}")
        alpha = DECIMAL.divide(Decimal(2), Decimal(int(number_of(n)) + 1))
    elif "alpha" in arg:
        a = arg["alpha"]
        if not is_numeric(a):
            raise failed("'alpha' must be a number")
        alpha = to_decimal(a)
        if not 0 < alpha < 1:
            raise failed(f"'alpha' must be between 0 and 1 (exclusive), found alpha: {render(a)}")
    else:
        raise failed(
            "Got unrecognized field in $expMovingAvg$expMovingAvg sub object must have exactly two fields: An "
            "'input' field, and either an 'N' field or an 'alpha' field"
        )
    return _ExpMovingAvg(value, alpha)


class _ExpMovingAvg(WindowFunction):
    def __init__(self, value: Expr, alpha: Decimal) -> None:
        self.value = value
        self.alpha = alpha

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        out: list[Any] = []
        current: Decimal | None = None
        decimal = False
        keep = DECIMAL.subtract(Decimal(1), self.alpha)
        for doc in partition:
            v = self.value(doc, vars_for(doc))
            if is_numeric(v):
                decimal = decimal or v.__class__ is Decimal128
                x = to_decimal(v)
                if current is None:
                    current = x
                else:
                    current = DECIMAL.add(DECIMAL.multiply(x, self.alpha), DECIMAL.multiply(current, keep))
            if current is None:
                out.append(None)
            else:
                out.append(decimal128(current) if decimal else float(current))
        return out


# --- covariance ----------------------------------------------------------------------


def _covariance(name: str, sample: bool) -> None:
    def compile_fn(fn_name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
        arg, bounds = split_function(fn_name, spec, sort_by, scope)
        return _Covariance(compile_expression(arg, scope), sample, bounds or WHOLE, sort_by)

    compile_fn.__name__ = f"window_{name[1:]}"
    WINDOW_FUNCTIONS.register(name)(compile_fn)


class _Covariance(WindowFunction):
    def __init__(self, value: Expr, sample: bool, bounds: Bounds, sort_by: SortBy | None) -> None:
        self.value = value
        self.sample = sample
        self.bounds = bounds
        self.field = tuple(sort_by.fields[0][0].split(".")) if bounds.kind == "range" and sort_by else None

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        pairs: list[tuple[float, float] | None] = []
        for doc in partition:
            v = self.value(doc, vars_for(doc))
            if isinstance(v, list) and len(v) == 2 and is_numeric(v[0]) and is_numeric(v[1]):
                pairs.append((float(number_of(v[0])), float(number_of(v[1]))))
            else:
                pairs.append(None)
        values = range_values(partition, self.field, self.bounds.unit) if self.field is not None else None
        out: list[Any] = []
        for lo, hi in window_spans(self.bounds, len(partition), values):
            window = [p for p in pairs[lo:hi] if p is not None]
            n = len(window)
            if n == 0 or (self.sample and n < 2):
                out.append(None)
                continue
            mx = math.fsum(x for x, _ in window) / n
            my = math.fsum(y for _, y in window) / n
            c = math.fsum((x - mx) * (y - my) for x, y in window)
            out.append(c / (n - 1 if self.sample else n))
        return out


_covariance("$covariancePop", False)
_covariance("$covarianceSamp", True)


# --- gap filling ----------------------------------------------------------------------


@WINDOW_FUNCTIONS.register("$locf")
def window_locf(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    arg, _ = split_function(name, spec, sort_by, scope, window_allowed=False)
    return _Locf(compile_expression(arg, scope))


class _Locf(WindowFunction):
    def __init__(self, value: Expr) -> None:
        self.value = value

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        out = []
        last: Any = None
        for doc in partition:
            v = self.value(doc, vars_for(doc))
            if v is not None and v is not MISSING:
                last = v
            out.append(last)
        return out


@WINDOW_FUNCTIONS.register("$linearFill")
def window_linearFill(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    arg, _ = split_function(name, spec, sort_by, scope, window_allowed=False)
    if sort_by is None or len(sort_by.spec) != 1:
        raise location(605001, f"{name} must be specified with a top level sortBy expression with exactly one element")
    field = tuple(sort_by.fields[0][0].split(".")) if sort_by.fields else ()
    return _LinearFill(compile_expression(arg, scope), field)


class _LinearFill(WindowFunction):
    def __init__(self, value: Expr, field: tuple[str, ...]) -> None:
        self.value = value
        self.field = field

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        xs: list[Any] = []
        ys: list[Any] = []
        for doc in partition:
            x = get_path(doc, self.field)
            if not (is_numeric(x) or bracket(x) == DATE):
                raise location(6050106, "The sortBy field must be numeric or a date for $linearFill")
            if xs and compare(xs[-1], x) == 0:
                raise location(6050102, "There can be no repeated values in the sort field")
            y = self.value(doc, vars_for(doc))
            if y is not None and y is not MISSING and not is_numeric(y):
                raise location(6050103, "Value to be filled must be numeric or nullish")
            xs.append(x)
            ys.append(None if y is MISSING else y)
        out: list[Any] = list(ys)
        known = [i for i, y in enumerate(ys) if y is not None]
        for a, b in itertools.pairwise(known):
            slope = divide(subtract(ys[b], ys[a]), subtract(xs[b], xs[a]))
            for i in range(a + 1, b):
                out[i] = add_numbers(ys[a], multiply_numbers(slope, subtract(xs[i], xs[a])))
        return out
