"""The top-k sort's numeric shortcut drops exactly what the keys would drop.

With a limit, the sorter keeps the best ``skip + limit`` documents; when the
sort is one top-level field (``Sort.plain_field``), a document whose value and
the held worst's are both plain numbers strictly beyond it is dropped without
building its key (foliodb/engine/sorter.py). Here random documents - the field
holding ints, Int64s (past 2**53 too, where a float cannot tell neighbours
apart), floats (NaN, infinities, -0.0), bools, Decimal128s, strings, null,
arrays, documents, or missing: MongoDB orders them by type bracket and then by
value, https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/
- sorted with a limit, ascending and descending, in memory and spilling, must
come back exactly as the same sort without the shortcut returns them, and in
the order Python's stable ``sorted`` gives over the keys.
"""

from __future__ import annotations

from typing import Any

from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.engine.sorter import sort_documents
from foliodb.query.sort import compile_sort

_BIG = 2**53
_VALUES = st.one_of(
    st.integers(-5, 5),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(_BIG - 2, _BIG + 2).map(Int64),
    st.sampled_from([float(_BIG), float(_BIG + 2), -0.0, 0.0, float("inf"), float("-inf"), float("nan")]),
    st.floats(-10, 10),
    st.booleans(),
    st.sampled_from([Decimal128("1.5"), Decimal128("NaN"), "a", "", None]),
    st.lists(st.integers(-3, 3), max_size=2),
    st.fixed_dictionaries({"x": st.integers(0, 2)}),
)
_DOCS = st.lists(st.one_of(st.just({}), st.builds(lambda v: {"a": v}, _VALUES)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    docs=_DOCS,
    descending=st.booleans(),
    limit=st.integers(1, 8),
    skip=st.integers(0, 3),
    spill=st.booleans(),
)
def test_the_numeric_shortcut_keeps_what_the_keys_keep(
    docs: list[dict[str, Any]], descending: bool, limit: int, skip: int, spill: bool
) -> None:
    docs = [{"_id": i, **doc} for i, doc in enumerate(docs)]
    sort = compile_sort({"a": -1 if descending else 1})
    assert sort.plain_field() == ("a", descending)
    memory = 600 if spill else 100 * 1024 * 1024  # a few entries: spills every few documents

    def sorted_ids(numeric: tuple[str, bool] | None) -> list[Any]:
        out = sort_documents(docs, sort.key, limit=limit, skip=skip, max_memory_bytes=memory, numeric=numeric)
        return [doc["_id"] for doc in out]

    expected = [doc["_id"] for doc in sorted(docs, key=sort.key)][skip : skip + limit]
    assert sorted_ids(("a", descending)) == sorted_ids(None) == expected


def test_only_a_single_top_level_field_without_collation_takes_the_shortcut() -> None:
    from foliodb.query import collation

    assert compile_sort({"a.b": 1}).plain_field() is None
    assert compile_sort({"a": 1, "b": 1}).plain_field() is None
    assert compile_sort({"score": {"$meta": "textScore"}}).plain_field() is None
    assert compile_sort({"a": 1}, collator=collation.parse({"locale": "en"})).plain_field() is None
