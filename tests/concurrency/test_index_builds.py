"""Index builds leave the collection open to reads and writes, and end exactly right.

MongoDB builds indexes without holding an exclusive lock for the whole build
(hybrid builds): writes during the build are applied to the new index, a
uniqueness violation fails the build, and a second request for the same
index waits for the build in progress.

Manual: https://www.mongodb.com/docs/manual/core/index-creation/
"""

from __future__ import annotations

import random
from typing import Any

from pymongo.errors import DuplicateKeyError, OperationFailure

from tests.concurrency.background import Background, wait_for
from tests.concurrency.conftest import Deployment

DOCS = 40_000


def _fill(coll: Any, n: int = DOCS, unique: bool = False) -> None:
    for start in range(0, n, 20_000):
        coll.insert_many(
            [{"_id": i, "k": i if unique else i % 500, "tags": [i % 7, i % 11]} for i in range(start, start + 20_000)]
        )


def _building(admin: Any) -> bool:
    return any("progress" in op for op in admin.admin.command("currentOp")["inprog"])


def test_writes_during_a_build_end_up_in_the_index(deployment: Deployment) -> None:
    client, writer, admin = deployment.connect(), deployment.connect(), deployment.connect()
    _fill(client.test.c)
    build = Background(lambda: client.test.c.create_index([("k", 1), ("tags", 1)], name="k_tags"))
    wait_for(lambda: _building(admin) or not build.running)
    rng = random.Random(7)
    writes = 0
    while build.running or writes < 50:
        choice = rng.random()
        n = rng.randrange(DOCS + 1000)
        if choice < 0.4:
            writer.test.c.update_one({"_id": n}, {"$set": {"k": rng.randrange(500), "tags": [rng.randrange(7)]}})
        elif choice < 0.7:
            writer.test.c.delete_one({"_id": n})
        else:
            writer.test.c.replace_one({"_id": n}, {"k": rng.randrange(500), "tags": []}, upsert=True)
        writes += 1
    build.join()
    assert build.error is None and build.result == "k_tags"
    assert admin.test.command("validate", "c")["valid"]
    for k in (0, 1, 250, 499):
        via_index = {d["_id"] for d in admin.test.c.find({"k": k}, {"_id": 1}).hint("k_tags")}
        via_scan = {d["_id"] for d in admin.test.c.find({"k": k}, {"_id": 1}).hint({"$natural": 1})}
        assert via_index == via_scan, k


def test_a_concurrent_duplicate_fails_a_unique_build(deployment: Deployment) -> None:
    client, writer, admin = deployment.connect(), deployment.connect(), deployment.connect()
    _fill(client.test.u, unique=True)
    build = Background(lambda: client.test.u.create_index("k", unique=True))
    wait_for(lambda: _building(admin))
    # k = 0 is already indexed (the build goes in record order): the write succeeds, the build fails.
    writer.test.u.insert_one({"_id": "dup", "k": 0})
    build.join()
    assert isinstance(build.error, (DuplicateKeyError, OperationFailure)) and build.error.code == 11000
    assert "E11000 duplicate key error" in str(build.error)
    assert [ix["name"] for ix in admin.test.u.list_indexes()] == ["_id_"]
    assert admin.test.command("validate", "u")["valid"]
    assert admin.test.u.count_documents({"k": 0}) == 2


def test_the_same_index_requested_again_waits_for_the_build(deployment: Deployment) -> None:
    first_client, second_client, admin = deployment.connect(), deployment.connect(), deployment.connect()
    _fill(first_client.test.c)
    first = Background(lambda: first_client.test.c.create_index("k"))
    wait_for(lambda: _building(admin))
    reply = second_client.test.command("createIndexes", "c", indexes=[{"key": {"k": 1}, "name": "k_1"}])
    # It answered once the build was done: the index is ready now.
    assert sorted(ix["name"] for ix in admin.test.c.list_indexes()) == ["_id_", "k_1"]
    first.join()
    assert first.error is None
    assert reply["ok"] == 1.0 and reply.get("note") == "all indexes already exist"
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] == 2
    assert sorted(ix["name"] for ix in admin.test.c.list_indexes()) == ["_id_", "k_1"]


def test_dropping_an_index_being_built_aborts_the_build(deployment: Deployment) -> None:
    client, admin = deployment.connect(), deployment.connect()
    _fill(client.test.c)
    build = Background(lambda: client.test.c.create_index("k"))
    wait_for(lambda: _building(admin))
    admin.test.command("dropIndexes", "c", index="k_1")
    build.join()
    assert isinstance(build.error, OperationFailure) and build.error.code == 276  # IndexBuildAborted
    assert [ix["name"] for ix in admin.test.c.list_indexes()] == ["_id_"]
    assert admin.test.command("validate", "c")["valid"]
