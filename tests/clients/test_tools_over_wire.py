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


def test_archive_users_import_and_export_over_the_wire(server: RunningServer, tmp_path: Path) -> None:
    import io
    import re

    from foliodb.tools.dump import dump_archive
    from foliodb.tools.exporter import ExportOptions, export_documents
    from foliodb.tools.importer import ImportOptions, import_documents
    from foliodb.tools.restore import restore_archive

    with foliodb.MongoClient(str(tmp_path / "local")) as local:
        local.admin.command("createUser", "ann", pwd="pw", roles=["readWriteAnyDatabase"])
        local.shop.orders.insert_many([{"_id": i, "user": i % 7} for i in range(300)])
        local.shop.orders.create_index("user")
        embedded = io.BytesIO()
        dump_archive(local, embedded)
    with server.client() as wire:
        # Through pymongo the documents travel as RawBSONDocument; the users through
        # _mergeAuthzCollections, or, as FolioDB has no such command, written directly.
        report = restore_archive(wire, io.BytesIO(embedded.getvalue()))
        assert report.documents == {"shop.orders": 300} and report.users == 1
        assert [u["user"] for u in wire.admin.command("usersInfo", 1)["users"]] == ["ann"]
        served = io.BytesIO()
        dump_archive(wire, served)
        text = io.StringIO()
        assert export_documents(wire.shop.orders, text, ExportOptions(query={"user": 3})) == 43
        report = import_documents(wire.shop.copy, io.BytesIO(text.getvalue().encode()), ImportOptions())
        assert report.imported == 43 and wire.shop.copy.count_documents({"user": 3}) == 43

    def without_uuids(data: bytes) -> bytes:
        return re.sub(rb'"uuid":"[0-9a-f]{32}"', b'"uuid":"' + b"0" * 32 + b'"', data)

    assert without_uuids(served.getvalue()) == without_uuids(embedded.getvalue())
