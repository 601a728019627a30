"""``foliodb dump`` and ``foliodb restore``: mongodump's directory format,
byte for byte where the format fixes the bytes, and round trips that lose
nothing (documents, types, field order, indexes, options, views).

Format: https://www.mongodb.com/docs/database-tools/mongodump/#output and
https://www.mongodb.com/docs/database-tools/mongorestore/
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson import Int64, ObjectId, Timestamp
from bson.raw_bson import RawBSONDocument
from pymongo.errors import DuplicateKeyError

import foliodb
from foliodb.cli import main
from foliodb.tools.dump import dump
from foliodb.tools.progress import SILENT
from foliodb.tools.restore import Loader, Options, restore
from tests.bson_values import EDGE_VALUES


@pytest.fixture
def source(tmp_path: Path) -> Any:
    client = foliodb.MongoClient(str(tmp_path / "source"))
    db = client.shop
    db.create_collection("products", validator={"$jsonSchema": {"required": ["sku"]}})
    db.products.insert_many(
        [{"_id": i, "sku": f"s{i}", "price": i * 100, "tags": ["a", "b"][: i % 3]} for i in range(50)]
    )
    db.products.create_index([("sku", 1)], unique=True)
    db.products.create_index(
        [("price", -1), ("tags", 1)], name="price_tags", partialFilterExpression={"price": {"$gt": 10}}
    )
    db.create_collection("log", capped=True, size=8192)
    db.log.insert_many([{"n": n} for n in range(10)])
    db.sessions.create_index("created", expireAfterSeconds=3600)
    db.sessions.insert_one({"_id": ObjectId(), "created": 1})
    db.create_collection("cheap", viewOn="products", pipeline=[{"$match": {"price": {"$lt": 500}}}])
    client.other.things.insert_one({"_id": "x"})
    yield client
    client.close()


def test_layout_and_bson_files(source: Any, tmp_path: Path) -> None:
    report = dump(source, str(tmp_path / "dump"))
    shop = tmp_path / "dump" / "shop"
    assert sorted(p.name for p in shop.iterdir()) == [
        "cheap.metadata.json",  # a view: metadata only
        "log.bson",
        "log.metadata.json",
        "products.bson",
        "products.metadata.json",
        "sessions.bson",
        "sessions.metadata.json",
    ]
    assert report.documents == {"shop.log": 10, "shop.products": 50, "shop.sessions": 1, "other.things": 1}
    assert report.views == ["shop.cheap"]
    # The .bson file is the documents' BSON, concatenated in natural order.
    expected = b"".join(bson.encode(doc) for doc in source.shop.products.find())
    assert (shop / "products.bson").read_bytes() == expected


def test_metadata_is_canonical_extended_json(source: Any, tmp_path: Path) -> None:
    dump(source, str(tmp_path / "dump"))
    text = (tmp_path / "dump" / "shop" / "products.metadata.json").read_text()
    raw = json.loads(text)
    assert list(raw) == ["options", "indexes", "uuid", "collectionName", "type"]
    assert raw["indexes"][0] == {"v": {"$numberInt": "2"}, "key": {"_id": {"$numberInt": "1"}}, "name": "_id_"}
    assert raw["indexes"][1]["unique"] is True
    assert raw["options"] == {"validator": {"$jsonSchema": {"required": ["sku"]}}}
    assert len(raw["uuid"]) == 32 and int(raw["uuid"], 16) >= 0
    assert (raw["collectionName"], raw["type"]) == ("products", "collection")
    view = json.loads((tmp_path / "dump" / "shop" / "cheap.metadata.json").read_text())
    assert view["type"] == "view" and view["indexes"] == []
    assert view["options"]["viewOn"] == "products"


def comparable(client: Any) -> dict[str, Any]:
    """Everything a restore must reproduce, per database: documents as bytes, indexes, options.
    Not ``local`` (each deployment's own oplog), which mongodump skips too."""
    out: dict[str, Any] = {}
    for name in client.list_database_names():
        if name == "local":
            continue
        for info in client[name].list_collections():
            coll = client[name][info["name"]]
            entry: dict[str, Any] = {"options": info.get("options"), "type": info["type"]}
            if info["type"] == "collection":
                raw = coll.with_options(codec_options=bson.CodecOptions(document_class=bson.raw_bson.RawBSONDocument))
                entry["documents"] = [doc.raw for doc in raw.find()]
                entry["indexes"] = list(coll.list_indexes())
            else:
                entry["documents"] = list(coll.find())
            out[f"{name}.{info['name']}"] = entry
    return out


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_round_trip_loses_nothing(source: Any, tmp_path: Path, compressed: bool) -> None:
    values = [v for v in EDGE_VALUES if v != Timestamp(0, 0)]  # an empty top-level timestamp is filled on insert
    source.types.all.insert_many([{"_id": n, "v": v, "in": {"list": [v, {"v": v}]}} for n, v in enumerate(values)])
    dump(source, str(tmp_path / "dump"), gzip=compressed)
    if compressed:
        assert (tmp_path / "dump" / "types" / "all.bson.gz").is_file()
    with foliodb.MongoClient(str(tmp_path / "copy")) as copy:
        report = restore(copy, str(tmp_path / "dump"))
        assert report.documents["shop.products"] == 50 and report.indexes["shop.products"] == 2
        assert comparable(copy) == comparable(source)
        # The restored indexes are live: the unique one refuses a duplicate.
        with pytest.raises(DuplicateKeyError):
            copy.shop.products.insert_one({"sku": "s1"})


def test_restore_again_skips_existing_ids_and_drop_replaces(source: Any, tmp_path: Path) -> None:
    dump(source, str(tmp_path / "dump"), db="shop", collection="products")
    assert sorted(p.name for p in (tmp_path / "dump" / "shop").iterdir()) == ["products.bson", "products.metadata.json"]
    with foliodb.MongoClient(str(tmp_path / "copy")) as copy:
        restore(copy, str(tmp_path / "dump"))
        copy.shop.products.update_one({"_id": 1}, {"$set": {"price": Int64(-1)}})
        again = restore(copy, str(tmp_path / "dump"))
        # As mongorestore: duplicate _ids are reported and skipped, the rest goes on.
        assert (again.documents["shop.products"], again.skipped["shop.products"], again.failures) == (0, 50, {})
        assert copy.shop.products.find_one({"_id": 1})["price"] == -1
        restore(copy, str(tmp_path / "dump"), Options(drop=True))
        assert copy.shop.products.find_one({"_id": 1})["price"] == 100


def test_restores_what_mongodump_writes(tmp_path: Path) -> None:
    # A dump as mongodump 100.x writes it for a MongoDB 4.2 server: compact JSON, index
    # specs with "ns", numbers as {"$numberInt"}, options with a validator.
    directory = tmp_path / "dump" / "legacy"
    directory.mkdir(parents=True)
    docs = [{"_id": ObjectId(), "name": "a", "n": Int64(1)}, {"_id": ObjectId(), "name": "b", "n": 2.5}]
    (directory / "people.bson").write_bytes(b"".join(bson.encode(d) for d in docs))
    (directory / "people.metadata.json").write_text(
        '{"options":{"validator":{"name":{"$type":"string"}}},"indexes":[{"v":{"$numberInt":"2"},'
        '"key":{"_id":{"$numberInt":"1"}},"name":"_id_","ns":"legacy.people"},{"v":{"$numberInt":"2"},'
        '"key":{"name":{"$numberInt":"1"},"n":{"$numberInt":"-1"}},"name":"name_1_n_-1","ns":"legacy.people",'
        '"sparse":true}],"uuid":"0123456789abcdef0123456789abcdef","collectionName":"people"}'
    )
    with gzip.open(directory / "empty.metadata.json.gz", "wt") as fh:
        fh.write('{"options":{},"indexes":[],"collectionName":"empty"}')
    with foliodb.MongoClient(":memory:") as client:
        restore(client, str(tmp_path / "dump"))
        assert list(client.legacy.people.find()) == docs
        assert client.legacy.people.index_information()["name_1_n_-1"] == {
            "v": 2,
            "key": [("name", 1), ("n", -1)],
            "sparse": True,
        }
        assert client.legacy.people.options() == {"validator": {"name": {"$type": "string"}}}
        assert "empty" in client.legacy.list_collection_names()


def test_cli(source: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source.close()  # one process per dbpath: the CLI opens it itself
    dbpath, out = str(tmp_path / "source"), str(tmp_path / "dump")
    # Notes go to stderr, as mongodump's do: stdout may carry an archive.
    assert main(["dump", "--dbpath", dbpath, "--out", out, "--db", "shop"]) == 0
    assert "done dumping shop.products (50 documents)" in capsys.readouterr().err
    assert main(["restore", "--dbpath", str(tmp_path / "copy"), out]) == 0
    err = capsys.readouterr().err
    assert "restored 50 documents to shop.products, 2 indexes" in err
    assert "61 document(s) restored successfully. 0 document(s) failed to restore." in err
    assert main(["restore", "--dbpath", str(tmp_path / "copy"), str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err == f"foliodb restore: no dump directory at {tmp_path / 'missing'}\n"
    assert main(["dump", "--dbpath", dbpath, "--collection", "products"]) == 1
    assert capsys.readouterr().err == "foliodb dump: --collection needs --db\n"


def test_bson_files_are_cut_at_document_boundaries(tmp_path: Path) -> None:
    # Documents larger than the 1 MiB read chunk, and a batch cut at 16 MiB, as mongorestore's.
    directory = tmp_path / "dump" / "big"
    directory.mkdir(parents=True)
    docs = [{"_id": i, "blob": bytes([i]) * (700_000 + i)} for i in range(30)]
    (directory / "c.bson").write_bytes(b"".join(bson.encode(d) for d in docs))
    with foliodb.MongoClient(":memory:") as client:
        assert restore(client, str(tmp_path / "dump")).documents == {"big.c": 30}
        assert list(client.big.c.find()) == docs
    (directory / "c.bson").write_bytes(bson.encode(docs[0]) + bson.encode(docs[1])[:-10])
    with foliodb.MongoClient(":memory:") as client, pytest.raises(ValueError, match="truncated BSON document"):
        restore(client, str(tmp_path / "dump"))


def test_documents_reach_each_client_in_its_cheapest_form() -> None:
    # pymongo sends a RawBSONDocument's bytes as they are; FolioDB's embedded client (a
    # pymongo.MongoClient subclass) decodes each one in full, twice, so it is given dicts:
    # a restore into it ran at half insert_many's rate with RawBSONDocuments.
    with foliodb.MongoClient(":memory:") as embedded:
        assert Loader(embedded, Options(), SILENT).codec.document_class is dict
    with pymongo.MongoClient("mongodb://127.0.0.1:1", connect=False) as wire:
        assert Loader(wire, Options(), SILENT).codec.document_class is RawBSONDocument
