"""The database profiler: the profile command's levels and the entries it
writes to system.profile, in MongoDB's shape.

Manual: https://www.mongodb.com/docs/manual/reference/command/profile/ and
https://www.mongodb.com/docs/manual/reference/database-profiler/ (output fields)
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure

from foliodb.advisor import advise


@pytest.fixture
def db(client: Any) -> Any:
    db = client.prof
    db.orders.insert_many([{"_id": i, "user_id": i % 20, "n": i} for i in range(200)])
    return db


def test_levels_and_previous_settings(db: Any) -> None:
    assert db.command("profile", -1) == {"was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    assert db.command("profile", 1, slowms=20)["was"] == 0
    assert db.command("profile", 0) == {"was": 1, "slowms": 20, "sampleRate": 1.0, "ok": 1.0}
    with pytest.raises(OperationFailure) as bad:
        db.command("profile", 3)
    assert bad.value.code == 2
    assert "system.profile" not in db.list_collection_names()  # nothing recorded at levels 0 and 1 (fast ops)


def test_level_2_records_every_operation(db: Any) -> None:
    db.command("profile", 2)
    list(db.orders.find({"user_id": 3}).sort("n", -1))
    db.orders.create_index("user_id")
    list(db.orders.find({"user_id": 4}))
    db.orders.update_many({"user_id": 5}, {"$inc": {"n": 1}})
    db.orders.delete_one({"_id": 0})
    db.command("profile", 0)
    entries = list(db["system.profile"].find())
    assert [e["op"] for e in entries] == ["query", "command", "query", "update", "remove"]
    scan, _create, indexed, update, delete = entries
    assert scan["ns"] == "prof.orders"
    assert scan["command"] == {"find": "orders", "filter": {"user_id": 3}, "sort": {"n": -1}, "$db": "prof"}
    assert (scan["planSummary"], scan["docsExamined"], scan["keysExamined"], scan["nreturned"]) == (
        "COLLSCAN",
        200,
        0,
        10,
    )
    assert (indexed["planSummary"], indexed["keysExamined"], indexed["docsExamined"]) == (
        "IXSCAN { user_id: 1 }",
        10,
        10,
    )
    assert (update["nMatched"], update["nModified"], delete["ndeleted"]) == (10, 10, 1)
    for entry in entries:
        assert isinstance(entry["millis"], int) and entry["ts"] is not None and entry["client"] == "embedded"
    assert db.command("collStats", "system.profile")["capped"] is True


def test_level_1_records_only_slow_operations(db: Any) -> None:
    db.command("profile", 1, slowms=60_000)
    list(db.orders.find({"user_id": 1}))
    db.command("profile", 1, slowms=0)
    list(db.orders.find({"user_id": 2}))
    db.command("profile", 0)
    assert [e["command"]["filter"] for e in db["system.profile"].find({"op": "query"})] == [{"user_id": 2}]


def test_large_commands_are_truncated(db: Any) -> None:
    db.command("profile", 2)
    db.big.insert_many([{"pad": "x" * 1000} for _ in range(100)])
    db.command("profile", 0)
    entry = db["system.profile"].find_one({"op": "insert"})
    assert entry["ninserted"] == 100 and entry["command"]["$truncated"].startswith('{"insert": "big"')


def test_the_advisor_reads_the_profile(db: Any) -> None:
    db.orders.insert_many([{"user_id": i % 50, "n": i} for i in range(2000)])
    db.command("profile", 2)
    for user in range(12):
        list(db.orders.find({"user_id": user}).sort("n", -1))
        db.orders.count_documents({"user_id": user})
    db.command("profile", 0)
    found = [f for f in advise(db).findings if f.recommendation == "compound-index"]
    # {user_id: 1} alone is a prefix of the sort-serving index: one finding serves both shapes.
    assert [f.change.commands for f in found] == [["db.orders.createIndex({ user_id: 1, n: -1 })"]]
    assert found[0].evidence["runs"] == 24


def test_operations_of_a_transaction_are_profiled_outside_it(client: Any, db: Any) -> None:
    """mongod profiles each operation of a transaction when it runs; the entry
    is not part of the transaction (system.profile is capped, and capped
    collections take no transactional writes), so an abort keeps it."""
    db.command("profile", 2)
    with client.start_session() as session:
        session.start_transaction()
        db.orders.update_one({"_id": 1}, {"$set": {"n": -1}}, session=session)
        assert db.orders.find_one({"_id": 2}, session=session)["n"] == 2
        session.abort_transaction()
    db.command("profile", 0)
    ops = [(e["op"], e.get("nModified")) for e in db.system.profile.find({"ns": "prof.orders"})]
    assert ("update", 1) in ops and ("query", None) in ops
    assert db.orders.find_one({"_id": 1})["n"] == 1  # the abort undid the update, not its profile entry
