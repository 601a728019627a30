"""Compile an update (operators, replacement or pipeline) into a function of a
document.

``compile_update(spec, ctx, array_filters)`` checks the whole update once,
raising MongoDB's parse errors, and returns a :class:`CompiledUpdate` whose
``apply(doc, array_index=None, inserting=False)`` returns the updated
document as a new dict. ``doc`` is never modified; untouched sub-documents
are shared with it.

The three kinds, as MongoDB tells them apart:

* a list is a pipeline (:mod:`foliodb.query.update_ops.pipeline`);
* a document whose first field starts with ``$`` holds update operators,
  compiled into the update tree of :mod:`foliodb.query.update_ops.tree`
  (one compiler per operator in :data:`UPDATE_OPS`); arrayFilters are
  parsed first, and each must be used;
* any other document (``{}`` included) replaces the document.

Invariants of every result: ``_id`` is never changed (ImmutableField 66)
and comes first; a replacement or pipeline that drops ``_id`` keeps the old
one. ``inserting=True`` marks an upsert's insert: ``$setOnInsert`` applies
and field names are checked as an insert's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from bson import Timestamp

from foliodb.errors import CommandError, ErrorCode, bad_value, failed_to_parse
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import type_name
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter
from foliodb.query.render import render_document
from foliodb.query.update_ops import UPDATE_OPS
from foliodb.query.update_ops.core import (
    Modifier,
    clone,
    is_array_filter,
    reject_special_features,
    render_element,
    update_path,
)
from foliodb.query.update_ops.pipeline import compile_pipeline
from foliodb.query.update_ops.tree import (
    ArrayNode,
    LeafNode,
    ObjectNode,
    Placeholder,
    RenameNode,
    State,
    check_storable_name,
    dotted,
)
from foliodb.query.update_ops.upsert import seed_from_filter

__all__ = ["UPDATE_OPS", "CompiledUpdate", "compile_update", "seed_from_filter"]

Filters = dict[str, Callable[[Any], bool]]


class CompiledUpdate:
    """A compiled update. ``apply`` never modifies its input."""

    __slots__ = ("_apply", "is_pipeline", "is_replacement")

    def __init__(self, apply: Callable[[dict[str, Any], int | None, bool], dict[str, Any]], kind: str) -> None:
        self._apply = apply
        self.is_replacement = kind == "replacement"
        self.is_pipeline = kind == "pipeline"

    def apply(self, doc: dict[str, Any], array_index: int | None = None, inserting: bool = False) -> dict[str, Any]:
        new = self._apply(doc, array_index, inserting)
        if "_id" in new and next(iter(new)) != "_id":
            new = {"_id": new["_id"], **new}
        return new


def compile_update(spec: Any, ctx: Context | None = None, array_filters: list[Any] | None = None) -> CompiledUpdate:
    if ctx is None:
        ctx = Context()
    filters = _array_filters(array_filters or [], ctx)
    if isinstance(spec, list):
        if filters:
            raise failed_to_parse("arrayFilters may not be specified for pipeline-style updates")
        transform = compile_pipeline(spec, ctx)
        return CompiledUpdate(
            lambda doc, index, inserting: _replace(doc, transform(doc), inserting, check_names=False), "pipeline"
        )
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "Update argument must be either an object or an array")
    if not spec or not next(iter(spec)).startswith("$"):
        return _compile_replacement(spec, ctx)
    root = _compile_operators(spec, ctx, filters)

    def apply(doc: dict[str, Any], array_index: int | None, inserting: bool) -> dict[str, Any]:
        st = State(doc, array_index, inserting)
        root.apply(st, st.holder, "", (), ())
        return st.root

    return CompiledUpdate(apply, "operators")


# -- arrayFilters -----------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[a-z][a-zA-Z0-9]*")


def _array_filters(specs: list[Any], ctx: Context) -> Filters:
    """Each filter's identifier (its one top-level field name) and the test
    of an array element, which is matched as the value of that field."""
    filters: Filters = {}
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise CommandError(ErrorCode.TypeMismatch, f"Each array filter must be an object, not {type_name(spec)}")
        try:
            reject_special_features(spec)
            match = compile_filter(spec, ctx)
            found: list[str] = []
            _placeholders(spec, found)
            if found and not _IDENTIFIER.fullmatch(found[0]):
                raise bad_value(
                    "The top-level field name must be an alphanumeric string beginning with a lowercase letter, "
                    f"found '{found[0]}'"
                )
        except CommandError as error:
            raise CommandError(error.code, f"Error parsing array filter :: caused by :: {error.errmsg}") from None
        if not found:
            raise failed_to_parse("Cannot use an expression without a top-level field name in arrayFilters")
        name = found[0]
        if name in filters:
            raise failed_to_parse(f"Found multiple array filters with the same top-level field name {name}")
        filters[name] = _element_test(match, name)
    return filters


def _element_test(match: Callable[..., bool], name: str) -> Callable[[Any], bool]:
    def test(element: Any) -> bool:
        return match({name: element})

    return test


def _placeholders(spec: Mapping[str, Any], found: list[str]) -> None:
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor"):
            for clause in value:
                _placeholders(clause, found)
        elif not key.startswith("$"):
            name = key.split(".", 1)[0]
            if found and name != found[0]:
                raise failed_to_parse(f"Expected a single top-level field name, found '{found[0]}' and '{name}'")
            found.append(name)


# -- operator updates -------------------------------------------------------------------


def _compile_operators(spec: Mapping[str, Any], ctx: Context, filters: Filters) -> ObjectNode:
    root = ObjectNode()
    used: set[str] = set()
    for name, fields in spec.items():
        compiler = UPDATE_OPS.get(name)
        if not isinstance(fields, Mapping):
            raise failed_to_parse(
                f"Modifiers operate on fields but we found type {type_name(fields)} instead. "
                f"For example: {{$mod: {{<field>: ...}}}} not {{{render_element(name, fields)}}}"
            )
        for path, arg in fields.items():
            parts = update_path(path)
            if name == "$rename":  # the source is reserved before the destination is checked
                _insert(root, parts, Placeholder(), filters, used)
            compiled = compiler(path, arg, ctx)
            if isinstance(compiled, Modifier):
                _insert(root, parts, LeafNode(compiled), filters, used)
            else:
                _insert(root, compiled, RenameNode(parts), filters, used)
    for ident in sorted(filters):
        if ident not in used:
            raise failed_to_parse(
                f"The array filter for identifier '{ident}' was not used in the update {render_document(dict(spec))}"
            )
    return root


def _insert(root: ObjectNode, parts: tuple[str, ...], leaf: Any, filters: Filters, used: set[str]) -> None:
    """Place ``leaf`` at ``parts``, creating internal nodes; two operators
    on one path, or on a path and its prefix, conflict."""
    path = dotted(parts)
    last = len(parts) - 1
    node: Any = root
    for i, part in enumerate(parts):
        name = _child_name(part, i, path, filters, used)
        positional = part == "$"  # only ever below an ObjectNode
        existing = node.positional if positional else node.children.get(name)
        if i == last:
            if existing is not None:
                raise _conflict(path, path)
            child = leaf
        else:
            wanted = ArrayNode if is_array_filter(parts[i + 1]) else ObjectNode
            if existing is not None:
                if existing.__class__ is not wanted:
                    raise _conflict(path, dotted(parts[: i + 1]))
                node = existing
                continue
            child = ArrayNode(filters) if wanted is ArrayNode else ObjectNode()
        if positional:
            node.positional = child
        else:
            node.children[name] = child
        node = child


def _child_name(part: str, i: int, path: str, filters: Filters, used: set[str]) -> str:
    if not is_array_filter(part):
        return part
    if i == 0:
        raise bad_value(
            f"Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '{path}'"
        )
    ident = part[2:-1]
    if ident:
        if ident not in filters:
            raise bad_value(f"No array filter found for identifier '{ident}' in path '{path}'")
        used.add(ident)
    return ident


def _conflict(path: str, at: str) -> CommandError:
    return CommandError(
        ErrorCode.ConflictingUpdateOperators, f"Updating the path '{path}' would create a conflict at '{at}'"
    )


# -- replacements -----------------------------------------------------------------------


def _compile_replacement(spec: Mapping[str, Any], ctx: Context) -> CompiledUpdate:
    # A zero Timestamp in a top-level field becomes the current time, as on insert.
    now = Timestamp(cmp.date_millis(ctx.now) // 1000, 1)
    replacement = {name: now if name != "_id" and _zero_timestamp(value) else value for name, value in spec.items()}
    return CompiledUpdate(
        lambda doc, index, inserting: _replace(doc, clone(replacement), inserting, check_names=True), "replacement"
    )


def _zero_timestamp(value: Any) -> bool:
    return value.__class__ is Timestamp and value.time == 0 and value.inc == 0


def _replace(doc: dict[str, Any], new: dict[str, Any], inserting: bool, check_names: bool) -> dict[str, Any]:
    """``new`` in place of ``doc``, keeping ``doc``'s ``_id`` when ``new``
    has none (MongoDB's ObjectReplaceExecutor)."""
    if check_names:
        for name in new:
            check_storable_name(name, inserting)
    if "_id" not in new:
        return {"_id": doc["_id"], **new} if "_id" in doc else dict(new)
    if new["_id"].__class__ is list:
        raise CommandError(
            ErrorCode.NotSingleValueField,
            "After applying the update to the document, the (immutable) field '_id' was found to be an array "
            "or array descendant.",
        )
    if "_id" in doc and cmp.compare(new["_id"], doc["_id"]) != 0:
        raise CommandError(
            ErrorCode.ImmutableField,
            "After applying the update, the (immutable) field '_id' was found to have been altered to "
            + render_element("_id", new["_id"]),
        )
    return dict(new)
