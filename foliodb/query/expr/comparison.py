"""Comparison expressions: $cmp $eq $ne $gt $gte $lt $lte.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#comparison-expression-operators

Unlike query operators these compare across types by MongoDB's full order
(``{"$gt": ["a", 1]}`` is true) and never look inside arrays. Missing sorts
below null (:func:`foliodb.query.expr.core.compare_values`), so
``{"$eq": ["$absent", null]}`` is false and ``{"$lte": ["$absent", null]}``
true. Strings compare by the command's collation (``scope.compare``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, operands


def _comparison(name: str, test: Callable[[int], Any]) -> None:
    def compile_comparison(arg: Any, scope: Scope) -> Expr:
        left, right = operands(arg, name, 2, 2, scope)
        compare = scope.compare  # compare_values, or through the collation

        def comparison(doc: Any, vars: dict[str, Any]) -> Any:
            return test(compare(left(doc, vars), right(doc, vars)))

        return comparison

    compile_comparison.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_comparison)


_comparison("$cmp", lambda c: c)
_comparison("$eq", lambda c: c == 0)
_comparison("$ne", lambda c: c != 0)
_comparison("$gt", lambda c: c > 0)
_comparison("$gte", lambda c: c >= 0)
_comparison("$lt", lambda c: c < 0)
_comparison("$lte", lambda c: c <= 0)
