"""Array update operators: $push (with $each $position $sort $slice)
$addToSet $pop $pull $pullAll.

Manual: https://www.mongodb.com/docs/manual/reference/operator/update-array/

Equality between array elements is MongoDB's (1 == 1.0 == Int64(1)), taken
from :mod:`foliodb.query.keystring` encodings, which are equal exactly when
the values compare equal; under a collation ($addToSet, $pull, $pullAll)
strings are equal as the collation says
(https://www.mongodb.com/docs/manual/reference/collation/#operations-that-support-collation).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, bad_value, failed_to_parse
from foliodb.query import compare as cmp
from foliodb.query import paths
from foliodb.query.bsontypes import type_name
from foliodb.query.collation import key_encoder
from foliodb.query.context import Context
from foliodb.query.filter import FIELD_OPS, compile_filter
from foliodb.query.render import render, render_document
from foliodb.query.update_ops.core import (
    UNCHANGED,
    UPDATE_OPS,
    Modifier,
    Where,
    clone,
    integer_argument,
    reject_special_features,
)

_PUSH_CLAUSES = ("$each", "$slice", "$sort", "$position")


def _sorter(spec: Any) -> Callable[[list[Any]], list[Any]]:
    """The $sort of $push: 1/-1 orders whole elements; {field: 1/-1, ...}
    orders by those fields (missing ones, and non-documents, as null)."""
    if cmp.is_number(spec):
        if cmp.number_value(spec) not in (1, -1):
            raise bad_value("The $sort element value must be either 1 or -1")
        reverse = cmp.number_value(spec) == -1
        return lambda values: sorted(values, key=functools.cmp_to_key(cmp.compare), reverse=reverse)
    if not isinstance(spec, Mapping):
        raise bad_value(
            "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields"
        )
    if not spec:
        raise bad_value("The sort pattern is empty when it should be a set of fields.")
    fields: list[tuple[tuple[str, ...], int]] = []
    for name, direction in spec.items():
        if not cmp.is_number(direction) or cmp.number_value(direction) not in (1, -1):
            raise bad_value("The sort element value must be either 1 or -1")
        if not name:
            raise bad_value("The sort field cannot be empty")
        parts = paths.split(name)
        if "" in parts:
            raise bad_value(f"The sort field is a dotted field but has an empty part: {name}")
        fields.append((parts, -1 if cmp.number_value(direction) == -1 else 1))

    def key(value: Any) -> list[Any]:
        doc = value if value.__class__ is dict else {"": value}
        out = []
        for parts, _ in fields:
            v = paths.get_plain(doc, parts)
            out.append(None if v is paths.MISSING else v)
        return out

    def order(a: list[Any], b: list[Any]) -> int:
        for (_, direction), x, y in zip(fields, a, b, strict=True):
            c = cmp.compare(x, y)
            if c:
                return c * direction
        return 0

    by_fields = functools.cmp_to_key(order)
    return lambda values: sorted(values, key=lambda v: by_fields(key(v)))


def _whole(value: Any, message: str) -> int:
    try:
        return integer_argument(value, "")
    except CommandError:
        raise bad_value(message + type_name(value)) from None


@UPDATE_OPS.register("$push")
def update_push(path: str, arg: Any, ctx: Context) -> Modifier:
    position = None
    slice_ = None
    sort = None
    if isinstance(arg, Mapping) and "$each" in arg:
        for name in arg:
            if name not in _PUSH_CLAUSES:
                raise bad_value(f"Unrecognized clause in $push: {name}")
        each = arg["$each"]
        if not isinstance(each, (list, tuple)):
            raise bad_value(f"The argument to $each in $push must be an array but it was of type: {type_name(each)}")
        values = list(each)
        if "$slice" in arg:
            slice_ = _whole(arg["$slice"], "The value for $slice must be an integer value but was given type: ")
        if "$sort" in arg:
            sort = _sorter(arg["$sort"])
        if "$position" in arg:
            position = _whole(arg["$position"], "The value for $position must be an integer value, not of type: ")
    else:
        values = [arg]

    def push(array: list[Any]) -> list[Any]:
        n = len(array)
        if position is None or n == 0 or position > n:
            at = n
        elif position >= 0:
            at = position
        elif -position < n:
            at = n + position
        else:
            at = 0
        out = [*array[:at], *(clone(v) for v in values), *array[at:]]
        if sort is not None:
            out = sort(out)
        if slice_ is not None and len(out) > abs(slice_):
            out = out[:slice_] if slice_ >= 0 else out[slice_:]
        return out

    def update(old: Any, where: Where) -> Any:
        if old.__class__ is not list:
            raise bad_value(
                f"The field '{where.dotted}' must be an array but is of type {type_name(old)} "
                f"in document {{{where.id_text()}}}"
            )
        return push(old)

    return Modifier(update=update, create=lambda where: push([]))


def _distinct(values: list[Any], encode: Callable[[Any], bytes]) -> list[Any]:
    seen = set()
    out = []
    for v in values:
        key = encode(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


@UPDATE_OPS.register("$addToSet")
def update_addToSet(path: str, arg: Any, ctx: Context) -> Modifier:
    encode = key_encoder(ctx.collator)
    # Only an object whose *first* field is $each lists several values.
    if isinstance(arg, Mapping) and arg and next(iter(arg)) == "$each":
        each = arg["$each"]
        if not isinstance(each, (list, tuple)):
            raise CommandError(
                ErrorCode.TypeMismatch,
                f"The argument to $each in $addToSet must be an array but it was of type {type_name(each)}",
            )
        if len(arg) > 1:
            raise bad_value(f"Found unexpected fields after $each in $addToSet: {render_document(dict(arg))}")
        values = _distinct(list(each), encode)
    else:
        values = [arg]
    keys = [encode(v) for v in values]

    def update(old: Any, where: Where) -> Any:
        if old.__class__ is not list:
            raise bad_value(
                f"Cannot apply $addToSet to non-array field. Field named '{where.field}' has non-array type "
                f"{type_name(old)}"
            )
        present = {encode(v) for v in old}
        added = [clone(v) for v, key in zip(values, keys, strict=True) if key not in present]
        return [*old, *added] if added else UNCHANGED

    return Modifier(update=update, create=lambda where: [clone(v) for v in values])


@UPDATE_OPS.register("$pop")
def update_pop(path: str, arg: Any, ctx: Context) -> Modifier:
    which = integer_argument(arg, f"{path}: {render(arg)}")
    if which not in (1, -1):
        raise failed_to_parse(f"$pop expects 1 or -1, found: {which}")

    def update(old: Any, where: Where) -> Any:
        if old.__class__ is not list:
            raise CommandError(
                ErrorCode.TypeMismatch,
                f"Path '{where.dotted}' contains an element of non-array type '{type_name(old)}'",
            )
        if not old:
            return UNCHANGED
        return old[1:] if which == -1 else old[:-1]

    return Modifier(update=update)


def _culling(test: Callable[[Any], bool]) -> Modifier:
    def update(old: Any, where: Where) -> Any:
        if old.__class__ is not list:
            raise bad_value("Cannot apply $pull to a non-array value")
        kept = [v for v in old if not test(v)]
        return kept if len(kept) != len(old) else UNCHANGED

    return Modifier(update=update)


def _is_operator(name: str) -> bool:
    """Does a $pull condition start with a field operator ({$gte: 6})?"""
    return name in FIELD_OPS or name in FIELD_OPS.unbuilt or name == "$options"


@UPDATE_OPS.register("$pull")
def update_pull(path: str, arg: Any, ctx: Context) -> Modifier:
    if isinstance(arg, Mapping) and not (arg and _is_operator(next(iter(arg)))):
        # A condition on the fields of document elements.
        reject_special_features(arg)
        match = compile_filter(arg, ctx)
        return _culling(lambda v: v.__class__ is dict and match(v))
    if isinstance(arg, Mapping) or cmp.bracket(arg) == cmp.REGEX:
        # An operator condition (or regex) on each element as a value.
        match = compile_filter({"x": arg}, ctx)
        return _culling(lambda v: match({"x": v}))
    encode = key_encoder(ctx.collator)
    key = encode(arg)
    return _culling(lambda v: encode(v) == key)


@UPDATE_OPS.register("$pullAll")
def update_pullAll(path: str, arg: Any, ctx: Context) -> Modifier:
    if not isinstance(arg, (list, tuple)):
        raise bad_value(f"$pullAll requires an array argument but was given a {type_name(arg)}")
    encode = key_encoder(ctx.collator)
    keys = {encode(v) for v in arg}
    return _culling(lambda v: encode(v) in keys)
