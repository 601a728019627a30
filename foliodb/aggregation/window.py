"""Window functions of ``$setWindowFields``.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/setWindowFields/

A window function compiles once (``compile_window_function(spec, sort_by,
scope)``, where ``spec`` is ``{"$fn": arg, "window": {...}}``) into a
:class:`WindowFunction`; ``compute(partition, vars_for)`` returns one output
value per document of a partition (a list of documents in ``sortBy`` order).

Windows (:class:`Bounds`):

* ``documents: [lo, hi]`` - positions relative to the current document
  (``"current"`` is 0, ``"unbounded"`` the partition's edge);
* ``range: [lo, hi]`` - the documents whose single ascending ``sortBy`` value
  lies within the current value plus ``lo`` and ``hi``; with ``unit`` the
  values are dates and the offsets whole units (month, quarter and year are
  calendar steps);
* the default is the whole partition.

Every accumulator is a window function (empty windows give the
accumulator's empty result: 0 for ``$sum``/``$count``, null for ``$avg``,
``[]`` for ``$push``...). A window unbounded below is accumulated
incrementally; a bounded one is recomputed per document. The window-only
functions are ``$rank $denseRank $documentNumber $shift $derivative
$integral $expMovingAvg $covariancePop $covarianceSamp $locf $linearFill``.
Parse errors follow MongoDB's ``window_function_expression.cpp`` and
``window_bounds.cpp`` (mostly FailedToParse, 9).
"""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bson import Decimal128, Int64

from foliodb.aggregation.accumulators import ACCUMULATORS, GROUP_ONLY, Accumulator, constant_value, is_numeric
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.collation import Collator
from foliodb.query.compare import DATE, bracket, compare, date_millis
from foliodb.query.expr import Scope
from foliodb.query.expr.date_math import date_add
from foliodb.query.expr.numeric import DECIMAL, Kind, decimal128, fits_long, int_or_long, kind, to_decimal, to_double
from foliodb.query.expr.timezones import UTC, to_date
from foliodb.query.paths import MISSING
from foliodb.query.registry import Registry
from foliodb.query.render import render
from foliodb.query.reshape import get_path
from foliodb.query.sort import compile_sort

Doc = dict[str, Any]
VarsFor = Callable[[Any], dict[str, Any]]


def failed(message: str) -> CommandError:
    return CommandError(ErrorCode.FailedToParse, message)


# ---------------------------------------------------------------------------
# Bounds

UNBOUNDED = "unbounded"
CURRENT = "current"

# Fixed-length units in milliseconds; longer ones are calendar steps.
UNIT_MILLIS = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
CALENDAR_MONTHS = {"month": 1, "quarter": 3, "year": 12}
TIME_UNITS = frozenset(UNIT_MILLIS) | frozenset(CALENDAR_MONTHS)


def parse_time_unit(value: Any) -> str:
    if not is_string(value) or value not in TIME_UNITS:
        raise CommandError(
            ErrorCode.FailedToParse,
            f"unknown time unit value: {render(value) if not is_string(value) else value}",
        )
    return value


@dataclass(frozen=True, slots=True)
class SortBy:
    spec: Mapping[str, Any]
    key: Callable[[Any], bytes]
    fields: tuple[tuple[str, int], ...]  # (path, direction) of plain field parts


@dataclass(frozen=True, slots=True)
class Bounds:
    kind: str  # "documents" or "range"
    lower: Any  # UNBOUNDED, CURRENT or a number
    upper: Any
    unit: str | None = None

    @property
    def whole(self) -> bool:
        return self.lower == UNBOUNDED and self.upper == UNBOUNDED


WHOLE = Bounds("documents", UNBOUNDED, UNBOUNDED)


def _bound(spec: Any, scope: Scope, check: Callable[[Any], Any]) -> Any:
    if is_string(spec):
        if spec in (UNBOUNDED, CURRENT):
            return spec
        raise failed("Window bounds must be 'unbounded', 'current', or a number.")
    value = constant_value(spec, scope)
    if value is MISSING:
        raise failed("Window bounds expression must be a constant.")
    return check(value)


def _forward(lower: Any, upper: Any) -> None:
    lo = 0 if lower == CURRENT else lower
    hi = 0 if upper == CURRENT else upper
    if lo != UNBOUNDED and hi != UNBOUNDED and compare(lo, hi) > 0:
        raise location(5339900, f"Lower bound must not exceed upper bound: [{render(lo)}, {render(hi)}]")


def parse_bounds(spec: Any, sort_by: SortBy | None, scope: Scope) -> Bounds:
    if not isinstance(spec, Mapping):
        raise failed("'window' field must be an object")
    documents = spec.get("documents", MISSING)
    range_spec = spec.get("range", MISSING)
    unit = spec.get("unit", MISSING)
    if documents is not MISSING and range_spec is not MISSING:
        raise failed("Window bounds can specify either 'documents' or 'unit', not both.")
    if range_spec is MISSING and unit is not MISSING:
        raise failed("Window bounds can only specify 'unit' with range-based bounds.")
    if documents is MISSING and range_spec is MISSING:
        if spec:
            raise failed(
                "'window' field can only contain 'documents' as the only argument or 'range' with an optional "
                "'unit' field"
            )
        return WHOLE

    def pair(value: Any) -> tuple[Any, Any]:
        if not isinstance(value, list) or len(value) != 2:
            raise failed(f"Window bounds must be a 2-element array: {render(value)}")
        return value[0], value[1]

    if documents is not MISSING:
        if len(spec) != 1:
            raise failed("'window' field that specifies documents cannot have other fields")
        lo_spec, hi_spec = pair(documents)

        def integral(v: Any) -> int:
            if not is_numeric(v) or not is_integral(v):
                raise failed("Numeric document-based bounds must be an integer")
            return int(number_of(v))

        lower, upper = _bound(lo_spec, scope, integral), _bound(hi_spec, scope, integral)
        _forward(lower, upper)
        bounds = Bounds("documents", lower, upper)
        if not bounds.whole and sort_by is None:
            raise location(5339901, "Document-based bounds require a sortBy")
        return bounds
    lo_spec, hi_spec = pair(range_spec)
    time_unit = None
    if unit is not MISSING:
        if len(spec) != 2:
            raise failed("'window' field that specifies unit cannot have other fields besides 'range'")
        if not is_string(unit):
            raise failed("'unit' must be a string")
        time_unit = parse_time_unit(unit)

        def whole(v: Any) -> Any:
            if not is_numeric(v) or not is_integral(v):
                raise failed("With 'unit', range-based bounds must be an integer")
            return v

        lower, upper = _bound(lo_spec, scope, whole), _bound(hi_spec, scope, whole)
    else:
        if len(spec) != 1:
            raise failed("'window' field that specifies range cannot have other fields besides 'unit'")

        def number(v: Any) -> Any:
            if not is_numeric(v):
                raise failed("Range-based bounds expression must be a number")
            return v

        lower, upper = _bound(lo_spec, scope, number), _bound(hi_spec, scope, number)
    _forward(lower, upper)
    if sort_by is None or len(sort_by.spec) != 1:
        raise location(5339902, "Range-based bounds require sortBy a single field")
    if not sort_by.fields:
        raise location(8947400, "Range-based bounds require a non-expression sortBy")
    if sort_by.fields[0][1] != 1:
        raise location(8947401, "Range-based bounds require an ascending sortBy")
    return Bounds("range", lower, upper, time_unit)


def number_of(v: Any) -> Any:
    return v.to_decimal() if v.__class__ is Decimal128 else v


def is_integral(v: Any) -> bool:
    n = number_of(v)
    if isinstance(n, float):
        return math.isfinite(n) and n == int(n)
    if isinstance(n, Decimal):
        return n.is_finite() and n == n.to_integral_value()
    return True


def add_time(value: Any, unit: str, amount: int) -> Any:
    """``$dateAdd`` in UTC: a date moved by ``amount`` units."""
    return to_date(date_add(date_millis(value), unit, amount, UTC))


def add_numbers(a: Any, b: Any) -> Any:
    """``$add`` of two numbers (int -> long -> double -> decimal widening)."""
    widest = max(kind(a), kind(b))  # type: ignore[type-var]
    if widest is Kind.DECIMAL:
        return decimal128(DECIMAL.add(to_decimal(a), to_decimal(b)))
    if widest is Kind.DOUBLE:
        return to_double(a) + to_double(b)
    total = int(a) + int(b)
    if not fits_long(total):
        return float(total)  # the exact sum rounded once, as $add's
    return Int64(total) if widest is Kind.LONG else int_or_long(total)


def multiply_numbers(a: Any, b: Any) -> Any:
    """``$multiply`` of two numbers."""
    widest = max(kind(a), kind(b))  # type: ignore[type-var]
    if widest is Kind.DECIMAL:
        return decimal128(DECIMAL.multiply(to_decimal(a), to_decimal(b)))
    if widest is Kind.DOUBLE:
        return to_double(a) * to_double(b)
    product = int(a) * int(b)
    if not fits_long(product):
        return to_double(a) * to_double(b)
    return Int64(product) if widest is Kind.LONG else int_or_long(product)


def window_spans(bounds: Bounds, n: int, sort_values: list[Any] | None) -> list[tuple[int, int]]:
    """``(first, last + 1)`` positions of each document's window."""
    if bounds.kind == "documents":
        spans = []
        for i in range(n):
            lo = 0 if bounds.lower == UNBOUNDED else max(0, i + (0 if bounds.lower == CURRENT else bounds.lower))
            hi = n if bounds.upper == UNBOUNDED else min(n, i + (0 if bounds.upper == CURRENT else bounds.upper) + 1)
            spans.append((lo, max(lo, hi)))
        return spans
    assert sort_values is not None
    keys = [keystring.encode(v) for v in sort_values]
    spans = []
    for value in sort_values:
        if bounds.lower == UNBOUNDED:
            lo = 0
        else:
            lo = bisect.bisect_left(keys, keystring.encode(_offset(value, bounds.lower, bounds.unit)))
        if bounds.upper == UNBOUNDED:
            hi = n
        else:
            hi = bisect.bisect_right(keys, keystring.encode(_offset(value, bounds.upper, bounds.unit)))
        spans.append((lo, max(lo, hi)))
    return spans


def _offset(value: Any, delta: Any, unit: str | None) -> Any:
    if delta == CURRENT:
        return value
    if unit is not None:
        return add_time(value, unit, int(number_of(delta)))
    return add_numbers(value, delta)


def range_values(partition: list[Doc], field: tuple[str, ...], unit: str | None) -> list[Any]:
    """The sortBy value of every document of a range window's partition."""
    values = []
    for doc in partition:
        value = get_path(doc, field)
        if unit is None:
            if not is_numeric(value):
                raise location(
                    5429414, f"Invalid range: Expected the sortBy field to be a number, but it was {_kind(value)}"
                )
        elif bracket(value) != DATE if value is not MISSING else True:
            raise location(5429513, f"Invalid range: Expected the sortBy field to be a Date, but it was {_kind(value)}")
        values.append(value)
    return values


def _kind(value: Any) -> str:
    return "missing" if value is MISSING else type_name(value)


# ---------------------------------------------------------------------------
# Window functions


class WindowFunction(ABC):
    """Computes one output field for every document of a partition."""

    @abstractmethod
    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]: ...


WindowCompiler = Callable[[str, Mapping[str, Any], "SortBy | None", Scope], WindowFunction]


def _unknown_function(name: str) -> CommandError:
    return failed(f"Unrecognized window function, {name}")


WINDOW_FUNCTIONS: Registry[WindowCompiler] = Registry("window function", _unknown_function, unbuilt=("$minMaxScalar",))


def compile_window_function(spec: Any, sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    """Compile one output entry ``{"$fn": arg, "window": {...}}``."""
    name = next((key for key in spec if key.startswith("$")), None)
    if name is None:
        first = next(iter(spec), "")
        raise failed("Expected a $-prefixed window function" + (f", {first}" if first else ""))
    if name in ACCUMULATORS and name not in WINDOW_FUNCTIONS and name not in GROUP_ONLY:
        return _from_accumulator(name, spec, sort_by, scope)
    return WINDOW_FUNCTIONS.get(name)(name, spec, sort_by, scope)


def split_function(
    name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope, window_allowed: bool = True
) -> tuple[Any, Bounds | None]:
    """(the function's argument, its bounds or None when not given)."""
    arg: Any = MISSING
    bounds: Bounds | None = None
    for key, value in spec.items():
        if key == "window":
            if not window_allowed:
                raise failed(f"'window' field is not allowed in {name}")
            if bounds is not None:
                raise failed(f"saw multiple 'window' fields in '{name}' expression")
            bounds = parse_bounds(value, sort_by, scope)
        elif key == name:
            arg = value
        elif key.startswith("$") and (key in ACCUMULATORS or key in WINDOW_FUNCTIONS):
            raise failed("Cannot specify two functions in window function spec")
        else:
            raise failed(f"Window function found an unknown argument: {key}")
    return arg, bounds


class _Accumulating(WindowFunction):
    def __init__(self, acc: Accumulator, bounds: Bounds, sort_by: SortBy | None) -> None:
        self.acc = acc
        self.bounds = bounds
        self.field = tuple(sort_by.fields[0][0].split(".")) if bounds.kind == "range" and sort_by else None

    def compute(self, partition: list[Doc], vars_for: VarsFor) -> list[Any]:
        acc = self.acc
        n = len(partition)
        inputs = [acc.input(doc, vars_for(doc)) for doc in partition]
        start_vars = vars_for({})

        def fresh() -> Any:
            return acc.start({}, start_vars)

        if self.bounds.whole:
            state = fresh()
            for v in inputs:
                state.add(v)
            result = output_value(state.result())
            return [result] * n
        values = range_values(partition, self.field, self.bounds.unit) if self.field is not None else None
        spans = window_spans(self.bounds, n, values)
        out = []
        if self.bounds.lower == UNBOUNDED:
            state = fresh()
            added = 0
            for _, hi in spans:
                while added < hi:
                    state.add(inputs[added])
                    added += 1
                out.append(output_value(state.result()))
            return out
        for lo, hi in spans:
            state = fresh()
            for v in inputs[lo:hi]:
                state.add(v)
            out.append(output_value(state.result()))
        return out


def output_value(value: Any) -> Any:
    return None if value is MISSING else value


def _from_accumulator(name: str, spec: Mapping[str, Any], sort_by: SortBy | None, scope: Scope) -> WindowFunction:
    arg, bounds = split_function(name, spec, sort_by, scope)
    acc = ACCUMULATORS.get(name)(arg, scope)
    return _Accumulating(acc, bounds or WHOLE, sort_by)


def sort_by_spec(spec: Any, collator: Collator | None = None) -> SortBy:
    sort = compile_sort(spec, stage=True, collator=collator)
    fields = tuple((path, direction) for path, direction in sort.fields) if not sort.meta_fields else ()
    return SortBy(spec, sort.key, fields)


# Register the window-only functions.
from foliodb.aggregation import window_functions  # noqa: E402,F401
