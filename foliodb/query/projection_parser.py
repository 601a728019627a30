"""Parse a projection spec into a tree of path nodes and leaves (MongoDB's ``projection_parser.cpp``).

The leaves are include or exclude (:class:`FlagNode`), a computed value
(:class:`ComputedNode`: an expression, ``$meta`` or find's ``$elemMatch``),
find's ``$slice`` (:class:`SliceNode`) and positional ``$``
(:class:`PositionalNode`). Dotted names and nested documents (``{"a": {"b":
1}}``) build the same tree; a path that is both a leaf and a prefix is a
collision (31249/31250). The first inclusion, exclusion or computed field
fixes the projection's type; ``_id`` may go either way; find's
``$slice``/``$elemMatch``/``$meta`` alone leave the type to MongoDB's
compatibility rules (:meth:`Parser.default_type`). Booleans and numbers of
any type are include (truthy) or exclude (falsy); any other value is an
expression (since 4.4: ``{"a": "x"}`` sets a literal). Every parse error is
raised here, once: the tree holds only valid specs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import Decimal128, Int64

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.context import Context
from foliodb.query.expr import EXPR_OPS, Scope, compile_expression, truthy
from foliodb.query.filter import FIELD_OPS, Leaf
from foliodb.query.paths import DBREF_FIELDS, MISSING
from foliodb.query.render import render, render_document

# (input document, $meta values or None, expression variables) -> value or MISSING
Computed = Callable[[dict[str, Any], Mapping[str, Any] | None, dict[str, Any]], Any]


INCLUSION = "inclusion"
EXCLUSION = "exclusion"

# DocumentMetadataFields' names, the arguments $meta accepts.
META_NAMES = frozenset({
    "textScore", "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint",
    "recordId", "indexKey", "sortKey", "searchScoreDetails", "searchRootDocumentId",
    "searchSequenceToken", "timeseriesBucketMinTime", "timeseriesBucketMaxTime",
    "vectorSearchScore", "score", "scoreDetails",
})  # fmt: skip


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(slots=True)
class FlagNode:
    include: bool


@dataclass(slots=True)
class ComputedNode:
    fn: Computed


@dataclass(slots=True)
class SliceNode:
    skip: int | None
    limit: int


@dataclass(slots=True)
class PositionalNode:
    pass


@dataclass(slots=True)
class PathNode:
    children: dict[str, PathNode | FlagNode | ComputedNode | SliceNode | PositionalNode] = field(default_factory=dict)


_Node = PathNode | FlagNode | ComputedNode | SliceNode | PositionalNode


def field_path(path: str) -> tuple[str, ...]:
    """The components of a field path, checked as MongoDB's FieldPath does."""
    if not path:
        raise location(40352, "FieldPath cannot be constructed with empty string")
    if path.endswith("."):
        raise location(40353, "FieldPath must not end with a '.'.")
    parts = tuple(path.split("."))
    for part in parts:
        if not part:
            raise location(15998, "FieldPath field names may not be empty strings.")
        if part[0] == "$" and part not in DBREF_FIELDS:
            raise location(
                16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."
            )
        if "\0" in part:
            raise location(16411, "FieldPath field names may not contain '\\0'. Consider using $getField or $setField.")
    return parts


def _add(parent: PathNode, parts: tuple[str, ...], node: _Node) -> None:
    """addNodeAtPath: place ``node`` at ``parts`` below ``parent``."""
    here = parent
    for i, name in enumerate(parts):
        child = here.children.get(name)
        if i == len(parts) - 1:
            if child is not None:
                raise location(31250, f"Path collision at {'.'.join(parts)}")
            here.children[name] = node
            return
        if child is None:
            child = here.children[name] = PathNode()
        elif not isinstance(child, PathNode):
            raise location(31249, f"Path collision at {'.'.join(parts)} remaining portion {'.'.join(parts[1:])}")
        here = child


def _inner(parent: PathNode, parts: tuple[str, ...]) -> PathNode | None:
    """findLastInnerNodeOnPath: the path node at ``parts``, if there is one."""
    here: _Node = parent
    for name in parts:
        if not isinstance(here, PathNode):
            return None
        child = here.children.get(name)
        if child is None:
            return None
        here = child
    return here if isinstance(here, PathNode) else None


def _is_flag(value: Any) -> bool:
    """Booleans and numbers say include/exclude; anything else is a value."""
    cls = value.__class__
    return cls is bool or cls is int or cls is float or cls is Int64 or cls is Decimal128


def _safe_int(value: Any) -> int:
    """BSONElement::safeNumberInt: truncated toward zero, clamped, NaN is 0."""
    n = cmp.number_value(value)
    if n != n:
        return 0
    if n in (float("inf"), float("-inf")):
        return _INT32_MAX if n > 0 else _INT32_MIN
    return max(_INT32_MIN, min(_INT32_MAX, int(n)))


def _meta(arg: Any) -> Computed:
    if not is_string(arg):
        raise location(17307, "$meta only supports string arguments")
    if arg not in META_NAMES:
        raise location(17308, f"Unsupported argument to $meta: {arg}")

    def meta_value(doc: dict[str, Any], meta: Mapping[str, Any] | None, vars: dict[str, Any]) -> Any:
        return MISSING if meta is None else meta.get(arg, MISSING)

    return meta_value


def _expression(fn: Callable[[Any, dict[str, Any]], Any]) -> Computed:
    return lambda doc, meta, vars: fn(doc, vars)


def _elem_match(name: str, single: Callable[[Any], bool]) -> Computed:
    def elem_match(doc: dict[str, Any], meta: Mapping[str, Any] | None, vars: dict[str, Any]) -> Any:
        value = doc.get(name, MISSING)
        if isinstance(value, list):
            for element in value:
                # The filter's $elemMatch judges a whole array; one element at a time finds the first.
                if single([element]):
                    return [element]
        return MISSING

    return elem_match


class Parser:
    """projection_ast::parseAndAnalyze, flags and all."""

    def __init__(self, ctx: Context, find: bool) -> None:
        self.ctx = ctx
        self.find = find
        self.scope = Scope(frozenset(ctx.variables), ctx.collator)
        self.root = PathNode()
        self.type: str | None = None
        self.id_specified = False
        self.id_included = False
        self.has_positional = False
        self.has_elem_match = False
        self.has_find_slice = False
        self.has_meta = False
        self.meta_names: set[str] = set()

    def parse(self, spec: Mapping[str, Any]) -> PathNode:
        for name, value in spec.items():
            self.id_specified |= name == "_id" or name.startswith("_id.")
            self.element(name, value, self.root)
        if self.type is None:
            self.type = self.default_type()
        if not self.id_specified and self.type == INCLUSION:
            _add(self.root, ("_id",), FlagNode(True))
        if self.type == EXCLUSION and self.id_included:
            del self.root.children["_id"]
        return self.root

    def default_type(self) -> str:
        """computeProjectionType: the type of a spec of only _id and find operators."""
        # With find's $slice, or with only _id (and find's $meta), {_id: 1} makes an inclusion.
        if not self.has_find_slice and (self.has_elem_match or (self.has_meta and not self.find)):
            return INCLUSION
        return INCLUSION if self.id_included else EXCLUSION

    def element(self, name: str, value: Any, parent: PathNode) -> None:
        positional = name.endswith(".$")
        if positional and not self.find:
            raise location(31324, "Cannot use positional projection in aggregation projection")
        if ".$." in name:
            raise location(
                31394,
                "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional "
                "projection may only be used at the end, for example: a.b.$. If the query previously used a "
                "form like a.b.$.d, remove the parts following the '$' and the results will be equivalent.",
            )
        if isinstance(value, Mapping):
            if positional:
                raise location(31271, "positional projection cannot be used with an expression or sub object")
            self.sub_object(name, value, parent)
        elif _is_flag(value):
            if truthy(value):
                self.inclusion(name, parent, positional)
            else:
                if positional:
                    raise location(31395, "positional projection cannot be used with exclusion")
                self.exclusion(name, parent)
        else:
            if positional:
                raise location(31308, "positional projection cannot be used with a literal")
            fn = compile_expression(value, self.scope)
            _add(parent, field_path(name), ComputedNode(_expression(fn)))
            if self.type == EXCLUSION:
                raise location(31310, f"Cannot use an expression {name}: {render(value)} in an exclusion projection")
            self.type = INCLUSION

    def inclusion(self, name: str, parent: PathNode, positional: bool) -> None:
        top_id = name == "_id" and parent is self.root
        if not positional:
            _add(parent, field_path(name), FlagNode(True))
            self.id_included |= top_id
        else:
            if self.has_positional:
                raise location(31276, "Cannot specify more than one positional projection per query.")
            if self.has_elem_match:
                raise location(31256, "Cannot specify positional operator and $elemMatch.")
            if name == ".$":
                raise location(5392900, f"Projection on field {name} is invalid")
            _add(parent, field_path(name[:-2]), PositionalNode())
            self.has_positional = True
        if not top_id:
            if self.type == EXCLUSION:
                raise location(31253, f"Cannot do inclusion on field {name} in exclusion projection")
            self.type = INCLUSION

    def exclusion(self, name: str, parent: PathNode) -> None:
        _add(parent, field_path(name), FlagNode(False))
        if name == "_id" and parent is self.root:
            return  # _id may be excluded from either kind
        if self.type == INCLUSION:
            raise location(31254, f"Cannot do exclusion on field {name} in inclusion projection")
        self.type = EXCLUSION

    def sub_object(self, name: str, obj: Mapping[str, Any], parent: PathNode) -> None:
        if not obj:
            raise location(51270, f"Invalid empty sub-projection: {name}")
        parts = field_path(name)
        first = next(iter(obj))
        if len(obj) == 1 and first.startswith("$"):
            if self.operator(parts, first, obj, parent):
                return
            # Not an operator: a sub-projection, if the name is a valid path.
            try:
                field_path(first[:-2] if first.endswith(".$") else first)
            except CommandError:
                raise location(31325, f"Unknown expression {first}") from None
        node = _inner(parent, parts)
        if node is None:
            node = PathNode()
            _add(parent, parts, node)
        for key, value in obj.items():
            self.element(key, value, node)

    def operator(self, parts: tuple[str, ...], op: str, obj: Mapping[str, Any], parent: PathNode) -> bool:
        """A one-field ``{"$op": arg}`` value: find's operators, $meta or an
        expression. False when ``op`` names none of them."""
        arg = obj[op]
        if self.find and op == "$slice":
            self.find_slice(parts, arg, obj, parent)
            return True
        if op == "$elemMatch":
            if not self.find:
                raise CommandError(ErrorCode.InvalidPipelineOperator, "Cannot use $elemMatch in this context")
            self.elem_match(parts, arg, obj, parent)
            return True
        if op != "$meta" and op not in EXPR_OPS and op not in EXPR_OPS.unbuilt:
            return False
        self.computed(parts, obj, parent)
        return True

    def computed(self, parts: tuple[str, ...], obj: Mapping[str, Any], parent: PathNode) -> None:
        op, arg = next(iter(obj.items()))
        is_meta = op == "$meta"
        if self.type == EXCLUSION and not is_meta:
            raise location(31252, "Cannot use expression other than $meta in exclusion projection")
        if not is_meta and self.type is None:
            self.type = INCLUSION
        if is_meta:
            fn = _meta(arg)
            self.meta_names.add(arg)
        else:
            fn = _expression(compile_expression(obj, self.scope))
        _add(parent, parts, ComputedNode(fn))
        self.has_meta |= is_meta

    def find_slice(self, parts: tuple[str, ...], arg: Any, obj: Mapping[str, Any], parent: PathNode) -> None:
        try:
            _add(parent, parts, SliceNode(*_find_slice_args(arg)))
        except CommandError as find_error:
            # Not find's syntax: MongoDB then reads it as the $slice expression.
            try:
                self.computed(parts, obj, parent)
            except CommandError as error:
                raise CommandError(
                    error.code,
                    f"Invalid $slice syntax. The given syntax {render_document(dict(obj))} did not match the find() "
                    f"syntax because :: {find_error.code_name}: {find_error.errmsg} :: The given syntax did not match "
                    f"the expression $slice syntax. :: caused by :: {error.errmsg}",
                ) from None
            return
        self.has_find_slice = True

    def elem_match(self, parts: tuple[str, ...], arg: Any, obj: Mapping[str, Any], parent: PathNode) -> None:
        if not isinstance(arg, Mapping):
            raise location(31274, f"elemMatch: Invalid argument, object required, but got {type_name(arg)}")
        if self.has_positional:
            raise location(31255, "Cannot specify positional operator and $elemMatch.")
        if len(parts) != 1 or parent is not self.root:
            raise location(31275, "Cannot use $elemMatch projection on a nested field.")
        clause = FIELD_OPS.get("$elemMatch")(arg, obj, self.ctx)
        assert isinstance(clause, Leaf)
        _add(parent, parts, ComputedNode(_elem_match(parts[0], clause.single)))
        self.has_elem_match = True


def _find_slice_args(arg: Any) -> tuple[int | None, int]:
    if cmp.is_number(arg):
        return None, _safe_int(arg)
    if isinstance(arg, list):
        if len(arg) != 2:
            raise location(31272, "$slice array argument should be of form [skip, limit]")
        skip, limit = arg
        if not cmp.is_number(skip):
            raise location(31257, f"$slice expects the skip argument to be a number, got {type_name(skip)}")
        if not cmp.is_number(limit):
            raise location(31258, f"$slice expects the limit argument to be a number, got {type_name(limit)}")
        n = _safe_int(limit)
        if n <= 0:
            raise location(31259, f"$slice limit must be positive, got {n}")
        return _safe_int(skip), n
    raise location(31273, "$slice only supports numbers and [skip, limit] arrays")
