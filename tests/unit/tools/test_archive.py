"""``dump --archive`` / ``restore --archive``: mongodump's archive format,
users and roles, and mongorestore's namespace options.

The format is mongo-tools' ``common/archive/spec.md``; where the spec and the
code differ, the code decides (``prelude.go``, ``multiplexer.go``: every
namespace gets a segment even when empty, and its EOF block carries the
CRC-64/ECMA of its documents). Options:
https://www.mongodb.com/docs/database-tools/mongorestore/ and
https://www.mongodb.com/docs/database-tools/mongodump/#std-option-mongodump.--archive
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path
from typing import Any

import bson
import pytest
from bson import Int64, ObjectId
from bson.son import SON

import foliodb
from foliodb.tools import crc64
from foliodb.tools.archive import ArchiveError, ArchiveReader, ArchiveWriter, Entry, Header
from foliodb.tools.dump import dump, dump_archive
from foliodb.tools.namespaces import Matcher, Renamer
from foliodb.tools.restore import Options, restore, restore_archive

TERMINATOR = b"\xff\xff\xff\xff"


def crc64_ecma(data: bytes) -> int:
    """Bit by bit, as Go's hash/crc64 defines the ECMA table's sum (no table, so independent)."""
    crc = 0xFFFFFFFFFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xC96C5795D7870F42 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFFFFFFFFFF


def as_int64(crc: int) -> Int64:
    return Int64(crc - (1 << 64) if crc >= 1 << 63 else crc)


def ns_header(db: str, coll: str, eof: bool, crc: int = 0) -> bytes:
    # NamespaceHeader.MarshalBSON: db, collection, EOF, CRC (int64 bits of the uint64).
    return bson.encode(SON([("db", db), ("collection", coll), ("EOF", eof), ("CRC", as_int64(crc))]))


ORDERS = [{"_id": i, "user": ObjectId(f"{i:024x}"), "total": i * 1.5} for i in range(5)]
USERS = [{"_id": "u1", "name": "Ann"}]
ALICE = {
    "_id": "admin.alice",
    "user": "alice",
    "db": "admin",
    "credentials": {
        "SCRAM-SHA-256": {
            "iterationCount": 15000,
            "salt": "c2FsdHNhbHRzYWx0c2FsdHNhbHRzYWx0",
            "storedKey": "2lCTf1kLt6Fzb5dPRIAxOEX0mXP6ZCyy7ZWfKFfz6WM=",
            "serverKey": "yBn1/UgZqXfsyXjmGXbJR8yeBtn7z4bcbcdmeSSeAD0=",
        }
    },
    "roles": [{"role": "root", "db": "admin"}],
}


def mongodump_archive() -> bytes:
    """An archive as mongodump 100.x writes it from a MongoDB 8.0 server with
    --numParallelCollections 4, built by following mongo-tools' source:
    magic (prelude.go Write), the Header struct (archive.go: concurrent_collections
    int32, version, server_version, tool_version), one CollectionMetadata per
    intent (db, collection, metadata = the .metadata.json text, size int32 0, type),
    a terminator; then the multiplexer's output: a namespace header before each run
    of a namespace's documents and a terminator after it, interleaved between
    collections (here shop.orders in two segments around shop.users), and per
    namespace an EOF header with the CRC of all its documents, then a terminator.
    A view gets an empty segment (dumpValidatedQueryToIntent opens its BSONFile),
    users come first (DumpUsersAndRoles runs before DumpIntents)."""
    index_id = '{"v":{"$numberInt":"2"},"key":{"_id":{"$numberInt":"1"}},"name":"_id_"}'
    meta_orders = (
        '{"indexes":[' + index_id + ',{"v":{"$numberInt":"2"},"key":{"user":{"$numberInt":"1"},'
        '"total":{"$numberInt":"-1"}},"name":"user_1_total_-1"}],'
        '"uuid":"5d4f0a2e6c1b4e0f9a8b7c6d5e4f3a2b","collectionName":"orders","type":"collection"}'
    )
    meta_users = (
        '{"indexes":['
        + index_id
        + '],"uuid":"0123456789abcdef0123456789abcdef","collectionName":"users","type":"collection"}'
    )
    meta_view = (
        '{"options":{"viewOn":"orders","pipeline":[{"$match":{"total":{"$gt":{"$numberInt":"3"}}}}]},'
        '"indexes":[],"collectionName":"big","type":"view"}'
    )
    meta_admin = (
        '{"indexes":['
        + index_id
        + '],"uuid":"ffeeddccbbaa99887766554433221100","collectionName":"system.users","type":"collection"}'
    )
    out = (0x8199E26D).to_bytes(4, "little")
    out += bson.encode(
        SON(
            [
                ("concurrent_collections", 4),
                ("version", "0.1"),
                ("server_version", "8.0.4"),
                ("tool_version", "100.10.0"),
            ]
        )
    )
    for db, coll, meta, kind in (
        ("shop", "orders", meta_orders, "collection"),
        ("shop", "users", meta_users, "collection"),
        ("shop", "big", meta_view, "view"),
        ("admin", "system.users", meta_admin, "collection"),
    ):
        out += bson.encode(SON([("db", db), ("collection", coll), ("metadata", meta), ("size", 0), ("type", kind)]))
    out += TERMINATOR
    raw_orders = [bson.encode(d) for d in ORDERS]
    raw_users = [bson.encode(d) for d in USERS]
    raw_alice = bson.encode(ALICE)
    out += ns_header("admin", "system.users", False) + raw_alice + TERMINATOR
    out += ns_header("admin", "system.users", True, crc64_ecma(raw_alice)) + TERMINATOR
    out += ns_header("shop", "orders", False) + b"".join(raw_orders[:3]) + TERMINATOR
    out += ns_header("shop", "users", False) + b"".join(raw_users) + TERMINATOR
    out += ns_header("shop", "orders", False) + b"".join(raw_orders[3:]) + TERMINATOR
    out += ns_header("shop", "big", False) + TERMINATOR
    out += ns_header("shop", "big", True, 0) + TERMINATOR
    out += ns_header("shop", "users", True, crc64_ecma(b"".join(raw_users))) + TERMINATOR
    out += ns_header("shop", "orders", True, crc64_ecma(b"".join(raw_orders))) + TERMINATOR
    return out


# -- the CRC and the bytes ------------------------------------------------------------


@pytest.mark.parametrize("implementation", ["liblzma", "python"])
def test_crc64_is_gos_ecma_sum(implementation: str) -> None:
    update = crc64.update if implementation == "liblzma" else crc64._python_update
    if implementation == "liblzma" and crc64.update is crc64._python_update:
        pytest.skip("liblzma's lzma_crc64 is not reachable on this Python")
    assert update(0, b"123456789") == 0x995DC9BBDF1939FA  # the catalogued check value of CRC-64/XZ
    data = bytes(range(256)) * 3
    assert update(update(0, data[:100]), data[100:]) == crc64_ecma(data)


def test_writer_bytes_follow_mongo_tools() -> None:
    out = io.BytesIO()
    entry = Entry("db", "c", '{"indexes":[],"collectionName":"c","type":"collection"}', "collection")
    writer = ArchiveWriter(out, Header(server_version="8.0.0", tool_version="t"), [entry])
    docs = [bson.encode({"_id": 1}), bson.encode({"_id": 2})]
    assert writer.namespace("db", "c", docs) == 2
    expected = (0x8199E26D).to_bytes(4, "little")
    expected += bson.encode(
        SON([("concurrent_collections", 1), ("version", "0.1"), ("server_version", "8.0.0"), ("tool_version", "t")])
    )
    expected += bson.encode(
        SON([("db", "db"), ("collection", "c"), ("metadata", entry.metadata), ("size", 0), ("type", "collection")])
    )
    expected += TERMINATOR + ns_header("db", "c", False) + b"".join(docs) + TERMINATOR
    expected += ns_header("db", "c", True, crc64_ecma(b"".join(docs))) + TERMINATOR
    assert out.getvalue() == expected


def test_reader_refuses_what_mongorestore_refuses() -> None:
    good = mongodump_archive()
    with pytest.raises(ArchiveError, match="does not appear to be a mongodump archive"):
        ArchiveReader(io.BytesIO(b"\x00" + good[1:]))
    # One flipped byte inside a document: the namespace's CRC no longer matches.
    spot = good.index(bson.encode(ORDERS[1])) + 10
    corrupt = good[:spot] + bytes([good[spot] ^ 1]) + good[spot + 1 :]
    with pytest.raises(ArchiveError, match=r"CRC mismatch for namespace shop\.orders"):
        list(ArchiveReader(io.BytesIO(corrupt)).blocks())
    with pytest.raises(ArchiveError, match="truncated BSON document"):
        list(ArchiveReader(io.BytesIO(good[:-30])).blocks())


# -- restoring mongodump's archives -----------------------------------------------------


def test_restores_a_mongodump_archive(tmp_path: Path) -> None:
    with foliodb.MongoClient(":memory:") as client:
        report = restore_archive(client, io.BytesIO(mongodump_archive()))
        assert list(client.shop.orders.find()) == ORDERS
        assert list(client.shop.users.find()) == USERS
        assert client.shop.orders.index_information()["user_1_total_-1"]["key"] == [("user", 1), ("total", -1)]
        assert [d["_id"] for d in client.shop.big.find()] == [3, 4]  # total 4.5 and 6.0
        assert client.admin["system.users"].find_one() == ALICE
        assert (report.documents, report.views, report.users) == ({"shop.orders": 5, "shop.users": 1}, ["shop.big"], 1)


def test_restore_options(tmp_path: Path) -> None:
    archive = mongodump_archive()
    with foliodb.MongoClient(":memory:") as client:
        report = restore_archive(
            client,
            io.BytesIO(archive),
            Options(
                include=["shop.*"], exclude=["shop.users"], renames=(["shop.*"], ["copy.*"]), no_index_restore=True
            ),
        )
        # admin, config and local are always listed, as by mongod; admin.system.users was not included.
        assert sorted(client.list_database_names()) == ["admin", "config", "copy", "local"]
        assert "system.users" not in client.admin.list_collection_names()
        assert client.copy.orders.count_documents({}) == 5 and "users" not in client.copy.list_collection_names()
        assert list(client.copy.orders.index_information()) == ["_id_"]
        assert report.views == ["copy.big"] and client.copy.big.count_documents({}) == 2


def test_second_restore_skips_what_is_there_and_succeeds() -> None:
    # mongorestore without --drop: existing _ids are reported and skipped, an existing view is kept.
    with foliodb.MongoClient(":memory:") as client:
        restore_archive(client, io.BytesIO(mongodump_archive()))
        again = restore_archive(client, io.BytesIO(mongodump_archive()))
        assert again.skipped == {"shop.orders": 5, "shop.users": 1}
        assert again.existing_views == ["shop.big"] and again.views == []
        assert client.shop.orders.count_documents({}) == 5
        dropped = restore_archive(client, io.BytesIO(mongodump_archive()), Options(drop=True))
        assert dropped.documents["shop.orders"] == 5 and dropped.views == ["shop.big"]


def archive_variant(size: Any, view_blocks: str) -> bytes:
    """mongodump_archive's namespaces, with ``size`` in every prelude entry and the view
    given an empty segment and its EOF block ("segment"), only its EOF block ("eof"), or
    nothing ("none")."""
    out = (0x8199E26D).to_bytes(4, "little")
    out += bson.encode(
        SON([("concurrent_collections", 1), ("version", "0.1"), ("server_version", "8.0.4"), ("tool_version", "x")])
    )
    view_meta = '{"options":{"viewOn":"orders","pipeline":[]},"indexes":[],"collectionName":"big","type":"view"}'
    for coll, meta, kind, count in (("orders", "", "collection", len(ORDERS)), ("big", view_meta, "view", 0)):
        out += bson.encode(
            SON([("db", "shop"), ("collection", coll), ("metadata", meta), ("size", size(count)), ("type", kind)])
        )
    out += TERMINATOR
    raw = b"".join(bson.encode(d) for d in ORDERS)
    out += ns_header("shop", "orders", False) + raw + TERMINATOR
    out += ns_header("shop", "orders", True, crc64_ecma(raw)) + TERMINATOR
    if view_blocks == "segment":
        out += ns_header("shop", "big", False) + TERMINATOR
    if view_blocks in ("segment", "eof"):
        out += ns_header("shop", "big", True, 0) + TERMINATOR
    return out


@pytest.mark.parametrize("size", [lambda n: 0, lambda n: n, lambda n: Int64(n)], ids=["zero", "int32", "int64"])
@pytest.mark.parametrize("view_blocks", ["segment", "eof", "none"])
def test_restore_reads_any_size_and_views_with_or_without_blocks(size: Any, view_blocks: str) -> None:
    # mongodump writes size 0 and an empty segment for a view (archive.go's CollectionMetadata
    # holds size as an int, prelude.go's NewPrelude never sets it); other writers may fill
    # size in or give a view no data block: a view holds no data, so nothing is missing.
    with foliodb.MongoClient(":memory:") as client:
        report = restore_archive(client, io.BytesIO(archive_variant(size, view_blocks)))
        assert (report.documents, report.views) == ({"shop.orders": 5}, ["shop.big"])
        assert list(client.shop.orders.find()) == ORDERS and client.shop.big.count_documents({}) == 5


def test_an_archive_that_ends_before_a_collections_eof_is_refused() -> None:
    # Cut at a block boundary, after the documents but before their EOF block: every block
    # that is there parses, yet the rest of shop.orders may be missing (Demultiplexer.End).
    whole = archive_variant(lambda n: 0, "none")
    cut = whole[: whole.rindex(ns_header("shop", "orders", True, crc64_ecma(b"".join(bson.encode(d) for d in ORDERS))))]
    with (
        foliodb.MongoClient(":memory:") as client,
        pytest.raises(ArchiveError, match=r"ends before all collections were seen \(shop\.orders\)"),
    ):
        restore_archive(client, io.BytesIO(cut))


def test_time_series_buckets_of_a_mongodb_archive_are_reported_not_dropped_silently() -> None:
    # Before 8.3 mongodump writes a time-series collection's data as system.buckets.<name>
    # (demultiplexer.go); FolioDB does not unpack buckets, and says so.
    meta = '{"options":{"timeseries":{"timeField":"t","granularity":"seconds"}},"indexes":[],"collectionName":"m","type":"timeseries"}'
    out = (0x8199E26D).to_bytes(4, "little")
    out += bson.encode(
        SON([("concurrent_collections", 1), ("version", "0.1"), ("server_version", "8.0.4"), ("tool_version", "x")])
    )
    out += bson.encode(
        SON([("db", "iot"), ("collection", "m"), ("metadata", meta), ("size", 0), ("type", "timeseries")])
    )
    out += TERMINATOR
    bucket = bson.encode({"_id": ObjectId(), "control": {"version": 1}})
    out += ns_header("iot", "system.buckets.m", False) + bucket + TERMINATOR
    out += ns_header("iot", "system.buckets.m", True, crc64_ecma(bucket)) + TERMINATOR
    with foliodb.MongoClient(":memory:") as client:
        report = restore_archive(client, io.BytesIO(out))
        assert report.unrestored == [
            "iot.system.buckets.m: MongoDB's time-series buckets are not restored (iot.m is left without them)"
        ]


# -- FolioDB's own dumps, with users ---------------------------------------------------------


@pytest.fixture
def source(tmp_path: Path) -> Any:
    client = foliodb.MongoClient(str(tmp_path / "source"))
    client.admin.command("createUser", "alice", pwd="secret", roles=["root"])
    client.shop.command("createUser", "bob", pwd="secret", roles=["read"])
    client.shop.orders.insert_many([{"_id": i, "user": i % 3, "tags": ["a"] * (i % 2)} for i in range(40)])
    client.shop.orders.create_index([("user", 1), ("_id", -1)])
    client.shop.create_collection("two", viewOn="orders", pipeline=[{"$match": {"user": 2}}])
    client.shop.create_collection("empty")
    yield client
    client.close()


UUID = re.compile(rb'"uuid":"[0-9a-f]{32}"')


def without_uuids(data: bytes) -> bytes:
    # A restore creates new collections, so new UUIDs (mongorestore keeps them only with
    # --preserveUUID); the replacement keeps lengths, so the rest compares byte for byte.
    return UUID.sub(b'"uuid":"' + b"0" * 32 + b'"', data)


def test_archive_dump_restore_dump_is_byte_identical_with_users(source: Any, tmp_path: Path) -> None:
    first = io.BytesIO()
    dumped = dump_archive(source, first)
    assert dumped.documents == {"admin.system.users": 2, "shop.empty": 0, "shop.orders": 40}
    with foliodb.MongoClient(str(tmp_path / "copy")) as copy:
        report = restore_archive(copy, io.BytesIO(first.getvalue()))
        assert report.users == 2
        assert copy.admin.command("usersInfo", {"user": "bob", "db": "shop"})["users"][0]["roles"] == [
            {"role": "read", "db": "shop"}
        ]
        second = io.BytesIO()
        dump_archive(copy, second)
    assert without_uuids(second.getvalue()) == without_uuids(first.getvalue())


def test_directory_dump_restore_dump_is_byte_identical_with_users(source: Any, tmp_path: Path) -> None:
    dump(source, str(tmp_path / "first"), gzip=True)
    with foliodb.MongoClient(str(tmp_path / "copy")) as copy:
        restore(copy, str(tmp_path / "first"))
        dump(copy, str(tmp_path / "second"), gzip=True)
    files = sorted(p.relative_to(tmp_path / "first") for p in (tmp_path / "first").rglob("*") if p.is_file())
    assert [str(f) for f in files] == [
        "admin/system.users.bson.gz",
        "admin/system.users.metadata.json.gz",
        "shop/empty.bson.gz",
        "shop/empty.metadata.json.gz",
        "shop/orders.bson.gz",
        "shop/orders.metadata.json.gz",
        "shop/two.metadata.json.gz",
    ]
    for name in files:
        first, second = (gzip.decompress((tmp_path / d / name).read_bytes()) for d in ("first", "second"))
        assert without_uuids(second) == without_uuids(first), name


def test_db_users_and_roles(source: Any, tmp_path: Path) -> None:
    # mongodump --db shop --dumpDbUsersAndRoles writes shop/$admin.system.users.bson with shop's users;
    # mongorestore restores them only with --restoreDbUsersAndRoles.
    dump(source, str(tmp_path / "dump"), db="shop", dump_db_users_and_roles=True)
    users = bson.decode_all((tmp_path / "dump" / "shop" / "%24admin.system.users.bson").read_bytes())
    assert [u["_id"] for u in users] == ["shop.bob"]
    with foliodb.MongoClient(":memory:") as copy:
        plain = restore(copy, str(tmp_path / "dump"))
        assert "system.users" not in copy.admin.list_collection_names()
        assert "shop.$admin.system.users (restore it with --restoreDbUsersAndRoles)" in plain.ignored
        restore(copy, str(tmp_path / "dump"), Options(restore_db_users_and_roles=True))
        assert [u["_id"] for u in copy.admin["system.users"].find()] == ["shop.bob"]


def test_insertion_workers_restore_everything(source: Any, tmp_path: Path) -> None:
    source.shop.many.insert_many([{"_id": i} for i in range(5000)])
    dump(source, str(tmp_path / "dump"), db="shop")
    with foliodb.MongoClient(":memory:") as copy:
        report = restore(copy, str(tmp_path / "dump"), Options(workers=3))
        assert report.documents["shop.many"] == 5000
        assert sorted(d["_id"] for d in copy.shop.many.find()) == list(range(5000))


# -- namespace patterns (mongorestore/ns/ns.go) -------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "namespace", "matches"),
    [
        ("shop.*", "shop.orders", True),
        ("shop.*", "shopping.orders", False),
        ("*.orders", "a.orders", True),
        ("*.orders", "a.orders2", False),
        ("shop.orders", "shop.orders", True),
        ("a.\\*", "a.*", True),
        ("a.\\*", "a.b", False),
        ("*", "x.y.z", True),
    ],
)
def test_include_exclude_patterns(pattern: str, namespace: str, matches: bool) -> None:
    assert Matcher([pattern]).matches(namespace) is matches


@pytest.mark.parametrize(
    ("sources", "targets", "namespace", "renamed"),
    [
        (["shop.*"], ["copy.*"], "shop.orders", "copy.orders"),
        (["shop.*"], ["copy.*"], "other.orders", "other.orders"),
        (["$db$.$coll$"], ["$coll$.$db$"], "a.b", "b.a"),
        (["shop.*_old"], ["archive.*"], "shop.orders_old", "archive.orders"),
        (["a.*", "a.b"], ["c.*", "d.b"], "a.b", "d.b"),  # the later pair wins
    ],
)
def test_renames(sources: list[str], targets: list[str], namespace: str, renamed: str) -> None:
    assert Renamer(sources, targets).rename(namespace) == renamed


@pytest.mark.parametrize(
    ("sources", "targets", "message"),
    [
        (["a.*"], ["b.c"], "different number of asterisks"),
        (["$a$.x"], ["$b$.x"], "unknown variable"),
        (["a.*"], [], "pairs"),
    ],
)
def test_bad_renames(sources: list[str], targets: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Renamer(sources, targets)
