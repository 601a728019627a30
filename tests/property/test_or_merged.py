"""An $or whose equalities on one path are matched as one $in (foliodb/query/filter_ops/logical.py)
matches exactly the documents the OR of its branches, each compiled alone, matches: random
documents and branches (equalities, $eq, regexes, operators, nulls, arrays, subdocuments, mixed
numeric types), with and without a case-insensitive collation."""

from __future__ import annotations

import re
from typing import Any

from bson import Decimal128, Int64, Regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from foliodb.query import collation
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter
from foliodb.query.filter_ops.logical import MIN_MERGED, merge_equalities

SCALARS = st.one_of(
    st.integers(min_value=0, max_value=3),
    st.sampled_from(["a", "A", "b", None, 1.0, Int64(2), Decimal128("3"), True]),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.fixed_dictionaries({}, optional={"b": SCALARS}),
    st.lists(st.fixed_dictionaries({}, optional={"b": SCALARS}), max_size=2),
)
PATHS = st.sampled_from(["a", "a.b", "c"])
REGEXES = st.sampled_from([re.compile("^a"), Regex("b", "i")])
BRANCHES = st.one_of(
    st.builds(lambda p, v: {p: v}, PATHS, VALUES),
    st.builds(lambda p, v: {p: {"$eq": v}}, PATHS, VALUES),
    st.builds(lambda p, r: {p: r}, PATHS, REGEXES),  # a pattern to match, as $in matches it
    st.builds(lambda p, r: {p: {"$eq": r}}, PATHS, REGEXES),  # a value: never merged into an $in
    st.builds(lambda p, v: {p: {"$gt": v}}, PATHS, SCALARS),
    st.builds(lambda p, v: {p: v, "c": 1}, PATHS, SCALARS),
)
DOCS = st.fixed_dictionaries({}, optional={"a": VALUES, "c": VALUES})
COLLATED = {"locale": "en", "strength": 2}


def _context(spec: dict[str, Any] | None) -> Context:
    return Context(collator=None if spec is None else collation.parse(spec))


@settings(max_examples=400, deadline=None)
@example(branches=[{"a": "a"}, {"a": "B"}, {"a": {"$eq": "x"}}], docs=[{"a": "A"}, {"a": "b"}], spec=COLLATED)
@example(branches=[{"a": None}, {"a": 1}, {"a": [1, 2]}], docs=[{}, {"a": [1, 2]}, {"a": [[1, 2]]}], spec=None)
@given(
    branches=st.lists(BRANCHES, min_size=1, max_size=8),
    docs=st.lists(DOCS, max_size=6),
    spec=st.sampled_from([None, COLLATED]),
)
def test_a_merged_or_matches_as_its_branches_do(
    branches: list[dict[str, Any]], docs: list[dict[str, Any]], spec: dict[str, Any] | None
) -> None:
    ctx = _context(spec)
    merged = compile_filter({"$or": branches}, ctx)
    alone = [compile_filter(branch, ctx) for branch in branches]
    for doc in docs:
        assert merged(doc) == any(branch(doc) for branch in alone), (branches, doc)


def test_merging_starts_at_min_merged_equalities_on_a_path() -> None:
    """Not a speed test: the merged form is what runs (one branch, an $in) from MIN_MERGED on."""
    few = [{"a": i} for i in range(MIN_MERGED - 1)]
    many = [{"a": i} for i in range(MIN_MERGED)] + [{"b": 1}, {"a": {"$gt": 5}}]
    assert merge_equalities(few) == few
    assert merge_equalities(many) == [{"a": {"$in": list(range(MIN_MERGED))}}, {"b": 1}, {"a": {"$gt": 5}}]
