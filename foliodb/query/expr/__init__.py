"""Aggregation expressions, shared by ``$expr``, update pipelines and the
aggregation framework. See :mod:`foliodb.query.expr.core`.

Importing the package registers every operator family in :data:`EXPR_OPS`.
"""

from foliodb.query.expr import (  # noqa: F401  (each module registers its operators)
    accumulators,
    arithmetic,
    array,
    boolean,
    comparison,
    conditional,
    date,
    date_math,
    function,
    iteration,
    mathematics,
    misc,
    object,
    regex,
    set,
    string,
    trigonometry,
    type,
    variables,
)
from foliodb.query.expr.core import (
    EXPR_OPS,
    METADATA,
    Expr,
    Scope,
    compare_values,
    compile_expression,
    root_variables,
    truthy,
)

__all__ = [
    "EXPR_OPS",
    "METADATA",
    "Expr",
    "Scope",
    "compare_values",
    "compile_expression",
    "root_variables",
    "truthy",
]
