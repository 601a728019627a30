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
number         class byte: 0x01 NaN, 0x02 -inf, 0x03 negative, 0x04 zero,
               0x05 positive, 0x06 +inf. Finite non-zero values are written
               as 0.d1d2...dn x 10**e (d1 != 0, no trailing zeros): a 2-byte
               big-endian ``e + 0x8000``, then the digits two per byte
               (``10*d_i + d_{i+1} + 1``, a lone last digit padded with 0),
               then 0x00. Negative numbers complement the exponent, digit and
               terminator bytes, so a larger magnitude sorts lower.
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
_NEG_INF = b"\x02"
_NEG = b"\x03"
_ZERO = b"\x04"
_POS = b"\x05"
_POS_INF = b"\x06"

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


def _number(value: Any) -> bytes:
    cls = value.__class__
    if cls is float:
        if value != value:
            return _NAN
        if value in (float("inf"), float("-inf")):
            return _POS_INF if value > 0 else _NEG_INF
        if value.is_integer():
            return _integer(int(value))
        return _decimal(Decimal(value))
    if cls is Decimal128:
        d = value.to_decimal()
        if d.is_nan():
            return _NAN
        if d.is_infinite():
            return _NEG_INF if d.is_signed() else _POS_INF
        return _decimal(d)
    return _integer(int(value))


def _integer(n: int) -> bytes:
    if n == 0:
        return _ZERO
    digits = str(-n if n < 0 else n)
    exponent = len(digits)
    return _finite(n < 0, exponent, digits.rstrip("0"))


def _decimal(d: Decimal) -> bytes:
    if d.is_zero():
        return _ZERO
    sign, digit_tuple, exp = d.as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    assert isinstance(exp, int)
    exponent = len(digits) + exp
    return _finite(bool(sign), exponent, digits.rstrip("0"))


def _finite(negative: bool, exponent: int, digits: str) -> bytes:
    if len(digits) % 2:
        digits += "0"
    body = (
        (exponent + 0x8000).to_bytes(2, "big")
        + b"".join(_DIGIT_PAIRS[digits[i : i + 2]] for i in range(0, len(digits), 2))
        + END
    )
    if negative:
        return _NEG + body.translate(_COMPLEMENT)
    return _POS + body


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
        out = bytearray()
        while True:
            b = self.byte()
            if b == 0:
                nxt = self.byte()
                if nxt == 1:
                    return out.decode("utf-8", "surrogatepass")
                out.append(0)  # an escaped NUL (0x00 0xFF)
            else:
                out.append(b)


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
    cls = r.byte()
    if cls == _NAN[0]:
        return float("nan")
    if cls == _NEG_INF[0]:
        return float("-inf")
    if cls == _POS_INF[0]:
        return float("inf")
    if cls == _ZERO[0]:
        return 0
    negative = cls == _NEG[0]
    # The body of a negative number is complemented once more.
    inner = _Reader(r.data, r.pos, (r.mask == 0xFF) ^ negative)
    exponent = int.from_bytes(inner.take(2), "big") - 0x8000
    digits = []
    while True:
        pair = inner.byte()
        if pair == 0:
            break
        digits.append(f"{pair - 1:02d}")
    r.pos = inner.pos
    text = "".join(digits).rstrip("0") or "0"
    value = Decimal(("-" if negative else "") + "0." + text) * (Decimal(10) ** exponent)
    if value == value.to_integral_value():
        n = int(value)
        if -(2**31) <= n < 2**31:
            return n
        if -(2**63) <= n < 2**63:
            return Int64(n)
    return float(value)


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
