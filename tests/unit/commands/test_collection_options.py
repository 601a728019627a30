"""Collection options: capped collections, options FolioDB does not build
(refused, never silently ignored). Collation: tests/unit/commands/test_collation_commands.py.

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


def test_simple_collation_is_accepted(db: Any) -> None:
    db.c.insert_one({"a": "x"})
    assert len(list(db.c.find({}, collation={"locale": "simple"}))) == 1


def test_expire_after_seconds_alone_is_refused(db: Any) -> None:
    """expireAfterSeconds belongs to time-series and clustered collections (tested in test_timeseries/test_clustered)."""
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", expireAfterSeconds=5)
    assert info.value.code == 72


def test_change_stream_pre_and_post_images_switch_on_and_off(db: Any) -> None:
    # https://www.mongodb.com/docs/manual/reference/command/collMod/#change-streams-with-document-pre--and-post-images
    db.create_collection("c", changeStreamPreAndPostImages={"enabled": True})
    assert db.c.options() == {"changeStreamPreAndPostImages": {"enabled": True}}
    db.command("collMod", "c", changeStreamPreAndPostImages={"enabled": False})
    assert db.c.options() == {}  # mongod keeps only an enabled one among the options
    db.command("collMod", "c", changeStreamPreAndPostImages={"enabled": True})
    assert db.c.options() == {"changeStreamPreAndPostImages": {"enabled": True}}
    db.create_collection("d", changeStreamPreAndPostImages={"enabled": False})
    assert db.d.options() == {}


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (True, 14),  # TypeMismatch: an object is required
        ({}, 40414),  # enabled is required
        ({"enabled": True, "other": 1}, 40415),  # an unknown field
        ({"enabled": "yes"}, 14),
    ],
)
def test_change_stream_pre_and_post_images_errors(db: Any, value: Any, code: int) -> None:
    db.create_collection("c")
    for command in (["collMod", "c"], ["create", "d"]):
        with pytest.raises(OperationFailure) as info:
            db.command(*command, changeStreamPreAndPostImages=value)
        assert info.value.code == code
