"""Logical query operators: $and $or $nor (top level) and $not (per field).

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-logical/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import bad_value
from foliodb.query.context import Context
from foliodb.query.filter import FIELD_OPS, TOP_OPS, Clause, Matcher, Not, all_of, compile_filter, field_clause
from foliodb.query.filter_ops.comparison import is_regex


def _branches(arg: Any, op: str, ctx: Context) -> list[Matcher]:
    # MongoDB's parseTreeTopLevel messages, one shared by the three operators.
    if not isinstance(arg, list):
        raise bad_value(f"{op} must be an array")
    if not arg:
        raise bad_value("$and/$or/$nor must be a nonempty array")
    out = []
    for branch in arg:
        if not isinstance(branch, Mapping):
            raise bad_value("$or/$and/$nor entries need to be full objects")
        out.append(compile_filter(branch, ctx))
    return out


@TOP_OPS.register("$and")
def filter_and(arg: Any, ctx: Context) -> Matcher:
    return all_of(_branches(arg, "$and", ctx))


@TOP_OPS.register("$or")
def filter_or(arg: Any, ctx: Context) -> Matcher:
    branches = tuple(_branches(arg, "$or", ctx))

    def match_or(doc: Any, details: Any = None) -> bool:
        for branch in branches:
            if branch(doc, details):
                return True
        return False

    return match_or


@TOP_OPS.register("$nor")
def filter_nor(arg: Any, ctx: Context) -> Matcher:
    branches = tuple(_branches(arg, "$nor", ctx))

    def match_nor(doc: Any, details: Any = None) -> bool:
        for branch in branches:
            if branch(doc, None):
                return False
        return True

    return match_nor


@FIELD_OPS.register("$not")
def filter_not(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if is_regex(arg):
        return Not(field_clause(arg, ctx))
    if not isinstance(arg, Mapping):
        raise bad_value("$not needs a regex or a document")
    if not arg:
        raise bad_value("$not cannot be empty")
    first = next(iter(arg))
    if not first.startswith("$"):
        raise bad_value(f"unknown operator: {first}")
    return Not(field_clause(arg, ctx))
