"""Conditional expressions: $cond $ifNull $switch.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#conditional-expression-operators

Only the branch taken is evaluated, so an error in another branch never
surfaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import location
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, compile_expression, nullish, operands, truthy, type_of

_COND_PARTS = ("if", "then", "else")


@EXPR_OPS.register("$cond")
def expr_cond(arg: Any, scope: Scope) -> Expr:
    if isinstance(arg, Mapping):
        for key in arg:
            if key not in _COND_PARTS:
                raise location(17083, f"Unrecognized parameter to $cond: {key}")
        for code, key in enumerate(_COND_PARTS, start=17080):
            if key not in arg:
                raise location(code, f"Missing '{key}' parameter to $cond")
        test, then, other = (compile_expression(arg[k], scope) for k in _COND_PARTS)
    else:
        test, then, other = operands(arg, "$cond", 3, 3, scope)

    def cond(doc: Any, vars: dict[str, Any]) -> Any:
        return then(doc, vars) if truthy(test(doc, vars)) else other(doc, vars)

    return cond


@EXPR_OPS.register("$ifNull")
def expr_ifNull(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$ifNull", 0, None, scope)
    if len(items) < 2:
        raise location(1257300, f"$ifNull needs at least two arguments, had: {len(items)}")

    def if_null(doc: Any, vars: dict[str, Any]) -> Any:
        for item in items[:-1]:
            v = item(doc, vars)
            if not nullish(v):
                return v
        return items[-1](doc, vars)

    return if_null


def _branch(branch: Any, scope: Scope) -> tuple[Expr, Expr]:
    if not isinstance(branch, Mapping):
        raise location(40062, f"$switch expected each branch to be an object, found: {type_of(branch)}")
    case = then = None
    for key, value in branch.items():
        if key == "case":
            case = compile_expression(value, scope)
        elif key == "then":
            then = compile_expression(value, scope)
        else:
            raise location(40063, f"$switch found an unknown argument to a branch: {key}")
    if case is None:
        raise location(40064, "$switch requires each branch have a 'case' expression")
    if then is None:
        raise location(40065, "$switch requires each branch have a 'then' expression.")
    return case, then


@EXPR_OPS.register("$switch")
def expr_switch(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(40060, f"$switch requires an object as an argument, found: {type_of(arg)}")
    branches: list[tuple[Expr, Expr]] = []
    default: Expr | None = None
    for key, value in arg.items():
        if key == "branches":
            if not isinstance(value, list):
                raise location(40061, f"$switch expected an array for 'branches', found: {type_of(value)}")
            branches.extend(_branch(branch, scope) for branch in value)
        elif key == "default":
            default = compile_expression(value, scope)
        else:
            raise location(40067, f"$switch found an unknown argument: {key}")
    if not branches:
        raise location(40068, "$switch requires at least one branch.")

    def switch(doc: Any, vars: dict[str, Any]) -> Any:
        for case, then in branches:
            if truthy(case(doc, vars)):
                return then(doc, vars)
        if default is None:
            raise location(
                40066, "$switch could not find a matching branch for an input, and no default was specified."
            )
        return default(doc, vars)

    return switch
