"""distinct reads the document cache's own documents (FindSpec.reads_only) instead of decoding
them afresh: its values equal those with the cache off, for random documents (arrays, nested
documents, mixed types, missing fields) and filters; and a caller changing the documents and
arrays distinct returned changes nothing stored or cached."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.cache_pair import load_both

SCALARS = st.one_of(st.integers(0, 3), st.sampled_from([1.0, "a", "b", None, True]))
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.fixed_dictionaries({}, optional={"x": SCALARS, "y": st.lists(SCALARS, max_size=2)}),
    st.lists(st.fixed_dictionaries({}, optional={"x": SCALARS}), max_size=2),
)
DOCS = st.lists(st.fixed_dictionaries({"n": st.integers(0, 3)}, optional={"v": VALUES}), min_size=1, max_size=12)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, key=st.sampled_from(["v", "v.x", "v.y", "n"]), query=st.sampled_from([{}, {"n": {"$gte": 1}}]))
def test_distinct_from_the_cache_equals_distinct_without_it(
    cached_and_uncached: Any, docs: list[dict[str, Any]], key: str, query: dict[str, Any]
) -> None:
    load_both(cached_and_uncached, docs)
    cached, uncached = cached_and_uncached
    values = cached.db.c.distinct(key, query)
    assert values == uncached.db.c.distinct(key, query)
    for value in values:  # the caller's to change
        if isinstance(value, dict):
            value["changed"] = True
        elif isinstance(value, list):
            value.append("changed")
    # What the cache holds is what filters, sorts and distinct read: none of it changed.
    assert cached.db.c.distinct(key, query) == uncached.db.c.distinct(key, query)
    assert cached.db.c.count_documents({"$or": [{"v.changed": True}, {"v": "changed"}]}) == 0
    assert list(cached.db.c.find({}, sort=[("_id", 1)])) == list(uncached.db.c.find({}, sort=[("_id", 1)]))
