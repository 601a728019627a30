"""An embedded dbpath across closes, reopens and processes: data survives,
one process at a time holds the dbpath, and the demo can run twice.

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError, InvalidOperation, WriteError

import foliodb

DEMO = "EXAMPLES.md of the schema-design texts"  # the catalogue system `foliodb demo` loads
WRITE_CONCERN = "https://www.mongodb.com/docs/manual/reference/write-concern/"  # acknowledged writes are durable
CLOSE = "https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html#pymongo.mongo_client.MongoClient.close"

OPEN_ELSEWHERE = """
import sys
import foliodb
from pymongo.errors import OperationFailure
try:
    client = foliodb.MongoClient(sys.argv[1])
except OperationFailure as exc:
    print(exc.code, exc.details["codeName"], exc.details["errmsg"])
else:
    print("opened", client.db.items.count_documents({}))
    client.close()
"""


def open_in_another_process(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", OPEN_ELSEWHERE, str(path)], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_a_second_process_opens_a_dbpath_in_use_through_its_owner(tmp_path: Path) -> None:
    # The second process's client sends its commands to the owner's engine
    # (foliodb.server.share); once the owner closes, it opens the dbpath itself.
    path = tmp_path / "data"
    client = foliodb.MongoClient(str(path))
    client.db.items.insert_one({"_id": 1})
    assert open_in_another_process(path) == "opened 1"
    client.close()
    assert open_in_another_process(path) == "opened 1"


def test_data_indexes_and_options_survive_close_and_reopen(tmp_path: Path) -> None:
    # WRITE_CONCERN / CLOSE: acknowledged writes are on disk; a closed client's
    # dbpath reopens with its documents, indexes and collection options.
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as client:
        client.shop.create_collection("orders", validator={"total": {"$gte": 0}})
        client.shop.orders.insert_many([{"_id": i, "sku": f"S{i}", "total": i} for i in range(5)])
        client.shop.orders.create_index("sku", unique=True)
        client.shop.orders.update_one({"_id": 0}, {"$set": {"total": 10}})
        client.shop.orders.delete_one({"_id": 4})
    with foliodb.MongoClient(path) as client:
        orders = client.shop.orders
        assert [(d["_id"], d["total"]) for d in orders.find().sort("_id")] == [(0, 10), (1, 1), (2, 2), (3, 3)]
        assert sorted(orders.index_information()) == ["_id_", "sku_1"]
        with pytest.raises(DuplicateKeyError):
            orders.insert_one({"sku": "S1", "total": 1})
        with pytest.raises(WriteError) as info:
            orders.insert_one({"sku": "S9", "total": -1})
        assert info.value.code == 121


def test_a_closed_client_refuses_work(tmp_path: Path) -> None:
    # CLOSE: a closed embedded client cannot be used again (its dbpath is released).
    client = foliodb.MongoClient(str(tmp_path / "data"))
    client.close()
    with pytest.raises(InvalidOperation, match="after close"):
        client.db.items.insert_one({})


def run_demo(path: Path) -> None:
    subprocess.run([sys.executable, "-m", "foliodb", "demo", str(path)], capture_output=True, timeout=300, check=True)


def contents(path: Path) -> dict[str, Any]:
    with foliodb.MongoClient(str(path)) as client:
        return {
            f"{db}.{name}": list(client[db][name].find().sort("_id"))
            for db in client.list_database_names()
            for name in client[db].list_collection_names()
        }


def test_the_demo_twice_does_not_duplicate_data(tmp_path: Path) -> None:
    # DEMO: `foliodb demo` writes every document by _id with upserts, so a second run changes nothing.
    path = tmp_path / "demo"
    run_demo(path)
    first = contents(path)
    assert first and all(first.values())
    run_demo(path)
    assert contents(path) == first
