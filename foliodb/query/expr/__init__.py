"""Aggregation expressions, shared by ``$expr``, update pipelines and the
aggregation framework. See :mod:`foliodb.query.expr.core`."""

from foliodb.query.expr import boolean, comparison, conditional, variables  # noqa: F401  (registers operators)
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, compile_expression, root_variables, truthy

__all__ = ["EXPR_OPS", "Expr", "Scope", "compile_expression", "root_variables", "truthy"]
