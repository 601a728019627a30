"""A let/pipeline $lookup whose leading $match joins with ``$expr: {$eq: ["$field", "$$var"]}``
reads its candidates through the query ``{field: {$eq: value}}`` first (an index finds them),
the pipeline's own $match still deciding (foliodb/aggregation/stages/lookup.py). It answers as
the same pipeline behind a stage that hides the pattern: random foreign and local values
(mixed numeric types, strings under a case-insensitive collation or none, nulls, missing
fields, arrays, documents), with and without an index on the field, either side first, alone
or in an $and."""

from __future__ import annotations

from typing import Any

from bson import Decimal128, Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SCALARS = st.one_of(st.integers(0, 3), st.sampled_from([1.0, Int64(2), Decimal128("3"), "a", "A", "b", True, None]))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.fixed_dictionaries({}, optional={"x": SCALARS}))
DOCS = st.lists(st.fixed_dictionaries({"g": st.integers(0, 2)}, optional={"f": VALUES}), max_size=10)
COLLATED = {"locale": "en", "strength": 2}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    foreign=DOCS,
    local=DOCS,
    indexed=st.booleans(),
    reverse=st.booleans(),
    conjunct=st.booleans(),
    collation=st.sampled_from([None, COLLATED]),
)
def test_an_expr_equality_join_answers_as_without_its_narrowing(
    client: Any,
    foreign: list[dict[str, Any]],
    local: list[dict[str, Any]],
    indexed: bool,
    reverse: bool,
    conjunct: bool,
    collation: dict[str, Any] | None,
) -> None:
    db = client.expr_join
    db.drop_collection("foreign")
    db.drop_collection("local")
    db.foreign.insert_many([{"_id": i, **doc} for i, doc in enumerate(foreign)] or [{"_id": -1}])
    if indexed:
        db.foreign.create_index("f")
    db.local.insert_many([{"_id": i, **doc} for i, doc in enumerate(local)] or [{"_id": -1}])
    equality = {"$eq": ["$$v", "$f"] if reverse else ["$f", "$$v"]}
    expr = {"$and": [equality, {"$eq": ["$g", "$$h"]}]} if conjunct else equality
    match = {"$match": {"$expr": expr}}
    options = {"collation": collation} if collation else {}

    def joined(pipeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
        lookup = {"from": "foreign", "let": {"v": "$f", "h": "$g"}, "pipeline": pipeline, "as": "j"}
        return list(db.local.aggregate([{"$sort": {"_id": 1}}, {"$lookup": lookup}], **options))

    hidden = [{"$set": {"_hide": 1}}, match, {"$unset": "_hide"}]
    assert joined([match]) == joined(hidden)
