"""Writing fields into output documents: ``$addFields``/``$set`` trees and
dotted-path assignment.

Stages never modify their input documents: every function here returns a
new document, copying only the documents along the path it writes.

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
from typing import Any, Union

from foliodb.errors import location
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.paths import MISSING

FieldTree = dict[str, Union[Expr, "FieldTree"]]


def check_field_name(name: str) -> None:
    if not name:
        raise location(40352, "FieldPath cannot be constructed with empty string")
    if name.startswith("$"):
        raise location(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")


def split_path(path: str) -> tuple[str, ...]:
    check_field_name(path)
    parts = tuple(path.split("."))
    if any(p == "" for p in parts):
        raise location(15998, "FieldPath field names may not be empty strings.")
    for p in parts:
        check_field_name(p)
    return parts


def parse_tree(spec: Mapping[str, Any], scope: Scope) -> FieldTree:
    """The computed-field tree of an ``$addFields``/``$set`` specification."""
    tree: FieldTree = {}
    _parse_into(tree, spec, scope, "")
    return tree


def _parse_into(tree: FieldTree, spec: Mapping[str, Any], scope: Scope, prefix: str) -> None:
    for key, value in spec.items():
        parts = split_path(key)
        full = prefix + key
        node = tree
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                _conflict(prefix + ".".join(parts[: i + 1]), full)
            node = child
        leaf = parts[-1]
        if isinstance(value, Mapping) and not (value and next(iter(value)).startswith("$")):
            if not value:
                raise location(40180, f"an empty object is not a valid value. Found empty object at path {full}")
            child = node.setdefault(leaf, {})
            if not isinstance(child, dict):
                _conflict(full, full)
            _parse_into(child, value, scope, full + ".")
        else:
            if leaf in node:
                _conflict(full, full)
            node[leaf] = compile_expression(value, scope)


def _conflict(a: str, b: str) -> None:
    raise location(40176, f"specification contains two conflicting paths. Cannot specify both '{a}' and '{b}'")


def apply_tree(doc: dict[str, Any], tree: FieldTree, root: Any, vars: dict[str, Any]) -> dict[str, Any]:
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
    if isinstance(value, list):
        return [_apply_value(v, tree, root, vars) for v in value]
    return apply_tree({}, tree, root, vars)


def tree_fields(tree: FieldTree) -> frozenset[str]:
    return frozenset(tree)


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
    child = out.get(head)
    out[head] = set_path(child if isinstance(child, dict) else {}, parts[1:], value)
    return out


def get_path(doc: Any, parts: tuple[str, ...]) -> Any:
    """The value at a dotted path through documents only (arrays stop it)."""
    value = doc
    for part in parts:
        if not isinstance(value, dict):
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value
