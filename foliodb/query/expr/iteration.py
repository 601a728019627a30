"""Array expressions that run per element or reshape: $filter $map $reduce
$sortArray $zip.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/filter/
(and map/, reduce/, sortArray/, zip/)

``$filter`` and ``$map`` bind each element to ``as`` (default ``this``);
``$reduce`` binds ``this`` and ``value``. The binding is visible only inside
``cond``/``in``; ``input``, ``limit`` and ``initialValue`` see the outer
variables. A null or missing input gives null.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from foliodb import interrupt
from foliodb.errors import location
from foliodb.query import paths
from foliodb.query.expr.array import is_array
from foliodb.query.expr.core import (
    EXPR_OPS,
    Expr,
    Scope,
    check_variable_name,
    compile_expression,
    is_string,
    nullish,
    show,
    truthy,
    type_of,
)
from foliodb.query.expr.numeric import integral, is_number, to_double, to_long
from foliodb.query.paths import MISSING


def _loop_variable(arg: Mapping[str, Any]) -> str:
    # A non-string 'as' reads as "", which the name check rejects. CURRENT is the one system
    # variable a user may bind (mongod's validateNameForUserWrite): field paths then read the element.
    name = arg.get("as", "this")
    name = name if is_string(name) else ""
    if name != "CURRENT":
        check_variable_name(name)
    return name


@EXPR_OPS.register("$filter")
def expr_filter(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(28646, "$filter only supports an object as its argument")
    for key in arg:
        if key not in ("input", "as", "cond", "limit"):
            raise location(28647, f"Unrecognized parameter to $filter: {key}")
    if "input" not in arg:
        raise location(28648, "Missing 'input' parameter to $filter")
    if "cond" not in arg:
        raise location(28650, "Missing 'cond' parameter to $filter")
    source = compile_expression(arg["input"], scope)
    name = _loop_variable(arg)
    cond = compile_expression(arg["cond"], scope.with_vars(name) if name != "CURRENT" else scope)
    binds_current = name == "CURRENT"
    limit = compile_expression(arg["limit"], scope) if "limit" in arg else None

    def filter_(doc: Any, vars: dict[str, Any]) -> Any:
        array = source(doc, vars)
        if nullish(array):
            return None
        if not is_array(array):
            raise location(28651, f"input to $filter must be an array not {type_of(array)}")
        if not array:
            return []
        remaining = None
        if limit is not None:
            n = limit(doc, vars)
            if not nullish(n):
                if not integral(n):
                    raise location(327391, f"$filter: limit must be represented as a 32-bit integral value: {show(n)}")
                remaining = to_long(n)
                if remaining <= 0:
                    raise location(327392, f"$filter: limit must be greater than 0: {show(n)}")
        inner = dict(vars)
        out = []
        for i, element in enumerate(array):
            if not i & 255:
                interrupt.check()
            inner[name] = element
            if truthy(cond(element if binds_current else doc, inner)):
                out.append(element)
                if remaining is not None and len(out) == remaining:
                    break
        return out

    return filter_


@EXPR_OPS.register("$map")
def expr_map(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(16878, "$map only supports an object as its argument")
    for key in arg:
        if key not in ("input", "as", "in"):
            raise location(16879, f"Unrecognized parameter to $map: {key}")
    if "input" not in arg:
        raise location(16880, "Missing 'input' parameter to $map")
    if "in" not in arg:
        raise location(16882, "Missing 'in' parameter to $map")
    source = compile_expression(arg["input"], scope)
    name = _loop_variable(arg)
    each = compile_expression(arg["in"], scope.with_vars(name) if name != "CURRENT" else scope)
    binds_current = name == "CURRENT"

    def map_(doc: Any, vars: dict[str, Any]) -> Any:
        array = source(doc, vars)
        if nullish(array):
            return None
        if not is_array(array):
            raise location(16883, f"input to $map must be an array not {type_of(array)}")
        inner = dict(vars)
        out = []
        for i, element in enumerate(array):
            if not i & 255:
                interrupt.check()
            inner[name] = element
            v = each(element if binds_current else doc, inner)
            out.append(None if v is MISSING else v)
        return out

    return map_


@EXPR_OPS.register("$reduce")
def expr_reduce(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(40075, f"$reduce requires an object as an argument, found: {type_of(arg)}")
    parts: dict[str, Expr] = {}
    for key, value in arg.items():
        if key in ("input", "initialValue"):
            parts[key] = compile_expression(value, scope)
        elif key == "in":
            parts[key] = compile_expression(value, scope.with_vars("this", "value"))
        else:
            raise location(40076, f"$reduce found an unknown argument: {key}")
    for code, key in ((40077, "input"), (40078, "initialValue"), (40079, "in")):
        if key not in parts:
            raise location(code, f"$reduce requires '{key}' to be specified")
    source, initial, each = parts["input"], parts["initialValue"], parts["in"]

    def reduce_(doc: Any, vars: dict[str, Any]) -> Any:
        array = source(doc, vars)
        if nullish(array):
            return None
        if not is_array(array):
            raise location(40080, f"$reduce requires that 'input' be an array, found: {show(array)}")
        value = initial(doc, vars)
        inner = dict(vars)
        for i, element in enumerate(array):
            if not i & 15:  # each step may itself be long (a growing $concatArrays)
                interrupt.check()
            inner["this"] = element
            inner["value"] = value
            value = each(doc, inner)
        return value

    return reduce_


SortKey = Callable[[Any], Any]


def _sort_pattern(spec: Any) -> list[tuple[tuple[str, ...], int]] | int:
    """A ``sortBy``: 1 or -1 for whole values, else (path, direction) pairs."""
    if isinstance(spec, Mapping):
        if not spec:
            raise location(2942505, "BadValue: The $sort pattern is empty when it should be a set of fields.")
        pattern = []
        for field, direction in spec.items():
            if not is_number(direction) or to_double(direction) not in (1.0, -1.0):
                raise location(2942505, "BadValue: The $sort element value must be either 1 or -1")
            pattern.append((paths.split(field), int(to_double(direction))))
        return pattern
    if is_number(spec):
        if to_double(spec) not in (1.0, -1.0):
            raise location(2942506, "The $sort element value must be either 1 or -1")
        return int(to_double(spec))
    raise location(
        2942507,
        "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
    )


def _field_key(value: Any, parts: tuple[str, ...], direction: int, by_value: Any) -> Any:
    """The value an element sorts by on one field, as a sort stage takes it:
    the least (ascending) or greatest (descending) of an array's elements,
    null for a missing field."""
    if not isinstance(value, Mapping):
        return None
    found = [None if v is MISSING else v for v in paths.leaf_values(value, parts)]
    if not found:
        return MISSING  # an empty array sorts like undefined
    pick = min if direction == 1 else max
    return pick(found, key=by_value)


@EXPR_OPS.register("$sortArray")
def expr_sortArray(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(2942500, f"$sortArray requires an object as an argument, found: {type_of(arg)}")
    source: Expr | None = None
    pattern: list[tuple[tuple[str, ...], int]] | int | None = None
    for key, value in arg.items():
        if key == "input":
            source = compile_expression(value, scope)
        elif key == "sortBy":
            pattern = _sort_pattern(value)
        else:
            raise location(2942501, f"$sortArray found an unknown argument: {key}")
    if source is None:
        raise location(2942502, "$sortArray requires 'input' to be specified")
    if pattern is None:
        raise location(2942503, "$sortArray requires 'sortBy' to be specified")
    order = pattern
    compare = scope.compare  # the command's collation orders strings
    by_value = functools.cmp_to_key(compare)

    def compare_elements(a: Any, b: Any) -> int:
        if isinstance(order, int):
            return compare(a, b) * order
        for parts, direction in order:
            c = compare(_field_key(a, parts, direction, by_value), _field_key(b, parts, direction, by_value))
            if c:
                return c * direction
        return 0

    key = functools.cmp_to_key(compare_elements)

    def sort_array(doc: Any, vars: dict[str, Any]) -> Any:
        array = source(doc, vars)
        if nullish(array):
            return None
        if not is_array(array):
            raise location(
                2942504, f"The input argument to $sortArray must be an array, but was of type: {type_of(array)}"
            )
        return sorted(array, key=key)

    return sort_array


def _expressions(value: Any, what: str, code: int, scope: Scope) -> list[Expr]:
    if not isinstance(value, list):
        raise location(code, f"{what} must be an array of expressions, found {type_of(value)}")
    return [compile_expression(item, scope) for item in value]


@EXPR_OPS.register("$zip")
def expr_zip(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(34460, f"$zip only supports an object as an argument, found {type_of(arg)}")
    inputs: list[Expr] = []
    defaults: list[Expr] = []
    longest = False
    for key, value in arg.items():
        if key == "inputs":
            inputs = _expressions(value, "inputs", 34461, scope)
        elif key == "defaults":
            defaults = _expressions(value, "defaults", 34462, scope)
        elif key == "useLongestLength":
            if not isinstance(value, bool):
                # MongoDB names the type of the whole argument here.
                raise location(34463, "useLongestLength must be a bool, found object")
            longest = value
        else:
            raise location(34464, f"$zip found an unknown argument: {key}")
    if not inputs:
        raise location(34465, "$zip requires at least one input array")
    if defaults and not longest:
        raise location(34466, "cannot specify defaults unless useLongestLength is true")
    if defaults and len(defaults) != len(inputs):
        raise location(34467, "defaults and inputs must have the same length")

    def zip_(doc: Any, vars: dict[str, Any]) -> Any:
        arrays = []
        for item in inputs:
            array = item(doc, vars)
            if nullish(array):
                return None
            if not is_array(array):
                raise location(34468, f"$zip found a non-array expression in input: {show(array)}")
            arrays.append(array)
        sizes = [len(a) for a in arrays]
        fill: list[Any] = [None] * len(arrays)
        if min(sizes) != max(sizes):
            fill = [None if v is MISSING else v for v in (d(doc, vars) for d in defaults)] or fill
        rows = max(sizes) if longest else min(sizes)
        return [[a[row] if row < len(a) else fill[i] for i, a in enumerate(arrays)] for row in range(rows)]

    return zip_
