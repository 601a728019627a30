"""MongoDB's hash of a BSON value for hashed indexes (BSONElementHasher).

The hash is the first 8 bytes (little-endian, signed) of the MD5 of: the
seed (0, as a 4-byte int), then the value's canonical type (4-byte int) and
its bytes - numbers squashed to a 64-bit integer first (so 1, 1.0 and 1.9
hash alike, as MongoDB documents), strings and other scalars as their raw
BSON value bytes, and documents/arrays as the hashes' inputs of each element
with its field name, then a zero byte.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import bson
from bson import Int64
from bson.codec_options import CodecOptions, DatetimeConversion

from foliodb.query import compare as cmp

# BSONType canonicalType() values.
_CANONICAL = {
    cmp.MINKEY: -1,
    cmp.UNDEFINED: 0,
    cmp.NULL: 5,
    cmp.NUMBER: 10,
    cmp.STRING: 15,
    cmp.OBJECT: 20,
    cmp.ARRAY: 25,
    cmp.BINDATA: 30,
    cmp.OBJECTID: 35,
    cmp.BOOL: 40,
    cmp.DATE: 45,
    cmp.TIMESTAMP: 47,
    cmp.REGEX: 50,
    cmp.DBPOINTER: 55,
    cmp.CODE: 60,
    cmp.CODE_W_SCOPE: 65,
    cmp.MAXKEY: 100,
}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_CODEC: CodecOptions[dict[str, Any]] = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)


def hash64(value: Any, seed: int = 0) -> Int64:
    md5 = hashlib.md5(usedforsecurity=False)
    md5.update(struct.pack("<i", seed))
    _hash_into(md5, value, None)
    return Int64(struct.unpack("<q", md5.digest()[:8])[0])


def _hash_into(md5: Any, value: Any, name: str | None) -> None:
    b = cmp.bracket(value)
    md5.update(struct.pack("<i", _CANONICAL[b]))
    if name is not None:
        md5.update(name.encode("utf-8") + b"\x00")
    if b == cmp.OBJECT:
        for key, item in cmp.object_items(value):
            _hash_into(md5, item, key)
        md5.update(b"\x00")
    elif b == cmp.ARRAY:
        for i, item in enumerate(value):
            _hash_into(md5, item, str(i))
        md5.update(b"\x00")
    elif b == cmp.NUMBER:
        md5.update(struct.pack("<q", _safe_long(value)))
    else:
        md5.update(_value_bytes(value))


def _safe_long(value: Any) -> int:
    """BSONElement::safeNumberLong: truncate; NaN is 0; clamp to int64."""
    number = cmp.number_value(value)
    if number != number:
        return 0
    if number >= _INT64_MAX:
        return _INT64_MAX
    if number <= _INT64_MIN:
        return _INT64_MIN
    return int(number)


def _value_bytes(value: Any) -> bytes:
    """The raw bytes of a BSON element's value (after type and name)."""
    if value is None:
        return b""
    data = bson.encode({"": value}, codec_options=_CODEC)
    # document: int32 size, type byte, "" + NUL, value..., trailing NUL
    return data[4 + 1 + 1 : -1]
