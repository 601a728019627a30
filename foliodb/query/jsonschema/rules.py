"""Compiled ``$jsonSchema`` rules and subschemas, and the shapes of their
explanations.

A :class:`Rule` is a test and, for a value the test rejects, the list of
``details`` entries MongoDB reports (its errInfo ``schemaRulesNotSatisfied``
items). A :class:`Schema` is one subschema's rules in MongoDB's order. A
keyword compiler that needs to compile nested subschemas is handed
``compile_sub(schema, top)`` (:data:`Compile`), so the keyword modules never
import the compiler that imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from foliodb.query.jsonschema.arguments import Types, non_negative_long
from foliodb.query.jsonschema.values import KIND_TEST, KIND_TYPES, as_object

Detail = dict[str, Any]
Explain = Callable[[Any], Any]  # value -> list of details (a detail for an always-false schema)

ANNOTATIONS = ("title", "description")


@dataclass(frozen=True, slots=True)
class Rule:
    ok: Callable[[Any], bool]
    explain: Explain  # called only for a value ``ok`` rejects


@dataclass(frozen=True, slots=True)
class Schema:
    """One compiled subschema; explanations repeat its title/description."""

    ok: Callable[[Any], bool]
    explain: Explain
    annotations: Detail


class Compile(Protocol):
    """Compiles a nested subschema (``top``: it applies to the whole document)."""

    def __call__(self, schema: Mapping[str, Any], top: bool) -> Schema: ...


def subschema(rules: list[Rule], annotations: Detail) -> Schema:
    oks = tuple(rule.ok for rule in rules)
    pairs = tuple((rule.ok, rule.explain) for rule in rules)

    def ok(value: Any) -> bool:
        return all(f(value) for f in oks)

    def explain(value: Any) -> list[Detail]:
        out: list[Detail] = []
        for f, why in pairs:
            if not f(value):
                out.extend(why(value))
        return out

    return Schema(oks[0] if len(oks) == 1 else ok, explain, annotations)


def never(value: Any) -> bool:
    return False


def _applies(kind: str, types: Types | None) -> bool:
    """False when a single stated type of another kind makes a keyword moot."""
    if types is None or types.single is None:
        return True
    return ("int" if types.single == "number" else types.single) in KIND_TYPES[kind]


def restrict(kind: str, types: Types | None, test: Callable[[Any], bool], why: Callable[[Any], Detail]) -> list[Rule]:
    """A rule on values of one kind; values of other kinds pass."""
    if not _applies(kind, types):
        return []
    is_kind = KIND_TEST[kind]
    return [Rule(lambda v: not is_kind(v) or test(v), lambda v: [why(v)])]


def object_rule(
    top: bool,
    types: Types | None,
    test: Callable[[Mapping[str, Any]], bool],
    why: Callable[[Mapping[str, Any]], list[Detail]],
) -> list[Rule]:
    """A rule on documents: the top-level document itself, or any object below."""
    if top:
        return [Rule(test, why)]
    if not _applies("object", types):
        return []

    def ok(value: Any) -> bool:
        obj = as_object(value)
        return obj is None or test(obj)

    def explain(value: Any) -> list[Detail]:
        obj = as_object(value)
        return why(obj) if obj is not None else []

    return [Rule(ok, explain)]


def length_rules(
    schema: Mapping[str, Any],
    top: bool,
    types: Types | None,
    kind: str,
    bounds: tuple[tuple[str, Callable[[int, int], bool]], ...],
) -> list[Rule]:
    """The length keywords of strings (maxLength, minLength) or arrays
    (minItems, maxItems), in ``bounds``' order: ``(keyword, fits(limit,
    length))``. Checked at the top level too, where they have no effect."""
    rules: list[Rule] = []
    for keyword, fits in bounds:
        if keyword in schema:
            spec = schema[keyword]
            limit = non_negative_long(keyword, spec)
            if not top:
                rules += _length_rule(kind, keyword, spec, limit, fits, types)
    return rules


def _length_rule(
    kind: str, keyword: str, spec: Any, limit: int, fits: Callable[[int, int], bool], types: Types | None
) -> list[Rule]:
    if kind == "string":
        return restrict(
            kind,
            types,
            lambda v: fits(limit, len(v)),
            lambda v: leaf(keyword, {keyword: spec}, "specified string length was not satisfied", v),
        )
    return restrict(
        kind,
        types,
        lambda v: fits(limit, len(v)),
        lambda v: leaf(keyword, {keyword: spec}, "array did not match specified length", list(v), numberOfItems=len(v)),
    )


def leaf(name: str, specified: Detail, reason: str, value: Any, **extra: Any) -> Detail:
    return {"operatorName": name, "specifiedAs": specified, "reason": reason, "consideredValue": value, **extra}
