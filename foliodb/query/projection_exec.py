"""Apply a parsed projection: MongoDB's ``ProjectionNode`` and find's post steps.

An :class:`Executor` is one level of the output tree; a projection applies in
three phases (``projection_node.cpp``, ``projection_executor_utils.cpp``):

1. *projections* walk the input in its own field order: an inclusion keeps
   the named fields (so output order is the document's, not the spec's), an
   exclusion copies the document and drops them; through an array each
   element is projected, and an inclusion drops elements that are not
   documents;
2. *computed fields* (expressions, ``$meta``, ``$elemMatch``) are evaluated
   against the whole input document in spec order: a field the document
   already holds is replaced in place, a new one is appended;
3. find's ``$slice`` (:func:`slice_step`) and positional ``$``
   (:func:`positional_step`) rewrite the result of 1-2.

The input document is never modified: containers are copied before a change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bson import DBRef

from foliodb.errors import location
from foliodb.query.filter import MatchDetails
from foliodb.query.paths import MISSING, stored_form
from foliodb.query.projection_parser import Computed

# (input document, output so far, match details) -> output
PostStep = Callable[[dict[str, Any], dict[str, Any], MatchDetails | None], dict[str, Any]]


class Executor:
    """One level of MongoDB's ProjectionNode (inclusion or exclusion)."""

    __slots__ = ("children", "computed", "fields", "has_computed", "inclusion", "order")

    def __init__(self, inclusion: bool) -> None:
        self.inclusion = inclusion
        self.fields: set[str] = set()  # included (inclusion) or removed (exclusion)
        self.children: dict[str, Executor] = {}
        self.computed: dict[str, Computed] = {}
        self.order: list[str] = []  # computed fields and children, in the order they were added
        self.has_computed = False  # does this subtree compute anything?

    def child(self, name: str) -> Executor:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Executor(self.inclusion)
            self.order.append(name)
        return node

    def add_field(self, parts: tuple[str, ...]) -> None:
        if len(parts) == 1:
            self.fields.add(parts[0])
        else:
            self.child(parts[0]).add_field(parts[1:])

    def add_computed(self, parts: tuple[str, ...], fn: Computed) -> None:
        self.has_computed = True
        if len(parts) == 1:
            self.computed[parts[0]] = fn
            self.order.append(parts[0])
        else:
            self.child(parts[0]).add_computed(parts[1:], fn)

    def project(self, doc: dict[str, Any]) -> dict[str, Any]:
        children = self.children
        if self.inclusion:
            out = {}
            for name, value in doc.items():
                if name in self.fields:
                    out[name] = value
                elif name in children:
                    child = children[name]
                    v = child.project_value(value)
                    # A MISSING placeholder keeps the field's place for phase 2 to fill.
                    if v is not MISSING or child.has_computed:
                        out[name] = v
            return out
        out = dict(doc)
        for name in self.fields:
            out.pop(name, None)
        for name, child in children.items():
            if name in out:
                out[name] = child.project_value(out[name])
        return out

    def project_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return self.project(value)
        if isinstance(value, DBRef):
            # A DBRef is projected as the document BSON stores it as.
            return stored_form(self.project(dict(value.as_doc())))
        if isinstance(value, list):
            out = []
            for element in value:
                v = self.project_value(element)
                if v is not MISSING or self.has_computed:
                    out.append(v)
            return out
        return MISSING if self.inclusion else value

    def apply_computed(
        self, doc: dict[str, Any], out: dict[str, Any], meta: Mapping[str, Any] | None, vars: dict[str, Any]
    ) -> None:
        """Phase 2 on ``out``, a fresh container of phase 1. Children without
        computed fields are skipped: MongoDB's pass over them changes nothing."""
        for name in self.order:
            child = self.children.get(name)
            if child is None:
                v = self.computed[name](doc, meta, vars)
            elif child.has_computed:
                v = child.computed_value(doc, out.get(name, MISSING), meta, vars)
            else:
                continue
            if v is MISSING:
                out.pop(name, None)
            else:
                out[name] = v

    def computed_value(
        self, doc: dict[str, Any], value: Any, meta: Mapping[str, Any] | None, vars: dict[str, Any]
    ) -> Any:
        if isinstance(value, list):
            return [self.computed_value(doc, v, meta, vars) for v in value]
        # Anything but a document is replaced by a document of the computed fields.
        out = value if isinstance(value, dict) else {}
        self.apply_computed(doc, out, meta, vars)
        return out


def _slice_array(array: list[Any], skip: int | None, limit: int) -> list[Any]:
    n = len(array)
    if skip is None:
        if limit < 0:
            return array[max(0, n + limit) :]
        return array[:limit]
    start = max(0, n + skip) if skip < 0 else min(n, skip)
    return array[start : start + limit]


def slice_step(parts: tuple[str, ...], skip: int | None, limit: int) -> PostStep:
    def slice_in(doc: dict[str, Any], i: int) -> dict[str, Any]:
        name = parts[i]
        i += 1
        value = doc.get(name, MISSING)
        if isinstance(value, list):
            if i == len(parts):
                value = _slice_array(value, skip, limit)
            else:
                value = [slice_in(e, i) if isinstance(e, dict) else e for e in value]
        elif isinstance(value, dict) and i < len(parts):
            value = slice_in(value, i)
        else:
            return doc
        out = dict(doc)
        out[name] = value
        return out

    return lambda doc, out, details: slice_in(out, 0)


def _set_nested(doc: dict[str, Any], parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = dict(doc)
    if len(parts) == 1:
        out[parts[0]] = value
    else:
        inner = out.get(parts[0])
        out[parts[0]] = _set_nested(inner if isinstance(inner, dict) else {}, parts[1:], value)
    return out


def positional_step(parts: tuple[str, ...]) -> PostStep:
    def positional(doc: dict[str, Any], out: dict[str, Any], details: MatchDetails | None) -> dict[str, Any]:
        # applyFindPositionalProjection: the first array on the path takes the
        # element the query matched. A scalar step leaves ``sub`` where it was,
        # as MongoDB's loop does.
        sub: Any = out
        for i, name in enumerate(parts):
            value = sub.get(name, MISSING) if isinstance(sub, dict) else MISSING
            if isinstance(value, list):
                index = None if details is None else details.array_index
                if index is None:
                    raise location(51246, "positional operator '.$' couldn't find a matching element in the array")
                if index >= len(value):
                    raise location(51247, "positional operator '.$' element mismatch")
                return _set_nested(out, parts[: i + 1], [value[index]])
            if isinstance(value, dict):
                sub = value
        return out

    return positional
