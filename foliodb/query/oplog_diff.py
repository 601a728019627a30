"""mongod's ``$v: 2`` update oplog entries: parsing ``o`` and applying a document diff.

An update entry's ``o`` is either a replacement document (it holds ``_id``) or ``{$v: 2, diff}``
(mongod's UpdateModification::parseFromOplogEntry; anything else is 4772600). A diff (doc_diff.h) of a
document holds ``d`` (fields to delete: ``{name: false}``), ``u`` (fields to set, in place when they
exist), ``i`` (fields to insert, at the end in the diff's order) and ``s<name>`` (a sub-diff of the
field's document or array). An array's sub-diff holds ``a: true``, ``l`` (the new length: truncate, or
pad with nulls), ``u<index>`` (a new element) and ``s<index>`` (a sub-diff of an element). A sub-diff of
a field that is missing or of another type starts from an empty document or array.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import CommandError
from foliodb.query.bsontypes import type_name
from foliodb.query.render import render


def parse_update(o: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The diff of an update entry's ``o``, or None for a replacement document."""
    if "_id" in o:
        return None
    version = o.get("$v")
    if version is None or isinstance(version, bool) or version != 2:
        shown = "EOO" if version is None else f"$v: {render(version)}"
        raise CommandError(4772600, f"Expected _id field or $v:2, but got: {shown}")
    diff = o.get("diff")
    if not isinstance(diff, Mapping):
        raise CommandError(4772601, f"Expected 'diff' field to be an object, instead got type: {type_name(diff)}")
    return diff


def apply_diff(doc: Mapping[str, Any], diff: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` after a document diff (a new document; ``doc`` is not changed)."""
    deleted = diff.get("d") or {}
    updated = diff.get("u") or {}
    inserted = diff.get("i") or {}
    subs = {key[1:]: sub for key, sub in diff.items() if key.startswith("s") and len(key) > 1}
    out: dict[str, Any] = {}
    for name, value in doc.items():
        if name in deleted or name in inserted:
            continue
        if name in updated:
            out[name] = updated[name]
        elif name in subs:
            out[name] = _apply_sub(value, subs[name])
        else:
            out[name] = value
    for name, value in updated.items():
        if name not in out:
            out[name] = value
    for name, sub in subs.items():
        if name not in out and name not in deleted:
            out[name] = _apply_sub(None, sub)
    for name, value in inserted.items():
        out[name] = value
    return out


def _apply_sub(value: Any, sub: Any) -> Any:
    if not isinstance(sub, Mapping):
        return value
    if sub.get("a") is True:
        return _apply_array(value if isinstance(value, list) else [], sub)
    return apply_diff(value if isinstance(value, Mapping) else {}, sub)


def _apply_array(array: list[Any], diff: Mapping[str, Any]) -> list[Any]:
    out = list(array)
    length = diff.get("l")
    if isinstance(length, int) and not isinstance(length, bool):
        out = out[:length] + [None] * max(0, length - len(out))
    for key, value in diff.items():
        if key[:1] not in ("u", "s") or not key[1:].isdigit():
            continue
        index = int(key[1:])
        if index >= len(out):
            out.extend([None] * (index + 1 - len(out)))
        out[index] = value if key[0] == "u" else _apply_sub(out[index], value)
    return out
