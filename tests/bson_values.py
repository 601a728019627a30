"""BSON values for tests: a frozen set of edge values and hypothesis
strategies for random nested documents covering every BSON type."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from hypothesis import strategies as st

EDGE_VALUES: list[Any] = [
    MinKey(),
    None,
    float("nan"),
    float("-inf"),
    -(2**63),
    Int64(-(2**63)),
    -(2**31) - 1,
    -(2**31),
    -1.5,
    Decimal128("-0.1"),
    -0.0,
    0,
    0.0,
    Decimal128("0"),
    Decimal128("-0"),
    1e-300,
    0.1,
    Decimal128("0.1"),
    1,
    1.0,
    Int64(1),
    Decimal128("1.00"),
    2**31 - 1,
    2**31,
    2**53,
    2**53 + 1,
    Int64(2**63 - 1),
    float(2**63),
    Decimal128("1E+6000"),
    float("inf"),
    Decimal128("NaN"),
    "",
    "a",
    "a\x00",
    "a\x00b",
    "ab",
    "b",
    "é",
    "\U0001f600",
    {},
    {"a": 1},
    {"a": 1, "b": 2},
    {"b": 2, "a": 1},
    {"a": "x"},
    {"a": None},
    {"a": {"b": [1, 2]}},
    [],
    [None],
    [1],
    [1, 2],
    [2, 1],
    [[1]],
    [{"a": 1}],
    [1, "a", None],
    b"",
    b"a",
    Binary(b"a", 5),
    Binary(b"\x00" * 16, 4),
    ObjectId("000000000000000000000000"),
    ObjectId("ffffffffffffffffffffffff"),
    False,
    True,
    datetime.datetime(1960, 1, 1),
    datetime.datetime(1970, 1, 1),
    datetime.datetime(2026, 11, 29, 12, 0, 0, 123000),
    Timestamp(0, 0),
    Timestamp(1, 2),
    Timestamp(2**32 - 1, 1),
    Regex("a", "i"),
    Regex("a", ""),
    Regex("b", ""),
    Code("x"),
    Code("x", {"a": 1}),
    MaxKey(),
]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6).map(
        lambda d: Decimal128(str(d))
    ),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.builds(lambda b: Binary(b, 5), st.binary(max_size=4)),
    st.builds(lambda n: ObjectId(f"{n:024x}"), st.integers(min_value=0, max_value=2**96 - 1)),
    st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    ),
    st.builds(Timestamp, st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=0, max_value=2**32 - 1)),
    st.builds(Regex, st.sampled_from(["a", "^b", "c.*"]), st.sampled_from(["", "i", "ms"])),
    st.sampled_from([MinKey(), MaxKey(), Code("f"), Code("g", {"x": 1}), uuid.UUID(int=1)]).filter(
        lambda v: not isinstance(v, uuid.UUID)
    ),
)

FIELD_NAMES = st.sampled_from(["a", "b", "c", "x"])


def bson_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """Any BSON value, nested documents and arrays included."""
    return st.recursive(
        _scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(FIELD_NAMES, children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


def documents(max_leaves: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    """Documents over a small set of field names, so filters hit them."""
    return st.dictionaries(FIELD_NAMES, bson_values(max_leaves), max_size=4)
