"""Order-preserving byte encoding of BSON values (FolioDB's KeyString).

``encode(a) < encode(b)`` (plain ``memcmp``/``bytes`` order) exactly when
:func:`foliodb.query.compare.compare` puts ``a`` before ``b``, and the two
encodings are equal exactly when the values compare equal (so ``1``, ``1.0``,
``Int64(1)`` and ``Decimal128("1.00")`` share one key). Indexes store these
bytes as SQLite BLOB keys; sorts use them as Python sort keys.

Every encoding is *prefix-free*: no value's bytes are a proper prefix of
another value's. That is what lets compound keys be plain concatenations and
descending fields be byte-wise complements (``255 - b``) of ascending ones.

Byte format of one value: a type byte (``bracket + 16``, so 0x10..0x8F; 0x00
is reserved as the end-of-container marker), then the body:

=============  ==============================================================
null, MinKey,  nothing
MaxKey,
undefined
number         0x01 for NaN (below every number). Otherwise 0x02, then the
               largest double ``d`` not above the value, as 8 order-preserving
               bytes (IEEE bits, sign bit flipped, all bits flipped when
               negative; -0.0 as 0.0), then 0x00 when the value is exactly
               ``d``, else 0x01 and the remainder ``value - d`` (> 0) as a
               positive decimal 0.d1d2...dn x 10**e: 2-byte big-endian
               ``e + 0x8000``, the digits two per byte (``10*d_i + d_{i+1} +
               1``, a lone last digit padded with 0), then 0x00. Doubles, and
               integers up to 2**53, never need the slow remainder; int64s
               beyond it and Decimal128s between doubles do. (A Decimal128
               below -DBL_MAX is ``d`` = -inf with the complemented decimal
               of its magnitude as the remainder part.)
string,        UTF-8 with 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x01
symbol, code
object         per element: value type byte, field name as a string, value
               body; then 0x00
array          per element: type byte and body; then 0x00
binData        4-byte big-endian length, subtype byte, bytes
ObjectId       its 12 bytes
bool           0x00 or 0x01
date           milliseconds + 2**63, 8 bytes big-endian
timestamp      time and increment, 4 bytes each, big-endian
regex          pattern and flags, each as a string
code w/ scope  code as a string, then the scope as an object body
=============  ==============================================================
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct
import sys
from decimal import Decimal
from typing import Any

from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS

from foliodb.query import compare as cmp

_TYPE = {b: bytes([b + 16]) for b in range(128)}
T_NULL = _TYPE[cmp.NULL]
T_NUMBER = _TYPE[cmp.NUMBER]
T_STRING = _TYPE[cmp.STRING]
T_MINKEY = _TYPE[cmp.MINKEY]
T_MAXKEY = _TYPE[cmp.MAXKEY]
T_ARRAY = _TYPE[cmp.ARRAY]
T_OBJECTID = _TYPE[cmp.OBJECTID]
END = b"\x00"

_NAN = b"\x01"
_FINITE = b"\x02"
_EXACT = b"\x00"
_INEXACT = b"\x01"
_DBL_MAX = sys.float_info.max
_PACK = struct.Struct(">d").pack
_UNPACK_BITS = struct.Struct(">Q").unpack
_PACK_BITS = struct.Struct(">Q").pack
_SIGN = 1 << 63
_ALL = (1 << 64) - 1
_WIDE = decimal.Context(prec=10_000, Emax=999_999, Emin=-999_999, traps=[])

_COMPLEMENT = bytes(255 - i for i in range(256))
_DIGIT_PAIRS = {f"{i:02d}": bytes([i + 1]) for i in range(100)}


def complement(key: bytes) -> bytes:
    """The descending form of an encoding."""
    return key.translate(_COMPLEMENT)


def encode(value: Any) -> bytes:
    """The key bytes of one value (type byte and body)."""
    cls = value.__class__
    # Fast paths for the commonest key types.
    if cls is str:
        return T_STRING + _string(value)
    if cls is int or cls is float or cls is Int64:
        return T_NUMBER + _number(value)
    if cls is ObjectId:
        return T_OBJECTID + value.binary
    out: list[bytes] = []
    _encode_into(value, out)
    return b"".join(out)


def _encode_into(value: Any, out: list[bytes]) -> None:
    b = cmp.bracket(value)
    out.append(_TYPE[b])
    _body_into(value, b, out)


def _body_into(value: Any, b: int, out: list[bytes]) -> None:
    if b == cmp.NUMBER:
        out.append(_number(value))
    elif b == cmp.STRING or b == cmp.CODE:
        out.append(_string(str(value)))
    elif b == cmp.OBJECT:
        for name, item in cmp.object_items(value):
            ib = cmp.bracket(item)
            out.append(_TYPE[ib])
            out.append(_string(name))
            _body_into(item, ib, out)
        out.append(END)
    elif b == cmp.ARRAY:
        for item in value:
            _encode_into(item, out)
        out.append(END)
    elif b == cmp.OBJECTID:
        out.append(value.binary)
    elif b == cmp.BOOL:
        out.append(b"\x01" if value else b"\x00")
    elif b == cmp.DATE:
        out.append((cmp.date_millis(value) + (1 << 63)).to_bytes(8, "big"))
    elif b == cmp.TIMESTAMP:
        out.append(value.time.to_bytes(4, "big") + value.inc.to_bytes(4, "big"))
    elif b == cmp.BINDATA:
        subtype, payload = cmp.binary_parts(value)
        out.append(len(payload).to_bytes(4, "big") + bytes([subtype]) + payload)
    elif b == cmp.REGEX:
        pattern, flags = cmp.regex_parts(value)
        out.append(_string(pattern) + _string(flags))
    elif b == cmp.CODE_W_SCOPE:
        out.append(_string(str(value)))
        _body_into(value.scope, cmp.OBJECT, out)
    # null, undefined, MinKey, MaxKey: the type byte says it all


def _string(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    if b"\x00" in data:
        data = data.replace(b"\x00", b"\x00\xff")
    return data + b"\x00\x01"


def _ordered(d: float) -> bytes:
    """8 bytes whose order is the doubles' order (-inf first, +inf last)."""
    (bits,) = _UNPACK_BITS(_PACK(d + 0.0))  # + 0.0 turns -0.0 into 0.0
    return _PACK_BITS(bits ^ _ALL if bits & _SIGN else bits | _SIGN)


def _number(value: Any) -> bytes:
    cls = value.__class__
    if cls is float:
        if value != value:
            return _NAN
        return _FINITE + _ordered(value) + _EXACT
    if cls is Decimal128:
        return _decimal_number(value.to_decimal())
    n = int(value)
    if -(2**53) <= n <= 2**53:
        return _FINITE + _ordered(float(n)) + _EXACT
    return _decimal_number(Decimal(n))


def _decimal_number(x: Decimal) -> bytes:
    """A number given exactly as a Decimal (int64s beyond 2**53, Decimal128s)."""
    if x.is_nan():
        return _NAN
    if x.is_infinite() or x.is_zero():
        return _FINITE + _ordered(float(x)) + _EXACT
    d = float(x)  # the nearest double, or an infinity beyond the doubles
    if d == float("-inf"):
        return _FINITE + _ordered(d) + _INEXACT + _positive_decimal(-x).translate(_COMPLEMENT)
    if d == float("inf"):
        d = _DBL_MAX
    elif Decimal(d) > x:
        d = math.nextafter(d, float("-inf"))
    rest = _WIDE.subtract(x, Decimal(d))
    if rest.is_zero():
        return _FINITE + _ordered(d) + _EXACT
    return _FINITE + _ordered(d) + _INEXACT + _positive_decimal(rest)


def _positive_decimal(x: Decimal) -> bytes:
    """A positive decimal as 0.d1d2...dn x 10**e: exponent, digit pairs, 0x00."""
    _, digit_tuple, exp = x.as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    exponent = len(digits) + exp
    digits = digits.rstrip("0")
    if len(digits) % 2:
        digits += "0"
    return (
        (exponent + 0x8000).to_bytes(2, "big")
        + b"".join(_DIGIT_PAIRS[digits[i : i + 2]] for i in range(0, len(digits), 2))
        + END
    )


# -- decoding ----------------------------------------------------------------------
#
# A key decodes back to values of the right type bracket. Numbers come back
# in a canonical type (int32-range integers as int, other integers as Int64,
# the rest as float), so a key is only a faithful copy of values whose types
# are canonical: :func:`is_canonical` tells, and covered queries rely on it.


class _Reader:
    __slots__ = ("data", "mask", "pos")

    def __init__(self, data: bytes, pos: int, descending: bool) -> None:
        self.data = data
        self.pos = pos
        self.mask = 0xFF if descending else 0

    def byte(self) -> int:
        b = self.data[self.pos] ^ self.mask
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk.translate(_COMPLEMENT) if self.mask else chunk

    def string(self) -> str:
        # The text ends at 0x00 0x01 (complemented: 0xFF 0xFE), which nothing before it can
        # spell: a NUL of the text is escaped as 0x00 0xFF, and UTF-8 has no 0xFE or 0xFF byte.
        data, pos = self.data, self.pos
        if self.mask:
            end = data.find(b"\xff\xfe", pos)
            chunk = data[pos:end].translate(_COMPLEMENT)
        else:
            end = data.find(b"\x00\x01", pos)
            chunk = data[pos:end]
        if end < 0:
            raise ValueError("a string key without its end")
        self.pos = end + 2
        return chunk.replace(b"\x00\xff", b"\x00").decode("utf-8", "surrogatepass")


_BY_TYPE_BYTE = {value[0]: bracket for bracket, value in _TYPE.items()}


def decode_key(key: bytes, descending: list[bool]) -> list[Any]:
    """The values of a compound key (one per field; ``descending`` flags
    say which fields are complemented)."""
    values = []
    pos = 0
    for desc in descending:
        reader = _Reader(key, pos, desc)
        values.append(_decode_value(reader))
        pos = reader.pos
    return values


def _decode_value(r: _Reader) -> Any:
    return _decode_body(r, _BY_TYPE_BYTE[r.byte()])


def _decode_body(r: _Reader, b: int) -> Any:
    if b == cmp.NUMBER:
        return _decode_number(r)
    if b == cmp.STRING:
        return r.string()
    if b == cmp.NULL:
        return None
    if b == cmp.OBJECTID:
        return ObjectId(r.take(12))
    if b == cmp.BOOL:
        return r.byte() == 1
    if b == cmp.DATE:
        millis = int.from_bytes(r.take(8), "big") - (1 << 63)
        return _date(millis)
    if b == cmp.OBJECT:
        doc: dict[str, Any] = {}
        while True:
            tb = r.byte()
            if tb == 0:
                return doc
            name = r.string()
            doc[name] = _decode_body(r, _BY_TYPE_BYTE[tb])
    if b == cmp.ARRAY:
        items: list[Any] = []
        while True:
            tb = r.byte()
            if tb == 0:
                return items
            items.append(_decode_body(r, _BY_TYPE_BYTE[tb]))
    if b == cmp.TIMESTAMP:
        raw = r.take(8)
        return Timestamp(int.from_bytes(raw[:4], "big"), int.from_bytes(raw[4:], "big"))
    if b == cmp.BINDATA:
        length = int.from_bytes(r.take(4), "big")
        subtype = r.byte()
        payload = r.take(length)
        return payload if subtype == 0 else Binary(payload, subtype)
    if b == cmp.REGEX:
        pattern = r.string()
        return Regex(pattern, r.string())
    if b == cmp.CODE:
        return Code(r.string())
    if b == cmp.CODE_W_SCOPE:
        code = r.string()
        return Code(code, _decode_body(r, cmp.OBJECT))
    if b == cmp.MINKEY:
        return MinKey()
    if b == cmp.MAXKEY:
        return MaxKey()
    raise ValueError(f"undecodable key type {b}")


def _decode_number(r: _Reader) -> Any:
    if r.byte() == _NAN[0]:
        return float("nan")
    (bits,) = _UNPACK_BITS(r.take(8))
    bits = bits ^ _SIGN if bits & _SIGN else bits ^ _ALL
    (d,) = struct.unpack(">d", _PACK_BITS(bits))
    if r.byte() == _EXACT[0]:
        if d.is_integer() and -(2**63) <= d < 2**63:  # Int64's range, its minimum included
            n = int(d)
            return n if -(2**31) <= n < 2**31 else Int64(n)
        return d
    if d == float("-inf"):
        inner = _Reader(r.data, r.pos, r.mask != 0xFF)
        value = -_decode_positive_decimal(inner)
        r.pos = inner.pos
    else:
        value = _WIDE.add(Decimal(d), _decode_positive_decimal(r))
    if value == value.to_integral_value() and -(2**63) <= value < 2**63:
        return Int64(int(value))
    return Decimal128(value)


def _decode_positive_decimal(r: _Reader) -> Decimal:
    exponent = int.from_bytes(r.take(2), "big") - 0x8000
    digits = []
    while True:
        pair = r.byte()
        if pair == 0:
            break
        digits.append(f"{pair - 1:02d}")
    text = "".join(digits).rstrip("0") or "0"
    return Decimal("0." + text).scaleb(exponent, _WIDE)


def _date(millis: int) -> Any:
    try:
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=millis)
    except OverflowError:
        return DatetimeMS(millis)


def is_canonical(value: Any) -> bool:
    """Does ``value`` decode back from its key as itself, type and all?"""
    cls = value.__class__
    if cls is str or cls is ObjectId or value is None or cls is bool:
        return True
    if cls is int:
        return -(2**31) <= value < 2**31
    if cls is Int64:
        return not -(2**31) <= value < 2**31
    if cls is float:
        if value != value or value in (float("inf"), float("-inf")):
            return True
        return not value.is_integer()
    if cls is datetime.datetime:
        return value.tzinfo is None and value.microsecond % 1000 == 0
    if cls is dict:
        return all(is_canonical(v) for v in value.values())
    if cls is list:
        return all(is_canonical(v) for v in value)
    return cls in (Timestamp, Regex, MinKey, MaxKey, bytes, Binary) or (cls is Code and value.scope is None)
