"""Boolean expressions: $and $or $not.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#boolean-expression-operators
"""

from __future__ import annotations

from typing import Any

from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, operands, truthy


@EXPR_OPS.register("$and")
def expr_and(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$and", 0, None, scope)
    return lambda doc, vars: all(truthy(item(doc, vars)) for item in items)


@EXPR_OPS.register("$or")
def expr_or(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$or", 0, None, scope)
    return lambda doc, vars: any(truthy(item(doc, vars)) for item in items)


@EXPR_OPS.register("$not")
def expr_not(arg: Any, scope: Scope) -> Expr:
    (item,) = operands(arg, "$not", 1, 1, scope)
    return lambda doc, vars: not truthy(item(doc, vars))
