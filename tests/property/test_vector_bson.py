"""A vector read from a document's BSON bytes (the catch-up's fast path) equals the general
path's: the document decoded by pymongo, the value at the path through embedded documents,
its numbers as float32 (foliodb.engine.search.vectors), for any document, duplicated names
included (decoding keeps the last)."""

from __future__ import annotations

import datetime
import struct
from typing import Any

import bson
import numpy as np
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import BinaryVectorDtype
from hypothesis import given
from hypothesis import strategies as st

from foliodb.engine.search.vector_bson import GENERAL, raw_doubles
from foliodb.engine.search.vectors import as_vector, at_path, prepared

DIMS = 4
DOUBLES = st.lists(st.floats(), min_size=DIMS, max_size=DIMS)
SCALARS = st.one_of(
    st.floats(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=5),
    st.sampled_from(
        [
            None,
            True,
            Int64(3),
            Decimal128("1.5"),
            ObjectId(b"123456789012"),
            Binary(b"\x01\x02", 0),
            Binary.from_vector([1.0, 2.0, 3.0, 4.0], BinaryVectorDtype.FLOAT32),
            Regex("a.c", "i"),
            Code("x"),
            Code("x", {"y": 1}),
            Timestamp(1, 2),
            datetime.datetime(2020, 1, 1),
            MinKey(),
            MaxKey(),
        ]
    ),
)
NAMES = st.sampled_from(["v", "a", "w", "vv", ""])
VALUES = st.recursive(
    st.one_of(SCALARS, DOUBLES, st.lists(st.floats(), max_size=DIMS + 1)),
    lambda inner: st.one_of(st.lists(inner, max_size=DIMS), st.dictionaries(NAMES, inner, max_size=3)),
    max_leaves=12,
)
DOCS = st.dictionaries(NAMES, st.one_of(DOUBLES, VALUES, st.fixed_dictionaries({"v": DOUBLES})), max_size=4)
PATHS = st.sampled_from([("v",), ("a", "v"), ("v", "v")])


def _with_duplicate(data: bytes, name: str, value: Any) -> bytes:
    """The document with one more element called ``name`` at its end (a duplicated name)."""
    element = bson.encode({name: value})[4:-1]
    body = data[4:-1] + element
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def _general(data: bytes, parts: tuple[str, ...]) -> Any:
    return prepared(as_vector(at_path(bson.decode(data), parts)), DIMS, "euclidean")


@given(DOCS, PATHS, st.none() | st.tuples(NAMES, st.one_of(DOUBLES, VALUES)))
def test_raw_doubles_agree_with_decoding(doc: dict[str, Any], parts: tuple[str, ...], duplicate: Any) -> None:
    data = bson.encode(doc)
    if duplicate is not None:
        data = _with_duplicate(data, *duplicate)
    raw = raw_doubles(data, tuple(part.encode() for part in parts), DIMS)
    if raw is GENERAL:
        return  # the caller decodes: the general path by definition
    if raw is None:
        assert at_path(bson.decode(data), parts) is None
        return
    fast, general = prepared(raw, DIMS, "euclidean"), _general(data, parts)
    if general is None:
        assert fast is None  # NaN or an infinity: left out either way
    else:
        assert fast is not None
        assert fast.dtype == general.dtype == np.float32
        assert fast.tobytes() == general.tobytes()


@given(DOUBLES)
def test_an_array_of_doubles_takes_the_fast_path(values: list[float]) -> None:
    """The usual embedding document is read from its bytes (not left to decoding)."""
    data = bson.encode({"_id": 1, "v": values})
    raw = raw_doubles(data, (b"v",), DIMS)
    assert raw is not GENERAL
    assert [repr(x) for x in raw.tolist()] == [repr(float(x)) for x in values]
