"""distinct reads the document cache's own documents (FindSpec.reads_only) instead of decoding
them afresh: its values equal those with the cache off, for random documents (arrays, nested
documents, mixed types, missing fields) and filters; and a caller changing the documents and
arrays distinct returned changes nothing stored or cached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import foliodb

SCALARS = st.one_of(st.integers(0, 3), st.sampled_from([1.0, "a", "b", None, True]))
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.fixed_dictionaries({}, optional={"x": SCALARS, "y": st.lists(SCALARS, max_size=2)}),
    st.lists(st.fixed_dictionaries({}, optional={"x": SCALARS}), max_size=2),
)
DOCS = st.lists(st.fixed_dictionaries({"n": st.integers(0, 3)}, optional={"v": VALUES}), min_size=1, max_size=12)


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path: Path = tmp_path_factory.mktemp("distinct-cached")
    cached = foliodb.MongoClient(str(path / "cached"))
    uncached = foliodb.MongoClient(str(path / "uncached"))
    uncached.admin.command("setParameter", 1, documentCacheSizeMB=0)
    yield cached, uncached
    cached.close()
    uncached.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, key=st.sampled_from(["v", "v.x", "v.y", "n"]), query=st.sampled_from([{}, {"n": {"$gte": 1}}]))
def test_distinct_from_the_cache_equals_distinct_without_it(
    clients: Any, docs: list[dict[str, Any]], key: str, query: dict[str, Any]
) -> None:
    cached, uncached = clients
    for client in clients:
        client.db.drop_collection("c")
        client.db.c.insert_many([{"_id": i, **doc} for i, doc in enumerate(docs)])
    cached.db.c.count_documents({"n": {"$lt": 0}})  # scans that build the cache
    cached.db.c.count_documents({"n": {"$lt": 0}})
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
