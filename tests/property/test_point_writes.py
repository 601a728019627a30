"""insert_one, update_one and delete_one by ``_id`` write as the general write commands do.

The point paths (:func:`foliodb.commands.insert.point_insert`, ``update.point_update``,
``delete.point_delete``) serve the commands drivers send for single-document writes;
the same command with a ``comment`` goes the general way (a comment changes
nothing a write does: https://www.mongodb.com/docs/manual/reference/command/update/).
Each sequence of writes runs against two collections, one each way, and a
model kept here: documents are found by BSON's equality of ``_id`` values
(numbers by value across int, long and double), ``_id`` is unique under it, an
``$inc`` of a string is error 14 and a change of ``_id`` error 66
(https://www.mongodb.com/docs/manual/reference/operator/update/inc/,
https://www.mongodb.com/docs/manual/core/document/#the-_id-field).
Replies, documents, oplog entries and ``_id`` index accesses must agree.
"""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

import pytest
from bson import Int64, ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import DuplicateKeyError, WriteError

import foliodb
from foliodb.commands import delete, insert, update
from tests.property.test_point_find import _bson_equal

_IDS = st.one_of(
    st.integers(-2, 2),
    st.integers(-2, 2).map(float),
    st.integers(-2, 2).map(Int64),
    st.sampled_from(["a", "b"]),
    st.sampled_from([ObjectId("5f0000000000000000000001"), ObjectId("5f0000000000000000000002")]),
    st.none(),
    st.fixed_dictionaries({"a": st.integers(0, 1)}),
)

# Update specs, and what each does to a document of the model (an int: the write error it raises).
_UPDATES: list[tuple[dict[str, Any], Any]] = [
    ({"$inc": {"n": 1}}, lambda d: {**d, "n": d.get("n", 0) + 1} if isinstance(d.get("n", 0), int) else 14),
    ({"$set": {"s": "x"}}, lambda d: {**d, "s": "x"}),
    ({"$set": {"n": "text"}}, lambda d: {**d, "n": "text"}),
    ({"$unset": {"s": 1}}, lambda d: {k: v for k, v in d.items() if k != "s"}),
    (
        {"$inc": {"n": 1}, "$set": {"s": "y"}},
        lambda d: {**d, "n": d.get("n", 0) + 1, "s": "y"} if isinstance(d.get("n", 0), int) else 14,
    ),
    ({"$set": {"_id": "changed"}}, lambda d: d if d["_id"] == "changed" else 66),
    ({"r": 1}, lambda d: {"_id": d["_id"], "r": 1}),  # a replacement keeps _id
]

_CODE_NAMES = {14: "TypeMismatch", 66: "ImmutableField"}

_OPS = st.one_of(
    st.tuples(st.just("insert"), _IDS),
    st.tuples(st.just("update"), _IDS, st.integers(0, len(_UPDATES) - 1)),
    st.tuples(st.just("delete"), _IDS),
)


def _run(db: Any, cmd: dict[str, Any], general: bool) -> dict[str, Any]:
    reply = db.command({**cmd, "comment": "the general path"} if general else cmd)
    reply["fields"] = list(reply)  # in the reply's order
    reply.pop("ok")
    for error in reply.get("writeErrors", []):
        error.pop("errmsg", None)  # names the collection, which differs
        error.pop("keyValue", None)
    return dict(reply)


def _oplog(client: Any, ns: str) -> list[tuple[Any, ...]]:
    return [(e["op"], e["o"], e.get("o2")) for e in client.local["oplog.rs"].find({"ns": ns}).sort("ts", 1)]


def _id_accesses(coll: Any) -> int:
    (stats,) = [s for s in coll.aggregate([{"$indexStats": {}}]) if s["name"] == "_id_"]
    return int(stats["accesses"]["ops"])


def _expected(model: list[dict[str, Any]], op: tuple[Any, ...]) -> dict[str, Any]:
    """The reply the model gives (and the model changed as the write changes it)."""
    found = next((i for i, doc in enumerate(model) if _bson_equal(doc["_id"], op[1])), None)
    if op[0] == "insert":
        if found is not None:
            return {"n": 0, "writeErrors": [{"index": 0, "code": 11000, "keyPattern": {"_id": 1}}]}
        model.append({"_id": op[1], "n": -1})
        return {"n": 1}
    if op[0] == "delete":
        if found is not None:
            del model[found]
        return {"n": int(found is not None)}
    if found is None:
        return {"n": 0, "nModified": 0}
    result = _UPDATES[op[2]][1](model[found])
    if isinstance(result, int):
        return {"n": 0, "nModified": 0, "writeErrors": [{"index": 0, "code": result, "codeName": _CODE_NAMES[result]}]}
    modified = result != model[found] or list(result) != list(model[found])
    model[found] = result
    return {"n": 1, "nModified": int(modified)}


def _command(op: tuple[Any, ...], coll: str) -> dict[str, Any]:
    if op[0] == "insert":
        return {"insert": coll, "documents": [{"_id": op[1], "n": -1}]}
    if op[0] == "delete":
        return {"delete": coll, "deletes": [{"q": {"_id": op[1]}, "limit": 1}]}
    return {"update": coll, "updates": [{"q": {"_id": op[1]}, "u": copy.deepcopy(_UPDATES[op[2]][0])}]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OPS, min_size=1, max_size=14))
def test_point_writes_write_as_the_general_commands(ops: list[tuple[Any, ...]]) -> None:
    answered: list[Any] = []  # what the point paths returned (None: they left the write to the general path)

    def spy(module: Any, name: str) -> Any:
        real = getattr(module, name)
        return mock.patch.object(module, name, lambda *args: answered.append(real(*args)) or answered[-1])

    with (
        foliodb.MongoClient(":memory:") as client,
        spy(insert, "point_insert"),
        spy(update, "point_update"),
        spy(delete, "point_delete"),
    ):
        db = client.test
        db.create_collection("p")
        db.create_collection("g")
        model: list[dict[str, Any]] = []
        for op in ops:
            expected = _expected(model, op)
            cmd = _command(op, "p")
            del answered[:]
            point = _run(db, cmd, general=False)
            assert len(answered) == 1 and answered[0] is not None  # the point path wrote it
            general = _run(db, {**cmd, next(iter(cmd)): "g"}, general=True)
            assert point.pop("fields") == general.pop("fields")
            assert point == general == expected, op
            assert list(db.p.find()) == list(db.g.find()) == model
        assert _oplog(client, "test.p") == _oplog(client, "test.g")
        assert _id_accesses(db.p) == _id_accesses(db.g)
        for name in ("p", "g"):
            assert db.command("validate", name)["valid"]


def test_what_the_point_paths_leave_to_the_general_way_still_holds() -> None:
    # A validator, a unique secondary index and a default collation all change what a write by
    # _id may do (https://www.mongodb.com/docs/manual/core/schema-validation/).
    with foliodb.MongoClient(":memory:") as client:
        db = client.test
        db.create_collection("v", validator={"n": {"$type": "int"}})
        db.v.insert_one({"_id": 1, "n": 1})
        with pytest.raises(WriteError) as failed:
            db.v.update_one({"_id": 1}, {"$set": {"n": "text"}})
        assert failed.value.code == 121
        db.u.create_index("k", unique=True)
        db.u.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}])
        with pytest.raises(DuplicateKeyError):
            db.u.update_one({"_id": 2}, {"$set": {"k": 1}})
        assert db.u.delete_one({"_id": 1}).deleted_count == 1
        db.u.insert_one({"_id": 3, "k": 1})  # the deleted document's unique key is free again
        assert db.command("validate", "u")["valid"]
        db.create_collection("c", collation={"locale": "en", "strength": 2})
        db.c.insert_one({"_id": "A"})
        with pytest.raises(DuplicateKeyError):
            db.c.insert_one({"_id": "a"})
        assert db.c.update_one({"_id": "a"}, {"$set": {"x": 1}}).modified_count == 1
        assert db.c.delete_one({"_id": "a"}).deleted_count == 1


def test_a_cached_update_is_the_one_its_spec_says() -> None:
    # Compiled updates are kept by their BSON: 1 and 1.0 differ there, and so do the results'
    # types ($inc by a double makes a double).
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.c
        coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 1}])
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
        coll.update_one({"_id": 2}, {"$inc": {"n": 1.0}})
        spec = {"$set": {"tags": ["x"]}}
        coll.update_one({"_id": 1}, spec)
        spec["$set"]["tags"].append("y")  # the caller changes its spec: the next update says so
        coll.update_one({"_id": 2}, spec)
        one, two = coll.find().sort("_id", 1)
        assert type(one["n"]) is int and one == {"_id": 1, "n": 2, "tags": ["x"]}
        assert type(two["n"]) is float and two == {"_id": 2, "n": 2.0, "tags": ["x", "y"]}
