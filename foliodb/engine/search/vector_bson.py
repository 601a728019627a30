"""A document's vector read straight from its BSON bytes: the fast path of a catch-up.

A vector index catching up reads every written document; decoding each whole
into Python objects, then its array of doubles number by number, cost about
40 us a 384-dimension document, most of the background thread's work while a
writer inserts (and the interpreter lock it held meanwhile was the writer's
wait). :func:`raw_doubles` finds the value at a dotted path through embedded
documents (as :func:`~foliodb.engine.search.vectors.at_path`; the last of
duplicated names, as decoding keeps) and, when it is an array of exactly
``dimensions`` doubles, returns them with one numpy gather from the bytes.

An array of ``n`` doubles has one byte layout (``int32`` length, then per
element the type byte 0x01, the decimal index as a C string, 8 bytes of
IEEE-754 little-endian double, then a NUL): :func:`_layout` computes it once per
``n`` and an array matches when its bytes outside the doubles equal it.

It answers :data:`GENERAL` for anything else (another element type or length,
an unknown BSON type), and the caller decodes the document and takes the
general path, which stays the definition of what is indexed; a property test
checks that both agree.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import bson

from foliodb.engine.search.numeric import np

GENERAL = object()  # raw_doubles cannot tell: decode the document
_INT32 = struct.Struct("<i")
# Value sizes of the BSON types of fixed size.
_FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16, 0xFF: 0, 0x7F: 0}
_STRINGS = (0x02, 0x0D, 0x0E)  # int32 length, then that many bytes
_NESTED = (0x03, 0x04, 0x0F)  # int32 length counting itself


def _value_end(data: bytes, kind: int, at: int) -> int:
    """Where the value of type ``kind`` starting at ``at`` ends (ValueError: an unknown type)."""
    size = _FIXED.get(kind)
    if size is not None:
        return at + size
    if kind in _STRINGS:
        return at + 4 + int(_INT32.unpack_from(data, at)[0])
    if kind in _NESTED:
        return at + int(_INT32.unpack_from(data, at)[0])
    if kind == 0x05:  # binary: length, subtype, bytes
        return at + 5 + int(_INT32.unpack_from(data, at)[0])
    if kind == 0x0B:  # regex: pattern and options, two C strings
        return data.index(b"\0", data.index(b"\0", at) + 1) + 1
    if kind == 0x0C:  # DBPointer: a string, then an ObjectId
        return at + 4 + int(_INT32.unpack_from(data, at)[0]) + 12
    raise ValueError(f"BSON type {kind}")


def _find(data: bytes, start: int, name: bytes) -> tuple[int, int] | None:
    """(type, value offset) of the last element called ``name`` of the document at ``start``."""
    end = start + int(_INT32.unpack_from(data, start)[0]) - 1  # its trailing NUL
    at, found = start + 4, None
    while at < end:
        kind = data[at]
        name_end = data.index(b"\0", at + 1)
        if name_end - at - 1 == len(name) and data.startswith(name, at + 1):
            found = (kind, name_end + 1)
        after = _value_end(data, kind, name_end + 1)
        if after <= at:
            raise ValueError("a negative length")
        at = after
    return found


@functools.lru_cache(maxsize=8)
def _layout(n: int) -> tuple[int, Any, Any, Any]:
    """An array of ``n`` doubles: its length in bytes, the offsets of its bytes outside the
    doubles and those bytes, and the offsets of each double's 8 bytes (an n x 8 array)."""
    encoded = bson.encode({"": [0.0] * n})
    array = np.frombuffer(encoded, dtype=np.uint8)[6:-1]  # past the document's length, type and ""
    starts, at = [], 4
    for i in range(n):
        at += 2 + len(str(i))  # type byte, index, NUL
        starts.append(at)
        at += 8
    doubles = np.asarray(starts, dtype=np.int64)[:, None] + np.arange(8)
    frame = np.ones(len(array), dtype=bool)
    frame[doubles.ravel()] = False
    offsets = np.flatnonzero(frame)
    return len(array), offsets, array[offsets].copy(), doubles


def raw_doubles(data: bytes, names: tuple[bytes, ...], dimensions: int) -> Any:
    """The float64 values of the array of ``dimensions`` doubles at the path ``names`` of the BSON
    document ``data``; None when the path reaches no value (a missing field, or a part that is
    not an embedded document); :data:`GENERAL` for any other value."""
    try:
        start, kind = 0, 0x03
        for depth, name in enumerate(names):
            found = _find(data, start, name)
            if found is None:
                return None
            kind, start = found
            if depth < len(names) - 1 and kind != 0x03:
                return None  # at_path goes through embedded documents only
        if kind != 0x04:
            return GENERAL
        size, offsets, frame, doubles = _layout(dimensions)
        if int(_INT32.unpack_from(data, start)[0]) != size:
            return GENERAL
        array = np.frombuffer(data, dtype=np.uint8, count=size, offset=start)
        if not np.array_equal(array[offsets], frame):
            return GENERAL
        return array[doubles].view("<f8").ravel()
    except (ValueError, IndexError, struct.error):
        return GENERAL
