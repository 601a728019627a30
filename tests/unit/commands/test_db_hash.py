"""dbHash, as mongod's dbhash.cpp: each collection's MD5 is over its documents' BSON in ``_id``
order, the database's over the collections' hex digests in name order; views, ``system.profile``
and ``tmp.mr.`` collections are left out. Expected digests are computed here from the
documents with pymongo's ``bson`` and ``hashlib``, independently of FolioDB's storage.
"""

from __future__ import annotations

import hashlib
from typing import Any

import bson
import pytest
from bson import ObjectId
from pymongo.errors import ExecutionTimeout, OperationFailure

import foliodb
from foliodb.tools.sync import Sync, SyncOptions

EMPTY_MD5 = hashlib.md5(b"").hexdigest()


def _md5(docs: list[dict[str, Any]]) -> str:
    return hashlib.md5(b"".join(bson.encode(d) for d in docs)).hexdigest()


@pytest.fixture(params=["embedded", "server"])
def client(request: pytest.FixtureRequest, wire: Any) -> Any:
    if request.param == "server":
        for name in wire.list_database_names():
            if name not in ("admin", "config", "local"):
                wire.drop_database(name)
        return wire
    return foliodb.MongoClient(":memory:")


def test_hashes_documents_in_id_order(client: Any) -> None:
    db = client.shop
    oid = ObjectId()
    # Inserted out of _id order, with _ids of several types: BSON order is numbers, strings, ObjectIds.
    docs = [{"_id": oid, "n": 1}, {"_id": "b", "tags": ["x"]}, {"_id": 2.5, "q": None}, {"_id": 1, "s": "one"}]
    db.orders.insert_many(docs)
    db.users.insert_one({"_id": 7, "name": "ann"})
    db.create_collection("empty")
    db.create_collection("log", capped=True, size=4096)
    db.log.insert_one({"_id": 1, "line": "a"})
    db.command("create", "recent", viewOn="orders", pipeline=[])
    db.command("create", "tmp.mr.leftover")
    reply = db.command("dbHash")
    ordered = [docs[3], docs[2], docs[1], docs[0]]
    expected = {
        "empty": EMPTY_MD5,
        "log": _md5([{"_id": 1, "line": "a"}]),
        "orders": _md5(ordered),
        "users": _md5([{"_id": 7, "name": "ann"}]),
    }
    assert reply["collections"] == expected
    assert list(reply["collections"]) == sorted(expected)
    assert reply["md5"] == hashlib.md5("".join(expected[name] for name in sorted(expected)).encode()).hexdigest()
    assert reply["capped"] == ["log"]
    assert sorted(reply["uuids"]) == sorted(expected)
    assert reply["ok"] == 1.0 and isinstance(reply["host"], str)
    # An update rewrites the document in place of the old one: the hash follows the content.
    db.users.update_one({"_id": 7}, {"$set": {"name": "bob"}})
    assert db.command("dbHash", collections=["users"])["collections"] == {"users": _md5([{"_id": 7, "name": "bob"}])}


def test_collections_and_errors(client: Any) -> None:
    db = client.hashing
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 2})
    assert list(db.command("dbHash", collections=["b", "missing"])["collections"]) == ["b"]
    with pytest.raises(OperationFailure) as info:
        db.command("dbHash", collections=["a", 1])
    assert (info.value.code, info.value.details["errmsg"]) == (2, "collections entries have to be strings")
    reply = client.nothing_here.command("dbHash")
    assert (reply["collections"], reply["md5"]) == ({}, EMPTY_MD5)


def test_stops_at_max_time_ms(client: Any) -> None:
    db = client.big
    for start in range(0, 60_000, 20_000):
        db.c.insert_many([{"_id": i, "pad": "p" * 200} for i in range(start, start + 20_000)])
    with pytest.raises(ExecutionTimeout):
        db.command("dbHash", maxTimeMS=5)


def test_a_synced_copy_hashes_the_same() -> None:
    """The guide's check of a migration: after ``foliodb sync``, equal digests on both sides."""
    source, target = foliodb.MongoClient(":memory:"), foliodb.MongoClient(":memory:")
    source.shop.orders.insert_many([{"_id": i, "total": i * 1.5, "items": [{"sku": str(i)}]} for i in range(50)])
    source.shop.users.insert_one({"_id": "ann", "z": 1, "a": 2})  # field order is part of the hash
    Sync(source, target, "app", SyncOptions(once=True)).run()
    mine, theirs = source.shop.command("dbHash"), target.shop.command("dbHash")
    assert mine["collections"] == theirs["collections"] and mine["md5"] == theirs["md5"]
    target.shop.users.update_one({"_id": "ann"}, {"$set": {"z": 2}})
    assert target.shop.command("dbHash")["collections"]["users"] != mine["collections"]["users"]
