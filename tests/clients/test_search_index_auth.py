"""The privilege actions mongod checks for search indexes, under ``--auth``.

https://www.mongodb.com/docs/manual/reference/privilege-actions/#mongodb-authaction-createSearchIndexes
(createSearchIndexes, updateSearchIndex, dropSearchIndex, listSearchIndexes on the collection);
$vectorSearch reads as a find. Built-in roles: read has listSearchIndexes; readWrite has all four.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from foliodb.server import Server

pytestmark = pytest.mark.clients

DEFINITION = {"fields": [{"type": "vector", "path": "v", "numDimensions": 2, "similarity": "euclidean"}]}


@pytest.fixture
def address(tmp_path: Path) -> Iterator[tuple[str, int]]:
    server = Server(str(tmp_path / "data"), "127.0.0.1", 0, auth=True)
    host, port = server.start()
    with pymongo.MongoClient(host, port) as first:
        first.admin.command("createUser", "root", pwd="pw", roles=["root"])
    with pymongo.MongoClient(host, port, username="root", password="pw") as root:
        root.shop.items.insert_one({"_id": 1, "v": [1, 0]})
        root.shop.command("createUser", "reader", pwd="pw", roles=["read"])
        root.shop.command("createUser", "writer", pwd="pw", roles=["readWrite"])
        root.shop.command(
            "createRole",
            "lister",
            privileges=[{"resource": {"db": "shop", "collection": "items"}, "actions": ["listSearchIndexes"]}],
            roles=[],
        )
        root.shop.command("createUser", "lister", pwd="pw", roles=["lister"])
    yield host, port
    server.shutdown()


def _as(address: tuple[str, int], user: str) -> Any:
    return pymongo.MongoClient(*address, username=user, password="pw", authSource="shop").shop.items


def _code(call: Any) -> int:
    with pytest.raises(OperationFailure) as info:
        call()
    return int(info.value.code or 0)


def test_actions(address: tuple[str, int]) -> None:
    writer, reader, lister = _as(address, "writer"), _as(address, "reader"), _as(address, "lister")
    model = SearchIndexModel(definition=DEFINITION, name="vec", type="vectorSearch")
    assert _code(lambda: reader.create_search_index(model)) == 13
    assert writer.create_search_index(model) == "vec"
    assert [i["name"] for i in reader.list_search_indexes()] == ["vec"]
    assert [i["name"] for i in lister.list_search_indexes()] == ["vec"]  # listSearchIndexes alone suffices
    stage = {"$vectorSearch": {"index": "vec", "path": "v", "queryVector": [1, 0], "exact": True, "limit": 1}}
    assert [d["_id"] for d in reader.aggregate([stage])] == [1]
    assert _code(lambda: list(lister.aggregate([stage]))) == 13  # $vectorSearch needs find
    assert _code(lambda: reader.update_search_index("vec", DEFINITION)) == 13
    assert _code(lambda: reader.drop_search_index("vec")) == 13
    writer.update_search_index("vec", DEFINITION)
    writer.drop_search_index("vec")
    assert list(reader.list_search_indexes()) == []
