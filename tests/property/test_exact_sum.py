"""The $sum and $avg expressions' sum (``accumulators.exact_sum``) is the exact sum of its
numbers rounded once, as it was when computed with a fraction per number: checked against that
definition for random doubles (tiny, huge, of opposite signs), 32- and 64-bit integers and
integers past 2**53 (not doubles exactly), and the result's type."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from bson import Int64
from hypothesis import example, given, settings
from hypothesis import strategies as st

from foliodb.query.expr.accumulators import exact_sum
from foliodb.query.expr.numeric import Kind, kind

NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-300, max_value=1e-300),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.integers(min_value=2**53, max_value=2**60),
)


def _defined(numbers: list[Any]) -> Any:
    widest = max((kind(x) or Kind.INT for x in numbers), default=Kind.INT)
    total = sum((Fraction(x) for x in numbers), Fraction(0))
    if widest is not Kind.DOUBLE and -(2**63) <= total <= 2**63 - 1:
        return int(total) if widest is Kind.INT and -(2**31) <= total < 2**31 else Int64(int(total))
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


@settings(max_examples=1000, deadline=None)
@example([0.1] * 10)
@example([1e308, 1e308])
@example([2**53 + 1, 0.5])
@example([1e16, 1.0, -1e16])
@given(st.lists(NUMBERS, max_size=8))
def test_exact_sum_rounds_the_exact_sum_once(numbers: list[Any]) -> None:
    got, want = exact_sum(numbers), _defined(numbers)
    assert (type(got), got) == (type(want), want)
