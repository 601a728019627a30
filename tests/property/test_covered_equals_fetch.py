"""A covered plan returns exactly what a fetching plan returns.

For random documents whose values decode back from their index keys (ints, non-integral
doubles, strings, booleans, null, missing), an index {a: 1, b: 1, _id: 1} covers any
inclusion projection of its fields and any filter on them: the query's explain shows
PROJECTION_COVERED over IXSCAN (mongod's shape), and its documents, field types included,
are the ones a collection scan with the same projection returns (the scan reads and projects
the stored documents). The same holds for an aggregation whose $match and $project go to the
find, and for a projection of _id alone.
"""

from __future__ import annotations

from typing import Any

import bson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import foliodb

VALUES = st.one_of(
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([None, "a", "b", "ab", 1.5, -2.25, True, False]),
)
DOCUMENTS = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), VALUES, max_size=3), max_size=30)
FILTERS = st.one_of(
    st.builds(lambda v: {"a": v}, VALUES),
    st.builds(lambda op, v: {"a": {op: v}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$ne"]), VALUES),
    st.builds(lambda vs: {"a": {"$in": vs}}, st.lists(VALUES, min_size=1, max_size=3)),
    st.builds(lambda v, w: {"a": v, "b": {"$gte": w}}, VALUES, VALUES),
)
PROJECTIONS = st.sampled_from(
    [{"a": 1, "_id": 0}, {"a": 1, "b": 1, "_id": 0}, {"b": 1}, {"_id": 1}, {"a": 1, "_id": 1}, {"_id": 1, "b": True}]
)


def _exact(docs: list[dict[str, Any]]) -> list[bytes]:
    """Documents as BSON bytes with their fields in name order: equal bytes mean equal values of equal types
    (a covered document has its fields in the index's order, a fetched one in the stored order)."""
    return sorted(bson.encode({k: doc[k] for k in sorted(doc)}) for doc in docs)


def _plan_stages(node: dict[str, Any]) -> list[str]:
    out = [node["stage"]]
    while "inputStage" in node:
        node = node["inputStage"]
        out.append(node["stage"])
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, FILTERS, PROJECTIONS)
def test_covered_plan_equals_fetching_plan(docs: list[dict[str, Any]], filter_spec: Any, projection: Any) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c
        coll.create_index([("a", 1), ("b", 1), ("_id", 1)])
        stored = [{"_id": n, **doc} for n, doc in enumerate(docs)] or [{"_id": -1}]
        coll.insert_many(stored)
        covered = list(coll.find(filter_spec, projection).hint("a_1_b_1__id_1"))
        fetched = list(coll.find(filter_spec, projection).hint({"$natural": 1}))
        assert _exact(covered) == _exact(fetched)
        explain = coll.find(filter_spec, projection).hint("a_1_b_1__id_1").explain()
        assert _plan_stages(explain["queryPlanner"]["winningPlan"]) == ["PROJECTION_COVERED", "IXSCAN"]
        # Only a null key (null or missing: the key cannot tell) sends the plan to a document.
        read = {f for f in ("a", "b") if f in projection or f in filter_spec}
        if all(doc.get(f) is not None for doc in stored for f in read):
            assert explain["executionStats"]["totalDocsExamined"] == 0
        # The same as a pipeline: $match and a plain $project are the find's.
        pipeline = [{"$match": filter_spec}, {"$project": projection}]
        aggregated = list(coll.aggregate(pipeline, hint="a_1_b_1__id_1"))
        assert _exact(aggregated) == _exact(fetched)
