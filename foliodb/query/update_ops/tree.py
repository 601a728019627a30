"""The update tree and its walk over a document, as MongoDB's UpdateNode tree.

An operator-style update compiles into a tree whose internal nodes are path
components and whose leaves are modifiers:

* :class:`ObjectNode` - a field (or array index) component; its children are
  applied in MongoDB's order (``field_order``: names lexicographically,
  numeric names numerically - "a.2" before "a.10"), which is also the order in
  which new fields are appended. A positional ``$`` child is applied at the
  place of the matched index, merged with a child of the same name;
* :class:`ArrayNode` - ``$[]`` and ``$[<id>]`` children, applied to each
  array element they match (the filters see the elements as they were before
  the update); children that meet on one element are merged;
* :class:`LeafNode` (a :class:`~foliodb.query.update_ops.core.Modifier`),
  :class:`RenameNode` and :class:`Placeholder` (the source of a ``$rename``).

Merging two nodes that both end at one place is MongoDB's runtime conflict
("Update created a conflict at 'a.0'").

The walk follows MongoDB's ``pathTaken``/``pathToCreate`` scheme: a node gets
the deepest existing element (``parent[key]``) and the components still
missing below it; a creating leaf builds them (padding arrays with nulls), a
reading leaf ($pull, $pop) treats them as a no-op. Copy-on-write: the walk
copies a container before its first change (:meth:`State.own`), so the input
document is never mutated and untouched sub-documents are shared.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

import bson

from foliodb.errors import CommandError, ErrorCode, bad_value
from foliodb.query.compare import compare
from foliodb.query.paths import DBREF_FIELDS, MISSING, is_index
from foliodb.query.update_ops.core import REMOVE, UNCHANGED, Modifier, Where, id_text, render_element

MAX_PADDING = 1_500_000
CANNOT_BACKFILL_ARRAY = 34  # MongoDB's CannotBackfillArray


class Node(Protocol):
    """Every node: apply yourself at ``parent[key]`` (the deepest existing
    element on your path), ``taken`` being its path and ``to_create`` the
    components of yours still missing below it."""

    def apply(self, st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None: ...


class State:
    """One application of an update: the working document and what the
    query matched. ``holder[""]`` is the document, so the root has a parent
    like every other element."""

    __slots__ = ("array_index", "holder", "inserting", "owned")

    def __init__(self, doc: dict[str, Any], array_index: int | None, inserting: bool) -> None:
        root = dict(doc)
        self.holder = {"": root}
        self.owned: dict[int, Any] = {id(root): root}  # values kept alive so ids stay unique
        self.array_index = array_index
        self.inserting = inserting

    @property
    def root(self) -> dict[str, Any]:
        return self.holder[""]

    def own(self, parent: Any, key: Any) -> Any:
        """``parent[key]``, copied first unless this update already owns it."""
        value = parent[key]
        if id(value) in self.owned:
            return value
        value = dict(value) if isinstance(value, dict) else list(value)
        parent[key] = value
        self.owned[id(value)] = value
        return value

    def fresh(self, value: Any) -> Any:
        self.owned[id(value)] = value
        return value


def _number_like(name: str) -> bool:
    return bool(name) and "0" <= name[0] <= "9" and not (name[0] == "0" and len(name) > 1)


def _cmp_fields(a: str, b: str) -> int:
    # MongoDB's cmpPathsAndArrayIndexes: names starting with a digit (and not
    # zero-padded) compare by length first, so numbers compare numerically.
    if _number_like(a) and _number_like(b) and len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


field_order = functools.cmp_to_key(_cmp_fields)


def dotted(parts: tuple[str, ...]) -> str:
    return ".".join(parts)


def _child_key(elem: Any, name: str) -> Any:
    """The key of an existing child of ``elem`` named ``name``, or None."""
    cls = elem.__class__
    if cls is dict:
        return name if name in elem else None
    if cls is list and is_index(name):
        n = int(name)
        return n if n < len(elem) else None
    return None


def _resolve(parent: Any, key: Any, parts: tuple[str, ...]) -> tuple[Any, Any] | None:
    """(container, key) of ``parts`` below ``parent[key]`` if all exist."""
    for part in parts:
        elem = parent[key]
        child = _child_key(elem, part)
        if child is None:
            return None
        parent, key = elem, child
    return parent, key


class ObjectNode:
    __slots__ = ("_order", "children", "positional")

    def __init__(self) -> None:
        self.children: dict[str, Node] = {}
        self.positional: Node | None = None
        self._order: list[tuple[str, Node]] | None = None

    def ordered(self) -> list[tuple[str, Node]]:
        if self._order is None:
            self._order = sorted(self.children.items(), key=lambda item: field_order(item[0]))
        return self._order

    def apply(self, st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None:
        items = self.ordered()
        if self.positional is not None:
            if st.array_index is None:
                raise bad_value("The positional operator did not find the match needed from the query.")
            items = self._with_positional(items, str(st.array_index), taken + to_create)
        for name, child in items:
            if to_create:
                child.apply(st, parent, key, taken, (*to_create, name))
                # A leaf may have created this node's own path: later children go inside it.
                found = _resolve(parent, key, to_create)
                if found is not None:
                    parent, key = found
                    taken, to_create = taken + to_create, ()
                continue
            child_key = _child_key(parent[key], name)
            if child_key is None:
                child.apply(st, parent, key, taken, (name,))
            else:
                child.apply(st, st.own(parent, key), child_key, (*taken, name), ())

    def _with_positional(
        self, items: list[tuple[str, Node]], matched: str, path: tuple[str, ...]
    ) -> list[tuple[str, Node]]:
        positional: Any = self.positional
        out: list[tuple[str, Node]] = []
        placed = False
        for name, child in items:
            if not placed and name == matched:
                out.append((name, merge(positional, child, (*path, matched))))
                placed = True
                continue
            if not placed and _cmp_fields(matched, name) < 0:
                out.append((matched, positional))
                placed = True
            out.append((name, child))
        if not placed:
            out.append((matched, positional))
        return out


class ArrayNode:
    """Children keyed by identifier ("" for ``$[]``); ``filters`` maps an
    identifier to the test of one element."""

    __slots__ = ("_order", "children", "filters")

    def __init__(self, filters: dict[str, Callable[[Any], bool]]) -> None:
        self.children: dict[str, Node] = {}
        self.filters = filters
        self._order: list[tuple[str, Node]] | None = None

    def ordered(self) -> list[tuple[str, Node]]:
        if self._order is None:
            self._order = sorted(self.children.items(), key=lambda item: field_order(item[0]))
        return self._order

    def apply(self, st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None:
        if to_create:
            raise bad_value(
                f"The path '{dotted(taken + to_create)}' must exist in the document in order to apply array updates."
            )
        array = parent[key]
        if array.__class__ is not list:
            name = taken[-1] if taken else ""
            raise bad_value(f"Cannot apply array updates to non-array element {render_element(name, array)}")
        items = self.ordered()
        plan = []
        for i, element in enumerate(array):
            nodes = [child for ident, child in items if not ident or self.filters[ident](element)]
            if nodes:
                plan.append((i, nodes))
        if not plan:
            return
        array = st.own(parent, key)
        for i, nodes in plan:
            path = (*taken, str(i))
            node = nodes[0]
            for other in nodes[1:]:
                node = merge(node, other, path)
            node.apply(st, array, i, path, ())


def merge(left: Any, right: Any, path: tuple[str, ...]) -> Node:
    """One node doing the work of two that meet at ``path``."""
    if left.__class__ is ObjectNode and right.__class__ is ObjectNode:
        node = ObjectNode()
        node.children = _merge_children(left.children, right.children, path, False)
        if left.positional is not None and right.positional is not None:
            node.positional = merge(left.positional, right.positional, (*path, "$"))
        else:
            node.positional = left.positional if left.positional is not None else right.positional
        return node
    if left.__class__ is ArrayNode and right.__class__ is ArrayNode:
        array = ArrayNode(left.filters)
        array.children = _merge_children(left.children, right.children, path, True)
        return array
    raise CommandError(ErrorCode.ConflictingUpdateOperators, f"Update created a conflict at '{dotted(path)}'")


def _merge_children(
    left: dict[str, Node], right: dict[str, Node], path: tuple[str, ...], wrap: bool
) -> dict[str, Node]:
    out = dict(left)
    for name, node in right.items():
        if name in out:
            out[name] = merge(out[name], node, (*path, f"$[{name}]" if wrap else name))
        else:
            out[name] = node
    return out


class LeafNode:
    __slots__ = ("mod",)

    def __init__(self, mod: Modifier) -> None:
        self.mod = mod

    def apply(self, st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None:
        mod = self.mod
        if mod.insert_only and not st.inserting:
            return
        if not to_create:
            old = parent[key]
            new = mod.update(old, Where(st.root, taken))
            if new is not UNCHANGED:
                write(st, parent, key, taken, old, new)
            return
        if mod.create is None:
            if mod.strict_path:
                check_viability(parent[key], taken, to_create)
            return
        create(st, parent, key, taken, to_create, mod.create(Where(st.root, taken + to_create)))


def write(st: State, parent: Any, key: Any, taken: tuple[str, ...], old: Any, new: Any) -> None:
    """Replace (or, for REMOVE, unset) the existing element ``parent[key]``."""
    if taken[0] == "_id" and (new is REMOVE or not binary_equal(old, new)):
        raise CommandError(
            ErrorCode.ImmutableField,
            f"Performing an update on the path '{dotted(taken)}' would modify the immutable field '_id'",
        )
    if len(taken) == 1 and new is not REMOVE:
        check_storable_name(taken[0], st.inserting)
    if new is REMOVE:
        if parent.__class__ is list:
            parent[key] = None  # $unset of an array element leaves a null in its place
        else:
            del parent[key]
    else:
        parent[key] = new


def create(st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...], value: Any) -> None:
    """Create ``to_create`` below the existing element ``parent[key]``,
    ending in ``value`` (MongoDB's createPathAt)."""
    elem = parent[key]
    first = to_create[0]
    if elem.__class__ is list:
        if not is_index(first):
            raise _cannot_create(first, taken, elem)
    elif elem.__class__ is not dict:
        raise _cannot_create(first, taken, elem)
    if not taken:
        check_storable_name(first, st.inserting)
    elem = st.own(parent, key)
    if elem.__class__ is list:
        index = int(first)
        if index - len(elem) > MAX_PADDING:
            raise CommandError(CANNOT_BACKFILL_ARRAY, f"can't backfill more than {MAX_PADDING} elements")
        elem.extend([None] * (index - len(elem)))
        if len(to_create) == 1:
            elem.append(value)
            container = None
        else:
            container = st.fresh({})
            elem.append(container)
        rest = to_create[1:]
    else:
        container = elem
        rest = to_create
    if container is not None:
        for part in rest[:-1]:
            inner = st.fresh({})
            container[part] = inner
            container = inner
        container[rest[-1]] = value
    if taken and taken[0] == "_id":
        raise CommandError(
            ErrorCode.ImmutableField,
            f"Updating the path '{dotted(taken)}' to {render_element(taken[-1], parent[key])} "
            "would modify the immutable field '_id'",
        )


def _cannot_create(part: str, taken: tuple[str, ...], elem: Any) -> CommandError:
    name = taken[-1] if taken else ""
    return CommandError(
        ErrorCode.PathNotViable, f"Cannot create field '{part}' in element {{{render_element(name, elem)}}}"
    )


def check_viability(elem: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None:
    """A missing path is fine under a document, or under an array when the
    next component is an index; otherwise it runs into a value."""
    if elem.__class__ is dict or (elem.__class__ is list and is_index(to_create[0])):
        return
    name = taken[-1] if taken else ""
    raise CommandError(
        ErrorCode.PathNotViable,
        f"Cannot use the part ({to_create[0]}) of ({dotted(taken)}.{dotted(to_create)}) "
        f"to traverse the element ({{{render_element(name, elem)}}})",
    )


def check_storable_name(name: str, inserting: bool) -> None:
    """An update may not write a top-level ``$``-prefixed field (DBRef
    fields aside); an upsert's insert may (it is validated as an insert)."""
    if not name.startswith("$") or inserting or name in DBREF_FIELDS:
        return
    raise CommandError(
        ErrorCode.DollarPrefixedFieldName,
        f"The dollar ($) prefixed field '{name}' in '{name}' is not allowed in the context of an update's "
        "replacement document. Consider using an aggregation pipeline with $replaceWith.",
    )


def binary_equal(a: Any, b: Any) -> bool:
    """Same BSON type and bytes (1 and 1.0 differ, as do 0.0 and -0.0)."""
    return bson.encode({"": a}) == bson.encode({"": b})


class Placeholder:
    """Reserves the source path of a ``$rename`` so nothing else touches it."""

    __slots__ = ()

    def apply(self, st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None:
        return


class RenameNode:
    """``$rename``, applied at its destination: a $set of the source's value
    there, then an $unset of the source. Neither path may run through an
    array."""

    __slots__ = ("source",)

    def __init__(self, source: tuple[str, ...]) -> None:
        self.source = source

    def apply(self, st: State, parent: Any, key: Any, taken: tuple[str, ...], to_create: tuple[str, ...]) -> None:
        value = self._find_source(st.root)
        if value is MISSING:
            return
        chain: list[Any] = [st.root]  # the destination's existing ancestors
        for part in taken if to_create else taken[:-1]:
            chain.append(chain[-1][_child_key(chain[-1], part)])
        for i in range(len(chain) - 1, 0, -1):
            if chain[i].__class__ is list:
                raise _array_in_path("destination", dotted(taken + to_create), st.root, taken[i - 1])
        if to_create:
            create(st, parent, key, taken, to_create, value)
        elif compare(parent[key], value) != 0:
            write(st, parent, key, taken, parent[key], value)
        if self.source[0] == "_id":
            raise CommandError(
                ErrorCode.ImmutableField,
                f"Unsetting the path '{dotted(self.source)}' using $rename would modify the immutable field '_id'",
            )
        owner: Any = st.holder
        owner_key: Any = ""
        for part in self.source[:-1]:
            owner = st.own(owner, owner_key)
            owner_key = part
        del st.own(owner, owner_key)[self.source[-1]]

    def _find_source(self, root: dict[str, Any]) -> Any:
        """The source's value, or MISSING (MongoDB's findLongestPrefix)."""
        source = self.source
        ancestors: list[tuple[str, Any]] = []
        elem: Any = root
        for i, part in enumerate(source):
            child = _child_key(elem, part)
            if child is None:
                if elem.__class__ is dict or (elem.__class__ is list and is_index(part)):
                    return MISSING
                raise CommandError(
                    ErrorCode.PathNotViable,
                    f"cannot use the part ({source[i - 1]} of {dotted(source)}) to traverse the element "
                    f"({{{render_element(source[i - 1], elem)}}})",
                )
            if i:
                ancestors.append((source[i - 1], elem))
            elem = elem[child]
        for name, container in reversed(ancestors):
            if container.__class__ is list:
                raise _array_in_path("source", dotted(source), root, name)
        return elem


def _array_in_path(which: str, path: str, root: dict[str, Any], name: str) -> CommandError:
    return bad_value(
        f"The {which} field cannot be an array element, '{path}' in doc with "
        f"{id_text(root)} has an array field called '{name}'"
    )
