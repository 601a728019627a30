"""Checks mongod makes before running a command, with its codes and
messages: hints naming no index, unknown fields, readConcern on a
standalone, database names differing in case, the write batch limit,
count's skip, $out into a view.

Manual pages per case, in the tables.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Decimal128, Timestamp
from bson.son import SON
from pymongo.errors import OperationFailure

COUNT = "https://www.mongodb.com/docs/manual/reference/command/count/"
AGGREGATE = "https://www.mongodb.com/docs/manual/reference/command/aggregate/"
READ_CONCERN = "https://www.mongodb.com/docs/manual/reference/read-concern/"
SNAPSHOT = "https://www.mongodb.com/docs/manual/reference/read-concern-snapshot/"
LIMITS = "https://www.mongodb.com/docs/manual/reference/limits/"
OUT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/"
HINT_ERROR = (
    "error processing query: planner returned error :: caused by :: hint provided does not correspond to an "
    "existing index"
)
LEVELS = "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'"

REFUSED = [
    # (page, command, code, errmsg or None)
    (COUNT, SON([("count", "c"), ("hint", "nope")]), 2, HINT_ERROR),
    (COUNT, SON([("count", "c"), ("query", {"a": 1}), ("hint", {"b": 1})]), 2, HINT_ERROR),
    (AGGREGATE, SON([("aggregate", "c"), ("pipeline", []), ("cursor", {}), ("hint", "nope")]), 2, HINT_ERROR),
    (
        AGGREGATE,
        SON([("aggregate", "c"), ("pipeline", [{"$match": {"a": 1}}]), ("cursor", {}), ("hint", {"b": 1})]),
        2,
        HINT_ERROR,
    ),
    (
        AGGREGATE,
        SON([("aggregate", "c"), ("pipeline", []), ("cursor", {}), ("bogus", 1)]),
        40415,
        "BSON field 'aggregate.bogus' is an unknown field.",
    ),
    (COUNT, SON([("count", "c"), ("bogus", 1)]), 40415, "BSON field 'count.bogus' is an unknown field."),
    (COUNT, SON([("count", "c"), ("skip", -1)]), 51024, "BSON field 'skip' value must be >= 0, actual value '-1'"),
    (READ_CONCERN, SON([("find", "c"), ("readConcern", {"level": "bogus"})]), 9, LEVELS),
    (READ_CONCERN, SON([("count", "c"), ("readConcern", {"level": "bogus"})]), 9, LEVELS),
    (
        READ_CONCERN,
        SON([("aggregate", "c"), ("pipeline", []), ("cursor", {}), ("readConcern", {"level": "Local"})]),
        9,
        LEVELS,
    ),
    (
        READ_CONCERN,
        SON([("find", "c"), ("readConcern", {"lvl": "local"})]),
        72,
        "Unrecognized option in readConcern: lvl",
    ),
    (
        SNAPSHOT,
        SON([("find", "c"), ("readConcern", {"level": "snapshot", "atClusterTime": "later"})]),
        14,
        "BSON field 'readConcern.atClusterTime' is the wrong type, expected type 'timestamp'",
    ),
    (
        SNAPSHOT,
        SON([("count", "c"), ("readConcern", {"level": "snapshot"})]),
        72,
        'Command count does not support { readConcern: { level: "snapshot" } }',
    ),
    (
        "https://www.mongodb.com/docs/manual/reference/read-concern-linearizable/",
        SON([("find", "c"), ("readConcern", {"level": "linearizable", "atClusterTime": Timestamp(1, 1)})]),
        72,
        "readConcern.atClusterTime is only valid with level 'snapshot'",
    ),
    (
        LIMITS + "#mongodb-limit-Write-Command-Batch-Limit-Size",
        SON([("insert", "c"), ("documents", [{"_id": n} for n in range(100_001)])]),
        16,
        "Write batch sizes must be between 1 and 100000. Got 100001 operations.",
    ),
    (
        LIMITS + "#mongodb-limit-Write-Command-Batch-Limit-Size",
        SON([("delete", "c"), ("deletes", [])]),
        16,
        "Write batch sizes must be between 1 and 100000. Got 0 operations.",
    ),
    (
        OUT,
        SON([("aggregate", "c"), ("pipeline", [{"$out": "v"}]), ("cursor", {})]),
        166,
        "Namespace test.v is a view, not a collection",
    ),
    # batchSize is a safeInt64: a decimal past the long range saturates (safeNumberLong) before
    # the >= 0 check; found by scripts/wire_fuzz.py (the error message failed to build).
    (
        "https://www.mongodb.com/docs/manual/reference/command/find/",
        SON([("find", "c"), ("batchSize", Decimal128("-1E+6144"))]),
        2,
        "BSON field 'batchSize' value must be >= 0, actual value '-9223372036854775808'",
    ),
]


@pytest.mark.parametrize(("page", "command", "code", "message"), REFUSED)
def test_refused(db: Any, page: str, command: SON[str, Any], code: int, message: str) -> None:
    db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    db.create_collection("v", viewOn="c", pipeline=[])
    with pytest.raises(OperationFailure) as err:
        db.command(command)
    assert (err.value.code, err.value.details["errmsg"]) == (code, message)
    assert db.c.count_documents({}) == 2  # nothing was written


ACCEPTED = [
    # (page, command, expected field, value): the same commands done right.
    (COUNT, SON([("count", "c"), ("hint", "_id_")]), "n", 2),
    (COUNT, SON([("count", "c"), ("hint", {"a": 1}), ("query", {"a": 2})]), "n", 1),
    (COUNT, SON([("count", "c"), ("fields", {"a": 1})]), "n", 2),
    (READ_CONCERN, SON([("count", "c"), ("readConcern", {"level": "majority"})]), "n", 2),
    (READ_CONCERN, SON([("count", "c"), ("readConcern", {"level": "available"})]), "n", 2),
    (READ_CONCERN, SON([("count", "c"), ("readConcern", {})]), "n", 2),
    (
        AGGREGATE,
        SON([("aggregate", "c"), ("pipeline", [{"$count": "n"}]), ("cursor", {}), ("hint", "a_1")]),
        "cursor",
        {"firstBatch": [{"n": 2}], "id": 0, "ns": "test.c"},
    ),
]


@pytest.mark.parametrize(("page", "command", "field", "value"), ACCEPTED)
def test_accepted(db: Any, page: str, command: SON[str, Any], field: str, value: Any) -> None:
    db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    db.c.create_index("a")
    assert db.command(command)[field] == value


def test_write_batch_of_100000_is_allowed(db: Any) -> None:
    # maxWriteBatchSize itself is fine: https://www.mongodb.com/docs/manual/reference/limits/
    assert db.command("insert", "c", documents=[{"_id": n} for n in range(100_000)])["n"] == 100_000


@pytest.mark.parametrize(
    "create",
    [
        lambda db: db.c.insert_one({}),
        lambda db: db.create_collection("c"),
        lambda db: db.create_collection("v", viewOn="c"),
        lambda db: db.c.update_one({}, {"$set": {"a": 1}}, upsert=True),
        lambda db: list(db.client.existing.src.aggregate([{"$out": {"db": db.name, "coll": "c"}}])),
    ],
)
def test_database_names_differ_in_case(client: Any, create: Any) -> None:
    # https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-Restriction-on-Case-Sensitivity
    client.existing.src.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as err:
        create(client.Existing)
    assert (err.value.code, err.value.details["codeName"], err.value.details["errmsg"]) == (
        13297,
        "DatabaseDifferCase",
        "db already exists with different case already have: [existing] trying to create [Existing]",
    )
    assert "Existing" not in client.list_database_names()
    # Reading a database that does not exist creates nothing, so it is no error.
    assert client.Existing.src.count_documents({}) == 0


def test_system_databases_count_for_case(client: Any) -> None:
    # admin, config and local exist on every mongod, so "Admin" clashes with "admin".
    with pytest.raises(OperationFailure) as err:
        client.Admin.c.insert_one({})
    assert err.value.code == 13297


def test_rename_into_database_differing_in_case(client: Any) -> None:
    # https://www.mongodb.com/docs/manual/reference/command/renameCollection/
    client.existing.src.insert_one({"_id": 1})
    client.other.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as err:
        client.admin.command("renameCollection", "other.c", to="Existing.c")
    assert err.value.code == 13297
