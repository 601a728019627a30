"""$sum $avg $stdDevPop $stdDevSamp $count.

Result types as MongoDB's: ``$sum`` of int32 stays int32 and widens to int64
(``bson.Int64``), then to double on int64 overflow; any double makes it a
double, any Decimal128 a decimal. Doubles are summed exactly and rounded
once. ``$avg`` is a double (decimal if any input is), null with no numeric
input. Non-numbers are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from bson import Decimal128, Int64

from foliodb.aggregation.accumulators.core import (
    ACCUMULATORS,
    DECIMAL,
    Accumulator,
    const_start,
    is_numeric,
    register_simple,
    to_float,
)
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from foliodb.query.expr import Scope

_INT, _LONG, _DOUBLE, _DEC = 0, 1, 2, 3


class SumState:
    """Exact running sum of numbers of mixed BSON types: integers in a Python
    int, finite doubles as Shewchuk's non-overlapping partials (exact, like
    ``math.fsum``), decimals in Decimal128 arithmetic; rounded once at the end."""

    __slots__ = ("count", "dec", "inf", "ints", "nan", "ninf", "partials", "widest")

    def __init__(self) -> None:
        self.widest = _INT
        self.ints = 0
        self.partials: list[float] = []
        self.dec = Decimal(0)
        self.nan = self.inf = self.ninf = False
        self.count = 0  # numeric inputs seen

    def add(self, v: Any) -> int:
        cls = v.__class__
        if cls is int:
            self.ints += v
            if self.widest == _INT and not INT32_MIN <= v <= INT32_MAX:
                self.widest = _LONG
        elif cls is float:
            if v - v == 0.0:  # finite
                self._add_double(v)
            elif v != v:
                self.nan = True
            elif v > 0:
                self.inf = True
            else:
                self.ninf = True
            if self.widest < _DOUBLE:
                self.widest = _DOUBLE
        elif cls is Int64:
            self.ints += int(v)
            if self.widest < _LONG:
                self.widest = _LONG
        elif cls is Decimal128:
            self.dec = DECIMAL.add(self.dec, v.to_decimal())
            self.widest = _DEC
        else:
            return 0
        self.count += 1
        return 0

    def _add_double(self, x: float) -> None:
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def merge(self, other: SumState) -> None:
        self.widest = max(self.widest, other.widest)
        self.ints += other.ints
        for x in other.partials:
            self._add_double(x)
        self.dec = DECIMAL.add(self.dec, other.dec)
        self.nan |= other.nan
        self.inf |= other.inf
        self.ninf |= other.ninf
        self.count += other.count

    def _nonfinite(self) -> float | None:
        if self.nan or (self.inf and self.ninf):
            return math.nan
        if self.inf:
            return math.inf
        if self.ninf:
            return -math.inf
        return None

    def _exact(self) -> Fraction:
        return sum((Fraction(x) for x in self.partials), Fraction(self.ints))

    def total_double(self) -> float:
        special = self._nonfinite()
        if special is not None:
            return special
        if not self.ints:
            return math.fsum(self.partials)
        return float(self._exact())

    def total_decimal(self) -> Decimal:
        special = self._nonfinite()
        doubles = Decimal(special) if special is not None else DECIMAL.create_decimal(math.fsum(self.partials))
        return DECIMAL.add(DECIMAL.add(self.dec, Decimal(self.ints)), doubles)

    def result(self) -> Any:
        if self.widest == _DEC:
            return Decimal128(self.total_decimal())
        if self.widest == _DOUBLE:
            return self.total_double()
        total = self.ints
        if not INT64_MIN <= total <= INT64_MAX:
            return float(total)
        if self.widest == _INT and INT32_MIN <= total <= INT32_MAX:
            return total
        return Int64(total)


class AvgState(SumState):
    __slots__ = ()

    def result(self) -> Any:
        if self.count == 0:
            return None
        if self.widest == _DEC:
            return Decimal128(DECIMAL.divide(self.total_decimal(), Decimal(self.count)))
        return self.total_double() / self.count


class StdDevState:
    """Welford's running mean and squared deviations (as MongoDB, in doubles)."""

    __slots__ = ("count", "m2", "mean", "sample")

    def __init__(self, sample: bool) -> None:
        self.sample = sample
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, v: Any) -> int:
        if not is_numeric(v):
            return 0
        x = to_float(v)
        self.count += 1
        delta = x - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (x - self.mean)
        return 0

    def merge(self, other: StdDevState) -> None:
        if other.count == 0:
            return
        total = self.count + other.count
        delta = other.mean - self.mean
        self.m2 += other.m2 + delta * delta * self.count * other.count / total
        self.mean += delta * other.count / total
        self.count = total

    def result(self) -> Any:
        n = self.count - 1 if self.sample else self.count
        if n <= 0:
            return None
        return math.sqrt(self.m2 / n)


register_simple("$sum", SumState)
register_simple("$avg", AvgState)
register_simple("$stdDevPop", lambda: StdDevState(False))
register_simple("$stdDevSamp", lambda: StdDevState(True))


@ACCUMULATORS.register("$count")
def acc_count(arg: Any, scope: Scope) -> Accumulator:
    if not isinstance(arg, Mapping) or arg:
        raise CommandError(ErrorCode.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
    return Accumulator("$count", lambda doc, vars: 1, const_start(SumState))
