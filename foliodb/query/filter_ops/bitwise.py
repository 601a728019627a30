"""Bitwise query operators: $bitsAllSet $bitsAllClear $bitsAnySet $bitsAnyClear.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-bitwise/

The operand is a non-negative 64-bit mask, an array of bit positions, or
binData (bytes little-endian, as the manual describes). A field matches when
it is a number representable as a 64-bit integer (two's complement for
negatives, bits beyond 63 taken as the sign) or binData.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import bad_value, failed_to_parse
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from foliodb.query.context import Context
from foliodb.query.filter import FIELD_OPS, Clause, Leaf
from foliodb.query.render import render


def _integer_mask(arg: Any, op: str) -> int:
    """parseIntegerElementToNonNegativeLong: a number holding a 64-bit
    integer that is not negative (FailedToParse otherwise)."""
    shown = f"{op}: {render(arg)}"  # the element, as BSONElement prints
    if cmp.is_nan(arg):
        raise failed_to_parse(f"Expected an integer, but found NaN in: {shown}")
    if not cmp.is_finite_number(arg):
        raise failed_to_parse(f"Cannot represent as a 64-bit integer: {shown}")
    n = cmp.number_value(arg)
    if n != int(n):
        raise failed_to_parse(f"Expected an integer: {shown}")
    if not INT64_MIN <= n <= INT64_MAX:
        raise failed_to_parse(f"Cannot represent as a 64-bit integer: {shown}")
    if n < 0:
        raise failed_to_parse(f"Expected a positive number in: {shown}")
    return int(n)


def _bit_position(index: int, position: Any) -> int:
    """parseBitPositionsArray: one position, an int32 that is not negative."""
    shown = f"{index}: {render(position)}"  # the array element, as BSONElement prints
    if not cmp.is_number(position):
        raise bad_value(f"bit positions must be an integer but got: {shown}")
    if cmp.is_nan(position):
        raise bad_value(f"bit positions cannot take a NaN: {shown}")
    n = cmp.number_value(position)
    if not cmp.is_finite_number(position) or not INT32_MIN <= n <= INT32_MAX:
        raise bad_value(f"bit positions cannot be represented as a 32-bit signed integer: {shown}")
    if n != int(n):
        raise bad_value(f"bit positions must be an integer but got: {shown}")
    if n < 0:
        raise bad_value(f"bit positions must be >= 0 but got: {shown}")
    return int(n)


class _Mask:
    """The bits an operand names, as numbers and binData fields see them.

    A number is a 64-bit two's complement value whose bits past 63 repeat the
    sign, so a position of 64 or more tests bit 63 (``number``). A binData
    field's bits past its length are clear; ``binary`` holds the positions
    below :data:`_BINARY_BITS` (no binData in a 16 MiB document goes further)
    and ``beyond`` says whether the operand named any position past that.
    """

    __slots__ = ("beyond", "binary", "number")

    def __init__(self, positions: int, beyond: bool) -> None:
        self.binary = positions
        self.beyond = beyond
        low = positions & _LOW_63
        self.number = low | _BIT_63 if positions > _LOW_63 or beyond else low


_BINARY_BITS = 8 * 16 * 1024 * 1024
_BIT_63 = 1 << 63
_LOW_63 = _BIT_63 - 1
_UINT64 = (1 << 64) - 1


def _mask(arg: Any, op: str) -> _Mask:
    if cmp.is_number(arg):
        return _Mask(_integer_mask(arg, op), False)
    if cmp.bracket(arg) == cmp.BINDATA:
        _, payload = cmp.binary_parts(arg)
        return _Mask(int.from_bytes(payload, "little"), False)
    if isinstance(arg, list):
        positions = 0
        beyond = False
        for index, position in enumerate(arg):
            p = _bit_position(index, position)
            if p < _BINARY_BITS:
                positions |= 1 << p
            else:
                beyond = True
        return _Mask(positions, beyond)
    raise bad_value(f"{op} takes an Array, a number, or a BinData but received: {op}: {render(arg)}")


# A test sees (the field's bits, the mask, whether the mask names bits the
# field cannot hold, which are therefore clear).
BitTest = Callable[[int, int, bool], bool]


def _bits_op(op: str, test: BitTest) -> None:
    def compile_bits(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
        mask = _mask(arg, op)
        number_mask = mask.number
        binary_mask = mask.binary
        beyond = mask.beyond

        def single(v: Any) -> bool:
            if cmp.bracket(v) == cmp.BINDATA:
                _, payload = cmp.binary_parts(v)
                return test(int.from_bytes(payload, "little"), binary_mask, beyond)
            if not cmp.is_number(v) or not cmp.is_finite_number(v):
                return False
            n = cmp.number_value(v)
            # Only values that are 64-bit integers qualify (no fractions).
            if n != int(n) or not INT64_MIN <= n <= INT64_MAX:
                return False
            return test(int(n) & _UINT64, number_mask, False)

        return Leaf(single)

    compile_bits.__name__ = f"filter_{op[1:]}"
    FIELD_OPS.register(op)(compile_bits)


_bits_op("$bitsAllSet", lambda n, m, clear: n & m == m and not clear)
_bits_op("$bitsAllClear", lambda n, m, clear: n & m == 0)
_bits_op("$bitsAnySet", lambda n, m, clear: n & m != 0)
_bits_op("$bitsAnyClear", lambda n, m, clear: n & m != m or clear)
