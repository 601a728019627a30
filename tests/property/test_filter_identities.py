"""Identities of the query language, on random nested documents.

Documents come from tests/bson_values.py (arrays, null, missing, mixed
numeric types, every BSON type) over the field names a, b, c, x, so dotted
paths such as ``a.b`` and ``a.0`` reach into them. Conditions are random
operator documents; a condition MongoDB rejects (``{"$gt": /re/}``) is
skipped. Each identity is one the manual states:

* $nor is the complement of $or; $and and $or are the intersection and union
  of their clauses (https://www.mongodb.com/docs/manual/reference/operator/query-logical/);
* $in is an $or of equalities, a regex in it matching as a pattern
  (https://www.mongodb.com/docs/manual/reference/operator/query/in/); $nin is
  $not of $in (https://www.mongodb.com/docs/manual/reference/operator/query/nin/);
* {f: {$not: c}} is the complement of {f: c} over the whole field
  (https://www.mongodb.com/docs/manual/reference/operator/query/not/);
* a sort orders values as $lt/$gt compare them within a type bracket, and
  orders everything (brackets, arrays, missing) as one total preorder
  (https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/).
"""

from __future__ import annotations

import datetime
import functools
import itertools
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query import compare as cmp
from foliodb.query.filter import compile_filter
from foliodb.query.sort import compile_sort
from tests.bson_values import bson_values, documents

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])

FIELDS = st.sampled_from(["a", "b", "x", "a.b", "a.0", "a.b.c", "b.1", "c.x.a"])
VALUES = bson_values(max_leaves=4)
VALUE_LISTS = st.lists(VALUES, max_size=4)
TYPE_NAMES = [
    "double",
    "string",
    "object",
    "array",
    "binData",
    "objectId",
    "bool",
    "date",
    "null",
    "regex",
    "javascript",
    "javascriptWithScope",
    "int",
    "timestamp",
    "long",
    "decimal",
    "minKey",
    "maxKey",
    "number",
]


def _simple_conditions() -> st.SearchStrategy[dict[str, Any]]:
    """One operator document (one or two operators) of any kind."""
    return st.one_of(
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), VALUES),
        st.builds(lambda op, vs: {op: vs}, st.sampled_from(["$in", "$nin", "$all"]), VALUE_LISTS),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
        st.builds(lambda t: {"$type": t}, st.one_of(st.sampled_from(TYPE_NAMES), st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3))),
        st.builds(lambda n: {"$size": n}, st.integers(min_value=0, max_value=3)),
        st.builds(lambda d, r: {"$mod": [d, r]}, st.integers(min_value=1, max_value=4), st.integers(min_value=-3, max_value=3)),
        st.builds(lambda p, o: {"$regex": p, "$options": o}, st.sampled_from(["^a", "b", "", "A$", "^$"]), st.sampled_from(["", "i", "m", "s"])),
        st.builds(lambda op, p: {op: p}, st.sampled_from(["$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear"]), st.one_of(st.lists(st.integers(min_value=0, max_value=70), max_size=3), st.integers(min_value=0, max_value=255))),
        st.builds(lambda f, v: {"$elemMatch": {f: v}}, st.sampled_from(["a", "b"]), VALUES),
    )  # fmt: skip


def _conditions() -> st.SearchStrategy[dict[str, Any]]:
    """Operator documents, including $elemMatch values, $not and pairs."""
    simple = _simple_conditions()
    return st.one_of(
        simple,
        st.builds(lambda c: {"$elemMatch": c}, simple),
        st.builds(lambda c: {"$not": c}, simple),
        st.builds(lambda c, d: {**c, **d}, simple, simple),
    )


CONDITIONS = _conditions()


def _field_filters() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda f, c: {f: c}, FIELDS, CONDITIONS),
        st.builds(lambda f, v: {f: v}, FIELDS, VALUES),  # implicit equality
    )


FILTERS = _field_filters()


def matcher(spec: dict[str, Any]) -> Callable[..., bool]:
    """The compiled filter; skips the example when MongoDB rejects the filter."""
    try:
        return compile_filter(spec)
    except CommandError:
        assume(False)
        raise AssertionError("unreachable") from None


@SETTINGS
@given(documents(), FILTERS, FILTERS)
def test_nor_is_the_complement_of_or(doc: dict[str, Any], first: dict[str, Any], second: dict[str, Any]) -> None:
    assert matcher({"$nor": [first, second]})(doc) == (not matcher({"$or": [first, second]})(doc))


@SETTINGS
@given(documents(), FILTERS, FILTERS)
def test_and_or_are_intersection_and_union(doc: dict[str, Any], first: dict[str, Any], second: dict[str, Any]) -> None:
    a = matcher(first)(doc)
    b = matcher(second)(doc)
    assert matcher({"$and": [first, second]})(doc) == (a and b)
    assert matcher({"$or": [first, second]})(doc) == (a or b)
    if not first.keys() & second.keys():
        assert matcher({**first, **second})(doc) == (a and b)  # the implicit $and


@SETTINGS
@given(documents(), FIELDS, CONDITIONS, CONDITIONS)
def test_conditions_on_one_field_are_an_and(doc: dict[str, Any], field: str, first: Any, second: Any) -> None:
    # {f: {op1: v1, op2: v2}} is {$and: [{f: {op1: v1}}, {f: {op2: v2}}]}, each over the whole field.
    assume(not first.keys() & second.keys())
    both = matcher({field: {**first, **second}})(doc)
    assert both == (matcher({field: first})(doc) and matcher({field: second})(doc))


def _equality(field: str, value: Any) -> dict[str, Any]:
    # $in's regexes match as patterns, which is the implicit form's meaning.
    return {field: value} if isinstance(value, Regex) else {field: {"$eq": value}}


@SETTINGS
@given(documents(), FIELDS, VALUE_LISTS)
def test_in_is_an_or_of_equalities(doc: dict[str, Any], field: str, values: list[Any]) -> None:
    in_match = matcher({field: {"$in": values}})(doc)
    assert in_match == any(matcher(_equality(field, v))(doc) for v in values)
    if values:
        assert in_match == matcher({"$or": [_equality(field, v) for v in values]})(doc)


@SETTINGS
@given(documents(), FIELDS, VALUE_LISTS)
def test_nin_is_not_in(doc: dict[str, Any], field: str, values: list[Any]) -> None:
    nin = matcher({field: {"$nin": values}})(doc)
    assert nin == matcher({field: {"$not": {"$in": values}}})(doc)
    assert nin == (not matcher({field: {"$in": values}})(doc))


@SETTINGS
@given(documents(), FIELDS, CONDITIONS)
def test_not_is_the_complement_per_field(doc: dict[str, Any], field: str, condition: dict[str, Any]) -> None:
    assert matcher({field: {"$not": condition}})(doc) == (not matcher({field: condition})(doc))
    assert matcher({"$nor": [{field: condition}]})(doc) == (not matcher({field: condition})(doc))


@SETTINGS
@given(documents(), FIELDS, VALUES)
def test_ne_and_exists_false_are_complements(doc: dict[str, Any], field: str, value: Any) -> None:
    assume(not isinstance(value, Regex))  # {$ne: /re/} is an error
    assert matcher({field: {"$ne": value}})(doc) == (not matcher({field: {"$eq": value}})(doc))
    assert matcher({field: {"$exists": False}})(doc) == (not matcher({field: {"$exists": True}})(doc))


@SETTINGS
@given(documents(), FIELDS, st.sampled_from(["^a", "b", "", "A$"]), st.sampled_from(["", "i", "ms"]))
def test_regex_forms_agree(doc: dict[str, Any], field: str, pattern: str, options: str) -> None:
    # The $regex page's three syntaxes mean the same; $not takes the regex value.
    value = matcher({field: Regex(pattern, options)})(doc)
    assert matcher({field: {"$regex": pattern, "$options": options}})(doc) == value
    assert matcher({field: {"$regex": Regex(pattern, options)}})(doc) == value
    assert matcher({field: {"$in": [Regex(pattern, options)]}})(doc) == value
    assert matcher({field: {"$not": Regex(pattern, options)}})(doc) == (not value)


# Sort agrees with $lt/$gt: pairs of values from one type bracket.


def _numbers() -> st.SearchStrategy[Any]:
    """Numbers of every type, often equal in value across types."""
    exact = st.one_of(st.integers(min_value=-(2**60), max_value=2**60), st.integers(min_value=-5, max_value=5))
    return st.one_of(
        exact,
        exact.map(Int64),
        exact.map(float),
        exact.map(lambda n: Decimal128(Decimal(n))),
        st.floats(allow_nan=False),
        st.decimals(allow_nan=False, places=2, min_value=-100, max_value=100).map(lambda d: Decimal128(str(d))),
        st.sampled_from([-0.0, 0.5, Decimal128("0.5"), Decimal128("-0"), float("inf"), Decimal128("-Infinity")]),
    )


def _pairs(values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, Any]]:
    return st.tuples(values, values)


_DATES = st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
)
_SCALAR_DOCS = st.dictionaries(
    st.sampled_from(["a", "b"]), st.one_of(st.integers(-2, 2), st.text(max_size=2)), max_size=2
)
SAME_BRACKET = st.one_of(
    _pairs(_numbers()),
    _pairs(st.text(max_size=4)),
    _pairs(_DATES),
    _pairs(st.builds(lambda n: ObjectId(f"{n:024x}"), st.integers(min_value=0, max_value=2**96 - 1))),
    _pairs(st.booleans()),
    _pairs(st.builds(Timestamp, st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=3))),
    _pairs(st.one_of(st.binary(max_size=3), st.builds(lambda b: Binary(b, 5), st.binary(max_size=3)))),
    _pairs(_SCALAR_DOCS),
    _pairs(st.builds(Code, st.sampled_from(["f", "g"]))),
    _pairs(st.sampled_from([None, MinKey(), MaxKey()])).filter(lambda p: cmp.bracket(p[0]) == cmp.bracket(p[1])),
)

ASCENDING = compile_sort({"v": 1})
DESCENDING = compile_sort({"v": -1})


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


@SETTINGS
@given(SAME_BRACKET)
def test_sort_agrees_with_lt_gt_within_a_bracket(pair: tuple[Any, Any]) -> None:
    x, y = pair
    doc = {"v": x}
    order = _sign((ASCENDING.key(doc) > ASCENDING.key({"v": y})) - (ASCENDING.key(doc) < ASCENDING.key({"v": y})))
    assert matcher({"v": {"$lt": y}})(doc) == (order < 0)
    assert matcher({"v": {"$lte": y}})(doc) == (order <= 0)
    assert matcher({"v": {"$gt": y}})(doc) == (order > 0)
    assert matcher({"v": {"$gte": y}})(doc) == (order >= 0)
    assert matcher({"v": {"$eq": y}})(doc) == (order == 0)


# Sort is one total preorder over everything: each document sorts by its
# sort value (computed here independently of foliodb's sort), and values
# compare as the BSON order says.

_EMPTY = object()  # an empty array's sort value: below null, above MinKey


def _sort_value(doc: dict[str, Any], descending: bool) -> Any:
    value = doc.get("v")
    if not isinstance(value, list):
        return value
    if not value:
        return _EMPTY
    pick = max if descending else min
    return pick(value, key=functools.cmp_to_key(_compare))


def _compare(a: Any, b: Any) -> int:
    if a is _EMPTY or b is _EMPTY:
        if a is b:
            return 0
        other = b if a is _EMPTY else a
        empty_first = -1 if cmp.bracket(other) > cmp.MINKEY else 1
        return empty_first if a is _EMPTY else -empty_first
    return cmp.compare(a, b)


@SETTINGS
@given(st.lists(st.dictionaries(st.just("v"), bson_values(max_leaves=5)), min_size=2, max_size=8))
def test_sort_is_a_total_preorder_over_mixed_types(docs: list[dict[str, Any]]) -> None:
    for sort, descending in ((ASCENDING, False), (DESCENDING, True)):
        ordered = sorted(docs, key=sort.key)
        values = [_sort_value(d, descending) for d in ordered]
        for before, after in itertools.pairwise(values):
            c = _compare(before, after)
            assert (c <= 0) if not descending else (c >= 0), (before, after)
        for d1 in docs:
            for d2 in docs:
                key_order = _sign((sort.key(d1) > sort.key(d2)) - (sort.key(d1) < sort.key(d2)))
                value_order = _sign(_compare(_sort_value(d1, descending), _sort_value(d2, descending)))
                assert key_order == (value_order if not descending else -value_order), (d1, d2)
