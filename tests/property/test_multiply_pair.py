"""``$multiply`` of two operands (a double by a double or an int multiplied at once, foliodb/query/expr/arithmetic.py)
answers as the general product of more operands: ``[a, b]`` against ``[a, b, 1]`` (a factor 1
changes neither value nor type), for doubles (signed zeros, infinities, NaN), 32- and 64-bit
integers at their limits, decimals, nulls, missing fields and non-numbers, results and errors
alike."""

from __future__ import annotations

import math
from typing import Any

from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query.expr.core import compile_expression, root_variables
from foliodb.query.paths import MISSING

VALUES = st.one_of(
    st.floats(),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.sampled_from([Decimal128("2.5"), Decimal128("-0"), None, MISSING, "x", [1], True, 2**62]),
)


def _evaluate(spec: Any, doc: dict[str, Any]) -> tuple[str, Any]:
    try:
        value = compile_expression(spec)(doc, root_variables(doc, {}, None))
    except CommandError as exc:
        return ("error", exc.code)
    if isinstance(value, float) and math.isnan(value):
        return ("nan", None)
    return (type(value).__name__, repr(value))


@settings(max_examples=1500, deadline=None)
@given(VALUES, VALUES)
def test_a_pair_multiplies_as_the_general_product(a: Any, b: Any) -> None:
    doc = {k: v for k, v in (("a", a), ("b", b)) if v is not MISSING}
    assert _evaluate({"$multiply": ["$a", "$b"]}, doc) == _evaluate({"$multiply": ["$a", "$b", 1]}, doc)
