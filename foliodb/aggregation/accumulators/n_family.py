"""The N family: $firstN $lastN $maxN $minN, and $top $bottom $topN
$bottomN (ordered by their own ``sortBy``).

``n`` is evaluated when a group starts, against the group key when it is a
document, as MongoDB does; it must be a positive integral number.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from foliodb.aggregation.accumulators.core import (
    ACCUMULATORS,
    Accumulator,
    State,
    const_start,
    is_numeric,
    nullish,
    to_float,
    value_or_null,
)
from foliodb.aggregation.pipeline import approx_size
from foliodb.errors import location
from foliodb.query import keystring
from foliodb.query.collation import Collator
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.paths import MISSING
from foliodb.query.render import render


def validate_n(value: Any) -> int:
    """MongoDB's check of an accumulator's ``n``: a positive integral number."""
    if not is_numeric(value):
        raise location(5787902, f"Value for 'n' must be of integral type, but found {render(value_or_null(value))}")
    f = to_float(value)
    if math.isnan(f) or math.isinf(f) or f != int(f):
        raise location(5787903, f"Value for 'n' must be of integral type, but found {render(value)}")
    n = int(f)
    if n <= 0:
        raise location(5787908, f"'n' must be greater than 0, found {n}")
    return n


class FirstNState:
    __slots__ = ("items", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self.items: list[Any] = []

    def add(self, v: Any) -> int:
        if len(self.items) < self.n:
            v = value_or_null(v)
            self.items.append(v)
            return approx_size(v)
        return 0

    def merge(self, other: FirstNState) -> None:
        for v in other.items:
            self.add(v)

    def result(self) -> Any:
        return list(self.items)


class LastNState:
    __slots__ = ("items", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self.items: deque[Any] = deque(maxlen=n)

    def add(self, v: Any) -> int:
        v = value_or_null(v)
        self.items.append(v)
        return approx_size(v)

    def merge(self, other: LastNState) -> None:
        self.items.extend(other.items)

    def result(self) -> Any:
        return list(self.items)


class MinMaxNState:
    """The n smallest (sign -1) or largest (sign 1) non-null values, best first."""

    __slots__ = ("items", "n", "sign")

    def __init__(self, n: int, sign: int) -> None:
        self.n = n
        self.sign = sign
        self.items: list[tuple[bytes, Any]] = []  # ascending by key

    def add(self, v: Any) -> int:
        if nullish(v):
            return 0
        key = keystring.encode(v)
        items = self.items
        if len(items) == self.n:
            worst = items[0] if self.sign > 0 else items[-1]
            if (key <= worst[0]) if self.sign > 0 else (key >= worst[0]):
                return 0
            items.pop(0 if self.sign > 0 else -1)
        bisect.insort(items, (key, v), key=lambda item: item[0])
        return approx_size(v)

    def merge(self, other: MinMaxNState) -> None:
        for _, v in other.items:
            self.add(v)

    def result(self) -> Any:
        values = [v for _, v in self.items]
        return values[::-1] if self.sign > 0 else values


class TopBottomState:
    """The first (top) or last (bottom) n outputs in a sort order; on ties the
    earlier input wins. Inputs are ``(sort key bytes, output)`` pairs."""

    __slots__ = ("bottom", "items", "n", "seq", "single")

    def __init__(self, n: int, bottom: bool, single: bool) -> None:
        self.n = n
        self.bottom = bottom
        self.single = single
        self.seq = 0
        self.items: list[tuple[bytes, int, Any]] = []  # ascending by (key, arrival)

    def add(self, pair: Any) -> int:
        key, output = pair
        items = self.items
        self.seq += 1
        if len(items) == self.n:
            if self.bottom:
                if key <= items[0][0]:
                    return 0
                items.pop(0)
            else:
                if key >= items[-1][0]:
                    return 0
                items.pop()
        bisect.insort(items, (key, self.seq, output), key=lambda item: (item[0], item[1]))
        return approx_size(output) + len(key)

    def merge(self, other: TopBottomState) -> None:
        for key, _, output in other.items:
            self.add((key, output))

    def result(self) -> Any:
        outputs = [output for _, _, output in self.items]
        if self.single:
            if not outputs:
                return None
            return outputs[-1] if self.bottom else outputs[0]
        return outputs


def _n_start(n_expr: Expr, make: Callable[[int], State]) -> Callable[[Any, dict[str, Any]], State]:
    def start(key: Any, vars: dict[str, Any]) -> State:
        return make(validate_n(n_expr(key if isinstance(key, dict) else {}, vars)))

    return start


def _n_args(name: str, arg: Any, scope: Scope, spec_code: int) -> tuple[Expr, Expr]:
    if not isinstance(arg, Mapping):
        raise location(spec_code, f"specification must be an object; found {name}: {render(arg)}")
    n = value = None
    for key, spec in arg.items():
        if key == "input":
            value = compile_expression(spec, scope)
        elif key == "n":
            n = compile_expression(spec, scope)
        else:
            raise location(5787901, f"Unknown argument for 'n' operator: {key}")
    if n is None:
        raise location(5787906, "Missing value for 'n'")
    if value is None:
        raise location(5787907, "Missing value for 'input'")
    return n, value


@ACCUMULATORS.register("$firstN")
def acc_firstN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$firstN", arg, scope, 5787801)
    return Accumulator("$firstN", value, _n_start(n, FirstNState))


@ACCUMULATORS.register("$lastN")
def acc_lastN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$lastN", arg, scope, 5787801)
    return Accumulator("$lastN", value, _n_start(n, LastNState))


@ACCUMULATORS.register("$maxN")
def acc_maxN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$maxN", arg, scope, 5787900)
    return Accumulator("$maxN", value, _n_start(n, lambda k: MinMaxNState(k, 1)))


@ACCUMULATORS.register("$minN")
def acc_minN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$minN", arg, scope, 5787900)
    return Accumulator("$minN", value, _n_start(n, lambda k: MinMaxNState(k, -1)))


def _top_bottom(name: str, bottom: bool, single: bool) -> None:
    def compile_acc(arg: Any, scope: Scope) -> Accumulator:
        if not isinstance(arg, Mapping):
            raise location(5788001, f"specification must be an object; found {name}: {render(arg)}")
        n_spec: Any = MISSING
        output_spec: Any = MISSING
        sort_by: Any = MISSING
        for key, spec in arg.items():
            if key == "n" and not single:
                n_spec = spec
            elif key == "output":
                output_spec = spec
            elif key == "sortBy":
                sort_by = spec
            else:
                raise location(5788002, f"Unknown argument to {name} '{key}'")
        if not single and n_spec is MISSING:
            raise location(5788003, "Missing value for 'n'")
        if output_spec is MISSING:
            raise location(5788004, "Missing value for 'output'")
        if sort_by is MISSING:
            raise location(5788005, "Missing value for 'sortBy'")
        if not isinstance(sort_by, Mapping) or not sort_by:
            raise location(9657900, "Value for 'sortBy' must be a non-empty object")
        key_of = sort_key_function(sort_by, scope.collator)
        output = compile_expression(output_spec, scope)

        def pair(doc: Any, vars: dict[str, Any]) -> Any:
            return key_of(doc), value_or_null(output(doc, vars))

        if single:
            start = const_start(lambda: TopBottomState(1, bottom, True))
        else:
            start = _n_start(compile_expression(n_spec, scope), lambda k: TopBottomState(k, bottom, False))
        return Accumulator(name, pair, start)

    compile_acc.__name__ = f"acc_{name[1:]}"
    ACCUMULATORS.register(name)(compile_acc)


def sort_key_function(sort_by: Mapping[str, Any], collator: Collator | None = None) -> Callable[[Any], bytes]:
    """Sort-key bytes of a document under a sort pattern (memcmp order is the
    pattern's order)."""
    from foliodb.query.sort import compile_sort

    return compile_sort(sort_by, collator=collator).key


_top_bottom("$top", False, True)
_top_bottom("$bottom", True, True)
_top_bottom("$topN", False, False)
_top_bottom("$bottomN", True, False)
