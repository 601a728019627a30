"""dump and restore through pymongo against ``foliodb serve``: the same code
that moves data to a MongoDB deployment (``foliodb restore --uri``), with the
server standing in for it."""

from __future__ import annotations

from pathlib import Path

import pytest

import foliodb
from foliodb.tools.dump import dump
from foliodb.tools.restore import restore
from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients


def test_dump_over_the_wire_equals_the_embedded_dump(server: RunningServer, tmp_path: Path) -> None:
    with foliodb.MongoClient(str(tmp_path / "local")) as local:
        local.shop.orders.insert_many([{"_id": i, "user": i % 7, "items": [{"sku": i}]} for i in range(300)])
        local.shop.orders.create_index([("user", 1), ("_id", -1)])
        local.shop.create_collection("big", viewOn="orders", pipeline=[{"$match": {"user": 6}}])
        dump(local, str(tmp_path / "from-embedded"))
    with server.client() as wire:
        restore(wire, str(tmp_path / "from-embedded"))  # into the server, through pymongo
        assert wire.shop.big.count_documents({}) == 42
        dump(wire, str(tmp_path / "from-server"))
    for name in ("orders.bson", "orders.metadata.json", "big.metadata.json"):
        embedded = (tmp_path / "from-embedded" / "shop" / name).read_text(errors="replace")
        served = (tmp_path / "from-server" / "shop" / name).read_text(errors="replace")
        if name.endswith(".json"):  # collection UUIDs differ between the two databases
            embedded, served = (text.split('"uuid"')[0] for text in (embedded, served))
        assert served == embedded, name
