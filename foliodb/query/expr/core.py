"""Compile aggregation expressions into functions ``fn(doc, variables)``.

An expression is compiled once: ``compile_expression(spec, scope)`` checks
it, raising MongoDB's parse errors, and returns ``fn(current, vars)`` where
``current`` is ``$$CURRENT`` (the document field paths read) and ``vars``
maps variable names (``ROOT``, ``NOW``, ``let`` variables, ``$let``/``$map``
bindings) to values.

Forms of a spec:

* ``"$a.b"`` - a field path of ``$$CURRENT`` (arrays map, see
  :func:`foliodb.query.paths.get_expr`); ``"$$name.a"`` - a variable and
  a path into it;
* ``{"$op": args}`` - an operator from :data:`EXPR_OPS`;
* ``{"a": expr, ...}`` - an object whose missing fields are dropped;
* ``[expr, ...]`` - an array whose missing elements become null;
* anything else - itself.

Missing values travel as :data:`foliodb.query.paths.MISSING` so stages can
tell "absent" from ``null``; each operator follows its manual page on the
difference. In comparisons missing sorts below null, like ``undefined``
(:func:`compare_values`), so ``{"$eq": ["$absent", null]}`` is false.

Document metadata (``$meta``) travels in ``vars[METADATA]``, a mapping from
metadata name to value that stages producing metadata fill in; no user
variable can have that name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from bson import MinKey

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import paths
from foliodb.query.bsontypes import is_string as is_string  # the operator modules import it from here
from foliodb.query.bsontypes import type_name
from foliodb.query.collation import Collator
from foliodb.query.compare import NUMBER, bracket, compare, number_value
from foliodb.query.paths import MISSING
from foliodb.query.registry import Registry
from foliodb.query.render import render, render_document

Expr = Callable[[Any, dict[str, Any]], Any]
# An operator compiler: (argument spec, scope of known variables) -> Expr
ExprOp = Callable[[Any, "Scope"], Expr]

SYSTEM_VARIABLES = frozenset({"ROOT", "CURRENT", "NOW", "REMOVE", "CLUSTER_TIME", "USER_ROLES", "SEARCH_META"})
METADATA: Final = "$meta"


def _unknown(name: str) -> CommandError:
    return CommandError(ErrorCode.InvalidPipelineOperator, f"Unrecognized expression '{name}'")


EXPR_OPS: Registry[ExprOp] = Registry("expression", _unknown)


class Scope:
    """What a compile may refer to: the variables defined at this point, and
    the command's collation, by which :attr:`compare` orders strings
    (https://www.mongodb.com/docs/manual/reference/collation/#operations-that-support-collation)."""

    __slots__ = ("collator", "compare", "variables")

    def __init__(self, variables: frozenset[str] = frozenset(), collator: Collator | None = None) -> None:
        self.variables = variables
        self.collator = collator
        self.compare: Callable[[Any, Any], int] = compare_values
        if collator is not None:
            transform = collator.transform
            self.compare = lambda a, b: compare_values(transform(a), transform(b))

    def with_vars(self, *names: str) -> Scope:
        return Scope(self.variables | frozenset(names), self.collator)


def compile_expression(spec: Any, scope: Scope | None = None) -> Expr:
    if scope is None:
        scope = Scope()
    if is_string(spec):
        if spec.startswith("$$"):
            return _variable(spec[2:], scope)
        if spec.startswith("$"):
            return field_path(spec[1:])
        return constant(spec)
    if isinstance(spec, Mapping):
        if spec and next(iter(spec)).startswith("$"):
            if len(spec) != 1:
                raise location(
                    15983,
                    f"An object representing an expression must have exactly one field: {render_document(dict(spec))}",
                )
            name, arg = next(iter(spec.items()))
            return EXPR_OPS.get(name)(arg, scope)
        return _object(spec, scope)
    if isinstance(spec, list):
        items = [compile_expression(item, scope) for item in spec]

        def array_expr(doc: Any, vars: dict[str, Any]) -> Any:
            out = []
            for item in items:
                v = item(doc, vars)
                out.append(None if v is MISSING else v)
            return out

        return array_expr
    return constant(spec)


def constant(value: Any) -> Expr:
    return lambda doc, vars: value


NOT_CONSTANT: Final = object()
_DOLLAR_FIELD = "FieldPath field names may not start with '$'. Consider using $getField or $setField."


def constant_of(spec: Any) -> Any:
    """The value of a spec that is a constant as written (a literal scalar or
    ``$literal``/``$const``), else :data:`NOT_CONSTANT`. Operators use it where
    MongoDB insists on a constant or checks one at parse time."""
    if is_string(spec):
        return NOT_CONSTANT if spec.startswith("$") else spec
    if isinstance(spec, Mapping):
        if len(spec) == 1 and next(iter(spec)) in ("$literal", "$const"):
            return next(iter(spec.values()))
        return NOT_CONSTANT
    if isinstance(spec, list):
        return NOT_CONSTANT
    return spec


def field_path(path: str) -> Expr:
    if not path:
        raise location(16872, "'$' by itself is not a valid FieldPath")
    if "\x00" in path:
        raise location(16419, "field path must not contain embedded null characters")
    if path.startswith("$"):
        raise location(16410, _DOLLAR_FIELD)
    parts = paths.split(path)
    if any(p == "" for p in parts):
        raise location(15998, "FieldPath field names may not be empty strings.")
    if len(parts) == 1:
        key = parts[0]

        def top_field(doc: Any, vars: dict[str, Any]) -> Any:
            if isinstance(doc, dict):
                return doc.get(key, MISSING)
            return MISSING

        return top_field
    return lambda doc, vars: paths.get_expr(doc, parts)


def _ascii_lower(ch: str) -> bool:
    return "a" <= ch <= "z"


def check_variable_name(name: str, user_defined: bool = True) -> None:
    """A variable name as MongoDB allows one: a user-defined variable starts
    with a lowercase letter, a read may start with any letter; non-ASCII
    characters are always allowed."""
    if not name:
        raise location(16866, "empty variable names are not allowed")
    first = name[0]
    if not (_ascii_lower(first) or ord(first) > 127 or (not user_defined and "A" <= first <= "Z")):
        raise location(16867, f"'{name}' starts with an invalid character for a user variable name")
    for ch in name[1:]:
        if not (_ascii_lower(ch) or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch == "_" or ord(ch) > 127):
            raise location(16868, f"'{name}' contains an invalid character for a variable name: '{ch}'")


def _variable(spec: str, scope: Scope) -> Expr:
    name, _, rest = spec.partition(".")
    if name not in SYSTEM_VARIABLES and name not in scope.variables:
        check_variable_name(name, user_defined=False)
        raise location(17276, f"Use of undefined variable: {name}")
    parts = paths.split(rest) if rest else ()
    if name == "CURRENT":
        if not parts:
            return lambda doc, vars: doc
        return lambda doc, vars: paths.get_expr(doc, parts)
    if name == "REMOVE":
        return lambda doc, vars: MISSING
    if not parts:
        return lambda doc, vars: vars.get(name, MISSING)
    return lambda doc, vars: paths.get_expr(vars.get(name, MISSING), parts)


def _object(spec: Mapping[str, Any], scope: Scope) -> Expr:
    fields: list[tuple[str, Expr]] = []
    for name, value in spec.items():
        if name.startswith("$"):
            raise location(16410, _DOLLAR_FIELD)
        if "." in name:
            raise location(16412, "FieldPath field names may not contain '.'. Consider using $getField or $setField.")
        if not name:
            raise location(15998, "FieldPath field names may not be empty strings.")
        fields.append((name, compile_expression(value, scope)))

    def object_expr(doc: Any, vars: dict[str, Any]) -> Any:
        out = {}
        for name, fn in fields:
            v = fn(doc, vars)
            if v is not MISSING:
                out[name] = v
        return out

    return object_expr


def root_variables(doc: Any, let: Mapping[str, Any], now: Any) -> dict[str, Any]:
    """The variables at the top of an expression's evaluation."""
    vars = dict(let)
    vars["ROOT"] = doc
    vars["NOW"] = now
    return vars


def truthy(value: Any) -> bool:
    """MongoDB's truth: false, null, missing and numeric zero are false."""
    if value is None or value is MISSING or value is False:
        return False
    if value is True:
        return True
    if bracket(value) == NUMBER:
        return number_value(value) != 0
    return True


def nullish(value: Any) -> bool:
    return value is None or value is MISSING


def compare_values(a: Any, b: Any) -> int:
    """:func:`foliodb.query.compare.compare` extended to MISSING, which sorts
    like ``undefined``: above MinKey, below null and everything else."""
    if a is MISSING or b is MISSING:
        if a is b:
            return 0
        other = b if a is MISSING else a
        above = other is not MISSING and isinstance(other, MinKey)
        return (1 if above else -1) if a is MISSING else (-1 if above else 1)
    return compare(a, b)


def type_of(value: Any) -> str:
    """The type name MongoDB's messages use ("missing" for MISSING)."""
    return "missing" if value is MISSING else type_name(value)


def show(value: Any) -> str:
    """A value as MongoDB's messages print it (``Value::toString``)."""
    return "missing" if value is MISSING else render(value)


def arity_error(name: str, min_count: int, max_count: int | None, count: int) -> CommandError:
    if max_count == min_count:
        return location(16020, f"Expression {name} takes exactly {min_count} arguments. {count} were passed in.")
    if max_count is None:
        return location(16020, f"Expression {name} takes at least {min_count} arguments, and {count} were passed in.")
    # ExpressionRangedArity ($round, $trunc, $slice, $range, $indexOf*) has its own code in mongod.
    return location(
        28667,
        f"Expression {name} takes at least {min_count} arguments, and at most {max_count}, but {count} were passed in.",
    )


def operands(arg: Any, name: str, min_count: int, max_count: int | None, scope: Scope) -> list[Expr]:
    """Compile an operator's argument list (a lone non-array is one operand),
    checking its count as MongoDB does (16020 for a fixed count, 28667 for a range)."""
    items = arg if isinstance(arg, list) else [arg]
    count = len(items)
    if count < min_count or (max_count is not None and count > max_count):
        raise arity_error(name, min_count, max_count, count)
    return [compile_expression(item, scope) for item in items]
