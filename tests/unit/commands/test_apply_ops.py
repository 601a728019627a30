"""applyOps as a MongoDB 8 replica set's primary runs it.

Manual: https://www.mongodb.com/docs/manual/reference/command/applyOps/ (an internal command: the
manual gives its privileges only). The behaviour checked is mongod's source (mongodb/mongo):
src/mongo/db/commands/apply_ops_cmd.cpp, oplog_application_checks.cpp, src/mongo/db/repl/apply_ops.cpp
and oplog.cpp (applyOperation_inlock), and write_ops_parsers.cpp (UpdateModification::parseFromOplogEntry).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from bson.binary import Binary
from pymongo.errors import OperationFailure


def failure(db: Any, cmd: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(OperationFailure) as info:
        db.command(cmd)
    return info.value.code, info.value.details


def docs(db: Any) -> list[dict[str, Any]]:
    return list(db.c.find({}, sort=[("_id", 1)]))


@pytest.fixture
def coll(db: Any) -> Any:
    db.create_collection("c")
    return db.c


def test_inserts_updates_and_deletes_apply_in_order(db: Any, coll: Any) -> None:
    reply = db.command(
        {
            "applyOps": [
                {"op": "i", "ns": "test.c", "o": {"_id": 1, "x": 1}},
                {"op": "i", "ns": "test.c", "o": {"_id": 2, "x": 2}},
                {"op": "u", "ns": "test.c", "o2": {"_id": 1}, "o": {"_id": 1, "x": 10}},
                {"op": "d", "ns": "test.c", "o": {"_id": 2}},
                {"op": "n", "ns": "", "o": {"msg": "a note is skipped"}},
            ]
        }
    )
    assert reply["applied"] == 4 and reply["results"] == [True] * 4
    assert docs(db) == [{"_id": 1, "x": 10}]


def test_a_v2_diff_updates_in_place(db: Any, coll: Any) -> None:
    # doc_diff.h: d deletes, u sets in place, i appends, s<field> is a sub-diff (a: true for an array).
    coll.insert_one({"_id": 1, "a": 1, "b": 2, "sub": {"k": 1, "arr": [1, 2, 3]}, "gone": 0})
    diff = {
        "d": {"gone": False},
        "u": {"a": 5},
        "i": {"new": True},
        "ssub": {"u": {"k": 2}, "sarr": {"a": True, "l": 2, "u1": 20}},
    }
    db.command({"applyOps": [{"op": "u", "ns": "test.c", "o2": {"_id": 1}, "o": {"$v": 2, "diff": diff}}]})
    assert list(coll.find()) == [{"_id": 1, "a": 5, "b": 2, "sub": {"k": 2, "arr": [1, 20]}, "new": True}]


def test_classic_update_operators_are_not_oplog_updates(db: Any, coll: Any) -> None:
    # parseFromOplogEntry: a replacement holds _id, a diff is $v: 2; else 4772600.
    coll.insert_one({"_id": 1})
    code, reply = failure(db, {"applyOps": [{"op": "u", "ns": "test.c", "o2": {"_id": 1}, "o": {"$set": {"x": 1}}}]})
    assert code == 4772600
    assert reply["applied"] == 1 and reply["results"] == [False]


def test_always_upsert_is_the_default(db: Any, coll: Any) -> None:
    update = {"op": "u", "ns": "test.c", "o2": {"_id": 7}, "o": {"_id": 7, "y": 1}}
    # apply_ops.idl: alwaysUpsert defaults to true, so an update of a missing document inserts it.
    db.command({"applyOps": [update]})
    assert docs(db) == [{"_id": 7, "y": 1}]
    coll.delete_many({})
    # Without it, the update of nothing fails (UpdateOperationFailed, returned): results false, and the
    # command fails with UnknownError after applying the rest.
    code, reply = failure(
        db, {"applyOps": [update, {"op": "i", "ns": "test.c", "o": {"_id": 8}}], "alwaysUpsert": False}
    )
    assert code == 8
    assert reply["errmsg"] == "applyOps had one or more errors applying ops"
    assert reply["applied"] == 2 and reply["results"] == [False, True]
    assert docs(db) == [{"_id": 8}]
    # The op's own "b" makes it an upsert again.
    db.command({"applyOps": [{**update, "b": True}], "alwaysUpsert": False})
    assert docs(db) == [{"_id": 7, "y": 1}, {"_id": 8}]


def test_an_insert_of_an_existing_id_replaces_it(db: Any, coll: Any) -> None:
    # applyOperation_inlock: a DuplicateKey insert is retried as an upsert.
    coll.insert_one({"_id": 1, "old": True})
    reply = db.command({"applyOps": [{"op": "i", "ns": "test.c", "o": {"_id": 1, "new": True}}]})
    assert reply["results"] == [True]
    assert docs(db) == [{"_id": 1, "new": True}]


def test_not_atomic_an_error_stops_but_keeps_what_was_applied(db: Any, coll: Any) -> None:
    ops = [
        {"op": "i", "ns": "test.c", "o": {"_id": 1}},
        {"op": "i", "ns": "test.missing", "o": {"_id": 2}},  # NamespaceNotFound: thrown, stops here
        {"op": "i", "ns": "test.c", "o": {"_id": 3}},
    ]
    code, reply = failure(db, {"applyOps": ops})
    assert code == 26
    assert reply["applied"] == 2 and reply["results"] == [True, False]
    assert docs(db) == [{"_id": 1}]


def test_a_delete_needs_no_document_nor_collection(db: Any) -> None:
    reply = db.command({"applyOps": [{"op": "d", "ns": "test.nothing", "o": {"_id": 1}}]})
    assert reply["results"] == [True]


def test_a_uuid_naming_another_collection_fails_that_op(db: Any, coll: Any) -> None:
    other = Binary(uuid.uuid4().bytes, 4)
    code, reply = failure(db, {"applyOps": [{"op": "i", "ns": "test.c", "ui": other, "o": {"_id": 1}}]})
    assert code == 8 and reply["results"] == [False]  # 3318200 is returned: the command's error is 8
    assert docs(db) == []


def test_command_ops_run_their_commands(db: Any) -> None:
    reply = db.command(
        {
            "applyOps": [
                {"op": "c", "ns": "test.$cmd", "o": {"create": "made"}},
                {"op": "c", "ns": "test.$cmd", "o": {"createIndexes": "made", "v": 2, "key": {"a": 1}, "name": "a_1"}},
                {"op": "i", "ns": "test.made", "o": {"_id": 1, "a": 1}},
            ]
        }
    )
    assert reply["results"] == [True, True, True]
    assert "a_1" in db.made.index_information()
    db.command({"applyOps": [{"op": "c", "ns": "test.$cmd", "o": {"renameCollection": "test.made", "to": "test.b"}}]})
    assert db.list_collection_names() == ["b"]
    # oplog.cpp: index builds are a secondary's business (CommandNotSupported in applyOps mode).
    build = {"op": "c", "ns": "test.$cmd", "o": {"startIndexBuild": "b", "indexes": []}}
    assert failure(db, {"applyOps": [build]})[0] == 115
    assert failure(db, {"applyOps": [{"op": "c", "ns": "test.$cmd", "o": {"noSuchThing": 1}}]})[0] == 2


def test_drop_database_must_be_alone(db: Any, coll: Any) -> None:
    drop = {"op": "c", "ns": "test.$cmd", "o": {"dropDatabase": 1}}
    assert failure(db, {"applyOps": [drop, {"op": "n", "ns": "", "o": {}}]})[0] == 6275900
    nested = {"op": "c", "ns": "admin.$cmd", "o": {"applyOps": [drop]}}
    assert failure(db, {"applyOps": [nested]})[0] == 9585500
    db.command({"applyOps": [drop]})
    assert "test" not in db.client.list_database_names()


@pytest.mark.parametrize(
    ("cmd", "code"),
    [
        ({"applyOps": 1}, 14),  # checkBSONType: TypeMismatch
        ({"applyOps": [1]}, 14),
        ({"applyOps": [{"ns": "test.c", "o": {}}]}, 14),  # "op" missing
        ({"applyOps": [{"op": "", "ns": "test.c", "o": {}}]}, 20),  # checkOperation: IllegalOperation
        ({"applyOps": [{"op": "i", "o": {"_id": 1}}]}, 20),
        ({"applyOps": [{"op": "i", "ns": "", "o": {"_id": 1}}]}, 20),
        ({"applyOps": [{"op": "i", "ns": "nodot", "o": {"_id": 1}}]}, 73),  # InvalidNamespace
        ({"applyOps": [{"op": "i", "ns": "test.c", "o": {"x": 1}}]}, 4),  # no _id: NoSuchKey
        ({"applyOps": [{"op": "u", "ns": "test.c", "o": {"_id": 1}}]}, 4),  # no o2._id
        ({"applyOps": [], "prepare": True}, 2),
        ({"applyOps": [], "partialTxn": True}, 31056),
        ({"applyOps": [], "count": 1}, 31240),
        ({"applyOps": [], "alwaysUpsert": 1}, 14),
    ],
)
def test_malformed_commands_fail_as_mongods(db: Any, coll: Any, cmd: dict[str, Any], code: int) -> None:
    assert failure(db, cmd)[0] == code


def test_nested_apply_ops_stop_at_ten(db: Any, coll: Any) -> None:
    inner: dict[str, Any] = {"applyOps": [{"op": "i", "ns": "test.c", "o": {"_id": 1}}]}
    for _ in range(11):
        inner = {"applyOps": [{"op": "c", "ns": "test.$cmd", "o": inner}]}
    assert failure(db, inner)[0] == 9  # FailedToParse "Too many nested applyOps"


def test_not_in_a_transaction(client: Any, coll: Any) -> None:
    # OperationNotSupportedInTransaction: applyOps is not among the commands a transaction runs.
    with client.start_session() as session:
        session.start_transaction()
        with pytest.raises(OperationFailure) as info:
            client.test.command({"applyOps": []}, session=session)
    assert info.value.code == 263
