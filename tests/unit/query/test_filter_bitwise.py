"""Bitwise query operators: $bitsAllSet $bitsAllClear $bitsAnySet $bitsAnyClear.

Each case is (manual page, filter, documents, the _ids that match); the bits
are worked out by hand (54 = 0b110110, 20 = 0b10100, BinData "Zg==" = 0x66 =
0b01100110, "MC==" = 0x30, "IA==" = 0x20). Numbers are 64-bit two's
complement, sign-extended past bit 63; binData is little-endian with no bits
past its length; other values never match.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from bson import Decimal128, Int64
from bson.binary import Binary

from foliodb.errors import CommandError
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
ALL_SET = OPS + "bitsAllSet/"
ALL_CLEAR = OPS + "bitsAllClear/"
ANY_SET = OPS + "bitsAnySet/"
ANY_CLEAR = OPS + "bitsAnyClear/"
BITWISE = "https://www.mongodb.com/docs/manual/reference/operator/query-bitwise/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]]) -> list[Any]:
    match = compile_filter(spec)
    return [d["_id"] for d in docs if match(d)]


def bindata(b64: str) -> Binary:
    return Binary(base64.b64decode(b64), 0)


# The collection every bitwise page uses.
COLLECTION = [
    {"_id": 1, "a": 54, "binaryValueofA": "00110110"},
    {"_id": 2, "a": 20, "binaryValueofA": "00010100"},
    {"_id": 3, "a": 20.0, "binaryValueofA": "00010100"},
    {"_id": 4, "a": bindata("Zg=="), "binaryValueofA": "01100110"},
]

# Values at the edges: negatives, 64-bit bounds, non-integers, non-numbers.
EDGES = [
    {"_id": 1, "a": -1},  # every bit set, past 63 too
    {"_id": 2, "a": -2},  # bit 0 clear, the rest set
    {"_id": 3, "a": Int64(2**63 - 1)},  # bits 0..62
    {"_id": 4, "a": float(-(2**63))},  # only bit 63 (and beyond)
    {"_id": 5, "a": 1.5},  # not an integer
    {"_id": 6, "a": float(2**63)},  # not a 64-bit integer
    {"_id": 7, "a": float("nan")},
    {"_id": 8, "a": "54"},
    {"_id": 9, "a": Decimal128("54")},
    {"_id": 10, "a": Binary(b"\x01", 0)},  # binData: bit 0 only, nothing past bit 7
    {"_id": 11, "a": True},
    {"_id": 12, "a": [3, 54]},  # array elements are tested one by one
    {"_id": 13},
]

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    (ALL_SET, {"a": {"$bitsAllSet": [1, 5]}}, COLLECTION, [1, 4]),
    (ALL_SET, {"a": {"$bitsAllSet": 50}}, COLLECTION, [1]),
    (ALL_SET, {"a": {"$bitsAllSet": bindata("MC==")}}, COLLECTION, [1]),
    (ALL_SET, {"a": {"$bitsAllSet": []}}, COLLECTION, [1, 2, 3, 4]),  # no bits: vacuously all set
    (ALL_CLEAR, {"a": {"$bitsAllClear": [1, 5]}}, COLLECTION, [2, 3]),
    (ALL_CLEAR, {"a": {"$bitsAllClear": 35}}, COLLECTION, [2, 3]),
    (ALL_CLEAR, {"a": {"$bitsAllClear": bindata("IA==")}}, COLLECTION, [2, 3]),
    (ANY_SET, {"a": {"$bitsAnySet": [1, 5]}}, COLLECTION, [1, 4]),
    (ANY_SET, {"a": {"$bitsAnySet": 35}}, COLLECTION, [1, 4]),
    (ANY_SET, {"a": {"$bitsAnySet": bindata("MC==")}}, COLLECTION, [1, 2, 3, 4]),
    (ANY_SET, {"a": {"$bitsAnySet": []}}, COLLECTION, []),
    (ANY_CLEAR, {"a": {"$bitsAnyClear": [1, 5]}}, COLLECTION, [2, 3]),
    (ANY_CLEAR, {"a": {"$bitsAnyClear": 35}}, COLLECTION, [1, 2, 3, 4]),
    (ANY_CLEAR, {"a": {"$bitsAnyClear": bindata("MC==")}}, COLLECTION, [2, 3, 4]),
    (ALL_SET, {"a": {"$bitsAllSet": 54.0}}, COLLECTION, [1]),  # a whole double is a mask
    (ALL_SET, {"a": {"$bitsAllSet": [Int64(2), 4.0]}}, COLLECTION, [1, 2, 3]),
    # Edges: sign extension, the 64-bit range, binData's length.
    (BITWISE, {"a": {"$bitsAllSet": [0, 63, 200]}}, EDGES, [1]),
    (BITWISE, {"a": {"$bitsAllSet": [63]}}, EDGES, [1, 2, 4]),
    (BITWISE, {"a": {"$bitsAllSet": [2**31 - 1]}}, EDGES, [1, 2, 4]),  # past 63 means bit 63
    (BITWISE, {"a": {"$bitsAnySet": [0]}}, EDGES, [1, 3, 10, 12]),
    (BITWISE, {"a": {"$bitsAllClear": [0]}}, EDGES, [2, 4, 9, 12]),
    (BITWISE, {"a": {"$bitsAllClear": [100]}}, EDGES, [3, 9, 10, 12]),
    (BITWISE, {"a": {"$bitsAnyClear": [100]}}, EDGES, [3, 9, 10, 12]),
    (BITWISE, {"a": {"$bitsAnySet": [100]}}, EDGES, [1, 2, 4]),
    (BITWISE, {"a": {"$bitsAllSet": 2**62}}, EDGES, [1, 2, 3]),
    (BITWISE, {"a": {"$bitsAllSet": [1, 2, 4, 5]}}, EDGES, [1, 2, 3, 9, 12]),
    (BITWISE, {"a": {"$bitsAllClear": [2**31 - 1]}}, EDGES, [3, 9, 10, 12]),  # binData has no such bit
]


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1])[:90] for c in CASES])
def test_bitwise(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


ERRORS: list[tuple[str, dict[str, Any], int, str, str | None]] = [
    # (manual page, filter, code, codeName, errmsg or None where it prints a float)
    (ALL_SET, {"a": {"$bitsAllSet": -1}}, 9, "FailedToParse", "Expected a positive number in: $bitsAllSet: -1"),
    (ALL_CLEAR, {"a": {"$bitsAllClear": 1.5}}, 9, "FailedToParse", "Expected an integer: $bitsAllClear: 1.5"),
    (ANY_SET, {"a": {"$bitsAnySet": float("nan")}}, 9, "FailedToParse", None),
    (ANY_CLEAR, {"a": {"$bitsAnyClear": float(2**63)}}, 9, "FailedToParse", None),
    (ALL_SET, {"a": {"$bitsAllSet": float("inf")}}, 9, "FailedToParse", None),
    (ALL_SET, {"a": {"$bitsAllSet": Decimal128("1.5")}}, 9, "FailedToParse", None),
    (ALL_SET, {"a": {"$bitsAllSet": "x"}}, 2, "BadValue", '$bitsAllSet takes an Array, a number, or a BinData but received: $bitsAllSet: "x"'),
    (ALL_SET, {"a": {"$bitsAllSet": None}}, 2, "BadValue", "$bitsAllSet takes an Array, a number, or a BinData but received: $bitsAllSet: null"),
    (ALL_SET, {"a": {"$bitsAllSet": [-1]}}, 2, "BadValue", "bit positions must be >= 0 but got: 0: -1"),
    (ALL_SET, {"a": {"$bitsAllSet": [0, 1.5]}}, 2, "BadValue", "bit positions must be an integer but got: 1: 1.5"),
    (ALL_SET, {"a": {"$bitsAllSet": ["a"]}}, 2, "BadValue", 'bit positions must be an integer but got: 0: "a"'),
    (ALL_SET, {"a": {"$bitsAllSet": [Int64(2**31)]}}, 2, "BadValue", "bit positions cannot be represented as a 32-bit signed integer: 0: 2147483648"),
    (ALL_SET, {"a": {"$bitsAllSet": [float("nan")]}}, 2, "BadValue", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("page", "spec", "code", "code_name", "message"), ERRORS, ids=[repr(e[1])[:80] for e in ERRORS]
)
def test_bitwise_errors(page: str, spec: dict[str, Any], code: int, code_name: str, message: str | None) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert (info.value.code, info.value.code_name) == (code, code_name), page
    if message is not None:
        assert info.value.errmsg == message, page
