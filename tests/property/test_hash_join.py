"""$lookup's hash join (foliodb/aggregation/stages/hash_join.py) answers as the find per input
document it replaces, for random foreign and local documents: mixed numeric types, strings under
a case-insensitive collation or none, ObjectIds, nulls, missing fields, arrays of values and of
subdocuments, a dotted foreignField through them, and local values the join hands back to the find.

The reference is the same $lookup with an empty ``pipeline`` beside localField/foreignField,
which takes the per-document find (the join serves only the plain form): same order, same
documents. And with an index on foreignField, the index lookup finds the same documents."""

from __future__ import annotations

from typing import Any

from bson import Decimal128, Int64, ObjectId
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

IDS = [ObjectId(f"{n:024x}") for n in range(3)]
SCALARS = st.one_of(
    st.integers(min_value=0, max_value=3),
    st.sampled_from(["a", "A", "b", ""]),  # equal in pairs under the case-insensitive collation
    st.sampled_from([1.0, 2.5, Int64(2), Decimal128("3"), True, *IDS]),
)
VALUES = st.one_of(
    SCALARS,
    st.none(),
    st.lists(SCALARS, max_size=3),
    st.lists(st.fixed_dictionaries({}, optional={"b": SCALARS}), max_size=3),
    st.fixed_dictionaries({}, optional={"b": st.one_of(SCALARS, st.lists(SCALARS, max_size=2))}),
)
DOCS = st.lists(st.fixed_dictionaries({}, optional={"a": VALUES, "k": VALUES}), max_size=12)
COLLATED = {"locale": "en", "strength": 2}
COLLATIONS = st.sampled_from([None, COLLATED])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(foreign=[{"a": "A"}], local=[{"a": "a"}], foreign_field="a", local_field="a", collation=COLLATED)
@example(
    foreign=[{"a": [1, "x"]}, {"a": 1.0}], local=[{"a": Int64(1)}], foreign_field="a", local_field="a", collation=None
)
@example(
    foreign=[{"a": [{"b": "B"}, {"b": 2}]}],
    local=[{"a": ["b", 2.0]}],
    foreign_field="a.b",
    local_field="a",
    collation=COLLATED,
)
@given(
    foreign=DOCS,
    local=DOCS,
    foreign_field=st.sampled_from(["a", "a.b", "k"]),
    local_field=st.sampled_from(["a", "a.b", "k"]),
    collation=COLLATIONS,
)
def test_the_hash_join_finds_what_the_find_per_document_finds(
    client: Any,
    foreign: list[dict[str, Any]],
    local: list[dict[str, Any]],
    foreign_field: str,
    local_field: str,
    collation: dict[str, Any] | None,
) -> None:
    db = client.hash_join
    for name in ("foreign", "indexed", "local"):
        db.drop_collection(name)
    db.foreign.insert_many([{"_id": i, **doc} for i, doc in enumerate(foreign)] or [{"_id": -1}])
    db.indexed.insert_many([{"_id": i, **doc} for i, doc in enumerate(foreign)] or [{"_id": -1}])
    db.indexed.create_index(foreign_field, collation=collation) if collation else db.indexed.create_index(foreign_field)
    db.local.insert_many([{"_id": i, **doc} for i, doc in enumerate(local)] or [{"_id": -1}])
    options = {"collation": collation} if collation else {}

    def joined(coll: str, **extra: Any) -> list[dict[str, Any]]:
        lookup = {"from": coll, "localField": local_field, "foreignField": foreign_field, "as": "j", **extra}
        return list(db.local.aggregate([{"$sort": {"_id": 1}}, {"$lookup": lookup}], **options))

    hashed = joined("foreign")
    assert hashed == joined("foreign", pipeline=[])
    by_index = joined("indexed")
    assert [sorted(d["_id"] for d in doc["j"]) for doc in hashed] == [
        sorted(d["_id"] for d in doc["j"]) for doc in by_index
    ]
