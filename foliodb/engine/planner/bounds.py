"""Index bounds: which key ranges of an index can hold a filter's matches.

A condition on one field becomes a sorted list of :class:`Interval` over
that field's keystring encodings. Bounds are always a *superset* of the
matching keys (``{"a": {"$regex": "b"}}`` scans every string): the fetched
documents are re-checked against the whole filter, so bounds decide speed,
never correctness.

Type bracketing limits ranges as the query operators do: ``{"$gt": 5}``
covers numbers above 5 and nothing of other types.

For a compound index the per-field interval lists combine into key ranges:
point intervals of leading fields multiply out into prefixes, the first
non-point field contributes its ranges, later fields are unbounded (the
prefix range covers them) and :func:`key_checker` tests them key by key,
before any document is read. A key range ``(lo, lo_inclusive, hi,
hi_inclusive)`` is read with *prefix* semantics: an inclusive end takes every
key that starts with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from bson import MaxKey, MinKey, Regex
from bson.datetime_ms import DatetimeMS

from foliodb.engine.index_keys import NULL_KEY, UNDEFINED_KEY
from foliodb.query import bsontypes, collation, keystring
from foliodb.query import compare as cmp
from foliodb.query.filter import is_operator_doc
from foliodb.query.keystring import decode_key
from foliodb.query.render import render

MAX_POINT_PREFIXES = 1000


class Interval(NamedTuple):
    """One field's key interval (a tuple: a plan builds several per query, and a frozen
    dataclass's construction cost several times a tuple's)."""

    lo: bytes
    lo_inclusive: bool
    hi: bytes
    hi_inclusive: bool
    # For explain's indexBounds strings.
    lo_shown: str
    hi_shown: str

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi and self.lo_inclusive and self.hi_inclusive

    def show(self) -> str:
        left = "[" if self.lo_inclusive else "("
        right = "]" if self.hi_inclusive else ")"
        return f"{left}{self.lo_shown}, {self.hi_shown}{right}"

    def reversed(self) -> Interval:
        """The interval in a descending field's (complemented) key space."""
        return Interval(
            keystring.complement(self.hi),
            self.hi_inclusive,
            keystring.complement(self.lo),
            self.lo_inclusive,
            self.hi_shown,
            self.lo_shown,
        )


def collation_keys_shown(iv: Interval) -> Interval:
    """``iv`` of a collated index as explain shows it. Its string bounds are
    sort keys; mongod's Interval::toString prints a string bound of an index
    with a non-simple collation as ``CollationKey(0x<hex>)`` (and only
    top-level strings: an object bound holding one prints as it is), so
    FolioDB does the same rather than show the key's raw bytes."""
    return iv._replace(lo_shown=_key_shown(iv.lo, iv.lo_shown), hi_shown=_key_shown(iv.hi, iv.hi_shown))


def _key_shown(key: bytes, shown: str) -> str:
    if not key.startswith(keystring.T_STRING):
        return shown
    (text,) = decode_key(key, [False])
    return collation.shown_key(text)


def point(value: Any, key: bytes | None = None) -> Interval:
    k = keystring.encode(value) if key is None else key
    shown = _show(value)
    return Interval(k, True, k, True, shown, shown)


def _show(value: Any) -> str:
    if isinstance(value, MinKey):
        return "MinKey"
    if isinstance(value, MaxKey):
        return "MaxKey"
    if isinstance(value, float):
        if value != value:
            return "nan.0"
        if value in (float("inf"), float("-inf")):
            return "inf.0" if value > 0 else "-inf.0"
    return render(value)


_POS_INF = keystring.encode(float("inf"))
_NEG_INF = keystring.encode(float("-inf"))
ALL = Interval(keystring.T_MINKEY, True, keystring.T_MAXKEY, True, "MinKey", "MaxKey")
NULL_POINT = Interval(NULL_KEY, True, NULL_KEY, True, "null", "null")
UNDEFINED_POINT = Interval(UNDEFINED_KEY, True, UNDEFINED_KEY, True, "undefined", "undefined")


def _bracket_start(bracket: int) -> bytes:
    return bytes([bracket + 16])


def _bracket_end(bracket: int) -> bytes:
    """Exclusive upper end of a type bracket's keys."""
    return bytes([bracket + 17])


# Brackets whose edges are values, as mongod shows them: the bracket's first
# value, and the next bracket's first value (exclusive) or the bracket's last
# (inclusive). Whole keys (unlike a lone type byte) decode back to the edges.
_EDGE_VALUES: dict[int, tuple[Any, Any, bool]] = {
    cmp.STRING: ("", {}, False),
    cmp.OBJECT: ({}, [], False),
    cmp.ARRAY: ([], b"", False),
    cmp.DATE: (DatetimeMS(-(2**63)), DatetimeMS(2**63 - 1), True),
}
_EDGES_SHOWN: dict[int, tuple[str, str]] = {
    cmp.NUMBER: ("-inf.0", "inf.0"),
    cmp.STRING: ('""', "{}"),
    cmp.OBJECT: ("{}", "[]"),
    cmp.ARRAY: ("[]", "BinData(0, )"),
    cmp.DATE: ("new Date(-9223372036854775808)", "new Date(9223372036854775807)"),
}


def whole_bracket(bracket: int) -> Interval:
    lo_shown, hi_shown = _EDGES_SHOWN.get(bracket, ("MinKey", "MaxKey"))
    edges = _EDGE_VALUES.get(bracket)
    if edges is None:
        return Interval(_bracket_start(bracket), True, _bracket_end(bracket), False, lo_shown, hi_shown)
    lo, hi, hi_inclusive = edges
    return Interval(keystring.encode(lo), True, keystring.encode(hi), hi_inclusive, lo_shown, hi_shown)


# -- conditions -> intervals ------------------------------------------------------


def condition_intervals(cond: Any, multikey: bool = False) -> list[Interval] | None:
    """Intervals of one field's condition (an operator document or a value),
    or None when the condition does not bound the field. On a multikey field
    only one operator bounds: ``{"$gt": 1, "$lt": 5}`` may hold for two
    different elements."""
    if not is_operator_doc(cond):
        return _equality(cond)
    result: list[Interval] | None = None
    for op, arg in cond.items():
        intervals = _operator(op, arg, cond)
        if intervals is None:
            continue
        if result is None:
            result = intervals
            if multikey:
                break
        else:
            result = intersect(result, intervals)
    return result


def _equality(value: Any) -> list[Interval]:
    b = cmp.bracket(value)
    if b == cmp.REGEX:
        return _regex(*cmp.regex_parts(value))
    if value is None:
        return [NULL_POINT]
    if b == cmp.ARRAY:
        # The whole array, or a document whose array holds it as an element;
        # an array field's index keys are its elements, so also the first one
        # (itself an array when nested: {a: [[]]} is indexed under the key []).
        first = [UNDEFINED_POINT] if not value else [point(value[0])]
        return union([point(value), *first])
    return [point(value)]


def _operator(op: str, arg: Any, cond: Mapping[str, Any]) -> list[Interval] | None:
    if op == "$eq":
        if cmp.bracket(arg) == cmp.REGEX:
            return [point(arg)]
        return _equality(arg)
    if op == "$in" and isinstance(arg, list):
        out: list[Interval] = []
        for value in arg:
            out.extend(_equality(value))
        return union(out)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return _range(op, arg)
    if op == "$exists":
        return None if arg else [NULL_POINT]
    if op == "$type":
        return _types(arg)
    if op == "$regex":
        options = cond.get("$options", "")
        if isinstance(arg, str):
            return _regex(arg, options if isinstance(options, str) else "")
        if cmp.bracket(arg) == cmp.REGEX:
            pattern, flags = cmp.regex_parts(arg)
            return _regex(pattern, flags or (options if isinstance(options, str) else ""))
        return None
    if op == "$elemMatch" and isinstance(arg, Mapping) and arg and all(k.startswith("$") for k in arg):
        # Value form: every condition holds for one element, so they intersect.
        return condition_intervals(arg)
    if op == "$all" and isinstance(arg, list) and arg and not isinstance(arg[0], Mapping):
        return _equality(arg[0])
    return None


def _range(op: str, value: Any) -> list[Interval]:
    b = cmp.bracket(value)
    if b in (cmp.MINKEY, cmp.MAXKEY):
        return [ALL]
    if b == cmp.NULL:
        return [NULL_POINT] if op in ("$gte", "$lte") else []
    if cmp.is_nan(value):
        return [point(value)] if op in ("$gte", "$lte") else []
    key = keystring.encode(value)
    shown = _show(value)
    if b == cmp.NUMBER:
        # Numbers run from -inf to inf; NaN sorts below -inf but satisfies
        # no range.
        if op in ("$gt", "$gte"):
            return [Interval(key, op == "$gte", _POS_INF, True, shown, "inf.0")]
        return [Interval(_NEG_INF, True, key, op == "$lte", "-inf.0", shown)]
    whole = whole_bracket(b)
    if op in ("$gt", "$gte"):
        return [Interval(key, op == "$gte", whole.hi, whole.hi_inclusive, shown, whole.hi_shown)]
    return [Interval(whole.lo, True, key, op == "$lte", whole.lo_shown, shown)]


def _types(arg: Any) -> list[Interval] | None:
    names = arg if isinstance(arg, list) else [arg]
    out: list[Interval] = []
    for name in names:
        if isinstance(name, str) and name == "number":
            out.append(whole_bracket(cmp.NUMBER))
            continue
        if cmp.is_number(name):
            name = bsontypes.TYPE_NAMES.get(int(cmp.number_value(name)))
        bracket = _TYPE_BRACKETS.get(name) if isinstance(name, str) else None
        if bracket is None:
            return None
        if bracket == cmp.NULL:
            out.append(NULL_POINT)
        elif bracket == cmp.ARRAY:
            return None  # array fields are indexed by their elements
        else:
            out.append(whole_bracket(bracket))
    return union(out)


_TYPE_BRACKETS = {
    "double": cmp.NUMBER,
    "int": cmp.NUMBER,
    "long": cmp.NUMBER,
    "decimal": cmp.NUMBER,
    "string": cmp.STRING,
    "symbol": cmp.STRING,
    "object": cmp.OBJECT,
    "array": cmp.ARRAY,
    "binData": cmp.BINDATA,
    "objectId": cmp.OBJECTID,
    "bool": cmp.BOOL,
    "date": cmp.DATE,
    "null": cmp.NULL,
    "regex": cmp.REGEX,
    "timestamp": cmp.TIMESTAMP,
    "javascript": cmp.CODE,
    "javascriptWithScope": cmp.CODE_W_SCOPE,
    "minKey": cmp.MINKEY,
    "maxKey": cmp.MAXKEY,
}

_SPECIAL = re.compile(r"[\\^$.|?*+()\[\]{}]")


def _regex(pattern: str, flags: str) -> list[Interval]:
    """A regex bounds strings by its literal prefix when anchored with ^ (and
    not case-insensitive or multi-line); a stored regex matches only when it
    is the same regex."""
    same = point(Regex(pattern, flags))
    if pattern.startswith("^") and "i" not in flags and "m" not in flags and "x" not in flags:
        literal = _SPECIAL.split(pattern[1:], maxsplit=1)[0]
        rest = pattern[1 + len(literal) :]
        if rest[:1] in ("?", "*", "{") and literal:
            literal = literal[:-1]  # the last character is optional
        if "|" not in pattern and literal:
            lo = keystring.T_STRING + keystring.encode(literal)[1:-2]
            hi = next_prefix(lo)
            if hi is not None:
                upper = literal[:-1] + chr(ord(literal[-1]) + 1)
                return union([Interval(lo, True, hi, False, render(literal), render(upper)), same])
    return union([whole_bracket(cmp.STRING), same])


# -- interval algebra ------------------------------------------------------------------


def _lo_key(iv: Interval) -> tuple[bytes, int]:
    return (iv.lo, 0 if iv.lo_inclusive else 1)


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, non-overlapping intervals covering the same keys."""
    items = sorted(intervals, key=_lo_key)
    out: list[Interval] = []
    for iv in items:
        if out and _overlaps_or_touches(out[-1], iv):
            last = out[-1]
            if (iv.hi, iv.hi_inclusive) > (last.hi, last.hi_inclusive):
                out[-1] = Interval(last.lo, last.lo_inclusive, iv.hi, iv.hi_inclusive, last.lo_shown, iv.hi_shown)
        else:
            out.append(iv)
    return out


def _overlaps_or_touches(a: Interval, b: Interval) -> bool:
    """Does ``b`` (which starts at or after ``a``) start inside ``a``?"""
    if b.lo < a.hi:
        return True
    if b.lo == a.hi:
        return a.hi_inclusive or b.lo_inclusive
    # With prefix semantics an inclusive end covers keys extending it.
    return a.hi_inclusive and b.lo.startswith(a.hi)


def intersect(xs: list[Interval], ys: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for x in xs:
        for y in ys:
            lo, lo_incl, lo_shown = (x.lo, x.lo_inclusive, x.lo_shown)
            if (y.lo, not y.lo_inclusive) > (lo, not lo_incl):
                lo, lo_incl, lo_shown = y.lo, y.lo_inclusive, y.lo_shown
            hi, hi_incl, hi_shown = (x.hi, x.hi_inclusive, x.hi_shown)
            if (y.hi, y.hi_inclusive) < (hi, hi_incl):
                hi, hi_incl, hi_shown = y.hi, y.hi_inclusive, y.hi_shown
            if lo < hi or (lo == hi and lo_incl and hi_incl) or (hi_incl and lo.startswith(hi) and lo != hi):
                out.append(Interval(lo, lo_incl, hi, hi_incl, lo_shown, hi_shown))
    return union(out)


def contains(outer: list[Interval], inner: list[Interval]) -> bool:
    """Is every key of ``inner`` inside ``outer``?"""
    return all(any(_interval_within(i, o) for o in outer) for i in inner)


def _interval_within(i: Interval, o: Interval) -> bool:
    lo_ok = (o.lo, not o.lo_inclusive) <= (i.lo, not i.lo_inclusive)
    if o.hi_inclusive:
        hi_ok = i.hi <= o.hi or i.hi.startswith(o.hi)
    else:
        hi_ok = i.hi < o.hi or (i.hi == o.hi and not i.hi_inclusive)
    return lo_ok and hi_ok


def whole_value(key: bytes, descending: bool) -> tuple[bool, Any]:
    """(True, value) when ``key`` is one value's whole key."""
    try:
        value = decode_key(key, [descending])[0]
    except (IndexError, KeyError, ValueError, TypeError):
        # A bracket edge (a lone type byte) or a prefix (an ObjectId's type byte with fewer than its 12 bytes).
        return False, None
    encoded = keystring.encode(value)
    return (keystring.complement(encoded) if descending else encoded) == key, value


def next_prefix(key: bytes) -> bytes | None:
    """The smallest byte string above every string that starts with ``key``."""
    stripped = key.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def sql_range(lo: bytes, lo_inclusive: bool, hi: bytes, hi_inclusive: bool) -> tuple[bytes, bytes | None]:
    """``[start, stop)`` byte bounds of a key range read with prefix semantics."""
    start = lo if lo_inclusive else (next_prefix(lo) or b"\xff" * 8)
    stop = next_prefix(hi) if hi_inclusive else hi
    return start, stop


# -- compound keys ------------------------------------------------------------------


class KeyRange(NamedTuple):
    start: bytes
    stop: bytes | None  # exclusive; None: to the end


def key_ranges(per_field: list[list[Interval]], descending: Sequence[bool]) -> list[KeyRange] | None:
    """Ascending key ranges of a compound index (None: too many to list)."""
    prefixes = [b""]
    for intervals, desc in zip(per_field, descending, strict=True):
        if desc:
            intervals = sorted((iv.reversed() for iv in intervals), key=_lo_key)
        if not intervals:
            return []
        if all(iv.is_point for iv in intervals):
            if len(prefixes) * len(intervals) > MAX_POINT_PREFIXES:
                return None
            prefixes = [p + iv.lo for p in prefixes for iv in intervals]
            continue
        ranges = []
        for p in prefixes:
            for iv in intervals:
                start, stop = sql_range(p + iv.lo, iv.lo_inclusive, p + iv.hi, iv.hi_inclusive)
                ranges.append(KeyRange(start, stop))
        return ranges
    return [KeyRange(p, next_prefix(p) if p else None) for p in prefixes]


def key_checker(per_field: list[list[Interval]], descending: Sequence[bool]) -> Callable[[bytes], bool] | None:
    """A test that a key's fields after the first ranged one lie in their
    intervals (the key ranges bound only the fields up to that one), or None
    when those fields are unbounded. For indexes without ``undefined`` keys
    (not multikey): the test decodes each key, and re-encodes the values,
    which yields the key's own bytes for each field."""
    first = next((i for i, intervals in enumerate(per_field) if not all(iv.is_point for iv in intervals)), None)
    if first is None:
        return None
    checks = []
    for j in range(first + 1, len(per_field)):
        if per_field[j] != [ALL]:
            spaced = [iv.reversed() for iv in per_field[j]] if descending[j] else per_field[j]
            checks.append((j, descending[j], spaced))
    if not checks:
        return None
    flags = list(descending[: checks[-1][0] + 1])

    def check(key: bytes) -> bool:
        values = decode_key(key, flags)
        for j, desc, intervals in checks:
            k = keystring.encode(values[j])
            if desc:
                k = keystring.complement(k)
            if not any(_holds(iv, k) for iv in intervals):
                return False
        return True

    return check


def _holds(iv: Interval, key: bytes) -> bool:
    """Is one field's whole key inside ``iv`` (prefix semantics at the top)?"""
    if key < iv.lo or (key == iv.lo and not iv.lo_inclusive):
        return False
    if iv.hi_inclusive:
        return key <= iv.hi or key.startswith(iv.hi)
    return key < iv.hi
