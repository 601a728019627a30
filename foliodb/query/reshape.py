"""Reshaping documents: what aggregation stages and update pipelines share.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/addFields/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/unset/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/replaceRoot/

``$addFields``/``$set``, ``$unset`` and ``$replaceRoot``/``$replaceWith`` mean
the same in an aggregation pipeline and in an update pipeline; this module
holds their argument checks (with MongoDB's codes and messages) and the
computed-field tree, plus MongoDB's FieldPath rules and the dotted-path
read/write helpers other stages use. Each caller wraps them in its own stage
shape (``aggregation/stages/`` streams documents, ``update_ops/pipeline.py``
maps one document).

Nothing here modifies a document it is given: writers return a new document,
copying only the documents along the path they write.

``$addFields`` semantics (MongoDB's projection-node rules for computed
fields): all expressions see the *input* document as ``$$ROOT``/``$$CURRENT``;
a computed value that is missing removes the field; a nested path writes
into an embedded document, into every element of an array (recursively for
nested arrays; a non-document element is replaced by a document of the
computed fields), and replaces any other value by a new document. Existing
fields keep their position; new fields are appended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn, Union

from bson import DBRef

from foliodb.errors import CommandError, location
from foliodb.query.bsontypes import type_name
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.idl import check_fields
from foliodb.query.paths import DBREF_FIELDS, MISSING, document_fields, stored_form
from foliodb.query.render import render, render_document

FieldTree = dict[str, Union[Expr, "FieldTree"]]


# -- field paths ---------------------------------------------------------------------


def check_field_name(name: str) -> None:
    if not name:
        raise location(40352, "FieldPath cannot be constructed with empty string")
    _check_component(name)


def _check_component(name: str) -> None:
    # DBRef's $ref/$id/$db are the only "$"-prefixed names a FieldPath takes.
    if name.startswith("$") and name not in DBREF_FIELDS:
        raise location(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")


def split_path(path: str) -> tuple[str, ...]:
    """The components of a field path a stage writes, checked as MongoDB's
    FieldPath checks them (component by component, in order)."""
    if not path:
        raise location(40352, "FieldPath cannot be constructed with empty string")
    parts = tuple(path.split("."))
    for p in parts:
        if not p:
            raise location(15998, "FieldPath field names may not be empty strings.")
        _check_component(p)
    return parts


def set_path(doc: Mapping[str, Any], parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with ``value`` at the dotted path (MISSING removes
    the field); a non-document along the path is replaced by a document."""
    out = dict(doc)
    head = parts[0]
    if len(parts) == 1:
        if value is MISSING:
            out.pop(head, None)
        else:
            out[head] = value
        return out
    child = document_fields(out.get(head))
    out[head] = stored_form(set_path(child or {}, parts[1:], value))
    return out


def get_path(doc: Any, parts: tuple[str, ...]) -> Any:
    """The value at a dotted path through documents (and DBRefs) only:
    arrays stop it."""
    value = doc
    for part in parts:
        fields = document_fields(value)
        if fields is None:
            return MISSING
        value = fields.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


# -- $addFields / $set ---------------------------------------------------------------


def compile_add_fields(name: str, spec: Any, scope: Scope) -> FieldTree:
    """The computed-field tree of an ``$addFields``/``$set`` stage (``name``
    as the user spelled it, for MongoDB's messages)."""
    if not isinstance(spec, Mapping):
        raise location(40272, f"{name} specification stage must be an object, got {type_name(spec)}")
    tree: FieldTree = {}
    try:
        _parse_into(tree, spec, scope, (), spec)
    except CommandError as error:
        raise CommandError(error.code, f"Invalid {name} :: caused by :: {error.errmsg}") from None
    return tree


def _parse_into(
    tree: FieldTree, spec: Mapping[str, Any], scope: Scope, prefix: tuple[str, ...], root: Mapping[str, Any]
) -> None:
    for key, value in spec.items():
        path = prefix + split_path(key)
        node = tree
        for i, part in enumerate(path[len(prefix) : -1], len(prefix)):
            step = node.setdefault(part, {})
            if not isinstance(step, dict):
                _conflict(path, path[: i + 1], root)
            node = step
        leaf = path[-1]
        if isinstance(value, Mapping) and not (value and next(iter(value)).startswith("$")):
            if not value:
                raise location(
                    40180, f"an empty object is not a valid value. Found empty object at path {'.'.join(path)}"
                )
            child = node.setdefault(leaf, {})
            if not isinstance(child, dict):
                _conflict(path, path, root)
            _parse_into(child, value, scope, path, root)
        else:
            existing = node.get(leaf)
            if existing is not None:
                _conflict(path, path + _first_leaf(existing), root)
            node[leaf] = compile_expression(value, scope)


def _first_leaf(node: Any) -> tuple[str, ...]:
    """The path (below ``node``) of its first computed field."""
    path: tuple[str, ...] = ()
    while isinstance(node, dict):
        name, node = next(iter(node.items()))
        path += (name,)
    return path


def _conflict(path: tuple[str, ...], other: tuple[str, ...], root: Mapping[str, Any]) -> NoReturn:
    raise location(
        40176,
        f"specification contains two conflicting paths. Cannot specify both '{'.'.join(path)}' and "
        f"'{'.'.join(other)}': {render_document(dict(root))}",
    )


def apply_tree(doc: dict[str, Any], tree: FieldTree, root: Any, vars: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the computed fields of ``tree`` written in; expressions
    see ``root`` as ``$$ROOT`` (and ``$$CURRENT``) and ``vars``."""
    out = dict(doc)
    for name, node in tree.items():
        if isinstance(node, dict):
            value = _apply_value(out.get(name, MISSING), node, root, vars)
        else:
            value = node(root, vars)
        if value is MISSING:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _apply_value(value: Any, tree: FieldTree, root: Any, vars: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return apply_tree(value, tree, root, vars)
    if isinstance(value, DBRef):
        return stored_form(apply_tree(dict(value.as_doc()), tree, root, vars))
    if isinstance(value, list):
        return [_apply_value(v, tree, root, vars) for v in value]
    return apply_tree({}, tree, root, vars)


# -- $unset --------------------------------------------------------------------------


def unset_fields(spec: Any) -> list[str]:
    """The field paths an ``$unset`` removes (each checked as a FieldPath);
    the stage is the exclusion projection of these paths."""
    # A Code value is a str to Python, but JavaScript to BSON: not a field name.
    names = [spec] if type_name(spec) == "string" else spec
    if not isinstance(names, list):
        raise location(31002, "$unset specification must be a string or an array")
    if not names:
        raise location(31119, "$unset specification must be a string or an array with at least one field")
    if not all(type_name(n) == "string" for n in names):
        raise location(31120, "$unset specification must be a string or an array containing only string values")
    for name in names:
        split_path(name)
    return names


# -- $replaceRoot / $replaceWith -----------------------------------------------------


def new_root_spec(spec: Any) -> Any:
    """The ``newRoot`` expression of a ``$replaceRoot`` specification."""
    if not isinstance(spec, Mapping):
        raise location(40229, f"expected an object as specification for $replaceRoot stage, got {type_name(spec)}")
    check_fields(spec, "$replaceRoot", ("newRoot",), ("newRoot",))
    return spec["newRoot"]


def replacement(value: Any, doc: dict[str, Any], what: str) -> dict[str, Any]:
    """``value``, the new root computed from ``doc``, when it is a document;
    otherwise MongoDB's error, led by ``what``."""
    if isinstance(value, dict):
        return value
    shown = "MISSING" if value is MISSING else render(value)
    kind = "missing" if value is MISSING else type_name(value)
    raise location(
        40228,
        f"{what} must evaluate to an object, but resulting value was: {shown}. "
        f"Type of resulting value: '{kind}'. Input document: {render_document(doc)}",
    )
