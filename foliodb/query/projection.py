"""Compile a projection (find's ``projection`` or the ``$project`` stage).

``compile_projection(spec, ctx, find=True)`` checks the spec once, raising
MongoDB's parse errors, and returns a :class:`Projection` whose
``apply(doc, details=None, meta=None)`` builds the output document. It follows
MongoDB 8's projection parser and executor: :mod:`.projection_parser` checks
the spec and builds a tree of path nodes and leaves, raising every parse
error; :mod:`.projection_exec` applies it in MongoDB's three phases
(projections, computed fields, find's ``$slice`` and positional ``$``).
A :class:`Projection` builds the executor from the tree once, at compile time.

The input document is never modified: containers are copied before a change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import type_name
from foliodb.query.context import Context
from foliodb.query.expr import root_variables
from foliodb.query.expr.core import METADATA
from foliodb.query.filter import MatchDetails
from foliodb.query.projection_exec import Executor, PostStep, positional_step, slice_step
from foliodb.query.projection_parser import EXCLUSION, ComputedNode, FlagNode, Parser, PathNode, SliceNode


def _no_vars(doc: Any, let: Mapping[str, Any], now: Any) -> dict[str, Any]:
    return {}


class Projection:
    """A compiled projection. ``apply`` never modifies its input."""

    __slots__ = ("_exec", "_post", "_vars", "ctx", "is_exclusion", "is_identity", "meta_fields", "uses_positional")

    def __init__(self, parser: Parser | None, ctx: Context) -> None:
        self.ctx = ctx
        self.is_identity = parser is None
        self.is_exclusion = parser is not None and parser.type == EXCLUSION
        self.uses_positional = parser is not None and parser.has_positional
        # $meta names the projection reads: the caller checks they are available (40218).
        self.meta_fields: frozenset[str] = frozenset(parser.meta_names) if parser else frozenset()
        self._exec = Executor(not self.is_exclusion)
        self._post: list[PostStep] = []
        self._vars: Callable[[Any, Mapping[str, Any], Any], dict[str, Any]] = _no_vars
        if parser is not None:
            self._build(parser.root, ())

    def _build(self, node: PathNode, path: tuple[str, ...]) -> None:
        """The executor from the tree (projection_executor_builder's visitor)."""
        for name, child in node.children.items():
            full = (*path, name)
            if isinstance(child, PathNode):
                self._build(child, full)
            elif isinstance(child, FlagNode):
                if not self.is_exclusion and not child.include:
                    continue  # {_id: 0} in an inclusion: simply not included
                self._exec.add_field(full)
            elif isinstance(child, ComputedNode):
                self._exec.add_computed(full, child.fn)
                self._vars = root_variables
            elif isinstance(child, SliceNode):
                if not self.is_exclusion:
                    self._exec.add_field(full)
                self._post.append(slice_step(full, child.skip, child.limit))
            else:
                self._exec.add_field(full)
                self._post.append(positional_step(full))

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
        parser = Parser(ctx, find)
        parser.parse(spec)
    except CommandError as error:
        if find:
            raise
        raise CommandError(error.code, f"Invalid $project :: caused by :: {error.errmsg}") from None
    return Projection(parser, ctx)
