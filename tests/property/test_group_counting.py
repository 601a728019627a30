"""A $group of a constant _id whose accumulators all $sum a number (pymongo's count_documents:
``{_id: 1, n: {$sum: 1}}``) counts its input instead of grouping each document
(foliodb/aggregation/stages/group.py). It answers as the general path: the same pipeline written
with ``$literal`` (which that shortcut leaves alone), for random inputs, keys and numbers, near the
32-bit limit, of every numeric type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bson import Decimal128, Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import foliodb

KEYS = st.sampled_from([1, None, "all", 2.5, True, Int64(7)])
NUMBERS = st.sampled_from([1, 0, -3, 2**31 - 1, 2**30, Int64(1), Int64(2**40), 0.1, -2.5, Decimal128("0.1")])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(min_value=0, max_value=40),
    key=KEYS,
    numbers=st.lists(NUMBERS, min_size=1, max_size=3),
    match=st.sampled_from([{}, {"i": {"$gte": 10}}, {"i": {"$lt": 0}}]),
)
def test_counting_groups_answer_as_grouping_each_document(
    client: Any, n: int, key: Any, numbers: list[Any], match: dict[str, Any]
) -> None:
    coll = client.db.c
    coll.drop()
    if n:
        coll.insert_many([{"i": i, "v": i * 3} for i in range(n)])
    fields = {f"s{k}": {"$sum": number} for k, number in enumerate(numbers)}
    literal = {name: {"$sum": {"$literal": spec["$sum"]}} for name, spec in fields.items()}
    counted = list(coll.aggregate([{"$match": match}, {"$group": {"_id": key, **fields}}]))
    grouped = list(coll.aggregate([{"$match": match}, {"$group": {"_id": {"$literal": key}, **literal}}]))
    assert counted == grouped
    assert [type(v) for doc in counted for v in doc.values()] == [type(v) for doc in grouped for v in doc.values()]


def test_count_documents_counts_without_decoding_what_no_stage_reads(tmp_path: Path) -> None:
    client = foliodb.MongoClient(str(tmp_path / "db"))
    coll = client.db.c
    coll.insert_many([{"i": i, "tags": ["a"] if i % 3 else []} for i in range(500)])
    assert coll.count_documents({}) == 500
    assert coll.count_documents({}) == 500  # again, from the document cache
    assert coll.count_documents({"tags": "a"}) == len([i for i in range(500) if i % 3])
    assert coll.count_documents({}, skip=490) == 10
    assert coll.count_documents({}, limit=7) == 7
    client.close()
