"""Array query operators: $all $elemMatch $size.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-array/

These see a field's array whole (their leaves do not expand arrays), except
``$all``, which is an ``$and`` of equalities.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import bad_value
from foliodb.query import compare as cmp
from foliodb.query.context import Context
from foliodb.query.filter import (
    FIELD_OPS,
    AllOf,
    Clause,
    Leaf,
    clause_single,
    compile_filter,
    field_clause,
    is_operator_doc,
)
from foliodb.query.filter_ops.comparison import eq_clause


def _never(v: Any) -> bool:
    return False


@FIELD_OPS.register("$all")
def filter_all(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if not isinstance(arg, list):
        raise bad_value("$all needs an array")
    if not arg:
        return Leaf(_never)
    clauses: list[Clause] = []
    elem_matches = [isinstance(v, Mapping) and "$elemMatch" in v and len(v) == 1 for v in arg]
    if any(elem_matches) and not all(elem_matches):
        raise bad_value("$all/$elemMatch has to be consistent")
    for value in arg:
        if not all(elem_matches) and is_operator_doc(value):
            raise bad_value("no $ expressions in $all")
        if all(elem_matches):
            clauses.append(filter_elemMatch(value["$elemMatch"], value, ctx))
        else:
            clauses.append(eq_clause(value))
    return clauses[0] if len(clauses) == 1 else AllOf(tuple(clauses))


_LOGICAL_IN_ELEM_MATCH = (
    "$and",
    "$or",
    "$nor",
    "$expr",
    "$where",
    "$text",
    "$comment",
    "$jsonSchema",
    "$alwaysTrue",
    "$alwaysFalse",
)


@FIELD_OPS.register("$elemMatch")
def filter_elemMatch(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if not isinstance(arg, Mapping):
        raise bad_value("$elemMatch needs an Object")
    is_value_form = bool(arg) and all(k.startswith("$") and k not in _LOGICAL_IN_ELEM_MATCH for k in arg)
    if is_value_form:
        test = clause_single(field_clause(arg, ctx))

        def match_values(v: Any) -> bool:
            return v.__class__ is list and any(test(e) for e in v)

        def value_position(v: list[Any]) -> int | None:
            return next((n for n, e in enumerate(v) if test(e)), None)

        return Leaf(match_values, expand=False, position=value_position)
    if "$where" in arg:
        raise bad_value("$where cannot be applied to a field")
    if "$text" in arg:
        raise bad_value("$text can only be applied to the top-level document")
    matcher = compile_filter(arg, ctx)

    def document_position(v: Any) -> int | None:
        if v.__class__ is not list:
            return None
        for n, e in enumerate(v):
            if isinstance(e, dict) and matcher(e, None):
                return n
        return None

    return Leaf(lambda v: document_position(v) is not None, expand=False, position=document_position)


@FIELD_OPS.register("$size")
def filter_size(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if not cmp.is_number(arg):
        raise bad_value("$size needs a number")
    n = cmp.number_value(arg)
    if not cmp.is_finite_number(arg) or n != int(n):
        raise bad_value("$size must be a whole number")
    if n < 0:
        raise bad_value("$size may not be negative")
    size = int(n)
    return Leaf(lambda v: v.__class__ is list and len(v) == size, expand=False)
