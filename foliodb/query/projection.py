"""Compile a projection (find's ``projection`` or the ``$project`` stage).

``compile_projection(spec, ctx, find=True)`` checks the spec once, raising
MongoDB's parse errors, and returns a :class:`Projection` whose
``apply(doc, details=None, meta=None)`` builds the output document. It follows
MongoDB 8's projection parser and executor (``projection_parser.cpp``,
``projection_node.cpp``, ``projection_executor_utils.cpp``):

* **Parse** the spec into a tree of path nodes and leaves (include, exclude,
  computed value, find's ``$elemMatch``, ``$slice`` and positional ``$``).
  Dotted names and nested documents (``{"a": {"b": 1}}``) build the same tree;
  a path that is both a leaf and a prefix is a collision (31249/31250). The
  first inclusion, exclusion or computed field fixes the projection's type;
  ``_id`` may go either way; find's ``$slice``/``$elemMatch``/``$meta`` alone
  leave the type to MongoDB's compatibility rules (:func:`_default_type`).
  Booleans and numbers of any type are include (truthy) or exclude (falsy);
  any other value is an expression (since 4.4: ``{"a": "x"}`` sets a literal).
* **Apply** in three phases, like MongoDB's ``ProjectionNode``:

  1. *projections* walk the input in its own field order: an inclusion keeps
     the named fields (so output order is the document's, not the spec's),
     an exclusion copies the document and drops them; through an array each
     element is projected, and an inclusion drops elements that are not
     documents;
  2. *computed fields* (expressions, ``$meta``, ``$elemMatch``) are evaluated
     against the whole input document in spec order: a field the document
     already holds is replaced in place, a new one is appended;
  3. find's ``$slice`` and positional ``$`` rewrite the result of 1-2.

The input document is never modified: containers are copied before a change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import DBRef, Decimal128, Int64

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.context import Context
from foliodb.query.expr import EXPR_OPS, Scope, compile_expression, root_variables, truthy
from foliodb.query.expr.core import METADATA
from foliodb.query.filter import FIELD_OPS, Leaf, MatchDetails
from foliodb.query.paths import DBREF_FIELDS, MISSING, stored_form
from foliodb.query.render import render, render_document

# (input document, $meta values or None, expression variables) -> value or MISSING
Computed = Callable[[dict[str, Any], Mapping[str, Any] | None, dict[str, Any]], Any]
# (input document, output so far, match details) -> output
PostStep = Callable[[dict[str, Any], dict[str, Any], MatchDetails | None], dict[str, Any]]

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


# --- the parsed tree ----------------------------------------------------------


@dataclass(slots=True)
class _Bool:
    include: bool


@dataclass(slots=True)
class _Computed:
    fn: Computed


@dataclass(slots=True)
class _Slice:
    skip: int | None
    limit: int


@dataclass(slots=True)
class _Positional:
    pass


@dataclass(slots=True)
class _Path:
    children: dict[str, _Path | _Bool | _Computed | _Slice | _Positional] = field(default_factory=dict)


_Node = _Path | _Bool | _Computed | _Slice | _Positional


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


def _add(parent: _Path, parts: tuple[str, ...], node: _Node) -> None:
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
            child = here.children[name] = _Path()
        elif not isinstance(child, _Path):
            raise location(31249, f"Path collision at {'.'.join(parts)} remaining portion {'.'.join(parts[1:])}")
        here = child


def _inner(parent: _Path, parts: tuple[str, ...]) -> _Path | None:
    """findLastInnerNodeOnPath: the path node at ``parts``, if there is one."""
    here: _Node = parent
    for name in parts:
        if not isinstance(here, _Path):
            return None
        child = here.children.get(name)
        if child is None:
            return None
        here = child
    return here if isinstance(here, _Path) else None


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


class _Parser:
    """projection_ast::parseAndAnalyze, flags and all."""

    def __init__(self, ctx: Context, find: bool) -> None:
        self.ctx = ctx
        self.find = find
        self.scope = Scope(frozenset(ctx.variables), ctx.collator)
        self.root = _Path()
        self.type: str | None = None
        self.id_specified = False
        self.id_included = False
        self.has_positional = False
        self.has_elem_match = False
        self.has_find_slice = False
        self.has_meta = False
        self.meta_names: set[str] = set()

    def parse(self, spec: Mapping[str, Any]) -> _Path:
        for name, value in spec.items():
            self.id_specified |= name == "_id" or name.startswith("_id.")
            self.element(name, value, self.root)
        if self.type is None:
            self.type = self.default_type()
        if not self.id_specified and self.type == INCLUSION:
            _add(self.root, ("_id",), _Bool(True))
        if self.type == EXCLUSION and self.id_included:
            del self.root.children["_id"]
        return self.root

    def default_type(self) -> str:
        """computeProjectionType: the type of a spec of only _id and find operators."""
        # With find's $slice, or with only _id (and find's $meta), {_id: 1} makes an inclusion.
        if not self.has_find_slice and (self.has_elem_match or (self.has_meta and not self.find)):
            return INCLUSION
        return INCLUSION if self.id_included else EXCLUSION

    def element(self, name: str, value: Any, parent: _Path) -> None:
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
            _add(parent, field_path(name), _Computed(_expression(fn)))
            if self.type == EXCLUSION:
                raise location(31310, f"Cannot use an expression {name}: {render(value)} in an exclusion projection")
            self.type = INCLUSION

    def inclusion(self, name: str, parent: _Path, positional: bool) -> None:
        top_id = name == "_id" and parent is self.root
        if not positional:
            _add(parent, field_path(name), _Bool(True))
            self.id_included |= top_id
        else:
            if self.has_positional:
                raise location(31276, "Cannot specify more than one positional projection per query.")
            if self.has_elem_match:
                raise location(31256, "Cannot specify positional operator and $elemMatch.")
            if name == ".$":
                raise location(5392900, f"Projection on field {name} is invalid")
            _add(parent, field_path(name[:-2]), _Positional())
            self.has_positional = True
        if not top_id:
            if self.type == EXCLUSION:
                raise location(31253, f"Cannot do inclusion on field {name} in exclusion projection")
            self.type = INCLUSION

    def exclusion(self, name: str, parent: _Path) -> None:
        _add(parent, field_path(name), _Bool(False))
        if name == "_id" and parent is self.root:
            return  # _id may be excluded from either kind
        if self.type == INCLUSION:
            raise location(31254, f"Cannot do exclusion on field {name} in inclusion projection")
        self.type = EXCLUSION

    def sub_object(self, name: str, obj: Mapping[str, Any], parent: _Path) -> None:
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
            node = _Path()
            _add(parent, parts, node)
        for key, value in obj.items():
            self.element(key, value, node)

    def operator(self, parts: tuple[str, ...], op: str, obj: Mapping[str, Any], parent: _Path) -> bool:
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

    def computed(self, parts: tuple[str, ...], obj: Mapping[str, Any], parent: _Path) -> None:
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
        _add(parent, parts, _Computed(fn))
        self.has_meta |= is_meta

    def find_slice(self, parts: tuple[str, ...], arg: Any, obj: Mapping[str, Any], parent: _Path) -> None:
        try:
            _add(parent, parts, _Slice(*_find_slice_args(arg)))
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

    def elem_match(self, parts: tuple[str, ...], arg: Any, obj: Mapping[str, Any], parent: _Path) -> None:
        if not isinstance(arg, Mapping):
            raise location(31274, f"elemMatch: Invalid argument, object required, but got {type_name(arg)}")
        if self.has_positional:
            raise location(31255, "Cannot specify positional operator and $elemMatch.")
        if len(parts) != 1 or parent is not self.root:
            raise location(31275, "Cannot use $elemMatch projection on a nested field.")
        clause = FIELD_OPS.get("$elemMatch")(arg, obj, self.ctx)
        assert isinstance(clause, Leaf)
        _add(parent, parts, _Computed(_elem_match(parts[0], clause.single)))
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


# --- the executor -------------------------------------------------------------


class _Exec:
    """One level of MongoDB's ProjectionNode (inclusion or exclusion)."""

    __slots__ = ("children", "computed", "fields", "has_computed", "inclusion", "order")

    def __init__(self, inclusion: bool) -> None:
        self.inclusion = inclusion
        self.fields: set[str] = set()  # included (inclusion) or removed (exclusion)
        self.children: dict[str, _Exec] = {}
        self.computed: dict[str, Computed] = {}
        self.order: list[str] = []  # computed fields and children, in the order they were added
        self.has_computed = False  # does this subtree compute anything?

    def child(self, name: str) -> _Exec:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = _Exec(self.inclusion)
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


def _slice_step(parts: tuple[str, ...], skip: int | None, limit: int) -> PostStep:
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


def _positional_step(parts: tuple[str, ...]) -> PostStep:
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


def _no_vars(doc: Any, let: Mapping[str, Any], now: Any) -> dict[str, Any]:
    return {}


class Projection:
    """A compiled projection. ``apply`` never modifies its input."""

    __slots__ = ("_exec", "_post", "_vars", "ctx", "is_exclusion", "is_identity", "meta_fields", "uses_positional")

    def __init__(self, parser: _Parser | None, ctx: Context) -> None:
        self.ctx = ctx
        self.is_identity = parser is None
        self.is_exclusion = parser is not None and parser.type == EXCLUSION
        self.uses_positional = parser is not None and parser.has_positional
        # $meta names the projection reads: the caller checks they are available (40218).
        self.meta_fields: frozenset[str] = frozenset(parser.meta_names) if parser else frozenset()
        self._exec = _Exec(not self.is_exclusion)
        self._post: list[PostStep] = []
        self._vars: Callable[[Any, Mapping[str, Any], Any], dict[str, Any]] = _no_vars
        if parser is not None:
            self._build(parser.root, ())

    def _build(self, node: _Path, path: tuple[str, ...]) -> None:
        """The executor from the tree (projection_executor_builder's visitor)."""
        for name, child in node.children.items():
            full = (*path, name)
            if isinstance(child, _Path):
                self._build(child, full)
            elif isinstance(child, _Bool):
                if not self.is_exclusion and not child.include:
                    continue  # {_id: 0} in an inclusion: simply not included
                self._exec.add_field(full)
            elif isinstance(child, _Computed):
                self._exec.add_computed(full, child.fn)
                self._vars = root_variables
            elif isinstance(child, _Slice):
                if not self.is_exclusion:
                    self._exec.add_field(full)
                self._post.append(_slice_step(full, child.skip, child.limit))
            else:
                self._exec.add_field(full)
                self._post.append(_positional_step(full))

    def apply(
        self, doc: dict[str, Any], details: MatchDetails | None = None, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        if self.is_identity:
            return doc
        out = self._exec.project(doc)
        if self._exec.has_computed:
            vars = self._vars(doc, self.ctx.variables, self.ctx.now)
            if meta is not None:
                vars[METADATA] = meta  # for $meta inside expressions ({$multiply: ["$a", {$meta: ...}]})
            self._exec.apply_computed(doc, out, meta, vars)
        for step in self._post:
            out = step(doc, out, details)
        return out


def compile_projection(spec: Any, ctx: Context | None = None, find: bool = True) -> Projection:
    """Compile ``spec``: find's projection (``find=True``) or a ``$project``
    stage (``find=False``: no positional ``$``, ``$elemMatch`` or find
    ``$slice``; an empty spec is an error; errors carry the stage's context)."""
    if ctx is None:
        ctx = Context()
    if not isinstance(spec, Mapping):
        if find:
            raise CommandError(
                ErrorCode.TypeMismatch,
                f"BSON field 'projection' is the wrong type '{type_name(spec)}', expected type 'object'",
            )
        raise location(15969, "$project specification must be an object")
    if find and not spec:
        return Projection(None, ctx)
    try:
        if not spec:
            raise location(51272, "projection specification must have at least one field")
        parser = _Parser(ctx, find)
        parser.parse(spec)
    except CommandError as error:
        if find:
            raise
        raise CommandError(error.code, f"Invalid $project :: caused by :: {error.errmsg}") from None
    return Projection(parser, ctx)
