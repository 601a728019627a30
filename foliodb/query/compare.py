"""MongoDB's total order over BSON values: the one home of comparison.

Values of different types compare by *type bracket* (canonical type), in this
order (the manual's "Comparison/Sort Order"):

    MinKey < undefined < null < numbers < strings/symbols < objects < arrays
    < binData < ObjectId < bool < date < timestamp < regex < DBPointer
    < code < code-with-scope < MaxKey

Within a bracket:

* numbers (int32, int64, double, Decimal128) compare by exact value, whatever
  their type; NaN equals NaN and is below every other number; -0.0 == 0;
* strings compare by their UTF-8 bytes (which is code-point order);
* objects compare element by element: type bracket, then field name, then
  value; a proper prefix is smaller;
* arrays compare element by element; a proper prefix is smaller;
* binData compares by length, then subtype, then bytes;
* dates by milliseconds since the epoch; timestamps by (time, increment);
* regexes by pattern, then flags.

:mod:`foliodb.query.keystring` encodes the same order as bytes; a property test
holds the two in agreement.
"""

from __future__ import annotations

import datetime
import math
import re
import uuid
from decimal import Decimal
from typing import Any

from bson import Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS

# Canonical type brackets, spaced like MongoDB's canonicalizeBSONType.
MINKEY = 0
UNDEFINED = 5
NULL = 10
NUMBER = 20
STRING = 30
OBJECT = 40
ARRAY = 50
BINDATA = 60
OBJECTID = 70
BOOL = 80
DATE = 90
TIMESTAMP = 100
REGEX = 110
DBPOINTER = 115
CODE = 120
CODE_W_SCOPE = 125
MAXKEY = 127

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

_BRACKETS: dict[type, int] = {
    type(None): NULL,
    bool: BOOL,
    int: NUMBER,
    Int64: NUMBER,
    float: NUMBER,
    Decimal128: NUMBER,
    str: STRING,
    dict: OBJECT,
    list: ARRAY,
    tuple: ARRAY,
    bytes: BINDATA,
    Binary: BINDATA,
    uuid.UUID: BINDATA,
    ObjectId: OBJECTID,
    datetime.datetime: DATE,
    DatetimeMS: DATE,
    Timestamp: TIMESTAMP,
    Regex: REGEX,
    re.Pattern: REGEX,
    Code: CODE,
    DBRef: OBJECT,
    MinKey: MINKEY,
    MaxKey: MAXKEY,
}


def bracket(value: Any) -> int:
    """The canonical type bracket of a BSON value."""
    try:
        b = _BRACKETS[value.__class__]
    except KeyError:
        return _bracket_slow(value)
    if b == CODE and value.scope is not None:
        return CODE_W_SCOPE
    return b


def _bracket_slow(value: Any) -> int:
    # Subclasses (SON, OrderedDict, RawBSONDocument, user str subclasses...).
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, Code):
        return CODE_W_SCOPE if value.scope is not None else CODE
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, (list, tuple)):
        return ARRAY
    if isinstance(value, datetime.datetime):
        return DATE
    if isinstance(value, (bytes, Binary)):
        return BINDATA
    if hasattr(value, "keys"):
        return OBJECT
    for base in type(value).__mro__[1:]:  # a subclass of another BSON class (an ODM's ObjectId)
        found = _BRACKETS.get(base)
        if found is not None:
            return found
    raise TypeError(f"not a BSON value: {type(value).__name__}")


def is_number(value: Any) -> bool:
    cls = value.__class__
    return cls is int or cls is float or cls is Int64 or cls is Decimal128


def number_value(value: Any) -> int | float | Decimal:
    """A Python number that compares exactly with other numbers."""
    if value.__class__ is Decimal128:
        d = value.to_decimal()
        # A signaling NaN raises on every Python comparison; BSON has one NaN.
        return _QUIET_NAN if d.is_snan() else d
    return value


_QUIET_NAN = Decimal("NaN")


def is_nan(value: Any) -> bool:
    cls = value.__class__
    if cls is float:
        return value != value
    if cls is Decimal128:
        return value.to_decimal().is_nan()
    return False


def compare_numbers(a: Any, b: Any) -> int:
    a = number_value(a)
    b = number_value(b)
    a_nan = a != a if not isinstance(a, Decimal) else a.is_nan()
    b_nan = b != b if not isinstance(b, Decimal) else b.is_nan()
    if a_nan or b_nan:
        return (not a_nan) - (not b_nan)
    return (a > b) - (a < b)


def date_millis(value: Any) -> int:
    """Milliseconds since the epoch of a BSON date (naive datetimes are UTC)."""
    if value.__class__ is DatetimeMS:
        return int(value)
    if value.tzinfo is None:
        delta = value - _EPOCH
    else:
        delta = value - _EPOCH_AWARE
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def binary_parts(value: Any) -> tuple[int, bytes]:
    """(subtype, payload) of a binData value."""
    if isinstance(value, Binary):
        return value.subtype, bytes(value)
    if isinstance(value, uuid.UUID):
        return 4, value.bytes
    return 0, bytes(value)


def regex_parts(value: Any) -> tuple[str, str]:
    """(pattern, flags) of a regex value, flags in BSON's sorted letters."""
    if isinstance(value, Regex):
        flags = value.flags
        if isinstance(flags, int):
            return value.pattern, _re_flags_to_letters(flags)
        return value.pattern, "".join(sorted(flags))
    return value.pattern, _re_flags_to_letters(value.flags)


def _re_flags_to_letters(flags: int) -> str:
    letters = []
    if flags & re.IGNORECASE:
        letters.append("i")
    if flags & re.LOCALE:
        letters.append("l")
    if flags & re.MULTILINE:
        letters.append("m")
    if flags & re.DOTALL:
        letters.append("s")
    if flags & re.UNICODE:
        letters.append("u")
    if flags & re.VERBOSE:
        letters.append("x")
    return "".join(letters)


def object_items(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, DBRef):
        return list(value.as_doc().items())
    return list(value.items())


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as ``a`` sorts before, with or after ``b`` in MongoDB's order."""
    ba = bracket(a)
    bb = bracket(b)
    if ba != bb:
        return -1 if ba < bb else 1
    if ba == NUMBER:
        return compare_numbers(a, b)
    if ba == STRING:
        return _cmp(str(a), str(b))
    if ba == OBJECT:
        return _compare_items(object_items(a), object_items(b))
    if ba == ARRAY:
        for x, y in zip(a, b, strict=False):
            c = compare(x, y)
            if c:
                return c
        return _cmp(len(a), len(b))
    if ba == OBJECTID:
        return _cmp(a.binary, b.binary)
    if ba == BOOL:
        return _cmp(a, b)
    if ba == DATE:
        return _cmp(date_millis(a), date_millis(b))
    if ba == TIMESTAMP:
        return _cmp((a.time, a.inc), (b.time, b.inc))
    if ba == BINDATA:
        sa, pa = binary_parts(a)
        sb, pb = binary_parts(b)
        return _cmp((len(pa), sa, pa), (len(pb), sb, pb))
    if ba == REGEX:
        return _cmp(regex_parts(a), regex_parts(b))
    if ba == CODE:
        return _cmp(str(a), str(b))
    if ba == CODE_W_SCOPE:
        c = _cmp(str(a), str(b))
        return c or _compare_items(object_items(a.scope), object_items(b.scope))
    return 0  # null, undefined, MinKey, MaxKey: one value each


def _compare_items(xs: list[tuple[str, Any]], ys: list[tuple[str, Any]]) -> int:
    for (kx, vx), (ky, vy) in zip(xs, ys, strict=False):
        c = _cmp(bracket(vx), bracket(vy))
        if c:
            return c
        c = _cmp(kx, ky)
        if c:
            return c
        c = compare(vx, vy)
        if c:
            return c
    return _cmp(len(xs), len(ys))


def values_equal(a: Any, b: Any) -> bool:
    """MongoDB equality: same bracket and compare() == 0."""
    return compare(a, b) == 0


def is_finite_number(value: Any) -> bool:
    v = number_value(value)
    if isinstance(v, Decimal):
        return v.is_finite()
    return math.isfinite(v)
