"""Set expressions: $setEquals $setIntersection $setUnion $setDifference
$setIsSubset $anyElementTrue $allElementsTrue.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#set-expression-operators

Arrays are sets: duplicates count once, order does not matter, and values
are equal as MongoDB compares them (``1``, ``1.0`` and ``NumberLong(1)`` are
one element). Nested arrays are elements, not flattened. $setIntersection
and $setUnion return their elements in MongoDB's sort order; $setDifference
keeps the first array's order.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from typing import Any

from foliodb.errors import CommandError, location
from foliodb.query.expr.array import array_operands, is_array
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, compare_values, nullish, operands, truthy, type_of


class ValueSet:
    """The distinct values of an array in MongoDB's order (``compare``: the
    scope's, so a collation decides which strings are one value)."""

    __slots__ = ("_compare", "_key", "_keys", "values")

    def __init__(self, array: Any = (), compare: Callable[[Any, Any], int] = compare_values) -> None:
        self._compare = compare
        self._key = key = functools.cmp_to_key(compare)
        self.values: list[Any] = []
        for v in sorted(array, key=key):  # stable: the first of equals stays
            if not self.values or compare(self.values[-1], v) != 0:
                self.values.append(v)
        self._keys = [key(v) for v in self.values]

    def __contains__(self, value: Any) -> bool:
        i = bisect.bisect_left(self._keys, self._key(value))
        return i < len(self.values) and self._compare(self.values[i], value) == 0

    def __len__(self) -> int:
        return len(self.values)


@EXPR_OPS.register("$setEquals")
def expr_setEquals(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$setEquals", 0, None, scope)
    if len(items) < 2:
        raise location(17045, f"$setEquals needs at least two arguments had: {len(items)}")

    def set_equals(doc: Any, vars: dict[str, Any]) -> Any:
        first: ValueSet | None = None
        for n, item in enumerate(items, start=1):
            v = item(doc, vars)
            if not is_array(v):
                raise location(
                    17044, f"All operands of $setEquals must be arrays. {n}-th argument is of type: {type_of(v)}"
                )
            values = ValueSet(v, scope.compare)
            if first is None:
                first = values
            elif len(values) != len(first) or any(x not in first for x in values.values):
                return False
        return True

    return set_equals


def _not_array(name: str, code: int) -> Callable[[Any], CommandError]:
    return lambda v: location(code, f"All operands of {name} must be arrays. One argument is of type: {type_of(v)}")


@EXPR_OPS.register("$setIntersection")
def expr_setIntersection(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$setIntersection", 0, None, scope)

    def set_intersection(doc: Any, vars: dict[str, Any]) -> Any:
        arrays = array_operands(items, doc, vars, _not_array("$setIntersection", 17047))
        if arrays is None:
            return None
        common: ValueSet | None = None
        for v in arrays:
            values = ValueSet(v, scope.compare)
            common = values if common is None else ValueSet((x for x in common.values if x in values), scope.compare)
        return [] if common is None else common.values

    return set_intersection


@EXPR_OPS.register("$setUnion")
def expr_setUnion(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$setUnion", 0, None, scope)

    def set_union(doc: Any, vars: dict[str, Any]) -> Any:
        arrays = array_operands(items, doc, vars, _not_array("$setUnion", 17043))
        return None if arrays is None else ValueSet((x for array in arrays for x in array), scope.compare).values

    return set_union


def _both_arrays(name: str, a: Any, b: Any, codes: tuple[int, int]) -> None:
    for value, which, code in ((a, "First", codes[0]), (b, "Second", codes[1])):
        if not is_array(value):
            raise location(
                code, f"both operands of {name} must be arrays. {which} argument is of type: {type_of(value)}"
            )


@EXPR_OPS.register("$setDifference")
def expr_setDifference(arg: Any, scope: Scope) -> Expr:
    left, right = operands(arg, "$setDifference", 2, 2, scope)
    by_value = functools.cmp_to_key(scope.compare)

    def set_difference(doc: Any, vars: dict[str, Any]) -> Any:
        a, b = left(doc, vars), right(doc, vars)
        if nullish(a) or nullish(b):
            return None
        _both_arrays("$setDifference", a, b, (17048, 17049))
        excluded = ValueSet(b, scope.compare)
        seen: list[Any] = []  # sort keys of the values kept so far
        out: list[Any] = []
        for x in a:
            key = by_value(x)
            i = bisect.bisect_left(seen, key)
            if x in excluded or (i < len(seen) and seen[i] == key):
                continue
            seen.insert(i, key)
            out.append(x)
        return out

    return set_difference


@EXPR_OPS.register("$setIsSubset")
def expr_setIsSubset(arg: Any, scope: Scope) -> Expr:
    left, right = operands(arg, "$setIsSubset", 2, 2, scope)

    def set_is_subset(doc: Any, vars: dict[str, Any]) -> Any:
        a, b = left(doc, vars), right(doc, vars)
        _both_arrays("$setIsSubset", a, b, (17046, 17042))
        container = ValueSet(b, scope.compare)
        return all(x in container for x in a)

    return set_is_subset


def _elements_true(name: str, code: int, combine: Any) -> None:
    def compile_elements(arg: Any, scope: Scope) -> Expr:
        (operand,) = operands(arg, name, 1, 1, scope)

        def elements(doc: Any, vars: dict[str, Any]) -> Any:
            v = operand(doc, vars)
            if not is_array(v):
                raise location(code, f"{name}'s argument must be an array, but is {type_of(v)}")
            return combine(truthy(x) for x in v)

        return elements

    compile_elements.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_elements)


_elements_true("$anyElementTrue", 17041, any)
_elements_true("$allElementsTrue", 17040, all)
