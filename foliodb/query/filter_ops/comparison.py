"""Comparison query operators: $eq $ne $gt $gte $lt $lte $in $nin.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-comparison/
(and https://www.mongodb.com/docs/manual/reference/database-references/ for
the ``$ref``/``$id``/``$db`` fields of DBRefs)

Equality is MongoDB's: numbers by value across types, ``null`` also matches
a missing field, a regex matches strings. Ordering comparisons only match
values of the operand's type bracket (``{"$gt": 5}`` never matches a string),
MinKey/MaxKey operands aside, and NaN only equals NaN.

Under a collation (``ctx.collator``) every one of them compares strings by
the collation: the operand is transformed once when compiled and each
document value when tested (:meth:`Collator.transform`); a regex operand
still matches the raw string, as ``$regex`` ignores collations.
Manual: https://www.mongodb.com/docs/manual/reference/collation/#operations-that-support-collation
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import bad_value
from foliodb.query import compare as cmp
from foliodb.query import keystring
from foliodb.query.collation import Collator, key_encoder
from foliodb.query.context import Context
from foliodb.query.filter import FIELD_OPS, TOP_OPS, Clause, Leaf, Matcher, Not, clause_matcher, is_operator_doc
from foliodb.query.filter_ops.evaluation import regex_single, to_pattern
from foliodb.query.paths import DBREF_FIELDS


def is_regex(value: Any) -> bool:
    return cmp.bracket(value) == cmp.REGEX


def equals(value: Any) -> Callable[[Any], bool]:
    """The equality test against ``value`` (regex values match strings)."""
    if is_regex(value):
        return regex_single(to_pattern(value), value)
    cls = value.__class__
    if cls is str:
        return lambda v: v.__class__ is str and v == value
    if value is None:
        return lambda v: v is None
    b = cmp.bracket(value)
    if b == cmp.NUMBER:
        if cmp.is_nan(value):
            return cmp.is_nan
        n = cmp.number_value(value)
        return lambda v: cmp.is_number(v) and cmp.number_value(v) == n
    if b in (cmp.OBJECT, cmp.ARRAY):
        key = keystring.encode(value)
        return lambda v: cmp.bracket(v) == b and keystring.encode(v) == key
    return lambda v: cmp.bracket(v) == b and cmp.compare(v, value) == 0


def collated(leaf: Leaf, collator: Collator | None) -> Leaf:
    """``leaf`` (compiled against the transformed operand) testing each
    document value through the collation."""
    if collator is None:
        return leaf
    test, transform = leaf.single, collator.transform
    return Leaf(lambda v: test(transform(v)), missing=leaf.missing, expand=leaf.expand)


def eq_clause(value: Any, collator: Collator | None = None) -> Leaf:
    if collator is None or is_regex(value):
        return Leaf(equals(value), missing=value is None)
    return collated(Leaf(equals(collator.transform(value)), missing=value is None), collator)


@FIELD_OPS.register("$eq")
def filter_eq(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if "$eq" not in spec:  # a plain {"field": value}
        return eq_clause(arg, ctx.collator)
    if is_regex(arg):
        # {$eq: /re/} compares regexes as values instead of matching.
        return Leaf(lambda v: cmp.bracket(v) == cmp.REGEX and cmp.compare(v, arg) == 0)
    return eq_clause(arg, ctx.collator)


@FIELD_OPS.register("$ne")
def filter_ne(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if is_regex(arg):
        raise bad_value("Can't have regex as arg to $ne.")
    return Not(eq_clause(arg, ctx.collator))


def _ordering(op: str, test: Callable[[int], bool], nan_ok: bool) -> Callable[..., Clause]:
    def compile_ordering(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
        collator = ctx.collator
        if collator is None or cmp.bracket(arg) == cmp.REGEX:
            return ordering(arg)
        leaf = ordering(collator.transform(arg))
        assert isinstance(leaf, Leaf)
        return collated(leaf, collator)

    def ordering(arg: Any) -> Clause:
        b = cmp.bracket(arg)
        if b == cmp.REGEX:
            # MongoDB names the field here; a field operator does not know it.
            raise bad_value("Can't have RegEx as arg to predicate over field")
        if b == cmp.MINKEY or b == cmp.MAXKEY:
            return Leaf(lambda v: test(cmp.compare(v, arg)), missing=test(cmp.compare(None, arg)))
        if b == cmp.NUMBER:
            if cmp.is_nan(arg):
                return Leaf(cmp.is_nan if nan_ok else lambda v: False)
            n = cmp.number_value(arg)

            def number_test(v: Any) -> bool:
                if not cmp.is_number(v):
                    return False
                x = cmp.number_value(v)
                if x != x:  # NaN is only ever equal to NaN
                    return False
                return test((x > n) - (x < n))

            return Leaf(number_test)
        if arg.__class__ is str:
            return Leaf(lambda v: v.__class__ is str and test((v > arg) - (v < arg)))
        if b == cmp.NULL:
            # null equals only null/missing; nothing is below or above it.
            ok = test(0)
            return Leaf(lambda v: ok and v is None, missing=ok)
        return Leaf(lambda v: cmp.bracket(v) == b and test(cmp.compare(v, arg)))

    compile_ordering.__name__ = f"filter_{op[1:]}"
    return compile_ordering


FIELD_OPS.register("$gt")(_ordering("$gt", lambda c: c > 0, nan_ok=False))
FIELD_OPS.register("$gte")(_ordering("$gte", lambda c: c >= 0, nan_ok=True))
FIELD_OPS.register("$lt")(_ordering("$lt", lambda c: c < 0, nan_ok=False))
FIELD_OPS.register("$lte")(_ordering("$lte", lambda c: c <= 0, nan_ok=True))


def in_single(values: Any, op: str, collator: Collator | None = None) -> Leaf:
    """A leaf matching any of ``values`` ($in's list), non-regex values
    compared through ``collator`` when there is one."""
    if not isinstance(values, list):
        raise bad_value(f"{op} needs an array")
    keys: set[bytes] = set()
    regexes: list[Callable[[Any], bool]] = []
    missing = False
    for value in values:
        if is_operator_doc(value):
            raise bad_value(f"cannot nest $ under {op}")
        if is_regex(value):
            regexes.append(equals(value))
        else:
            keys.add(key_encoder(collator)(value))
            if value is None:
                missing = True
    encode = key_encoder(collator)
    if not regexes:
        return Leaf(lambda v: encode(v) in keys, missing=missing)

    def single(v: Any) -> bool:
        return encode(v) in keys or any(r(v) for r in regexes)

    return Leaf(single, missing=missing)


@FIELD_OPS.register("$in")
def filter_in(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    return in_single(arg, "$in", ctx.collator)


@FIELD_OPS.register("$nin")
def filter_nin(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    return Not(in_single(arg, "$nin", ctx.collator))


def _dbref_field(name: str) -> Callable[[Any, Context], Matcher]:
    """A top-level ``$ref``/``$id``/``$db`` is an equality on that field, as
    in ``{"refs": {"$elemMatch": {"$ref": "users", "$id": id}}}`` (DBRefs are
    documents with those fields)."""
    parts = (name,)

    def compile_dbref(arg: Any, ctx: Context) -> Matcher:
        return clause_matcher(parts, filter_eq(arg, {"$eq": arg}, ctx))

    compile_dbref.__name__ = f"filter_{name[1:]}"
    return compile_dbref


for _name in sorted(DBREF_FIELDS):
    TOP_OPS.register(_name)(_dbref_field(_name))
