"""Array expressions: $arrayElemAt $first $last $concatArrays $in
$indexOfArray $isArray $objectToArray $arrayToObject $range $reverseArray
$size $slice.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#array-expression-operators

$filter, $map, $reduce, $sortArray and $zip are in
:mod:`foliodb.query.expr.iteration`; $firstN, $lastN, $maxN and $minN in
:mod:`foliodb.query.expr.accumulators`. Positions and counts must be
numbers whose value is a 32-bit integer (``2.0`` is, ``2.5`` is not).
Values are equal as MongoDB compares them (``1 == 1.0``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.expr.core import (
    EXPR_OPS,
    Expr,
    Scope,
    is_string,
    nullish,
    operands,
    show,
    type_of,
)
from foliodb.query.expr.numeric import integral, is_number, show_double, to_double, to_long
from foliodb.query.paths import MISSING

# MongoDB's internalQueryMaxRangeBytes and its estimate of one element's size.
_RANGE_LIMIT = 100 * 1024 * 1024
_VALUE_SIZE = 16


def is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def element_at(name: str, arity: int, array: Any, index: Any) -> Any:
    if nullish(array) or nullish(index):
        return None
    if not is_array(array):
        which = "argument" if arity == 1 else "first argument"
        raise location(28689, f"{name}'s {which} must be an array, but is {type_of(array)}")
    if not is_number(index):
        raise location(28690, f"{name}'s second argument must be a numeric value, but is {type_of(index)}")
    if not integral(index):
        raise location(
            28691,
            f"{name}'s second argument must be representable as a 32-bit integer: {show_double(to_double(index))}",
        )
    i = to_long(index)
    if i < 0:
        i += len(array)
    return array[i] if 0 <= i < len(array) else MISSING


@EXPR_OPS.register("$arrayElemAt")
def expr_arrayElemAt(arg: Any, scope: Scope) -> Expr:
    array, index = operands(arg, "$arrayElemAt", 2, 2, scope)
    return lambda doc, vars: element_at("$arrayElemAt", 2, array(doc, vars), index(doc, vars))


@EXPR_OPS.register("$first")
def expr_first(arg: Any, scope: Scope) -> Expr:
    (array,) = operands(arg, "$first", 1, 1, scope)
    return lambda doc, vars: element_at("$first", 1, array(doc, vars), 0)


@EXPR_OPS.register("$last")
def expr_last(arg: Any, scope: Scope) -> Expr:
    (array,) = operands(arg, "$last", 1, 1, scope)
    return lambda doc, vars: element_at("$last", 1, array(doc, vars), -1)


def array_operands(
    items: list[Expr], doc: Any, vars: dict[str, Any], not_array: Callable[[Any], CommandError]
) -> list[list[Any]] | None:
    """The values of ``items``, which must be arrays, in order: None at the
    first null or missing one, ``not_array(value)`` raised at the first other
    non-array."""
    arrays = []
    for item in items:
        v = item(doc, vars)
        if nullish(v):
            return None
        if not is_array(v):
            raise not_array(v)
        arrays.append(v)
    return arrays


def _not_array_to_concat(v: Any) -> CommandError:
    return location(28664, f"$concatArrays only supports arrays, not {type_of(v)}")


@EXPR_OPS.register("$concatArrays")
def expr_concatArrays(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$concatArrays", 0, None, scope)

    def concat_arrays(doc: Any, vars: dict[str, Any]) -> Any:
        arrays = array_operands(items, doc, vars, _not_array_to_concat)
        return None if arrays is None else [x for array in arrays for x in array]

    return concat_arrays


@EXPR_OPS.register("$in")
def expr_in(arg: Any, scope: Scope) -> Expr:
    needle, haystack = operands(arg, "$in", 2, 2, scope)
    compare = scope.compare

    def in_(doc: Any, vars: dict[str, Any]) -> Any:
        value, array = needle(doc, vars), haystack(doc, vars)
        if not is_array(array):
            raise location(40081, f"$in requires an array as a second argument, found: {type_of(array)}")
        return any(compare(value, element) == 0 for element in array)

    return in_


def position_argument(name: str, value: Any, what: str) -> int:
    """A start or end position of the indexOf operators."""
    if not integral(value):
        raise location(
            40096,
            f"{name}requires an integral {what}, found a value of type: {type_of(value)}, with value: {show(value)}",
        )
    n = to_long(value)
    if n < 0:
        raise location(40097, f"{name} requires a nonnegative {what}, found: {show(value)}")
    return n


@EXPR_OPS.register("$indexOfArray")
def expr_indexOfArray(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$indexOfArray", 2, 4, scope)
    compare = scope.compare

    def index_of_array(doc: Any, vars: dict[str, Any]) -> Any:
        array = items[0](doc, vars)
        if nullish(array):
            return None
        if not is_array(array):
            raise location(40090, f"$indexOfArray requires an array as a first argument, found: {type_of(array)}")
        start, end = 0, len(array)
        if len(items) > 2:
            start = position_argument("$indexOfArray", items[2](doc, vars), "starting index")
        if len(items) > 3:
            end = min(end, position_argument("$indexOfArray", items[3](doc, vars), "ending index"))
        target = items[1](doc, vars)
        for i in range(start, end):
            if compare(array[i], target) == 0:
                return i
        return -1

    return index_of_array


@EXPR_OPS.register("$isArray")
def expr_isArray(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$isArray", 1, 1, scope)
    return lambda doc, vars: is_array(operand(doc, vars))


@EXPR_OPS.register("$objectToArray")
def expr_objectToArray(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$objectToArray", 1, 1, scope)

    def object_to_array(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        if nullish(v):
            return None
        if not isinstance(v, Mapping):
            raise location(40390, f"$objectToArray requires a document input, found: {type_of(v)}")
        return [{"k": k, "v": value} for k, value in v.items()]

    return object_to_array


def _pair(element: Any, arrays: bool) -> tuple[str, Any]:
    if arrays:
        if not is_array(element):
            raise location(
                40396,
                "$arrayToObject requires a consistent input format. Elements mustall be arrays or all be objects. "
                f"Array was detected, now found: {type_of(element)}",
            )
        if len(element) != 2:
            raise location(
                40397, f"$arrayToObject requires an array of size 2 arrays,found array of size: {len(element)}"
            )
        key, value = element
        if not is_string(key):
            raise location(
                40395,
                "$arrayToObject requires an array of key-value pairs, where the key must be of type string. "
                f"Found key type: {type_of(key)}",
            )
        code = 4940400
    else:
        if not isinstance(element, Mapping):
            raise location(
                40391,
                "$arrayToObject requires a consistent input format. Elements mustall be arrays or all be objects. "
                f"Object was detected, now found: {type_of(element)}",
            )
        if len(element) != 2:
            raise location(
                40392,
                f"$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:{len(element)}",
            )
        if "k" not in element or "v" not in element:
            raise location(
                40393,
                "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: "
                f"{show(element)}",
            )
        key, value = element["k"], element["v"]
        if not is_string(key):
            raise location(
                40394,
                "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type "
                f"string. Found type: {type_of(key)}",
            )
        code = 4940401
    if "\x00" in key:
        raise location(code, "Key field cannot contain an embedded null byte")
    return key, value


@EXPR_OPS.register("$arrayToObject")
def expr_arrayToObject(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$arrayToObject", 1, 1, scope)

    def array_to_object(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        if nullish(v):
            return None
        if not is_array(v):
            raise location(40386, f"$arrayToObject requires an array input, found: {type_of(v)}")
        if not v:
            return {}
        if is_array(v[0]):
            arrays = True
        elif isinstance(v[0], Mapping):
            arrays = False
        else:
            raise location(40398, f"Unrecognised input type format for $arrayToObject: {type_of(v[0])}")
        out: dict[str, Any] = {}
        for element in v:
            key, value = _pair(element, arrays)
            out[key] = value
        return out

    return array_to_object


def _range_bound(value: Any, what: str, codes: tuple[int, int]) -> int:
    if not is_number(value):
        raise location(codes[0], f"$range requires a numeric {what} value, found value of type: {type_of(value)}")
    if not integral(value):
        article = "an" if what == "ending" else "a"
        raise location(
            codes[1],
            f"$range requires {article} {what} value that can be represented as a 32-bit integer, "
            f"found value: {show(value)}",
        )
    return to_long(value)


@EXPR_OPS.register("$range")
def expr_range(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$range", 2, 3, scope)

    def range_(doc: Any, vars: dict[str, Any]) -> Any:
        start = _range_bound(items[0](doc, vars), "starting", (34443, 34444))
        end = _range_bound(items[1](doc, vars), "ending", (34445, 34446))
        step = 1
        if len(items) == 3:
            v = items[2](doc, vars)
            if not is_number(v):
                raise location(34447, f"$range requires a numeric step value, found value of type:{type_of(v)}")
            if not integral(v):
                raise location(
                    34448,
                    f"$range requires a step value that can be represented as a 32-bit integer, found value: {show(v)}",
                )
            step = to_long(v)
            if step == 0:
                raise location(34449, "$range requires a non-zero step value")
        steps = int((end - start) / step)  # C's division truncates
        needed = 24 + (steps + 1 if steps >= 0 else 0) * _VALUE_SIZE
        if needed >= _RANGE_LIMIT:
            raise CommandError(
                ErrorCode.ExceededMemoryLimit,
                f"$range would use too much memory ({needed} bytes) and cannot spill to disk. "
                f"Memory limit: {_RANGE_LIMIT} bytes",
            )
        return list(range(start, end, step))

    return range_


@EXPR_OPS.register("$reverseArray")
def expr_reverseArray(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$reverseArray", 1, 1, scope)

    def reverse_array(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        if nullish(v):
            return None
        if not is_array(v):
            raise location(34435, f"The argument to $reverseArray must be an array, but was of type: {type_of(v)}")
        return list(reversed(v))

    return reverse_array


@EXPR_OPS.register("$size")
def expr_size(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$size", 1, 1, scope)

    def size(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        if not is_array(v):
            raise location(17124, f"The argument to $size must be an array, but was of type: {type_of(v)}")
        return len(v)

    return size


def _slice_count(value: Any, position: str, codes: tuple[int, int]) -> int:
    if not is_number(value):
        raise location(codes[0], f"{position} argument to $slice must be numeric, but is of type: {type_of(value)}")
    if not integral(value):
        raise location(
            codes[1],
            f"{position} argument to $slice can't be represented as a 32-bit integer: {show_double(to_double(value))}",
        )
    return to_long(value)


@EXPR_OPS.register("$slice")
def expr_slice(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$slice", 2, 3, scope)

    def slice_(doc: Any, vars: dict[str, Any]) -> Any:
        array, second = items[0](doc, vars), items[1](doc, vars)
        if nullish(array) or nullish(second):
            return None
        if not is_array(array):
            raise location(28724, f"First argument to $slice must be an array, but is of type: {type_of(array)}")
        if not is_number(second):
            raise location(
                28725, f"Second argument to $slice must be a numeric value, but is of type: {type_of(second)}"
            )
        if not integral(second):
            raise location(
                28726,
                f"Second argument to $slice can't be represented as a 32-bit integer: {show_double(to_double(second))}",
            )
        n, size = to_long(second), len(array)
        if len(items) == 2:
            return list(array[:n]) if n >= 0 else list(array[max(0, size + n) :])
        start = max(0, size + n) if n < 0 else min(size, n)
        count_value = items[2](doc, vars)
        if nullish(count_value):
            return None
        count = _slice_count(count_value, "Third", (28727, 28728))
        if count <= 0:
            raise location(28729, f"Third argument to $slice must be positive: {count}")
        return list(array[start : start + count])

    return slice_
