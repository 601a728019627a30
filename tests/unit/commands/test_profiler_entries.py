"""Profiler entries in mongod's shape: one entry per update/delete
statement, reads of system.profile profiled too, secrets redacted.

Manual: https://www.mongodb.com/docs/manual/reference/database-profiler/ (output fields, the update
example: command {q, u, multi, upsert}, keysExamined, docsExamined, nMatched, nModified),
https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/,
https://www.mongodb.com/docs/manual/reference/command/createUser/ (pwd is a secret)
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import DeleteOne, UpdateMany, UpdateOne
from pymongo.errors import WriteError


@pytest.fixture
def db(client: Any) -> Any:
    db = client.prof
    db.orders.insert_many([{"_id": i, "user_id": i % 4, "n": i} for i in range(20)])
    db.orders.create_index("user_id")
    db.command("profile", 2)
    return db


def entries(db: Any, **query: Any) -> list[dict[str, Any]]:
    db.command("profile", 0)
    return list(db["system.profile"].find(query))


def test_reads_of_system_profile_are_profiled(db: Any) -> None:
    # mongoengine's query_counter counts the entries with count_documents, each count profiled itself.
    db.orders.find_one({"_id": 1})
    counts = [db["system.profile"].count_documents({}) for _ in range(3)]
    assert counts == [1, 2, 3]
    assert [e["ns"] for e in entries(db)] == ["prof.orders"] + ["prof.system.profile"] * 3


def test_each_update_statement_has_its_entry(db: Any) -> None:
    db.orders.bulk_write(
        [UpdateMany({"user_id": 1}, {"$inc": {"n": 100}}), UpdateOne({"_id": 2}, {"$set": {"n": 2}})], ordered=True
    )
    first, second = entries(db, op="update")
    assert first["ns"] == second["ns"] == "prof.orders"
    assert first["command"] == {"q": {"user_id": 1}, "u": {"$inc": {"n": 100}}, "multi": True, "upsert": False}
    assert (first["nMatched"], first["nModified"], first["keysExamined"], first["docsExamined"]) == (5, 5, 5, 5)
    assert first["planSummary"] == "IXSCAN { user_id: 1 }"
    assert second["command"] == {"q": {"_id": 2}, "u": {"$set": {"n": 2}}, "multi": False, "upsert": False}
    assert (second["nMatched"], second["nModified"]) == (1, 0)  # n was 2 already
    assert second["planSummary"] == "IDHACK"
    assert "nUpserted" not in first and isinstance(first["millis"], int)


def test_upsert_entry(db: Any) -> None:
    db.orders.update_one({"_id": 99}, {"$set": {"n": 1}}, upsert=True)
    (entry,) = entries(db, op="update")
    assert (entry["nMatched"], entry["nModified"], entry["nUpserted"]) == (0, 0, 1)
    assert entry["command"]["upsert"] is True


def test_each_delete_statement_has_its_entry(db: Any) -> None:
    db.orders.bulk_write([DeleteOne({"user_id": 3}), DeleteOne({"_id": 0})])
    first, second = entries(db, op="remove")
    assert first["command"] == {"q": {"user_id": 3}, "limit": 1}
    assert (first["ndeleted"], first["keysExamined"], first["docsExamined"]) == (1, 1, 1)
    assert second["command"] == {"q": {"_id": 0}, "limit": 1} and second["ndeleted"] == 1


def test_failed_statement_entry(db: Any) -> None:
    with pytest.raises(WriteError):
        db.orders.update_one({"_id": 1}, {"$inc": {"n": "x"}})
    (entry,) = entries(db, op="update")
    assert (entry["ok"], entry["errCode"], entry["errName"]) == (0.0, 14, "TypeMismatch")


@pytest.mark.parametrize("command", ["createUser", "updateUser"])
def test_passwords_never_reach_the_profiler(db: Any, command: str) -> None:
    if command == "updateUser":
        db.command("createUser", "alice", pwd="first secret", roles=[])
    db.command(command, "alice", pwd="s3cret", roles=[])
    (entry,) = entries(db, **{f"command.{command}": "alice"})
    assert entry["command"]["pwd"] == "xxx"
    everything = str(list(db["system.profile"].find()))
    assert "s3cret" not in everything and "first secret" not in everything
