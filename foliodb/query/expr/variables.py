"""Variable and literal expressions: $let $literal ($const).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/let/
and https://www.mongodb.com/docs/manual/reference/operator/aggregation/literal/

A ``$let`` variable's expression sees only the variables outside the
``$let``; its ``in`` sees them all. Binding ``CURRENT`` changes what field
paths in ``in`` read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import location
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, check_variable_name, compile_expression


@EXPR_OPS.register("$literal", "$const")
def expr_literal(arg: Any, scope: Scope) -> Expr:
    return lambda doc, vars: arg


@EXPR_OPS.register("$let")
def expr_let(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(16874, "$let only supports an object as its argument")
    for key in arg:
        if key not in ("vars", "in"):
            raise location(16875, f"Unrecognized parameter to $let: {key}")
    if "vars" not in arg:
        raise location(16876, "Missing 'vars' parameter to $let")
    if "in" not in arg:
        raise location(16877, "Missing 'in' parameter to $let")
    if not isinstance(arg["vars"], Mapping):
        raise location(10065, "invalid parameter: expected an object (vars)")
    bindings = []
    for name, spec in arg["vars"].items():
        if name != "CURRENT":  # the one system variable a user may rebind
            check_variable_name(name)
        bindings.append((name, compile_expression(spec, scope)))
    body = compile_expression(arg["in"], scope.with_vars(*(name for name, _ in bindings if name != "CURRENT")))

    def let(doc: Any, vars: dict[str, Any]) -> Any:
        inner = dict(vars)
        current = doc
        for name, fn in bindings:
            value = fn(doc, vars)
            if name == "CURRENT":
                current = value
            else:
                inner[name] = value
        return body(current, inner)

    return let
