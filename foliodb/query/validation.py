"""Collection validators: MongoDB's schema validation of written documents.

Manual: https://www.mongodb.com/docs/manual/core/schema-validation/ and its
pages "Specify JSON Schema Validation", "Specify Validation Level for Existing
Documents" and "Choose How to Handle Invalid Documents".

``compile_validator(options["validator"], ctx, level=..., action=...)`` checks
a collection's validator once and returns a :class:`Validator`:

* the validator is a query filter, ``$jsonSchema`` and query operators alike,
  compiled with :func:`foliodb.query.filter.compile_filter`; the operators
  MongoDB refuses in validators (``$where``, ``$text``, ``$near``,
  ``$nearSphere``, ``$geoNear``) are refused with its messages;
* ``check(doc)`` raises DocumentValidationFailure (121) "Document failed
  validation" with MongoDB 5+'s ``errInfo``: ``{"failingDocumentId": _id,
  "details": {"operatorName": ..., ...}}``. A validator that raises while
  matching rejects the document, as in MongoDB;
* ``validationLevel`` "strict" checks every insert and update, "moderate"
  skips updates of documents that already failed the validator (ask
  ``applies_to_update(old_doc)``), "off" checks nothing;
* ``validationAction`` "error" rejects, "warn" never raises (the caller logs
  ``error_info(doc)``, as mongod logs message 20294), "errorAndLog" (MongoDB
  8.1) rejects and is meant to be logged too.

The ``details`` tree mirrors the filter: ``$and``/``$or``/``$nor`` list
``clausesNotSatisfied`` (or, under a negation, ``clausesSatisfied``) with
each clause's index; a field operator reports ``specifiedAs`` (its clause as
written), a ``reason`` and the ``consideredValue(s)`` its path reached (at
most 10); ``$jsonSchema`` reports ``schemaRulesNotSatisfied``
(:mod:`foliodb.query.jsonschema`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from foliodb.errors import CommandError, ErrorCode, bad_value, type_mismatch
from foliodb.query import bsontypes, jsonschema, paths
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.context import Context
from foliodb.query.expr import Scope, compile_expression, root_variables, truthy
from foliodb.query.filter import Matcher, compile_filter, is_operator_doc

Detail = dict[str, Any]

LEVELS = ("strict", "moderate", "off")
ACTIONS = ("error", "warn", "errorAndLog")
MAX_CONSIDERED_VALUES = 10  # mongod's internalQueryMaxDocValidationErrorConsideredValues

_NUMBERS = ("decimal", "double", "int", "long")
_REFUSED = {"$where": "$where is not allowed in this context", "$text": "$text is not allowed in this context"}
_NEAR = ("$near", "$nearSphere", "$geoNear")


class Validator:
    """A compiled collection validator with its level and action."""

    __slots__ = ("_match", "_root", "action", "level", "spec")

    def __init__(self, spec: Mapping[str, Any], level: str, action: str, match: Matcher, root: _Node) -> None:
        self.spec = spec
        self.level = level
        self.action = action
        self._match = match
        self._root = root

    def matches(self, doc: Any) -> bool:
        try:
            return self._match(doc, None)
        except CommandError:
            return False

    def applies_to_update(self, old_doc: Any) -> bool:
        """Must an update of ``old_doc`` be validated? Not when the level is
        "off", nor under "moderate" when ``old_doc`` already fails."""
        if self.level == "off":
            return False
        return self.level == "strict" or self.matches(old_doc)

    def error_info(self, doc: Any) -> Detail | None:
        """The errInfo of ``doc``'s failure, or None when it passes."""
        if self.matches(doc):
            return None
        info: Detail = {}
        if "_id" in doc:
            info["failingDocumentId"] = doc["_id"]
        info["details"] = self._root.explain(doc, False)
        return info

    def check(self, doc: Any) -> None:
        """Raise DocumentValidationFailure when ``doc`` fails and the action
        rejects; ``doc`` is a new document or an update's result."""
        if self.level == "off" or self.action == "warn":
            return
        info = self.error_info(doc)
        if info is not None:
            raise CommandError(ErrorCode.DocumentValidationFailure, "Document failed validation", errInfo=info)


def compile_validator(
    validator: Any,
    ctx: Context | None = None,
    *,
    level: Any = "strict",
    action: Any = "error",
    command: str = "create",
) -> Validator:
    """Check and compile a collection's validator options; errors name the
    fields as ``<command>.validator`` etc., like mongod's command parsers."""
    _check_option(command, "validator", validator, "object")
    _check_option(command, "validationLevel", level, "string")
    _check_option(command, "validationAction", action, "string")
    for field, value, allowed in (("validationLevel", level, LEVELS), ("validationAction", action, ACTIONS)):
        if value not in allowed:
            raise bad_value(f"Enumeration value '{value}' for field '{command}.{field}' is not a valid value.")
    if ctx is None:
        ctx = Context()
    _refuse(validator)
    match = compile_filter(validator, ctx)
    return Validator(validator, level, action, match, _document(validator, ctx))


def _check_option(command: str, field: str, value: Any, expected: str) -> None:
    ok = isinstance(value, Mapping) if expected == "object" else is_string(value)
    if not ok:
        raise type_mismatch(
            f"BSON field '{command}.{field}' is the wrong type '{bsontypes.type_name(value)}', "
            f"expected type '{expected}'"
        )


def _calls_function(expr: Any) -> bool:
    """Does an aggregation expression hold a ``$function`` (outside a ``$literal``)?"""
    if isinstance(expr, list):
        return any(_calls_function(item) for item in expr)
    if not isinstance(expr, Mapping):
        return False
    return any(key == "$function" or (key != "$literal" and _calls_function(v)) for key, v in expr.items())


def _refuse(spec: Mapping[str, Any]) -> None:
    """Raise MongoDB's error for an operator validators may not use."""
    for key, value in spec.items():
        if key in _REFUSED:
            raise bad_value(_REFUSED[key])
        if key == "$expr" and _calls_function(value):
            raise CommandError(4660800, "$function cannot be used inside a validator.")
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    _refuse(clause)
        elif not key.startswith("$") and is_operator_doc(value):
            _refuse_in_field(value)


def _refuse_in_field(ops: Mapping[str, Any]) -> None:
    for op, arg in ops.items():
        if op in _NEAR:
            raise bad_value("$geoNear, $near, and $nearSphere are not allowed in this context")
        if op in ("$not", "$elemMatch") and isinstance(arg, Mapping):
            if is_operator_doc(arg):
                _refuse_in_field(arg)
            else:
                _refuse(arg)


# --- explanations ---------------------------------------------------------------


class _Node(Protocol):
    """One clause of the validator: whether it matches, and why it fails
    (``inverted``: why it matches, under a ``$not`` or ``$nor``)."""

    def matches(self, doc: Any) -> bool: ...

    def explain(self, doc: Any, inverted: bool) -> Detail: ...


def _reports(node: _Node, doc: Any, inverted: bool) -> bool:
    """Does ``node`` take part in its parent's explanation? A clause that
    raises always does (as in mongod)."""
    try:
        return node.matches(doc) == inverted
    except CommandError:
        return True


@dataclass(frozen=True, slots=True)
class _List:
    name: str  # "$and", "$or", "$nor"
    children: tuple[_Node, ...]

    def matches(self, doc: Any) -> bool:
        if self.name == "$and":
            return all(child.matches(doc) for child in self.children)
        found = any(child.matches(doc) for child in self.children)
        return found if self.name == "$or" else not found

    def explain(self, doc: Any, inverted: bool) -> Detail:
        child_inverted = not inverted if self.name == "$nor" else inverted
        # Which clauses explain the outcome: the failing ones of a failed
        # $and, the matching ones of a matched $or or of a failed $nor.
        select = (self.name == "$and" and not inverted) or (self.name != "$and" and child_inverted)
        clauses = [
            {"index": i, "details": child.explain(doc, child_inverted)}
            for i, child in enumerate(self.children)
            if not select or _reports(child, doc, child_inverted)
        ]
        key = "clausesSatisfied" if child_inverted else "clausesNotSatisfied"
        return {"operatorName": self.name, key: clauses}


@dataclass(frozen=True, slots=True)
class _Not:
    child: _Node

    def matches(self, doc: Any) -> bool:
        return not self.child.matches(doc)

    def explain(self, doc: Any, inverted: bool) -> Detail:
        return {"operatorName": "$not", "details": self.child.explain(doc, not inverted)}


@dataclass(frozen=True, slots=True)
class _Negated:
    """$ne, $nin and {$exists: false}: a negated leaf that speaks for itself."""

    leaf: _Node

    def matches(self, doc: Any) -> bool:
        return not self.leaf.matches(doc)

    def explain(self, doc: Any, inverted: bool) -> Detail:
        return self.leaf.explain(doc, not inverted)


@dataclass(frozen=True, slots=True)
class _Leaf:
    name: str
    specified: Detail
    parts: tuple[str, ...]
    match: Matcher
    reasons: tuple[str, str]  # (failed, matched under a negation)
    expected: tuple[str, ...] = ()  # the types the operator can match, when it reports a mismatch
    expand: bool = True  # do leaf arrays offer their elements as considered values?
    style: str = "path"  # "path", "type" (adds consideredType) or "exists" (no values)

    def matches(self, doc: Any) -> bool:
        return self.match(doc, None)

    def explain(self, doc: Any, inverted: bool) -> Detail:
        out: Detail = {"operatorName": self.name, "specifiedAs": self.specified}
        if self.style == "exists":
            out["reason"] = self.reasons[inverted]
            return out
        reached = _considered(doc, self.parts, self.expand)
        if reached is None:
            out["reason"] = "field was missing"
            return out
        values = reached[:MAX_CONSIDERED_VALUES]
        if self.expected and not any(bsontypes.type_name(v) in self.expected for v in values):
            out["reason"] = "type did not match"
            _add_types(out, values)
            if len(self.expected) == 1:
                out["expectedType"] = self.expected[0]
            else:
                out["expectedTypes"] = list(self.expected)
        else:
            out["reason"] = self.reasons[inverted]
        if len(values) == 1:
            out["consideredValue"] = values[0]
        else:
            out["consideredValues"] = values
            if len(reached) > len(values):
                out["consideredValuesTruncated"] = True
        if self.style == "type":
            _add_types(out, values)
        return out


@dataclass(frozen=True, slots=True)
class _Schema:
    check: jsonschema.JsonSchema

    def matches(self, doc: Any) -> bool:
        return self.check.matches(doc)

    def explain(self, doc: Any, inverted: bool) -> Detail:
        if inverted:
            return {"operatorName": "$jsonSchema", "reason": "schema matched"}
        return self.check.explain(doc)


@dataclass(frozen=True, slots=True)
class _Expr:
    spec: Any
    expr: Callable[[Any, dict[str, Any]], Any]
    ctx: Context

    def evaluate(self, doc: Any) -> Any:
        return self.expr(doc, root_variables(doc, self.ctx.variables, self.ctx.now))

    def matches(self, doc: Any) -> bool:
        return truthy(self.evaluate(doc))

    def explain(self, doc: Any, inverted: bool) -> Detail:
        out: Detail = {"operatorName": "$expr", "specifiedAs": {"$expr": self.spec}}
        try:
            result = self.evaluate(doc)
        except CommandError as exc:
            out["reason"] = "failed to evaluate aggregation expression"
            out["details"] = {"code": exc.code, "codeName": exc.code_name, "errmsg": exc.errmsg}
            return out
        out["reason"] = "expression did match" if inverted else "expression did not match"
        if result is not paths.MISSING:
            out["expressionResult"] = result
        return out


@dataclass(frozen=True, slots=True)
class _Constant:
    """$alwaysTrue / $alwaysFalse, and operators with no richer explanation."""

    name: str
    specified: Detail
    match: Matcher

    def matches(self, doc: Any) -> bool:
        return self.match(doc, None)

    def explain(self, doc: Any, inverted: bool) -> Detail:
        out: Detail = {"operatorName": self.name, "specifiedAs": self.specified}
        if self.name in ("$alwaysTrue", "$alwaysFalse"):
            out["reason"] = "expression always evaluates to " + ("true" if inverted else "false")
        return out


def _considered(doc: Any, parts: tuple[str, ...], expand: bool) -> list[Any] | None:
    """The values a path reaches (leaf arrays expanded to their elements when
    ``expand``), or None when it reaches nothing."""
    reached = [value for value, _ in paths.reach(doc, parts, expand=False) if value is not paths.MISSING]
    if not reached:
        return None
    if not expand:
        return reached
    values: list[Any] = []
    for value in reached:
        if isinstance(value, list):
            values.extend(value)
        else:
            values.append(value)
    return values


def _add_types(out: Detail, values: list[Any]) -> None:
    names = sorted({bsontypes.type_name(v) for v in values})
    if len(names) == 1:
        out["consideredType"] = names[0]
    elif names:
        out["consideredTypes"] = names


# --- building the explanation tree -------------------------------------------------

_COMPARISON = ("comparison failed", "comparison succeeded")
_IN = ("no matching value found in array", "matching value found in array")
_REGEX = ("regular expression did not match", "regular expression did match")
_MOD = ("$mod did not evaluate to expected remainder", "$mod did evaluate to expected remainder")
_SIZE = ("array length was not equal to given size", "array length was equal to given size")
_ELEM_MATCH = ("array did not satisfy the child predicate", "array did satisfy the child predicate")
_ALL = ("array did not contain all specified values", "array did contain all specified values")
_BITS = ("bitwise operator failed to match", "bitwise operator matched successfully")
_BIT_TYPES = ("binData", *_NUMBERS)
# field operator -> (reasons, types it can match, do leaf arrays offer their elements)
_LEAVES: dict[str, tuple[tuple[str, str], tuple[str, ...], bool]] = {
    "$eq": (_COMPARISON, (), True),
    "$gt": (_COMPARISON, (), True),
    "$gte": (_COMPARISON, (), True),
    "$lt": (_COMPARISON, (), True),
    "$lte": (_COMPARISON, (), True),
    "$in": (_IN, (), True),
    "$regex": (_REGEX, ("regex", "string", "symbol"), True),
    "$mod": (_MOD, _NUMBERS, True),
    "$size": (_SIZE, ("array",), False),
    "$elemMatch": (_ELEM_MATCH, ("array",), False),
    "$all": (_ALL, (), False),
    "$bitsAllSet": (_BITS, _BIT_TYPES, True),
    "$bitsAllClear": (_BITS, _BIT_TYPES, True),
    "$bitsAnySet": (_BITS, _BIT_TYPES, True),
    "$bitsAnyClear": (_BITS, _BIT_TYPES, True),
}
_NEGATIONS = {"$ne": ("$eq", _COMPARISON), "$nin": ("$in", _IN)}


def _document(spec: Mapping[str, Any], ctx: Context) -> _Node:
    """A filter document: its clauses ($comment aside) under an implicit $and."""
    nodes = [_clause(key, value, ctx) for key, value in spec.items() if key != "$comment"]
    return nodes[0] if len(nodes) == 1 else _List("$and", tuple(nodes))


def _clause(key: str, value: Any, ctx: Context) -> _Node:
    if key in ("$and", "$or", "$nor"):
        return _List(key, tuple(_document(clause, ctx) for clause in value))
    if key == "$jsonSchema":
        return _Schema(jsonschema.compile_json_schema(value))
    if key == "$expr":
        return _Expr(value, compile_expression(value, Scope(frozenset(ctx.variables))), ctx)
    if key.startswith("$"):
        return _Constant(key, {key: value}, compile_filter({key: value}, ctx))
    return _field(key, value, ctx)


def _field(path: str, value: Any, ctx: Context) -> _Node:
    """The conditions on one field: an equality or an operator document."""
    parts = paths.split(path)
    if not is_operator_doc(value):
        op = "$regex" if cmp.bracket(value) == cmp.REGEX else "$eq"
        return _Leaf(op, {path: value}, parts, compile_filter({path: value}, ctx), *_LEAVES[op])
    nodes = [_operator(path, parts, op, arg, value, ctx) for op, arg in value.items() if op != "$options"]
    return nodes[0] if len(nodes) == 1 else _List("$and", tuple(nodes))


def _operator(path: str, parts: tuple[str, ...], op: str, arg: Any, ops: Mapping[str, Any], ctx: Context) -> _Node:
    specified = {path: {op: arg}}
    if op == "$not":
        return _Not(_field(path, arg, ctx))
    if op in _NEGATIONS:
        positive, reasons = _NEGATIONS[op]
        return _Negated(_Leaf(op, specified, parts, compile_filter({path: {positive: arg}}, ctx), reasons))
    if op == "$exists":
        leaf = _Leaf(
            op,
            specified,
            parts,
            compile_filter({path: {op: True}}, ctx),
            ("path does not exist", "path does exist"),
            style="exists",
        )
        return leaf if truthy(arg) else _Negated(leaf)
    if op == "$type":
        return _Leaf(
            op, specified, parts, compile_filter(specified, ctx), ("type did not match", "type did match"), style="type"
        )
    if op == "$regex" and "$options" in ops:
        specified = {path: {op: arg, "$options": ops["$options"]}}
    if op in _LEAVES:
        return _Leaf(op, specified, parts, compile_filter(specified, ctx), *_LEAVES[op])
    return _Constant(op, specified, compile_filter(specified, ctx))
