"""insert_one's and insert_many's encoded point paths store what the general path stores.

The embedded client encodes a plain caller's documents (insert_one, insert_many,
bulk_write's InsertOne) once with pymongo's C codec and the engine stores those
bytes (``commands.insert.point_insert_encoded``, ``point_insert_batch_encoded``),
where the general path walks the documents' types and round-trips what the
engine's codec would not give back as it is (``client/codec.py``). Random
documents - with values of types the wire changes (tuples, ``str`` and ``int``
subclasses, aware datetimes, ``Binary`` of subtype 0, compiled patterns),
values it refuses (UUIDs with no representation, ints past 64 bits), keys it
refuses (with NUL) or MongoDB refuses or allows (``$``-prefixed), ``_id``
values MongoDB refuses (arrays, regexes, ``$`` fields:
https://www.mongodb.com/docs/manual/core/document/#the-_id-field), empty
timestamps the server fills in, nesting past 100 levels
(https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-Nested-Depth-for-BSON-Documents)
- go through a client that takes the point path and one that takes the
general path (a command listener changes nothing an operation does), into a
collection with only ``_id``'s index or a secondary one too: what each
insert returns or raises, the stored documents, the oplog entries and the
change events must agree.
"""

from __future__ import annotations

import datetime
import enum
import re
import uuid
from collections.abc import Callable
from typing import Any

from bson import Int64, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.errors import BSONError
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pymongo import DeleteOne, InsertOne
from pymongo.errors import BulkWriteError, PyMongoError

import foliodb
from tests.sent_commands import SentCommands


class _Str(str):
    pass


class _Level(enum.IntEnum):
    LOW = 1


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth - 1):
        value = {"d": value}
    return value


# Each a function: a document is built fresh for each client (insert_one gives it an _id).
_SCALARS: list[Any] = [
    lambda: 1,
    lambda: -(2**40),
    lambda: 2**70,  # past int64: the wire refuses it
    lambda: 1.5,
    lambda: "s",
    lambda: _Str("sub"),
    lambda: _Level.LOW,
    lambda: True,
    lambda: None,
    lambda: Int64(7),
    lambda: ObjectId("5f0000000000000000000001"),
    lambda: datetime.datetime(2024, 1, 2, 3, 4, 5, 6000),
    lambda: datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    lambda: b"\x11bytes",
    lambda: Binary(b"zero", 0),
    lambda: Binary(b"five", 5),
    lambda: re.compile("a.c", re.I),
    lambda: Regex("x", "m"),
    lambda: uuid.UUID(int=5),  # no uuidRepresentation: the wire refuses it
    lambda: Timestamp(0, 0),  # filled in by the server at the top level
    lambda: Timestamp(5, 1),
    lambda: (1, 2),  # _TUPLE
    lambda: [1, [2]],
    lambda: {"$x": 1},
    lambda: _nested(101),
    lambda: _nested(99),
]
_TUPLE = 21
_IDS: list[Any] = [
    lambda: None,  # none given: an ObjectId
    lambda: 1,
    lambda: 2,
    lambda: "a",
    lambda: ObjectId("5f0000000000000000000002"),
    lambda: 1.0,
    lambda: Int64(2),
    lambda: _Str("a"),
    lambda: (1,),
    lambda: [1],
    lambda: re.compile("x"),
    lambda: {"a": 1},
    lambda: {"$a": 1},
    lambda: Timestamp(0, 0),
]
_KEYS = st.sampled_from(["a", "a", "b", "$top", "with\x00nul", "x.y"])  # "a": indexed when one is

_DOCS = st.tuples(
    st.sampled_from(range(len(_IDS))),
    st.lists(st.tuples(_KEYS, st.sampled_from(range(len(_SCALARS)))), max_size=4),
)


def _build(spec: tuple[int, list[tuple[str, int]]]) -> dict[str, Any]:
    id_index, fields = spec
    doc: dict[str, Any] = {}
    if id_index:
        doc["_id"] = _IDS[id_index]()
    for key, value in fields:
        doc[key] = _SCALARS[value]()
    return doc


def _insert(coll: Any, spec: tuple[int, list[tuple[str, int]]]) -> Any:
    """What insert_one of the document returned (its ``_id``), or the error it raised."""
    try:
        inserted = coll.insert_one(_build(spec)).inserted_id
    except (PyMongoError, BSONError, ValueError, TypeError, OverflowError) as exc:
        details = dict(getattr(exc, "details", None) or {})
        return (type(exc).__name__, getattr(exc, "code", None), str(exc), details)
    return "generated" if spec[0] == 0 else inserted


def _steady(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without what differs by run: a generated ``_id``, a timestamp the server filled in."""
    return {
        k: "filled" if isinstance(v, Timestamp) and v.time > 1_000_000 else v
        for k, v in doc.items()
        if k != "_id" or not isinstance(v, ObjectId)
    }


def _stored(client: Any, indexed: bool) -> list[Any]:
    """The documents, oplog entries and index entries of the collection."""
    docs = [_steady(d) for d in client.test.c.find()]
    oplog = [(e["op"], _steady(e["o"])) for e in client.local["oplog.rs"].find({"ns": "test.c"})]
    # The index entries: each document's keys as its stored fields give them (validate), and
    # the order they put the documents in.
    valid = client.test.command("validate", "c", full=True)["valid"]
    by_index = [_steady(d) for d in client.test.c.find({}, {"a": 1}).sort("a", 1).hint("a_1")] if indexed else []
    return [docs, oplog, valid, by_index]


@settings(max_examples=150, deadline=None)
# A tuple in an indexed field: its index key is an array's only once the wire made it one.
@example(specs=[(1, [("a", _TUPLE)])], indexed=True)
@given(specs=st.lists(_DOCS, min_size=1, max_size=6), indexed=st.booleans())
def test_the_encoded_point_insert_stores_what_the_general_path_stores(
    specs: list[tuple[int, list[tuple[str, int]]]], indexed: bool
) -> None:
    point, general = _both_paths(indexed, lambda coll: [_insert(coll, spec) for spec in specs])
    assert point == general


def _insert_many(coll: Any, specs: list[tuple[int, list[tuple[str, int]]]], ordered: bool, bulk: bool) -> Any:
    """What insert_many of the documents returned (their ``_id``s), or the error it raised; with
    ``bulk``, bulk_write's InsertOne of each, a DeleteOne in the middle (two insert runs when ordered)."""
    docs = [_build(spec) for spec in specs]
    try:
        if bulk:
            requests: list[Any] = [InsertOne(doc) for doc in docs]
            requests.insert(len(requests) // 2, DeleteOne({"_id": 1}))
            result = coll.bulk_write(requests, ordered=ordered)
            return (result.inserted_count, result.deleted_count)
        inserted = coll.insert_many(docs, ordered=ordered).inserted_ids
    except BulkWriteError as exc:
        errors = [{**e, "op": _steady(e["op"])} for e in exc.details["writeErrors"]]
        return ("BulkWriteError", exc.details["nInserted"], exc.details["nRemoved"], errors)
    except (PyMongoError, BSONError, ValueError, TypeError, OverflowError) as exc:
        return (type(exc).__name__, getattr(exc, "code", None), str(exc))
    return ["generated" if spec[0] == 0 else i for spec, i in zip(specs, inserted, strict=True)]


@settings(max_examples=100, deadline=None)
@example(specs=[(1, []), (2, [("a", _TUPLE)])], indexed=True, ordered=True, bulk=False)
@given(specs=st.lists(_DOCS, min_size=1, max_size=8), indexed=st.booleans(), ordered=st.booleans(), bulk=st.booleans())
def test_the_encoded_point_insert_many_stores_what_the_general_path_stores(
    specs: list[tuple[int, list[tuple[str, int]]]], indexed: bool, ordered: bool, bulk: bool
) -> None:
    point, general = _both_paths(indexed, lambda coll: _insert_many(coll, specs, ordered, bulk))
    assert point == general


def _both_paths(indexed: bool, insert: Callable[[Any], Any]) -> tuple[Any, Any]:
    """What ``insert`` returned, the stored documents and index entries, and the number of
    change events, through a client taking the point path and through one taking the general
    path (a command listener sends every command the general way)."""
    outcomes = []
    for listeners in ([], [SentCommands()]):
        with foliodb.MongoClient(":memory:", event_listeners=listeners) as client:
            coll = client.test.c
            client.test.create_collection("c")
            if indexed:
                coll.create_index("a")
            with coll.watch(max_await_time_ms=5) as stream:
                result = insert(coll)
                coll.insert_one({"_id": "end"})
                events: list[Any] = []
                while not events or events[-1] != {"_id": "end"}:
                    while (change := stream.try_next()) is not None:
                        events.append(change["documentKey"])
            outcomes.append((result, _stored(client, indexed), len(events)))
    return outcomes[0], outcomes[1]
