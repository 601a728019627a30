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

from foliodb.errors import bad_value
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import INT64_MAX, INT64_MIN
from foliodb.query.context import Context
from foliodb.query.filter import FIELD_OPS, Clause, Leaf


def _mask(arg: Any, op: str) -> int:
    if cmp.is_number(arg):
        n = cmp.number_value(arg)
        if not cmp.is_finite_number(arg) or n != int(n):
            raise bad_value(f"{op} takes an Array, a number, or a BinData but received: {op}: {arg}")
        if n < 0:
            raise bad_value(f"{op} takes a non-negative integer mask, got: {arg}")
        if n > INT64_MAX:
            raise bad_value(f"{op} takes a 64-bit integer mask, got: {arg}")
        return int(n)
    if cmp.bracket(arg) == cmp.BINDATA:
        _, payload = cmp.binary_parts(arg)
        return int.from_bytes(payload, "little")
    if isinstance(arg, list):
        mask = 0
        for position in arg:
            if not cmp.is_number(position) or cmp.number_value(position) != int(cmp.number_value(position)):
                raise bad_value(f"bit positions must be an integer but got: {position}")
            p = int(cmp.number_value(position))
            if p < 0:
                raise bad_value(f"bit positions must be >= 0 but got: {position}")
            mask |= 1 << p
        return mask
    raise bad_value(f"{op} takes an Array, a number, or a BinData but received: {op}: {arg}")


def _field_bits(v: Any) -> tuple[int, bool] | None:
    """(bits, negative) of a value the operators apply to, else None."""
    if cmp.bracket(v) == cmp.BINDATA:
        _, payload = cmp.binary_parts(v)
        return int.from_bytes(payload, "little"), False
    if not cmp.is_number(v) or v.__class__ is bool:
        return None
    if not cmp.is_finite_number(v):
        return None
    n = cmp.number_value(v)
    if n != int(n) or not INT64_MIN <= n <= INT64_MAX:
        return None
    n = int(n)
    return n, n < 0


def _bits_op(op: str, test: Callable[[int, int], bool]) -> None:
    def compile_bits(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
        mask = _mask(arg, op)

        def single(v: Any) -> bool:
            bits = _field_bits(v)
            if bits is None:
                return False
            n, negative = bits
            if negative:
                # Two's complement: bits past the 64th repeat the sign.
                n &= (1 << max(64, mask.bit_length())) - 1
            return test(n, mask)

        return Leaf(single)

    compile_bits.__name__ = f"filter_{op[1:]}"
    FIELD_OPS.register(op)(compile_bits)


_bits_op("$bitsAllSet", lambda n, m: n & m == m)
_bits_op("$bitsAllClear", lambda n, m: n & m == 0)
_bits_op("$bitsAnySet", lambda n, m: n & m != 0)
_bits_op("$bitsAnyClear", lambda n, m: n & m != m)
