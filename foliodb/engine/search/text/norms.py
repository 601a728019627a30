"""Lucene's one-byte field-length norms (``SmallFloat.intToByte4`` and back).

BM25 reads a document's field length from a byte: lengths below 24 exactly, longer ones
with 4 significant bits (``intToByte4`` keeps the length minus 24 as a tiny float: 3 bits
of mantissa, the rest exponent). :func:`decoded_length` is what that byte gives back.
"""

from __future__ import annotations

from typing import Any

from foliodb.engine.search.numeric import np


def _int4_to_long(i: Any) -> Any:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return np.where(shift == -1, bits, (bits | 0x08) << np.maximum(shift, 0))


_MAX_INT4 = 231  # SmallFloat.longToInt4(Integer.MAX_VALUE)
_FREE = 255 - _MAX_INT4  # lengths below this are kept exactly


def _long_to_int4(i: Any) -> Any:
    bits = np.floor(np.log2(np.maximum(i, 1))).astype(np.int64) + 1  # 64 - numberOfLeadingZeros
    shift = np.maximum(bits - 4, 0)
    encoded = ((i >> shift) & 0x07) | ((shift + 1) << 3)
    return np.where(bits < 4, i, encoded)


def decoded_length(lengths: Any) -> Any:
    """What Lucene's norm byte gives back for each field length."""
    lengths = np.asarray(lengths, dtype=np.int64)
    small = lengths < _FREE
    encoded = _FREE + _long_to_int4(np.maximum(lengths - _FREE, 0))
    return np.where(small, lengths, _FREE + _int4_to_long(encoded - _FREE))
