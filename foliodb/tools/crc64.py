"""CRC-64/ECMA-182 as Go's ``hash/crc64`` computes it with the ``ECMA`` table:
reflected polynomial ``0xC96C5795D7870F42``, initial value and final XOR all
ones (the CRC-64 of the xz format; the check value of ``b"123456789"`` is
``0x995DC9BBDF1939FA``). mongodump's archive stores it per namespace, over the
namespace's documents, and mongorestore refuses an archive whose sums differ.

The sum is computed by liblzma's ``lzma_crc64`` (the same function), reached
through the ``_lzma`` extension module that Python's :mod:`lzma` is built on,
at memory speed; a table in Python, about a hundred times slower, stands in
where that library is not reachable.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

_POLY = 0xC96C5795D7870F42
_MASK = 0xFFFFFFFFFFFFFFFF


def _table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def _python_update(crc: int, data: bytes | memoryview) -> int:
    crc ^= _MASK
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _MASK


def _liblzma() -> Callable[[int, bytes | memoryview], int] | None:
    try:
        import _lzma

        function = ctypes.CDLL(_lzma.__file__).lzma_crc64
    except (ImportError, OSError, AttributeError):
        return None
    function.restype = ctypes.c_uint64
    function.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]

    def update(crc: int, data: bytes | memoryview) -> int:
        block = data if isinstance(data, bytes) else bytes(data)
        return int(function(block, len(block), crc))

    return update


update: Callable[[int, bytes | memoryview], int] = _liblzma() or _python_update
"""``update(crc, data)``: the CRC of the bytes summed so far (start from 0) followed by ``data``."""
