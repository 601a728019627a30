"""``dump --oplog`` and ``restore --oplogReplay``: a dump taken while the
application writes restores to the state at its end.

As mongodump and mongorestore do it
(https://www.mongodb.com/docs/database-tools/mongodump/#std-option-mongodump.--oplog,
https://www.mongodb.com/docs/database-tools/mongorestore/#std-option-mongorestore.--oplogReplay,
mongo-tools' ``mongodump/oplog_dump.go`` and ``mongorestore/oplog.go``): the
oplog entries from the newest one before the dump to the newest one after it
go to ``oplog.bson`` (an archive's ``.oplog`` namespace), and the restore
applies them after the collections, then builds the indexes.

Writes land inside the dump's window through its reporter: the dump notes
"done dumping <namespace>" after each collection, and the test's reporter
writes to the source then, so the dumped collection misses them and only the
oplog carries them.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson import Int64, Timestamp
from bson.son import SON

import foliodb
from foliodb.cli import main
from foliodb.server import Server
from foliodb.tools.archive import ArchiveReader, Segment
from foliodb.tools.dump import dump, dump_archive
from foliodb.tools.oplog import OplogError, Replayer
from foliodb.tools.progress import Reporter
from foliodb.tools.restore import Options, restore, restore_archive


class WritesDuring(Reporter):
    """A silent reporter that runs ``writes`` once, after ``namespace`` is dumped."""

    def __init__(self, namespace: str, writes: Callable[[], None]) -> None:
        super().__init__(quiet=True)
        self.mode = "silent"
        self.namespace, self.writes = namespace, writes

    def note(self, text: str) -> None:
        if text.startswith(f"done dumping {self.namespace} "):
            self.writes()


def fill(client: Any) -> None:
    client.shop.a.insert_many([{"_id": i, "email": f"{i}@x", "n": i} for i in range(100)])
    client.shop.b.insert_many([{"_id": i} for i in range(10)])


def window_writes(client: Any) -> Callable[[], None]:
    """Every kind of write, after shop.a is dumped (shop.b comes after it)."""

    def writes() -> None:
        a = client.shop.a
        a.insert_one({"_id": 100, "email": "100@x", "n": 100})
        a.update_one({"_id": 1}, {"$set": {"n": -1}, "$unset": {"email": ""}})
        a.replace_one({"_id": 3}, {"email": "3@x", "replaced": True})
        a.delete_one({"_id": 2})
        a.update_one({"_id": 4}, {"$set": {"email": "0@x"}})  # a duplicate email for a moment...
        a.update_one({"_id": 0}, {"$set": {"email": "zero@x"}})  # ...gone by the end of the window
        a.create_index("email", unique=True)
        with client.start_session() as session, session.start_transaction():
            a.insert_one({"_id": 101, "email": "101@x"}, session=session)
            client.shop.b.delete_one({"_id": 9}, session=session)
        client.shop.c.insert_one({"_id": "new"})
        client.shop.create_collection("d", validator={"x": {"$type": "int"}})
        client.shop.drop_collection("b")  # dumped after this: empty; the oplog's entries before the drop do no harm

    return writes


def state(client: Any) -> dict[str, Any]:
    """Every user namespace's documents (in _id order) and index specs (without their version)."""
    found: dict[str, Any] = {}
    for name in sorted(client.shop.list_collection_names()):
        coll = client.shop[name]
        indexes = sorted((str(dict(i["key"])), bool(i.get("unique"))) for i in coll.list_indexes())
        found[name] = (list(coll.find(sort=[("_id", 1)])), str(indexes))
    return found


@pytest.mark.parametrize("form", ["directory", "directory-gzip", "archive"])
def test_a_dump_with_its_oplog_restores_the_state_at_its_end(tmp_path: Path, form: str) -> None:
    with foliodb.MongoClient(str(tmp_path / "source")) as source:
        fill(source)
        reporter = WritesDuring("shop.a", window_writes(source))
        if form == "archive":
            out = io.BytesIO()
            report = dump_archive(source, out, reporter=reporter, oplog=True)
        else:
            report = dump(source, str(tmp_path / "dump"), gzip=form.endswith("gzip"), reporter=reporter, oplog=True)
        final = state(source)
    assert report.documents["shop.a"] == 100  # read before the window's writes
    assert report.oplog is not None and report.oplog >= 12  # the newest entry before, and the writes

    def restored(options: Options) -> dict[str, Any]:
        with foliodb.MongoClient(":memory:") as copy:
            if form == "archive":
                done = restore_archive(copy, io.BytesIO(out.getvalue()), options)
            else:
                done = restore(copy, str(tmp_path / "dump"), options)
            assert done.failures == {}
            return state(copy)

    assert restored(Options(oplog_replay=True)) == final
    without = restored(Options())
    assert without != final and len(without["a"][0]) == 100  # the dumped documents alone


def test_the_oplog_file_is_mongods_and_lists_in_the_prelude(tmp_path: Path) -> None:
    with foliodb.MongoClient(":memory:") as source:
        fill(source)

        def index_two() -> None:
            source.shop.a.create_indexes([pymongo.IndexModel("n"), pymongo.IndexModel("email")])

        out = io.BytesIO()
        dump_archive(source, out, reporter=WritesDuring("shop.a", index_two), oplog=True)
    reader = ArchiveReader(io.BytesIO(out.getvalue()))
    # mongodump's oplog intent: database "", collection "oplog", no metadata, last in the prelude.
    assert (reader.entries[-1].db, reader.entries[-1].collection, reader.entries[-1].metadata) == ("", "oplog", "")
    data = b"".join(b.data for b in reader.blocks() if isinstance(b, Segment) and b.namespace == ".oplog")
    entries = bson.decode_all(data)
    built = [e["o"] for e in entries if e["op"] == "c"]
    # FolioDB records one entry for the two indexes; mongod's shape for that is commitIndexBuild.
    assert [(next(iter(o)), o["commitIndexBuild"]) for o in built] == [("commitIndexBuild", "a")]
    assert [spec["name"] for spec in built[0]["indexes"]] == ["n_1", "email_1"]
    assert all(e["ts"] >= entries[0]["ts"] and isinstance(e["ts"], Timestamp) for e in entries)


def test_a_rename_in_the_window_fails_the_dump(tmp_path: Path) -> None:
    # mongodump's oplogDocumentValidator: "cannot dump with oplog while renames occur".
    with foliodb.MongoClient(":memory:") as source:
        fill(source)
        reporter = WritesDuring("shop.a", lambda: source.shop.b.rename("b2"))
        with pytest.raises(OplogError, match="cannot dump with oplog while renames occur"):
            dump(source, str(tmp_path / "dump"), reporter=reporter, oplog=True)


def test_entries_trimmed_during_the_dump_fail_it(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "served"), "127.0.0.1", 0, oplog_size_mb=0.002)  # about 2 KB of oplog
    host, port = server.start()
    try:
        with pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000) as source:
            source.shop.a.insert_one({"_id": 0})
            source.shop.b.insert_one({"_id": 0})

            def overflow() -> None:
                source.shop.b.insert_many([{"_id": i, "pad": "x" * 200} for i in range(1, 60)])
                server.executor.engine.housekeeping()  # the trim, which otherwise runs on a timer

            with pytest.raises(OplogError, match="oplog overflow"):
                dump(source, str(tmp_path / "dump"), reporter=WritesDuring("shop.a", overflow), oplog=True)
    finally:
        server.shutdown()


def test_command_line(tmp_path: Path, capsys: Any) -> None:
    with foliodb.MongoClient(str(tmp_path / "source")) as source:
        fill(source)
    data, out = str(tmp_path / "source"), str(tmp_path / "dump")
    assert main(["dump", "--dbpath", data, "--out", out, "--oplog", "--quiet"]) == 0
    assert (tmp_path / "dump" / "oplog.bson").stat().st_size > 0
    assert main(["restore", "--dbpath", str(tmp_path / "copy"), out, "--oplogReplay", "--oplogLimit", "1:0"]) == 0
    assert "applied 0 oplog entries" in capsys.readouterr().err  # every entry is after 1970's first second
    (tmp_path / "plain").mkdir()
    for args, message in (
        (["dump", "--dbpath", data, "--db", "shop", "--oplog"], "--oplog mode only supported on full dumps"),
        (["restore", "--dbpath", data, out, "--oplogLimit", "5"], "cannot use --oplogLimit without --oplogReplay"),
        (["restore", "--dbpath", data, out, "--oplogReplay", "--nsInclude", "shop.*"], "with includes specified"),
        (["restore", "--dbpath", data, str(tmp_path / "plain"), "--oplogReplay"], "no oplog file to replay"),
    ):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


# -- replaying MongoDB's entries ------------------------------------------------------------------------


def ts(n: int) -> Timestamp:
    return Timestamp(1_700_000_000, n)


def replay(client: Any, entries: list[dict[str, Any]], limit: Timestamp | None = None) -> Replayer:
    replayer = Replayer(client, limit)
    replayer.entries(b"".join(bson.encode(e) for e in entries))
    replayer.flush()
    return replayer


def test_mongods_update_diffs_are_applied(client: Any) -> None:
    # mongod 5.0+'s update entries: {$v: 2, diff} (src/mongo/db/update/document_diff_serialization.h):
    # d deletes, u updates in place, i inserts at the end, s<field> a sub-diff, a: true an array's,
    # l its new length, u<i> a new element i, s<i> a sub-diff of element i.
    client.t.c.insert_one({"_id": 1, "a": 1, "b": {"x": 1, "y": 2}, "arr": [1, {"k": 1}, 3, 4], "gone": 0})
    entries = [
        {
            "ts": ts(1),
            "op": "u",
            "ns": "t.c",
            "o2": {"_id": 1},
            "o": {
                "$v": 2,
                "diff": {
                    "d": {"gone": False},
                    "u": {"a": 2},
                    "i": {"new": {"deep": [1]}},
                    "sb": {"u": {"x": 10}, "i": {"z": 3}, "d": {"y": False}},
                    "sarr": {"a": True, "l": 3, "u0": 9, "s1": {"u": {"k": 2}}},
                },
            },
        },
        {"ts": ts(2), "op": "u", "ns": "t.c", "o2": {"_id": 1}, "o": {"$v": 2, "diff": {"sarr": {"a": True, "u3": 7}}}},
    ]
    replay(client, entries)
    assert client.t.c.find_one() == {
        "_id": 1,
        "a": 2,
        "b": {"x": 10, "z": 3},
        "arr": [9, {"k": 2}, 3, 7],
        "new": {"deep": [1]},
    }


def test_entries_of_every_kind(client: Any) -> None:
    client.t.c.insert_one({"_id": 1, "n": 1})
    entries = [
        {"ts": ts(1), "op": "n", "ns": "", "o": {"msg": "periodic noop"}},
        {"ts": ts(2), "op": "c", "ns": "t.$cmd", "o": SON([("create", "d"), ("idIndex", {"key": {"_id": 1}})])},
        {"ts": ts(3), "op": "i", "ns": "t.d", "o": {"_id": 1, "v": Int64(5)}, "o2": {"_id": 1}},
        {"ts": ts(4), "op": "i", "ns": "t.c", "o": {"_id": 1, "n": 2}},  # already there: an upsert
        {"ts": ts(5), "op": "u", "ns": "t.c", "o2": {"_id": 1}, "o": {"$v": 1, "$inc": {"n": 10}}},
        {
            "ts": ts(6),
            "op": "c",
            "ns": "t.$cmd",
            "o": SON([("createIndexes", "d"), ("v", 2), ("key", {"v": 1}), ("name", "v_1"), ("unique", True)]),
        },
        {"ts": ts(7), "op": "c", "ns": "t.$cmd", "o": {"startIndexBuild": "d", "indexes": []}},
        {
            "ts": ts(8),
            "op": "c",
            "ns": "admin.$cmd",
            "lsid": {"id": 1},
            "txnNumber": Int64(1),
            "o": {
                "applyOps": [
                    {"op": "i", "ns": "t.d", "o": {"_id": 2, "v": 6}},
                    {"op": "d", "ns": "t.c", "o": {"_id": 1}},
                ]
            },
        },
        {"ts": ts(9), "op": "c", "ns": "t.$cmd", "o": SON([("renameCollection", "t.d"), ("to", "t.e")])},
        {"ts": ts(10), "op": "c", "ns": "t.$cmd", "o": {"drop": "missing"}},  # already gone: no error
        {"ts": ts(11), "op": "c", "ns": "config.$cmd", "o": {"create": "system.sessions"}},  # skipped
        {"ts": ts(12), "op": "i", "ns": "t.e", "o": {"_id": 3, "v": 7}},
    ]
    done = replay(client, entries, limit=ts(12))  # the last entry is at the limit: not applied
    assert done.applied == 9 and done.ended
    assert sorted(client.t.list_collection_names()) == ["c", "e"]
    assert list(client.t.c.find()) == []
    assert list(client.t.e.find({}, {"_id": 1, "v": 1})) == [{"_id": 1, "v": Int64(5)}, {"_id": 2, "v": 6}]
    assert client.t.e.index_information()["v_1"]["unique"] is True
    assert "system.sessions" not in client.config.list_collection_names()


def test_an_unknown_command_is_an_error(client: Any) -> None:
    with pytest.raises(OplogError, match="unknown oplog command name emptycapped2"):
        replay(client, [{"ts": ts(1), "op": "c", "ns": "t.$cmd", "o": {"emptycapped2": "c"}}])


def test_a_gzip_dump_oplog_is_read(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    entry = {"ts": ts(1), "op": "i", "ns": "t.c", "o": {"_id": 1}}
    (tmp_path / "dump" / "oplog.bson.gz").write_bytes(gzip.compress(bson.encode(entry)))
    with foliodb.MongoClient(":memory:") as copy:
        assert restore(copy, str(tmp_path / "dump"), Options(oplog_replay=True)).oplog == 1
        assert list(copy.t.c.find()) == [{"_id": 1}]
