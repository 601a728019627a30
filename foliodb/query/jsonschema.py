"""MongoDB's ``$jsonSchema``: JSON Schema draft 4 with BSON types, compiled once.

``compile_json_schema(schema)`` checks the whole schema, raising MongoDB's
errors (FailedToParse, TypeMismatch, BadValue; QueryFeatureNotAllowed for the
encryption keywords, which FolioDB does not support), and returns a
:class:`JsonSchema`: ``check(doc) -> bool`` and ``check.explain(doc)``, the
``details`` MongoDB 5+ reports when a document fails a ``$jsonSchema``
validator (``{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied":
[...]}``).

Semantics (manual: https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/):

* A *subschema* applies to one value: the document at the top, a property's
  value (MISSING when absent), an array item, an additional property.
* Keywords restrict only values of their own type, as JSON Schema says:
  ``minLength`` ignores non-strings, ``minimum`` non-numbers, ``properties``
  non-objects. Only ``type``/``bsonType`` and ``enum`` reject other types (and
  a missing value). Arrays are values, never traversed like query paths.
* At the top level, string, number and array keywords have no effect (MongoDB
  stores only documents), a type that excludes "object" matches nothing, and
  ``enum`` considers only its document values.
* When ``type``/``bsonType`` names a single type, keywords of other types are
  dropped, so an explanation reports only the type mismatch (MongoDB's
  ``makeRestriction``).
* ``enum`` and ``uniqueItems`` use MongoDB equality (``1 == 1.0``) except that
  embedded documents are equal whatever their field order.
* Property names in ``properties``, ``required`` and ``dependencies`` are
  looked up as dotted paths through embedded documents, as MongoDB does;
  unlike MongoDB, arrays met on such a dotted path are not traversed.

An explanation lists the failing rules of each subschema in MongoDB's order:
pattern, maxLength, minLength, multipleOf, maximum, minimum, minItems,
maxItems, uniqueItems, items, additionalItems, properties,
additionalProperties/patternProperties, required, minProperties,
maxProperties, dependencies, allOf, anyOf, oneOf, not, enum, type/bsonType.
A rule reports nothing about a value it does not apply to (a missing
property, a non-string under ``minLength``): the rule that rejects it does.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bson import DBRef, Decimal128

from foliodb.errors import CommandError, ErrorCode, bad_value, failed_to_parse, type_mismatch
from foliodb.query import bsontypes, keystring
from foliodb.query import compare as cmp
from foliodb.query.filter_ops.evaluation import compile_regex
from foliodb.query.paths import MISSING
from foliodb.query.render import render

Detail = dict[str, Any]
Explain = Callable[[Any], Any]  # value -> list of details (a detail for an always-false schema)

_KEYWORDS = frozenset({
    "additionalItems", "additionalProperties", "allOf", "anyOf", "bsonType", "dependencies", "description",
    "encrypt", "encryptMetadata", "enum", "exclusiveMaximum", "exclusiveMinimum", "items", "maxItems", "maxLength",
    "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf", "not", "oneOf",
    "pattern", "patternProperties", "properties", "required", "title", "type", "uniqueItems",
})
# The manual's "Omissions": keywords MongoDB names and rejects.
_UNSUPPORTED = frozenset({"$ref", "$schema", "default", "definitions", "format", "id"})
_JSON_TYPES = {"array": "array", "boolean": "bool", "null": "null", "object": "object", "string": "string"}
_ANNOTATIONS = ("title", "description")


# --- values -------------------------------------------------------------------


def _as_object(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, DBRef):
        return value.as_doc()
    return None


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


_KIND_TEST: dict[str, Callable[[Any], bool]] = {
    "number": cmp.is_number,
    "string": _is_string,
    "array": _is_array,
    "object": lambda v: _as_object(v) is not None,
}
_KIND_TYPES = {"number": bsontypes.NUMERIC_TYPES, "string": {"string"}, "array": {"array"}, "object": {"object"}}


def _lookup(obj: Mapping[str, Any], name: str) -> Any:
    if "." not in name:
        return obj.get(name, MISSING)
    value: Any = obj
    for part in name.split("."):
        inner = _as_object(value)
        if inner is None:
            return MISSING
        value = inner.get(part, MISSING)
    return value


def _unordered(value: Any) -> Any:
    """``value`` with every embedded document's fields sorted by name."""
    obj = _as_object(value)
    if obj is not None:
        return {name: _unordered(obj[name]) for name in sorted(obj)}
    if _is_array(value):
        return [_unordered(v) for v in value]
    return value


def _key(value: Any) -> bytes:
    """Equal for values MongoDB's field-order-blind equality calls equal."""
    return keystring.encode(_unordered(value))


_DOUBLE_DIGITS = 15  # MongoDB reads a double as a Decimal128 of 15 significant digits.


def _decimal(value: Any) -> decimal.Decimal:
    if value.__class__ is Decimal128:
        return value.to_decimal()
    if isinstance(value, float):
        return decimal.Decimal(format(value, f".{_DOUBLE_DIGITS}g"))
    return decimal.Decimal(int(value))


def _is_multiple(value: decimal.Decimal, divisor: decimal.Decimal) -> bool:
    if not value.is_finite():
        return False
    if not value:
        return True
    # Enough digits for the exact remainder (Decimal128's fmod is exact).
    low = min(int(value.as_tuple().exponent), int(divisor.as_tuple().exponent))  # both finite
    digits = max(value.adjusted(), divisor.adjusted()) - low + 2
    context = decimal.Context(prec=max(34, digits), traps=[])
    return context.remainder(value, divisor) == 0


def _in_bound(value: Any, bound: Any, upper: bool, exclusive: bool) -> bool:
    # NaN equals only NaN and is otherwise neither below nor above anything.
    if cmp.is_nan(value) or cmp.is_nan(bound):
        return cmp.is_nan(value) and cmp.is_nan(bound) and not exclusive
    c = cmp.compare_numbers(value, bound)
    if upper:
        return c < 0 or (c == 0 and not exclusive)
    return c > 0 or (c == 0 and not exclusive)


# --- argument checks ------------------------------------------------------------


def _type_of(value: Any) -> str:
    return bsontypes.type_name(value)


def _element(name: str, value: Any) -> str:
    return f"{name}: {value}" if value.__class__ is Decimal128 else f"{name}: {render(value)}"


def _non_negative_long(name: str, value: Any) -> int:
    """MongoDB's parseIntegerElementToNonNegativeLong."""
    where = _element(name, value)
    if not cmp.is_number(value):
        raise failed_to_parse(f"Expected a number in: {where}")
    if isinstance(value, float):
        if math.isnan(value):
            raise failed_to_parse(f"Expected an integer, but found NaN in: {where}")
        if value >= 2.0**63 or value < -(2.0**63):
            raise failed_to_parse(f"Cannot represent as a 64-bit integer: {where}")
        if value != int(value):
            raise failed_to_parse(f"Expected an integer: {where}")
        n = int(value)
    elif value.__class__ is Decimal128:
        d = value.to_decimal()
        if not d.is_finite() or d != d.to_integral_value() or not bsontypes.INT64_MIN <= d <= bsontypes.INT64_MAX:
            raise failed_to_parse(f"Cannot represent as a 64-bit integer: {where}")
        n = int(d)
    else:
        n = int(value)
    if n < 0:
        raise failed_to_parse(f"Expected a non-negative number in: {where}")
    return n


@dataclass(frozen=True, slots=True)
class _Types:
    names: frozenset[str]
    single: str | None  # the one type named ("number" for all numbers), if only one


def _parse_types(keyword: str, spec: Any) -> _Types:
    if not isinstance(spec, (str, list)):
        raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be either a string or an array of strings")
    aliases: list[str] = []
    for alias in [spec] if isinstance(spec, str) else spec:
        if not isinstance(alias, str):
            raise type_mismatch(f"$jsonSchema keyword '{keyword}' array elements must be strings")
        if alias == "integer":
            raise failed_to_parse("$jsonSchema type 'integer' is not currently supported.")
        if alias in aliases:
            raise failed_to_parse(f"$jsonSchema keyword '{keyword}' has duplicate value: {alias}")
        aliases.append(alias)
    known = _JSON_TYPES if keyword == "type" else {name: name for name in bsontypes.TYPE_NUMBERS}
    names: set[str] = set()
    for alias in sorted(aliases):  # MongoDB resolves them in sorted order
        if alias == "number":
            names |= bsontypes.NUMERIC_TYPES
        elif alias in known:
            names.add(known[alias])
        elif alias == "missing":
            raise bad_value(
                "'missing' is not a legal type name. To query for non-existence of a field, use {$exists:false}."
            )
        else:
            raise bad_value(f"Unknown type name alias: {alias}")
    if not names:
        raise failed_to_parse(f"$jsonSchema keyword '{keyword}' must name at least one type")
    single = known.get(aliases[0], aliases[0]) if len(aliases) == 1 else None
    return _Types(frozenset(names), single)


def _subschema_list(keyword: str, arg: Any) -> list[Mapping[str, Any]]:
    if not isinstance(arg, list):
        raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be an array")
    if not arg:
        raise bad_value(f"$jsonSchema keyword '{keyword}' must be a non-empty array")
    for item in arg:
        if not isinstance(item, Mapping):
            raise type_mismatch(
                f"$jsonSchema keyword '{keyword}' must be an array of objects, "
                f"but found an element of type {_type_of(item)}"
            )
    return arg


# --- compiled schemas ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    ok: Callable[[Any], bool]
    explain: Explain  # called only for a value ``ok`` rejects


@dataclass(frozen=True, slots=True)
class _Schema:
    """One compiled subschema; explanations repeat its title/description."""

    ok: Callable[[Any], bool]
    explain: Explain
    annotations: Detail


def _schema(rules: list[_Rule], annotations: Detail) -> _Schema:
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

    return _Schema(oks[0] if len(oks) == 1 else ok, explain, annotations)


def _never(value: Any) -> bool:
    return False


def _applies(kind: str, types: _Types | None) -> bool:
    """False when a single stated type of another kind makes a keyword moot."""
    if types is None or types.single is None:
        return True
    return ("int" if types.single == "number" else types.single) in _KIND_TYPES[kind]


def _restrict(
    kind: str, types: _Types | None, test: Callable[[Any], bool], why: Callable[[Any], Detail]
) -> list[_Rule]:
    """A rule on values of one kind; values of other kinds pass."""
    if not _applies(kind, types):
        return []
    is_kind = _KIND_TEST[kind]
    return [_Rule(lambda v: not is_kind(v) or test(v), lambda v: [why(v)])]


def _leaf(name: str, specified: Detail, reason: str, value: Any, **extra: Any) -> Detail:
    return {"operatorName": name, "specifiedAs": specified, "reason": reason, "consideredValue": value, **extra}


def compile_json_schema(schema: Any) -> JsonSchema:
    """Check ``schema`` and compile it; raises CommandError as MongoDB does."""
    if not isinstance(schema, Mapping):
        raise type_mismatch("$jsonSchema must be an object")
    return JsonSchema(schema, _compile(schema, top=True))


class JsonSchema:
    """A compiled ``$jsonSchema``: ``check(doc) -> bool``, ``check.explain(doc)``."""

    __slots__ = ("_root", "matches", "schema")

    def __init__(self, schema: Mapping[str, Any], root: _Schema) -> None:
        self.schema = schema
        self._root = root
        self.matches: Callable[[Any], bool] = root.ok

    def __call__(self, doc: Any) -> bool:
        return self.matches(doc)

    def explain(self, doc: Any) -> Detail:
        """Why ``doc`` fails the schema, in MongoDB 5+'s errInfo ``details``
        shape (an empty rule list when it does not fail)."""
        details = self._root.explain(doc)
        if isinstance(details, dict):  # the schema matches nothing
            return details
        return {"operatorName": "$jsonSchema", **self._root.annotations, "schemaRulesNotSatisfied": details}


def _compile(schema: Mapping[str, Any], top: bool) -> _Schema:
    for keyword in schema:
        if keyword in _UNSUPPORTED:
            raise failed_to_parse(f"$jsonSchema keyword '{keyword}' is not currently supported")
        if keyword not in _KEYWORDS:
            raise failed_to_parse(f"Unknown $jsonSchema keyword: {keyword}")
    for keyword in ("description", "title"):
        if keyword in schema and not isinstance(schema[keyword], str):
            raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be of type string")
    if "type" in schema and "bsonType" in schema:
        raise failed_to_parse("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    type_keyword = "type" if "type" in schema else "bsonType" if "bsonType" in schema else None
    if type_keyword and "encrypt" in schema:
        raise failed_to_parse(
            f"$jsonSchema keyword 'encrypt' cannot be used in conjunction with '{type_keyword}', "
            "'encrypt' implies type 'bsonType::BinData'"
        )
    types = _parse_types(type_keyword, schema[type_keyword]) if type_keyword else None

    rules = _scalar_rules(schema, top, types) + _array_rules(schema, top, types)
    if "encrypt" in schema or "encryptMetadata" in schema:
        # Client-side field level encryption is not built; MongoDB answers the
        # same where it does not allow these keywords.
        raise CommandError(
            ErrorCode.QueryFeatureNotAllowed, "Encryption-related validator keywords are not allowed in this context"
        )
    rules += _object_rules(schema, top, types)
    rules += _logical_rules(schema, top)

    annotations = {k: schema[k] for k in _ANNOTATIONS if k in schema}
    if types is not None and type_keyword is not None:
        if top:
            if "object" not in types.names:
                detail = {"operatorName": "$jsonSchema", "specifiedAs": {"$jsonSchema": schema},
                          "reason": "expression always evaluates to false"}
                return _Schema(_never, lambda v: detail, {})
        else:
            rules.append(_type_rule(type_keyword, schema[type_keyword], types.names))
    return _schema(rules, annotations)


def _type_rule(keyword: str, spec: Any, names: frozenset[str]) -> _Rule:
    type_name = bsontypes.type_name

    def ok(value: Any) -> bool:
        return value is not MISSING and type_name(value) in names

    def why(value: Any) -> list[Detail]:
        if value is MISSING:
            return []
        return [_leaf(keyword, {keyword: spec}, "type did not match", value, consideredType=type_name(value))]

    return _Rule(ok, why)


# --- string and number keywords -----------------------------------------------


def _scalar_rules(schema: Mapping[str, Any], top: bool, types: _Types | None) -> list[_Rule]:
    rules: list[_Rule] = []
    if "pattern" in schema:
        pattern = schema["pattern"]
        if not isinstance(pattern, str):
            raise type_mismatch("$jsonSchema keyword 'pattern' must be a string")
        if not top:
            if "\x00" in pattern:
                raise bad_value("Regular expression cannot contain an embedded null byte")
            search = compile_regex(pattern, "").search
            rules += _restrict(
                "string", types, lambda v: search(v) is not None,
                lambda v: _leaf("pattern", {"pattern": pattern}, "regular expression did not match", v),
            )
    for keyword, fits in (("maxLength", int.__ge__), ("minLength", int.__le__)):
        if keyword in schema:
            limit = _non_negative_long(keyword, schema[keyword])
            if not top:
                rules += _length_rule("string", keyword, schema[keyword], limit, fits, types)
    if "multipleOf" in schema:
        arg = schema["multipleOf"]
        if not cmp.is_number(arg):
            raise type_mismatch("$jsonSchema keyword 'multipleOf' must be a number")
        divisor = _decimal(arg)
        if divisor.is_signed() or divisor.is_zero():
            raise failed_to_parse("$jsonSchema keyword 'multipleOf' must have a positive value")
        if not top:
            if divisor.is_nan():
                raise bad_value("divisor cannot be NaN")
            if divisor.is_infinite():
                raise bad_value("divisor cannot be infinite")
            reason = "considered value is not a multiple of the specified value"
            rules += _restrict(
                "number", types, lambda v: _is_multiple(_decimal(v), divisor),
                lambda v: _leaf("multipleOf", {"multipleOf": arg}, reason, v),
            )
    for bound, upper in (("maximum", True), ("minimum", False)):
        exclusive_keyword = "exclusiveMaximum" if upper else "exclusiveMinimum"
        if bound not in schema:
            if exclusive_keyword in schema:
                raise failed_to_parse(
                    f"$jsonSchema keyword '{bound}' must be a present if {exclusive_keyword} is present"
                )
            continue
        exclusive = schema.get(exclusive_keyword, False)
        if not isinstance(exclusive, bool):
            raise type_mismatch(f"$jsonSchema keyword '{exclusive_keyword}' must be a boolean")
        limit = schema[bound]
        if not cmp.is_number(limit):
            raise type_mismatch(f"$jsonSchema keyword '{bound}' must be a number")
        if not top:
            specified = {bound: limit, exclusive_keyword: True} if exclusive else {bound: limit}
            rules += _bound_rule(bound, specified, limit, upper, exclusive, types)
    return rules


def _length_rule(
    kind: str, keyword: str, spec: Any, limit: int, fits: Callable[[int, int], bool], types: _Types | None
) -> list[_Rule]:
    if kind == "string":
        return _restrict(
            kind, types, lambda v: fits(limit, len(v)),
            lambda v: _leaf(keyword, {keyword: spec}, "specified string length was not satisfied", v),
        )
    return _restrict(
        kind, types, lambda v: fits(limit, len(v)),
        lambda v: _leaf(
            keyword, {keyword: spec}, "array did not match specified length", list(v), numberOfItems=len(v)
        ),
    )


def _bound_rule(
    name: str, specified: Detail, limit: Any, upper: bool, exclusive: bool, types: _Types | None
) -> list[_Rule]:
    return _restrict(
        "number", types, lambda v: _in_bound(v, limit, upper, exclusive),
        lambda v: _leaf(name, specified, "comparison failed", v),
    )


# --- array keywords ---------------------------------------------------------------


def _array_rules(schema: Mapping[str, Any], top: bool, types: _Types | None) -> list[_Rule]:
    rules: list[_Rule] = []
    for keyword, fits in (("minItems", int.__le__), ("maxItems", int.__ge__)):
        if keyword in schema:
            limit = _non_negative_long(keyword, schema[keyword])
            if not top:
                rules += _length_rule("array", keyword, schema[keyword], limit, fits, types)
    if "uniqueItems" in schema:
        unique = schema["uniqueItems"]
        if not isinstance(unique, bool):
            raise type_mismatch("$jsonSchema keyword 'uniqueItems' must be a boolean")
        if unique and not top:
            rules += _restrict(
                "array", types, lambda v: _first_duplicate(v) is MISSING,
                lambda v: _leaf("uniqueItems", {"uniqueItems": True}, "found a duplicate item", list(v),
                                duplicatedValue=_first_duplicate(v)),
            )
    start: int | None = None  # where additionalItems begins, when items is an array
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, list):
            subs = []
            for item in items:
                if not isinstance(item, Mapping):
                    raise type_mismatch(
                        "$jsonSchema keyword 'items' requires that each element of the array is an object, "
                        f"but found a {_type_of(item)}"
                    )
                subs.append(_compile(item, top=False))
            start = len(subs)
            if not top:
                rules += _restrict("array", types, *_positional_items(subs))
        elif isinstance(items, Mapping):
            sub = _compile(items, top=False)
            if not top:
                reason = "At least one item did not match the sub-schema"
                rules += _restrict("array", types, *_each_item(sub, 0, "items", reason))
        else:
            raise type_mismatch(f"$jsonSchema keyword 'items' must be an array or an object, not {_type_of(items)}")
    if "additionalItems" in schema:
        extra = schema["additionalItems"]
        if isinstance(extra, bool):
            if start is not None and not top and not extra:
                first = start
                rules += _restrict(
                    "array", types, lambda v: len(v) <= first,
                    lambda v: {"operatorName": "additionalItems", "specifiedAs": {"additionalItems": False},
                               "reason": "found additional items", "additionalItems": list(v[first:])},
                )
        elif isinstance(extra, Mapping):
            sub = _compile(extra, top=False)
            if start is not None and not top:
                reason = "At least one additional item did not match the sub-schema"
                rules += _restrict("array", types, *_each_item(sub, start, "additionalItems", reason))
        else:
            raise type_mismatch(
                "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, "
                f"but got a {_type_of(extra)}"
            )
    return rules


def _first_duplicate(array: Any) -> Any:
    seen: set[bytes] = set()
    for value in array:
        key = _key(value)
        if key in seen:
            return value
        seen.add(key)
    return MISSING


def _each_item(
    sub: _Schema, start: int, name: str, reason: str
) -> tuple[Callable[[Any], bool], Callable[[Any], Detail]]:
    ok = sub.ok

    def test(array: Any) -> bool:
        return all(ok(array[i]) for i in range(start, len(array)))

    def why(array: Any) -> Detail:
        index = next(i for i in range(start, len(array)) if not ok(array[i]))
        return {"operatorName": name, **sub.annotations, "reason": reason, "itemIndex": index,
                "details": sub.explain(array[index])}

    return test, why


def _positional_items(subs: list[_Schema]) -> tuple[Callable[[Any], bool], Callable[[Any], Detail]]:
    def failing(array: Any) -> list[int]:
        return [i for i, (sub, value) in enumerate(zip(subs, array, strict=False)) if not sub.ok(value)]

    def test(array: Any) -> bool:
        return all(sub.ok(value) for sub, value in zip(subs, array, strict=False))

    def why(array: Any) -> Detail:
        details = [{"itemIndex": i, "details": subs[i].explain(array[i])} for i in failing(array)]
        return {"operatorName": "items", "details": details}

    return test, why


# --- object keywords --------------------------------------------------------------


def _object_rules(schema: Mapping[str, Any], top: bool, types: _Types | None) -> list[_Rule]:
    required: list[str] = []
    if "required" in schema:
        required = _parse_required(schema["required"])
    rules: list[_Rule] = []
    names: frozenset[str] = frozenset()
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, Mapping):
            raise type_mismatch("$jsonSchema keyword 'properties' must be an object")
        subs = []
        for name, sub in properties.items():
            if not isinstance(sub, Mapping):
                raise type_mismatch(f"Nested schema for $jsonSchema property '{name}' must be an object")
            subs.append((name, _compile(sub, top=False), name in required))
        names = frozenset(properties)
        rules += _object_rule(top, types, *_properties(subs))
    if "patternProperties" in schema or "additionalProperties" in schema:
        rules += _object_rule(top, types, *_allowed_properties(schema, names))
    if required:
        spec = schema["required"]
        missing_sorted = sorted(required)

        def missing(obj: Mapping[str, Any]) -> list[str]:
            return [name for name in missing_sorted if _lookup(obj, name) is MISSING]

        rules += _object_rule(
            top, types, lambda obj: not missing(obj),
            lambda obj: [{"operatorName": "required", "specifiedAs": {"required": spec},
                          "missingProperties": missing(obj)}],
        )
    for keyword, fits in (("minProperties", int.__le__), ("maxProperties", int.__ge__)):
        if keyword in schema:
            spec = schema[keyword]
            limit = _non_negative_long(keyword, spec)
            rules += _object_rule(top, types, *_count_properties(keyword, spec, limit, fits))
    if "dependencies" in schema:
        rules.append(_dependencies(schema["dependencies"], top))
    return rules


def _count_properties(
    keyword: str, spec: Any, limit: int, fits: Callable[[int, int], bool]
) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any]], list[Detail]]]:
    return (
        lambda obj: fits(limit, len(obj)),
        lambda obj: [{"operatorName": keyword, "specifiedAs": {keyword: spec},
                      "reason": "specified number of properties was not satisfied", "numberOfProperties": len(obj)}],
    )


def _object_rule(
    top: bool,
    types: _Types | None,
    test: Callable[[Mapping[str, Any]], bool],
    why: Callable[[Mapping[str, Any]], list[Detail]],
) -> list[_Rule]:
    """A rule on documents: the top-level document itself, or any object below."""
    if top:
        return [_Rule(test, why)]
    if not _applies("object", types):
        return []

    def ok(value: Any) -> bool:
        obj = _as_object(value)
        return obj is None or test(obj)

    def explain(value: Any) -> list[Detail]:
        obj = _as_object(value)
        return why(obj) if obj is not None else []

    return [_Rule(ok, explain)]


def _parse_required(arg: Any) -> list[str]:
    if not isinstance(arg, list):
        raise type_mismatch(
            f"$jsonSchema keyword 'required' must be an array, but found an element of type {_type_of(arg)}"
        )
    names: list[str] = []
    for name in arg:
        if not isinstance(name, str):
            raise type_mismatch(
                "$jsonSchema keyword 'required' must be an array of strings, "
                f"but found an element of type: {_type_of(name)}"
            )
        if name in names:
            raise failed_to_parse("$jsonSchema keyword 'required' array cannot contain duplicate values")
        names.append(name)
    if not names:
        raise failed_to_parse("$jsonSchema keyword 'required' cannot be an empty array")
    return names


def _properties(
    subs: list[tuple[str, _Schema, bool]],
) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any]], list[Detail]]]:
    def test(obj: Mapping[str, Any]) -> bool:
        for name, sub, required in subs:
            value = _lookup(obj, name)
            if (required or value is not MISSING) and not sub.ok(value):
                return False
        return True

    def why(obj: Mapping[str, Any]) -> list[Detail]:
        failed = []
        for name, sub, required in subs:
            value = _lookup(obj, name)
            if (required or value is not MISSING) and not sub.ok(value):
                details = sub.explain(value)
                if details:  # a missing required property is the required rule's to report
                    failed.append({"propertyName": name, **sub.annotations, "details": details})
        return [{"operatorName": "properties", "propertiesNotSatisfied": failed}] if failed else []

    return test, why


def _allowed_properties(
    schema: Mapping[str, Any], names: frozenset[str]
) -> tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any]], list[Detail]]]:
    """additionalProperties and patternProperties, judged together."""
    patterns: list[tuple[str, Callable[[str], Any], _Schema]] = []
    if "patternProperties" in schema:
        spec = schema["patternProperties"]
        if not isinstance(spec, Mapping):
            raise type_mismatch("$jsonSchema keyword 'patternProperties' must be an object")
        for raw, sub in spec.items():
            if not isinstance(sub, Mapping):
                raise type_mismatch(
                    f"$jsonSchema keyword 'patternProperties' has property '{raw}' which is not an object"
                )
            patterns.append((raw, compile_regex(raw, "").search, _compile(sub, top=False)))
    extra: _Schema | bool = True
    if "additionalProperties" in schema:
        spec = schema["additionalProperties"]
        if isinstance(spec, bool):
            extra = spec
        elif isinstance(spec, Mapping):
            extra = _compile(spec, top=False)
        else:
            raise type_mismatch("$jsonSchema keyword 'additionalProperties' must be an object or a boolean")

    def additional(obj: Mapping[str, Any]) -> list[str]:
        return [n for n in obj if n not in names and not any(search(n) for _, search, _ in patterns)]

    def test(obj: Mapping[str, Any]) -> bool:
        for name, value in obj.items():
            matched = False
            for _, search, sub in patterns:
                if search(name):
                    matched = True
                    if not sub.ok(value):
                        return False
            if not matched and name not in names and not _allowed_extra(extra, value):
                return False
        return True

    def why(obj: Mapping[str, Any]) -> list[Detail]:
        out: list[Detail] = []
        if extra is False:
            if additional(obj):
                out.append({"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
                            "additionalProperties": additional(obj)})
        elif isinstance(extra, _Schema):
            failing = [n for n in additional(obj) if not extra.ok(obj[n])]
            if failing:
                out.append({"operatorName": "additionalProperties", **extra.annotations,
                            "reason": "at least one additional property did not match the subschema",
                            "failingProperty": failing[0], "details": extra.explain(obj[failing[0]])})
        matched = []
        for raw, search, sub in patterns:
            for name, value in obj.items():
                if search(name) and not sub.ok(value):
                    matched.append({"propertyName": name, **sub.annotations, "regexMatched": raw,
                                    "details": sub.explain(value)})
                    break
        if matched:
            out.append({"operatorName": "patternProperties", "details": matched})
        return out

    return test, why


def _allowed_extra(extra: _Schema | bool, value: Any) -> bool:
    """Does additionalProperties (true, false or a schema) allow ``value``?"""
    return extra if isinstance(extra, bool) else extra.ok(value)


def _dependencies(spec: Any, top: bool) -> _Rule:
    if not isinstance(spec, Mapping):
        raise type_mismatch("$jsonSchema keyword 'dependencies' must be an object")
    deps: list[tuple[str, list[str] | _Schema]] = []
    for name, dep in spec.items():
        if isinstance(dep, Mapping):
            deps.append((name, _compile(dep, top)))
        elif isinstance(dep, list):
            deps.append((name, _property_dependency(name, dep)))
        elif isinstance(dep, str) and name in _ANNOTATIONS:
            continue  # MongoDB allows annotations among the dependencies
        else:
            raise type_mismatch(
                f"property '{name}' in $jsonSchema keyword 'dependencies' must be either an object or an array"
            )
    annotations = {k: spec[k] for k in _ANNOTATIONS if isinstance(spec.get(k), str)}

    def failing(value: Any) -> list[Detail]:
        obj = _as_object(value)
        if obj is None:
            return []
        out: list[Detail] = []
        for name, dep in deps:
            if _lookup(obj, name) is MISSING:
                continue
            if isinstance(dep, list):
                missing = [n for n in dep if _lookup(obj, n) is MISSING]
                if missing:
                    out.append({"conditionalProperty": name, "missingProperties": missing})
            elif not dep.ok(value):
                out.append({"conditionalProperty": name, "details": dep.explain(value)})
        return out

    return _Rule(
        lambda v: not failing(v),
        lambda v: [{"operatorName": "dependencies", **annotations, "failingDependencies": failing(v)}],
    )


def _property_dependency(name: str, names: list[Any]) -> list[str]:
    if not names:
        raise failed_to_parse(f"property '{name}' in $jsonSchema keyword 'dependencies' cannot be an empty array")
    seen: list[str] = []
    for n in names:
        if not isinstance(n, str):
            raise type_mismatch(
                f"array '{name}' in $jsonSchema keyword 'dependencies' can only contain strings, "
                f"but found element of type: {_type_of(n)}"
            )
        if n in seen:
            raise failed_to_parse(
                f"array '{name}' in $jsonSchema keyword 'dependencies' contains duplicate element: {n}"
            )
        seen.append(n)
    return seen


# --- logical keywords -------------------------------------------------------------


def _logical_rules(schema: Mapping[str, Any], top: bool) -> list[_Rule]:
    rules: list[_Rule] = []
    for keyword, combine in (("allOf", all), ("anyOf", any)):
        if keyword in schema:
            subs = [_compile(s, top) for s in _subschema_list(keyword, schema[keyword])]
            rules.append(_combination(keyword, subs, combine))
    if "oneOf" in schema:
        rules.append(_one_of([_compile(s, top) for s in _subschema_list("oneOf", schema["oneOf"])]))
    if "not" in schema:
        arg = schema["not"]
        if not isinstance(arg, Mapping):
            raise type_mismatch(
                f"$jsonSchema keyword 'not' must be an object, but found an element of type {_type_of(arg)}"
            )
        ok = _compile(arg, top).ok
        detail = {"operatorName": "not", "reason": "child expression matched"}
        rules.append(_Rule(lambda v: not ok(v), lambda v: [detail]))
    if "enum" in schema:
        rules.append(_enum(schema["enum"], top))
    return rules


def _entries(subs: list[_Schema], value: Any, indexes: range | list[int]) -> list[Detail]:
    return [{"index": i, **subs[i].annotations, "details": subs[i].explain(value)} for i in indexes]


def _combination(keyword: str, subs: list[_Schema], combine: Callable[[Any], bool]) -> _Rule:
    oks = tuple(sub.ok for sub in subs)

    def why(value: Any) -> list[Detail]:
        failed = [i for i, ok in enumerate(oks) if not ok(value)]
        return [{"operatorName": keyword, "schemasNotSatisfied": _entries(subs, value, failed)}]

    return _Rule(lambda v: combine(ok(v) for ok in oks), why)


def _one_of(subs: list[_Schema]) -> _Rule:
    oks = tuple(sub.ok for sub in subs)

    def matching(value: Any) -> list[int]:
        return [i for i, ok in enumerate(oks) if ok(value)]

    def why(value: Any) -> list[Detail]:
        matched = matching(value)
        if matched:
            reason = "more than one subschema matched"
            return [{"operatorName": "oneOf", "reason": reason, "matchingSchemaIndexes": matched}]
        return [{"operatorName": "oneOf", "schemasNotSatisfied": _entries(subs, value, range(len(subs)))}]

    return _Rule(lambda v: len(matching(v)) == 1, why)


def _enum(arg: Any, top: bool) -> _Rule:
    if not isinstance(arg, list):
        raise type_mismatch(
            f"$jsonSchema keyword 'enum' must be an array, but found an element of type {_type_of(arg)}"
        )
    if not arg:
        raise failed_to_parse("$jsonSchema keyword 'enum' cannot be an empty array")
    keys: set[bytes] = set()
    for value in arg:
        key = _key(value)
        if key in keys:
            raise failed_to_parse("$jsonSchema keyword 'enum' array cannot contain duplicate values.")
        keys.add(key)
    if top:
        # Only a document can equal the document being matched.
        keys = {_key(value) for value in arg if _as_object(value) is not None}
        if not keys:
            reason = "expression always evaluates to false"
            detail = {"operatorName": "enum", "specifiedAs": {"enum": arg}, "reason": reason}
            return _Rule(_never, lambda v: [detail])

    def why(value: Any) -> list[Detail]:
        if value is MISSING:
            return []
        return [_leaf("enum", {"enum": arg}, "value was not found in enum", value)]

    return _Rule(lambda v: v is not MISSING and _key(v) in keys, why)
