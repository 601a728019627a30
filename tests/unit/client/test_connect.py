"""foliodb.connect: a dbpath opens embedded, a MongoDB URI gives pymongo's client
(DESIGN.md, "When a user outgrows one machine")."""

from __future__ import annotations

from typing import Any

import pymongo

import foliodb


def test_connect_opens_a_dbpath(tmp_path: Any) -> None:
    with foliodb.connect(str(tmp_path / "data")) as client:
        assert isinstance(client, foliodb.MongoClient)
        client.db.c.insert_one({"a": 1})
        assert client.db.c.count_documents({}) == 1


def test_connect_hands_a_uri_to_pymongo() -> None:
    client = foliodb.connect("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=1", connect=False)
    try:
        assert isinstance(client, pymongo.MongoClient)
    finally:
        client.close()
