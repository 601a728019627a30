"""A find projecting top-level fields takes them from the document cache's own documents
instead of decoding each whole (FindExecution.kept_fields): random documents (scalars of every
kind, nested documents, arrays, missing fields), random plain inclusion projections, with and
without a filter: the results equal those with the cache off, in order; and a caller changing
what the find returned changes nothing the cache holds."""

from __future__ import annotations

from typing import Any

from bson import Decimal128, Int64, ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.cache_pair import load_both

SCALARS = st.one_of(
    st.integers(-3, 3), st.sampled_from([1.5, "a", "", None, True, Int64(9), Decimal128("1.1"), ObjectId("0" * 24)])
)
VALUES = st.one_of(
    SCALARS, st.lists(SCALARS, max_size=3), st.fixed_dictionaries({}, optional={"x": SCALARS, "y": st.lists(SCALARS)})
)
DOCS = st.lists(
    st.fixed_dictionaries({"n": st.integers(0, 3)}, optional={"a": VALUES, "b": VALUES, "c": SCALARS}),
    min_size=1,
    max_size=10,
)
PROJECTIONS = st.sampled_from(
    [
        {"a": 1},
        {"n": 1, "c": 1},
        {"_id": 0, "c": 1},
        {"_id": 0, "n": True, "b": 1},
        {"_id": 1},
        {"a": 1, "b": 1, "c": 1},
    ]
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, projection=PROJECTIONS, query=st.sampled_from([{}, {"n": {"$gte": 1}}]))
def test_projecting_from_the_cache_equals_projecting_without_it(
    cached_and_uncached: Any, docs: list[dict[str, Any]], projection: dict[str, Any], query: dict[str, Any]
) -> None:
    load_both(cached_and_uncached, docs)
    cached, uncached = cached_and_uncached
    found = list(cached.db.c.find(query, projection))
    assert [list(doc.items()) for doc in found] == [list(doc.items()) for doc in uncached.db.c.find(query, projection)]
    for doc in found:  # the caller's to change
        doc["changed"] = True
        for value in doc.values():
            if isinstance(value, list):
                value.append("changed")
            elif isinstance(value, dict):
                value["changed"] = True
    assert cached.db.c.count_documents({"$or": [{"changed": True}, {"a.changed": True}, {"b": "changed"}]}) == 0
    assert list(cached.db.c.find(query, projection)) == list(uncached.db.c.find(query, projection))
