"""Field update operators: $set $unset $setOnInsert $min $max $currentDate $rename.

Manual: https://www.mongodb.com/docs/manual/reference/operator/update-field/

``$rename`` is placed in the tree by :mod:`foliodb.query.update` (a
placeholder at the source, a :class:`~foliodb.query.update_ops.tree.RenameNode`
at the destination); its compiler here checks the argument and answers the
destination path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Timestamp

from foliodb.errors import bad_value
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import type_name
from foliodb.query.context import Context
from foliodb.query.render import render
from foliodb.query.update_ops.core import (
    REMOVE,
    UNCHANGED,
    UPDATE_OPS,
    Modifier,
    Where,
    clone,
    is_array_filter,
    update_path,
)


def _always(arg: Any, insert_only: bool = False) -> Modifier:
    return Modifier(update=lambda old, where: clone(arg), create=lambda where: clone(arg), insert_only=insert_only)


@UPDATE_OPS.register("$set")
def update_set(path: str, arg: Any, ctx: Context) -> Modifier:
    return _always(arg)


@UPDATE_OPS.register("$setOnInsert")
def update_setOnInsert(path: str, arg: Any, ctx: Context) -> Modifier:
    return _always(arg, insert_only=True)


def _remove(old: Any, where: Where) -> Any:
    return REMOVE


@UPDATE_OPS.register("$unset")
def update_unset(path: str, arg: Any, ctx: Context) -> Modifier:
    return Modifier(update=_remove, strict_path=False)


def _compare_node(arg: Any, keep: int, ctx: Context) -> Modifier:
    # $min keeps the old value when it compares lower (keep=-1), $max when
    # higher; strings compare by the statement's collation.
    collator = ctx.collator
    key = arg if collator is None else collator.transform(arg)

    def update(old: Any, where: Where) -> Any:
        c = cmp.compare(old if collator is None else collator.transform(old), key)
        return UNCHANGED if c == 0 or c == keep else clone(arg)

    return Modifier(update=update, create=lambda where: clone(arg))


@UPDATE_OPS.register("$min")
def update_min(path: str, arg: Any, ctx: Context) -> Modifier:
    return _compare_node(arg, -1, ctx)


@UPDATE_OPS.register("$max")
def update_max(path: str, arg: Any, ctx: Context) -> Modifier:
    return _compare_node(arg, 1, ctx)


@UPDATE_OPS.register("$currentDate")
def update_currentDate(path: str, arg: Any, ctx: Context) -> Modifier:
    if arg is True or arg is False:
        is_date = True
    elif isinstance(arg, Mapping):
        found = None
        for name, value in arg.items():
            if name != "$type":
                raise bad_value(f"Unrecognized $currentDate option: {name}")
            if value in ("date", "timestamp") and value.__class__ is str:
                found = value
        if found is None:
            raise bad_value(
                "The '$type' string field is required to be 'date' or 'timestamp': "
                "{$currentDate: {field : {$type: 'date'}}}"
            )
        is_date = found == "date"
    else:
        raise bad_value(
            f"{type_name(arg)} is not valid type for $currentDate. Please use a boolean ('true') "
            "or a $type expression ({$type: 'timestamp/date'})."
        )
    now: Any = ctx.now if is_date else Timestamp(cmp.date_millis(ctx.now) // 1000, 1)
    return Modifier(update=lambda old, where: now, create=lambda where: now)


@UPDATE_OPS.register("$rename")
def update_rename(path: str, arg: Any, ctx: Context) -> tuple[str, ...]:
    """The destination's components, once the argument is checked."""
    element = f"{path}: {render(arg)}"
    if arg.__class__ is not str:
        raise bad_value(f"The 'to' field for $rename must be a string: {element}")
    target = update_path(arg)
    if "\0" in arg:
        raise bad_value("The 'to' field for $rename cannot contain an embedded null byte")
    source = tuple(path.split("."))
    if source == target:
        raise bad_value(f"The source and target field for $rename must differ: {element}")
    shorter = min(len(source), len(target))
    if source[:shorter] == target[:shorter]:
        raise bad_value(f"The source and target field for $rename must not be on the same path: {element}")
    if any(part == "$" or is_array_filter(part) for part in source):
        raise bad_value(f"The source field for $rename may not be dynamic: {path}")
    if any(part == "$" or is_array_filter(part) for part in target):
        raise bad_value(f"The destination field for $rename may not be dynamic: {arg}")
    return target
