"""Array query operators: $all $elemMatch $size.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-array/

These see a field's array whole (their leaves do not expand arrays), except
``$all``, which is an ``$and`` of equalities.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bson import DBRef, Int64

from foliodb.errors import bad_value
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN
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


def _first_key(value: Any) -> str | None:
    if isinstance(value, Mapping) and value:
        return next(iter(value))
    return None


@FIELD_OPS.register("$all")
def filter_all(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if not isinstance(arg, list):
        raise bad_value("$all needs an array")
    if not arg:
        return Leaf(_never)
    clauses: list[Clause] = []
    # The first element decides the form: all $elemMatch documents, or values.
    if _first_key(arg[0]) == "$elemMatch":
        for value in arg:
            if _first_key(value) != "$elemMatch":
                raise bad_value("$all/$elemMatch has to be consistent")
            clauses.append(filter_elemMatch(value["$elemMatch"], value, ctx))
    else:
        for value in arg:
            # An operator that takes a path may not appear; other $-documents are values.
            first = _first_key(value)
            if first is not None and is_operator_doc(value) and first in FIELD_OPS:
                raise bad_value("no $ expressions in $all")
            clauses.append(eq_clause(value, ctx.collator))
    return clauses[0] if len(clauses) == 1 else AllOf(tuple(clauses))


# Operators that take no path (MongoDB's pathless parsers): an $elemMatch
# argument starting with one of them is a query on each element document.
_PATHLESS = frozenset(
    {
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
        "$sampleRate",
    }
)


def _check_element_query(spec: Mapping[str, Any]) -> None:
    """$expr, $text and $where judge top-level documents only, so an element
    query (and the $and/$or/$nor branches within it) may not hold them."""
    for key, value in spec.items():
        if key in ("$expr", "$text"):
            raise bad_value(f"{key} can only be applied to the top-level document")
        if key == "$where":
            raise bad_value("$elemMatch cannot contain $where expression")
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for branch in value:
                if isinstance(branch, Mapping):
                    _check_element_query(branch)


def _as_document(element: Any) -> dict[str, Any] | None:
    """An array element as the object form of $elemMatch sees it: documents
    as they are, DBRefs and arrays as the documents BSON stores them as
    ({$ref, $id, ...}; keys "0", "1", ...)."""
    if isinstance(element, dict):
        return element
    if isinstance(element, DBRef):
        return element.as_doc()
    if isinstance(element, list):
        return {str(n): e for n, e in enumerate(element)}
    return None


@FIELD_OPS.register("$elemMatch")
def filter_elemMatch(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if isinstance(arg, DBRef):
        # {$ref, $id} decodes as a DBRef; as a query it is the object of those fields (beanie sends it).
        arg = arg.as_doc()
    if not isinstance(arg, Mapping):
        raise bad_value("$elemMatch needs an Object")
    # MongoDB decides the form by the first key alone: an operator that takes
    # a path makes the value form ({"$gte": 80, "$lt": 85} on each element).
    first = _first_key(arg)
    if is_operator_doc(arg) and first not in _PATHLESS:
        test = clause_single(field_clause(arg, ctx))

        def match_values(v: Any) -> bool:
            return v.__class__ is list and any(test(e) for e in v)

        def value_position(v: list[Any]) -> int | None:
            return next((n for n, e in enumerate(v) if test(e)), None)

        return Leaf(match_values, expand=False, position=value_position)
    _check_element_query(arg)
    matcher = compile_filter(arg, ctx)

    def document_position(v: Any) -> int | None:
        if v.__class__ is not list:
            return None
        for n, e in enumerate(v):
            doc = _as_document(e)
            if doc is not None and matcher(doc, None):
                return n
        return None

    return Leaf(lambda v: document_position(v) is not None, expand=False, position=document_position)


@FIELD_OPS.register("$size")
def filter_size(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    # MongoDB's $size parser: an int32, an int64 or a double holding a
    # non-negative int32; any other type, Decimal128 included, is no number.
    cls = arg.__class__
    if cls is int or cls is Int64:
        if not INT32_MIN <= arg <= INT32_MAX:
            raise bad_value("$size must be representable as a 32-bit integer")
    elif cls is float:
        if not (math.isfinite(arg) and arg == int(arg) and INT32_MIN <= arg <= INT32_MAX):
            raise bad_value("$size must be a whole number")
    else:
        raise bad_value("$size needs a number")
    size = int(arg)
    if size < 0:
        raise bad_value("$size may not be negative")
    return Leaf(lambda v: v.__class__ is list and len(v) == size, expand=False)
