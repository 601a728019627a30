"""The nesting limit's check (``records._too_deep``, run on documents whose BSON might pass
MAX_NESTING_DEPTH) against a plain recursive depth count, on random trees of documents and
arrays and on chains at the limit and one past it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.engine.records import MAX_NESTING_DEPTH, _too_deep

LEAVES = st.one_of(st.integers(), st.text(max_size=2), st.none())
TREES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=2), inner, max_size=4)),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    """Documents and arrays count one level each; a scalar none."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _chain(levels: int, tail: Any) -> dict[str, Any]:
    """A document ``levels`` deep, alternating documents and arrays, ``tail`` innermost."""
    value: Any = tail
    for n in range(levels - 1):
        value = [value] if n % 2 else {"d": value}
    return {"top": value}


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=2), TREES, max_size=4), st.integers(min_value=0, max_value=3))
def test_too_deep_agrees_with_a_recursive_count(doc: dict[str, Any], extra: int) -> None:
    # Push the tree towards the limit: wrap it so that its depth lands near MAX_NESTING_DEPTH.
    wrapped: Any = doc
    for _ in range(max(0, MAX_NESTING_DEPTH - _depth(doc) - 2 + extra)):
        wrapped = {"w": wrapped}
    assert _too_deep(wrapped) == (_depth(wrapped) > MAX_NESTING_DEPTH)


def test_the_limit_itself_passes_and_one_more_level_does_not() -> None:
    assert not _too_deep(_chain(MAX_NESTING_DEPTH, 1))
    assert _too_deep(_chain(MAX_NESTING_DEPTH + 1, 1))
    assert not _too_deep(_chain(MAX_NESTING_DEPTH - 1, {}))  # an empty document is a level too
    assert _too_deep(_chain(MAX_NESTING_DEPTH, []))
