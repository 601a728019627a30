"""find_one by ``_id`` (mongod's IDHACK) answers as the general find does.

The point path (:func:`foliodb.commands.find.point_find`) serves the command
drivers send for ``find_one({"_id": v})``; any other field sends a find the
general way (a ``comment`` changes no answer:
https://www.mongodb.com/docs/manual/reference/command/find/). Expected
documents are also computed here from BSON's equality of ``_id`` values:
numbers compare by value across int, long and double; other types only
within their own type; embedded documents field by field, in order
(https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/).
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from bson import Int64, ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import foliodb

_IDS = st.one_of(
    st.integers(-3, 3),
    st.integers(-3, 3).map(float),
    st.integers(-3, 3).map(Int64),
    st.sampled_from(["a", "A", "b", ""]),
    st.sampled_from([ObjectId("5f0000000000000000000001"), ObjectId("5f0000000000000000000002")]),
    st.sampled_from([datetime.datetime(2020, 1, 1), datetime.datetime(2021, 1, 1)]),
    st.none(),
    st.booleans(),
    st.fixed_dictionaries({"a": st.integers(0, 1)}),
    st.fixed_dictionaries({"a": st.integers(0, 1), "b": st.integers(0, 1)}),
)


def _bson_equal(a: Any, b: Any) -> bool:
    numbers = (int, float, Int64)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, numbers) and isinstance(b, numbers):
        return not (isinstance(a, float) and math.isnan(a)) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_bson_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _find(db: Any, value: Any, **extra: Any) -> list[Any]:
    reply = db.command({"find": "c", "filter": {"_id": value}, "limit": 1, "singleBatch": True, **extra})
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["ns"] == "test.c"
    return list(reply["cursor"]["firstBatch"])


def _id_accesses(db: Any) -> int:
    (stats,) = [s for s in db.c.aggregate([{"$indexStats": {}}]) if s["name"] == "_id_"]
    return int(stats["accesses"]["ops"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(_IDS, max_size=8), asked=st.lists(_IDS, min_size=1, max_size=6))
def test_point_find_answers_as_the_general_find(stored: list[Any], asked: list[Any]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        db = client.test
        db.create_collection("c")
        kept: list[Any] = []
        for value in stored:
            if not any(_bson_equal(value, other) for other in kept):  # _id is unique
                kept.append(value)
                db.c.insert_one({"_id": value, "n": len(kept)})
        for value in asked:
            before = _id_accesses(db)
            point = _find(db, value)
            assert _id_accesses(db) == before + 1  # one IDHACK, as the general path counts it
            general = _find(db, value, comment="the general path")
            expected = [{"_id": v, "n": i + 1} for i, v in enumerate(kept) if _bson_equal(v, value)]
            assert point == general == expected
            assert _find(db, {"$eq": value}) == expected
            assert db.c.find_one({"_id": value}) == (expected[0] if expected else None)


def test_collection_default_collation_and_views_go_the_general_way() -> None:
    # With a default strength-2 collation, "a" and "A" are equal _id values for queries
    # (https://www.mongodb.com/docs/manual/reference/collation/).
    with foliodb.MongoClient(":memory:") as client:
        db = client.test
        db.create_collection("c", collation={"locale": "en", "strength": 2})
        db.c.insert_one({"_id": "A"})
        assert _find(db, "a") == [{"_id": "A"}]
        db.create_collection("v", viewOn="c", pipeline=[{"$project": {"_id": 1, "seen": {"$literal": True}}}])
        assert db.v.find_one("A") == {"_id": "A", "seen": True}
        assert _find(db, "x") == [] and db.missing.find_one(1) is None
