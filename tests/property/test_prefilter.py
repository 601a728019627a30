"""The raw-BSON prefilter never rejects a document the filter matches."""

from __future__ import annotations

import datetime
from typing import Any

import bson
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.query.filter import compile_filter
from foliodb.query.prefilter import MAX_ALTERNATIVES, compile_prefilter, needle_groups
from tests.bson_values import bson_values

NEEDLE_VALUES = st.one_of(
    st.sampled_from(["a", "b", "", "é", "a\x00b"]),
    st.builds(lambda n: ObjectId(f"{n:024x}"), st.integers(0, 3)),
    st.sampled_from([datetime.datetime(2020, 1, 1), datetime.datetime(1960, 5, 5, 0, 0, 0, 5000)]),
)
VALUES = st.one_of(NEEDLE_VALUES, bson_values(max_leaves=4))
DOCS = st.dictionaries(
    st.sampled_from(["a", "b"]),
    st.one_of(VALUES, st.lists(VALUES, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), VALUES)),
)
CONDITIONS = st.one_of(
    NEEDLE_VALUES,
    st.builds(lambda v: {"$eq": v}, NEEDLE_VALUES),
    st.builds(lambda vs: {"$in": vs}, st.lists(NEEDLE_VALUES, min_size=1, max_size=3)),
    st.builds(lambda vs: {"$all": vs}, st.lists(NEEDLE_VALUES, min_size=1, max_size=2)),
)
FILTERS = st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "a.b", "b.0"]), CONDITIONS, min_size=1, max_size=2),
    st.builds(
        lambda fs: {"$and": fs},
        st.lists(
            st.dictionaries(st.sampled_from(["a", "b"]), CONDITIONS, min_size=1, max_size=1), min_size=1, max_size=2
        ),
    ),
)


@settings(max_examples=600, deadline=None)
@given(DOCS, FILTERS)
def test_prefilter_never_rejects_a_match(doc: dict[str, Any], filter_spec: dict[str, Any]) -> None:
    prefilter = compile_prefilter(filter_spec)
    assert prefilter is not None
    if compile_filter(filter_spec)(doc):
        assert prefilter(bson.encode(doc))


def test_no_needle_for_numbers_and_null() -> None:
    # 1, 1.0 and Int64(1) are equal but their bytes differ.
    assert compile_prefilter({"a": 1}) is None
    assert compile_prefilter({"a": None}) is None
    assert compile_prefilter({"a": {"$gt": "x"}}) is None
    assert compile_prefilter({"$or": [{"a": "x"}]}) is None


def test_an_in_of_many_values_offers_no_needles() -> None:
    """Each needle is one more search of every document's bytes: past MAX_ALTERNATIVES values
    the filter alone decides (the prefilter's module docstring has the measurements)."""
    few = [ObjectId(f"{n:024x}") for n in range(MAX_ALTERNATIVES)]
    many = [ObjectId(f"{n:024x}") for n in range(MAX_ALTERNATIVES + 1)]
    assert needle_groups({"a": {"$in": few}}) == [[oid.binary for oid in few]]
    assert needle_groups({"a": {"$in": many}}) == []
    # Another field's needle is still offered beside it.
    assert needle_groups({"a": {"$in": many}, "b": "x"}) == [[b"\x02\x00\x00\x00x\x00"]]
