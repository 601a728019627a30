"""Compile a query filter into a function of a document.

``compile_filter({"qty": {"$gt": 5}})`` returns ``match(doc, details=None)``;
the filter is parsed and checked once, never per document. MongoDB's parse
errors are raised here, at compile time.

A field's conditions compile to a *clause*, whose three shapes mirror
MongoDB's match-expression tree:

* :class:`Leaf` - a test of one value (``matchesSingleElement``), applied to
  every value the path reaches (see :mod:`foliodb.query.paths`);
* :class:`Not` - the complement of a clause over the *whole* path, which is
  how ``$ne``, ``$nin``, ``$not`` and ``$exists: false`` behave
  (``{"a": {"$ne": 1}}`` rejects ``{"a": [1, 2]}``);
* :class:`AllOf` - several conditions on one field, each judged over the whole
  path on its own (``{"a": {"$gt": 1, "$lt": 5}}`` matches ``{"a": [0, 9]}``).

Field operators live in ``filter_ops/``, one small compiler each, registered
in :data:`FIELD_OPS`; top-level operators (``$and``, ``$expr``...) in
:data:`TOP_OPS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.errors import CommandError, ErrorCode, bad_value
from foliodb.query import paths
from foliodb.query.context import Context
from foliodb.query.registry import Registry

Matcher = Callable[..., bool]  # (doc, details=None) -> bool


class MatchDetails:
    """Filled in by a match: the array position the positional ``$`` uses."""

    __slots__ = ("array_index",)

    def __init__(self) -> None:
        self.array_index: int | None = None


@dataclass(frozen=True, slots=True)
class Leaf:
    single: Callable[[Any], bool]  # never sees MISSING
    missing: bool = False  # does a path that reaches nothing match?
    expand: bool = True  # do leaf arrays offer their elements?
    # For a test of a whole array: the position of the element that made it
    # pass, for the positional $ (as $elemMatch reports it).
    position: Callable[[Any], int | None] | None = None


@dataclass(frozen=True, slots=True)
class Not:
    inner: Clause


@dataclass(frozen=True, slots=True)
class AllOf:
    clauses: tuple[Clause, ...]


Clause = Leaf | Not | AllOf

FieldOp = Callable[[Any, Mapping[str, Any], Context], Clause]
TopOp = Callable[[Any, Context], Matcher]


def _unknown_field_op(name: str) -> CommandError:
    return bad_value(f"unknown operator: {name}")


def _unknown_top_op(name: str) -> CommandError:
    return bad_value(
        f"unknown top level operator: {name}. If you have a field name that starts with a '$' "
        "symbol, consider using $getField or $setField."
    )


FIELD_OPS: Registry[FieldOp] = Registry("query operator", _unknown_field_op)
TOP_OPS: Registry[TopOp] = Registry("query operator", _unknown_top_op)


def _match_all(doc: Any, details: Any = None) -> bool:
    return True


def compile_filter(spec: Any, ctx: Context | None = None) -> Matcher:
    """The matcher of a whole filter document."""
    if spec is None:
        return _match_all
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "filter must be an object")
    if ctx is None:
        ctx = Context()
    matchers = [compile_entry(key, value, ctx) for key, value in spec.items()]
    return all_of(matchers)


def compile_entry(key: str, value: Any, ctx: Context) -> Matcher:
    if key.startswith("$"):
        return TOP_OPS.get(key)(value, ctx)
    return clause_matcher(paths.split(key), field_clause(value, ctx))


def all_of(matchers: list[Matcher]) -> Matcher:
    if not matchers:
        return _match_all
    if len(matchers) == 1:
        return matchers[0]
    if len(matchers) == 2:
        first, second = matchers

        def match_both(doc: Any, details: Any = None) -> bool:
            return first(doc, details) and second(doc, details)

        return match_both
    ms = tuple(matchers)

    def match_all_of(doc: Any, details: Any = None) -> bool:
        for m in ms:
            if not m(doc, details):
                return False
        return True

    return match_all_of


def is_operator_doc(value: Any) -> bool:
    """Does ``{"field": value}`` hold operators rather than an equality?"""
    if not isinstance(value, Mapping) or not value:
        return False
    first = next(iter(value))
    return first.startswith("$") and first not in paths.DBREF_FIELDS


def field_clause(value: Any, ctx: Context) -> Clause:
    """The clause of one field's condition: an operator document or a value."""
    if not is_operator_doc(value):
        return FIELD_OPS.get("$eq")(value, {}, ctx)
    clauses = []
    for name, arg in value.items():
        if not name.startswith("$"):
            raise _unknown_field_op(name)
        if name == "$options":
            if "$regex" not in value:
                raise bad_value("$options needs a $regex")
            continue
        if name == "$where":
            # $where judges whole documents, never a field's value.
            raise bad_value("$where cannot be applied to a field")
        clauses.append(FIELD_OPS.get(name)(arg, value, ctx))
    if len(clauses) == 1:
        return clauses[0]
    return AllOf(tuple(clauses))


def clause_matcher(parts: tuple[str, ...], clause: Clause) -> Matcher:
    """A document matcher applying ``clause`` at a path."""
    if isinstance(clause, Leaf):
        return paths.path_matcher(parts, clause.single, clause.missing, clause.expand, clause.position)
    if isinstance(clause, Not):
        inner = clause_matcher(parts, clause.inner)

        def match_not(doc: Any, details: Any = None) -> bool:
            return not inner(doc, None)

        return match_not
    return all_of([clause_matcher(parts, c) for c in clause.clauses])


def clause_single(clause: Clause) -> Callable[[Any], bool]:
    """A test of one value (as ``$elemMatch`` applies it to each element)."""
    if isinstance(clause, Leaf):
        return clause.single
    if isinstance(clause, Not):
        inner = clause_single(clause.inner)
        return lambda v: not inner(v)
    singles = [clause_single(c) for c in clause.clauses]
    return lambda v: all(s(v) for s in singles)


# Register the operators.
from foliodb.query import filter_ops  # noqa: E402,F401
