"""Values of types the engine's codec never produces (a tuple, an enum member, a dict or
str subclass, a compiled pattern, an aware datetime, Binary subtype 0) reach the engine
as BSON makes them on the wire: stored, indexed, matched and validated alike.

The expected form of each value is pymongo's own BSON round trip (bson.encode, then
bson.decode), what a server receives from pymongo: not FolioDB code.
"""

from __future__ import annotations

import collections
import datetime
import enum
import re
from typing import Any

import bson
import hypothesis.strategies as st
import pytest
from bson.binary import Binary
from bson.son import SON
from hypothesis import given, settings

import foliodb


class Colour(str, enum.Enum):  # noqa: UP042 -- the (str, Enum) form ODMs use, not StrEnum
    RED = "red"


class Size(enum.IntEnum):
    LARGE = 3


class Tagged(dict[str, Any]):
    pass


class Items(list[Any]):
    pass


FOREIGN_VALUES: list[Any] = [
    (1, 2),
    [(1, 2), (3,)],
    Colour.RED,
    Size.LARGE,
    collections.OrderedDict([("x", 1), ("y", (2,))]),
    SON([("x", Colour.RED)]),
    Tagged(x=1),
    Items([1, 2]),
    re.compile("^ab", re.IGNORECASE),
    datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    Binary(b"raw", 0),
]


def on_the_wire(value: Any) -> Any:
    return bson.decode(bson.encode({"v": value}))["v"]


@pytest.fixture
def collection() -> Any:
    client = foliodb.MongoClient(":memory:")
    coll = client.db.c
    coll.create_index("v")
    yield coll
    client.close()


@pytest.mark.parametrize("value", FOREIGN_VALUES, ids=lambda v: type(v).__name__)
def test_a_foreign_value_is_stored_indexed_and_matched_as_on_the_wire(collection: Any, value: Any) -> None:
    wire = on_the_wire(value)
    collection.insert_one({"_id": 1, "v": value})
    assert collection.find_one({"_id": 1}) == {"_id": 1, "v": wire}
    # The same value in a filter, through the index and through a scan, finds the document.
    assert [d["_id"] for d in collection.find({"v": value}).hint("v_1")] == [1]
    assert [d["_id"] for d in collection.find({"v": value}).hint({"$natural": 1})] == [1]
    assert [d["_id"] for d in collection.aggregate([{"$match": {"v": value}}])] == [1]
    assert collection.database.command("validate", "c")["valid"] is True


def test_a_tuple_of_clauses_is_an_array(collection: Any) -> None:
    collection.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}, {"_id": 3, "v": 3}])
    assert sorted(d["_id"] for d in collection.find({"$or": ({"v": 1}, {"v": 3})})) == [1, 3]
    assert sorted(d["_id"] for d in collection.find({"v": {"$in": (2, 3)}})) == [2, 3]
    collection.update_many({"v": {"$in": (1, 2)}}, {"$set": {"w": (Size.LARGE,)}})
    assert collection.count_documents({"w": [3]}) == 2


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5) | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text("abc", min_size=1, max_size=2), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(plain_values)
def test_any_value_reads_back_as_pymongo_would_send_it(value: Any) -> None:
    with foliodb.MongoClient(":memory:") as client:
        client.db.c.insert_one({"_id": 0, "v": value})
        assert client.db.c.find_one() == {"_id": 0, "v": on_the_wire(value)}
