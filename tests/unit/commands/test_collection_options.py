"""Collection options: capped collections, collation (refused), options
FolioDB does not build (refused, never silently ignored).

Manual: https://www.mongodb.com/docs/manual/core/capped-collections/ ,
https://www.mongodb.com/docs/manual/reference/method/db.createCollection/
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure


def test_capped_keeps_the_newest_max_documents_in_insertion_order(db: Any) -> None:
    db.create_collection("log", capped=True, size=100_000, max=3)
    for i in range(5):
        db.log.insert_one({"i": i})
    assert [d["i"] for d in db.log.find()] == [2, 3, 4]
    db.log.insert_many([{"i": i} for i in range(10, 15)])
    assert [d["i"] for d in db.log.find()] == [12, 13, 14]
    assert [d["i"] for d in db.log.find().sort("$natural", -1)] == [14, 13, 12]
    assert db.validate_collection("log")["valid"]


def test_capped_size_is_rounded_and_enforced(db: Any) -> None:
    db.create_collection("small", capped=True, size=1000)
    assert db.small.options() == {"capped": True, "size": 4096}
    db.small.insert_many([{"x": "y" * 1000} for _ in range(10)])
    assert db.small.count_documents({}) == 3  # about 1 KiB each under a 4 KiB cap
    db.create_collection("odd", capped=True, size=5000)
    assert db.odd.options()["size"] == 5120


def test_capped_requires_a_size(db: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", capped=True)
    assert info.value.code == 72


@pytest.mark.parametrize(
    "call",
    [
        lambda db: list(db.c.find({}, collation={"locale": "fr"})),
        lambda db: list(db.c.aggregate([], collation={"locale": "fr"})),
        lambda db: db.c.create_index("a", collation={"locale": "fr", "strength": 2}),
        lambda db: db.create_collection("d", collation={"locale": "fr"}),
        lambda db: db.c.update_one({}, {"$set": {"a": 1}}, collation={"locale": "fr"}),
    ],
)
def test_collation_is_refused_not_ignored(db: Any, call: Any) -> None:
    db.c.insert_one({"a": "x"})
    with pytest.raises(OperationFailure) as info:
        call(db)
    assert info.value.code == 238


def test_simple_collation_is_accepted(db: Any) -> None:
    db.c.insert_one({"a": "x"})
    assert len(list(db.c.find({}, collation={"locale": "simple"}))) == 1


def test_expire_after_seconds_alone_is_refused(db: Any) -> None:
    """expireAfterSeconds belongs to time-series and clustered collections (tested in test_timeseries/test_clustered)."""
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", expireAfterSeconds=5)
    assert info.value.code == 72
