"""Object expressions: $mergeObjects $getField $setField $unsetField.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#object-expression-operators

$getField/$setField/$unsetField name a field literally, so names with dots
or a leading ``$`` work; the name must be a constant string (a literal or
``$literal``), checked at compile time. $mergeObjects skips null and
missing; a later document's field wins but keeps the first one's position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import location
from foliodb.query.expr.array import is_array
from foliodb.query.expr.core import (
    EXPR_OPS,
    NOT_CONSTANT,
    Expr,
    Scope,
    compile_expression,
    constant_of,
    is_string,
    nullish,
    operands,
    show,
    type_of,
)
from foliodb.query.paths import MISSING


def _merge_into(out: dict[str, Any], value: Any) -> None:
    if nullish(value):
        return
    if not isinstance(value, Mapping):
        raise location(
            40400, f"$mergeObjects requires object inputs, but input {show(value)} is of type {type_of(value)}"
        )
    out.update(value)


@EXPR_OPS.register("$mergeObjects")
def expr_mergeObjects(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$mergeObjects", 0, None, scope)

    def merge_objects(doc: Any, vars: dict[str, Any]) -> Any:
        out: dict[str, Any] = {}
        if len(items) == 1:  # one array argument merges its elements
            v = items[0](doc, vars)
            for element in v if is_array(v) else [v]:
                _merge_into(out, element)
            return out
        for item in items:
            _merge_into(out, item(doc, vars))
        return out

    return merge_objects


def _field_name(spec: Any, name: str, codes: tuple[int, int, int]) -> str:
    """The constant field name of $getField/$setField."""
    if is_string(spec) and spec.startswith("$"):
        raise location(
            codes[0],
            f"'{spec}' is a field path reference which is not allowed in this context. "
            f"Did you mean {{$literal: '{spec}'}}?",
        )
    value = constant_of(spec)
    if value is NOT_CONSTANT:
        raise location(codes[1], f"{name} requires 'field' to evaluate to a constant, but got a non-constant argument")
    if not is_string(value):
        raise location(codes[2], f"{name} requires 'field' to evaluate to type String, but got {type_of(value)}")
    return value


def _current(doc: Any, vars: dict[str, Any]) -> Any:
    return doc


@EXPR_OPS.register("$getField")
def expr_getField(arg: Any, scope: Scope) -> Expr:
    field_spec: Any = MISSING
    source: Expr | None = None
    if isinstance(arg, Mapping):
        for key, value in arg.items():
            if field_spec is MISSING and source is None and key.startswith("$"):
                field_spec, source = arg, _current  # {$getField: {$literal: "a"}}
                break
            if key == "field":
                field_spec = value
            elif key == "input":
                source = compile_expression(value, scope)
            else:
                raise location(3041701, f"$getField found an unknown argument: {key}")
    else:
        field_spec, source = arg, _current
    if field_spec is MISSING:
        raise location(3041702, "$getField requires 'field' to be specified")
    if source is None:
        raise location(3041703, "$getField requires 'input' to be specified")
    compile_expression(field_spec, scope)  # MongoDB parses before judging it
    field = _field_name(field_spec, "$getField", (5654600, 5654601, 5654602))
    read = source

    def get_field(doc: Any, vars: dict[str, Any]) -> Any:
        value = read(doc, vars)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            return MISSING
        return value.get(field, MISSING)

    return get_field


def _set_field(name: str) -> None:
    unset = name == "$unsetField"
    allowed = ("field", "input") if unset else ("field", "input", "value")

    def compile_set_field(arg: Any, scope: Scope) -> Expr:
        if not isinstance(arg, Mapping):
            raise location(4161100, f"{name} only supports an object as its argument")
        for key in arg:
            if key not in allowed:
                raise location(4161101, f"{name} found an unknown argument: {key}")
        if "field" not in arg:
            raise location(4161102, f"{name} requires 'field' to be specified")
        if not unset and "value" not in arg:
            raise location(4161103, f"{name} requires 'value' to be specified")
        if "input" not in arg:
            raise location(4161109, f"{name} requires 'input' to be specified")
        compile_expression(arg["field"], scope)
        field = _field_name(arg["field"], name, (4161108, 4161106, 4161107))
        source = compile_expression(arg["input"], scope)
        value_of = None if unset else compile_expression(arg["value"], scope)

        def set_field(doc: Any, vars: dict[str, Any]) -> Any:
            target = source(doc, vars)
            if nullish(target):
                return None
            if not isinstance(target, Mapping):
                raise location(4161105, "$setField requires 'input' to evaluate to type Object")
            out = dict(target)
            value = MISSING if value_of is None else value_of(doc, vars)
            if value is MISSING:
                out.pop(field, None)
            else:
                out[field] = value
            return out

        return set_field

    compile_set_field.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_set_field)


_set_field("$setField")
_set_field("$unsetField")
