"""The oplog and change streams, through the executor as drivers' commands arrive.

Entries follow mongod's oplog format (https://www.mongodb.com/docs/manual/core/replica-set-oplog/);
update descriptions follow the change events reference
(https://www.mongodb.com/docs/manual/reference/change-events/update/).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import bson
import pytest
from bson import Int64, Timestamp
from bson.binary import Binary, UuidRepresentation

from foliodb.commands import Executor
from foliodb.commands.replication import ReplicaSet
from foliodb.engine.catalog import CODEC
from foliodb.engine.oplog import Recorder, pack, unpack, update_description


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("ok") == 1.0 and not reply.get("writeErrors"), reply
    return reply


def _entries(executor: Executor) -> list[dict[str, Any]]:
    storage = executor.engine.storage
    with executor.engine.reading():
        rows = storage.reader().execute("SELECT ts, entry FROM oplog ORDER BY ts").fetchall()
    return [bson.decode(data, CODEC) for _, data in rows]


@pytest.fixture
def executor(tmp_path: Path) -> Any:
    ex = Executor.open(str(tmp_path / "data"), ReplicaSet())
    yield ex
    ex.close()


def test_every_write_is_an_entry_in_commit_order(executor: Executor) -> None:
    _ok(executor.execute("shop", {"insert": "c", "documents": [{"_id": 1, "a": 1}, {"_id": 2}]}))
    _ok(executor.execute("shop", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 2}}}]}))
    _ok(executor.execute("shop", {"update": "c", "updates": [{"q": {"_id": 2}, "u": {"b": 1}}]}))
    _ok(executor.execute("shop", {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]}))
    _ok(executor.execute("shop", {"insert": "system.profile", "documents": [{"x": 1}]}))  # not recorded
    _ok(executor.execute("local", {"insert": "c", "documents": [{"x": 1}]}))  # not recorded
    entries = _entries(executor)
    kinds = [
        (e["op"], e["ns"], e["o"].get("create") if e["op"] == "c" else e["o2" if e["op"] != "d" else "o"])
        for e in entries
    ]
    assert kinds == [
        ("c", "shop.$cmd", "c"),  # the implicit create
        ("i", "shop.c", {"_id": 1}),
        ("i", "shop.c", {"_id": 2}),
        ("u", "shop.c", {"_id": 1}),
        ("u", "shop.c", {"_id": 2}),
        ("d", "shop.c", {"_id": 1}),
    ]
    update, replace, delete = entries[3], entries[4], entries[5]
    assert (update["pre"], update["o"], "r" in update) == ({"_id": 1, "a": 1}, {"_id": 1, "a": 2}, False)
    assert (replace["o"], replace["r"]) == ({"_id": 2, "b": 1}, True)
    # As mongod's: a delete's entry is its document key; its pre-image is kept only while the
    # collection has changeStreamPreAndPostImages on (the img entries).
    assert (delete["o"], "pre" in delete) == ({"_id": 1}, False)
    times = [pack(e["ts"]) for e in entries]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert all(e["t"] == 1 and isinstance(e["wall"], type(entries[0]["wall"])) for e in entries)
    assert executor.engine.storage.cluster_time == entries[-1]["ts"]


def _expected_insert(entry: dict[str, Any], doc: dict[str, Any]) -> bytes:
    """An insert's entry as mongod's format has it, encoded from the document: only ``ts``, ``ui``
    and ``wall`` come from the stored entry."""
    fields = {"ts": entry["ts"], "t": Int64(1), "op": "i", "ns": "shop.c", "ui": entry["ui"]}
    return bson.encode({**fields, "o": doc, "o2": {"_id": doc["_id"]}, "wall": entry["wall"]}, codec_options=CODEC)


def test_a_batch_insert_records_the_entries_of_one_by_one_inserts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """insert_many builds its entries its own way (one call, ObjectId _ids from their bytes, one
    clock tick): byte for byte what inserting the documents one at a time records, but ts and wall."""
    docs: list[dict[str, Any]] = [
        {"_id": bson.ObjectId(), "a": 1, "items": [{"sku": "x", "n": 2}]},
        {"_id": 7, "a": "seven"},
        {"_id": "key", "nested": {"b": [1, 2.5, None]}},
        {"_id": {"k": 1}, "a": True},
        {"_id": bson.ObjectId(), "a": Int64(2), "when": Timestamp(5, 6)},
        {"_id": 2.5},
    ]
    batches: list[int] = []
    batch_insert = Recorder.insert_many

    def counted(recorder: Recorder, many: Any, rows: list[bytes]) -> None:
        batches.append(len(rows))
        batch_insert(recorder, many, rows)

    monkeypatch.setattr(Recorder, "insert_many", counted)
    recorded, times = {}, {}
    for way, groups in (("batch", [docs]), ("one by one", [[doc] for doc in docs])):
        ex = Executor.open(str(tmp_path / way.replace(" ", "-")), ReplicaSet())
        _ok(ex.execute("shop", {"create": "c"}))
        for group in groups:
            _ok(ex.execute("shop", {"insert": "c", "documents": group}))
        with ex.engine.reading():
            rows = ex.engine.storage.reader().execute("SELECT ts, entry FROM oplog ORDER BY ts").fetchall()[1:]
        ex.close()
        entries = [bson.decode(data, CODEC) for _, data in rows]
        assert [data for _, data in rows] == [_expected_insert(e, doc) for e, doc in zip(entries, docs, strict=True)]
        assert [ts for ts, _ in rows] == [pack(e["ts"]) for e in entries]
        recorded[way] = [{k: v for k, v in e.items() if k not in ("ts", "wall", "ui")} for e in entries]
        times[way] = [e["ts"] for e in entries]
    assert recorded["batch"] == recorded["one by one"]
    assert batches == [len(docs)]  # the batch went through insert_many, the single inserts did not
    first = times["batch"][0]  # one commit: consecutive increments of one second
    assert times["batch"] == [Timestamp(first.time, first.inc + i) for i in range(len(docs))]


@pytest.mark.parametrize("images", [False, True])
def test_update_and_delete_entries_are_the_documented_format_byte_for_byte(tmp_path: Path, images: bool) -> None:
    """Update, replacement and delete entries, built from bytes by the collection's recorder, are
    exactly what ``bson.encode`` gives of mongod's format in field order (ts, t, op, ns, ui, o, o2,
    pre, r, img, wall), for each kind of _id; only ts, ui and wall come from the stored entry."""
    ids: list[Any] = [bson.ObjectId(), 7, "key", {"k": 1}, 2.5]
    ex = Executor.open(str(tmp_path / "data"), ReplicaSet())
    _ok(ex.execute("shop", {"create": "c"}))
    if images:
        _ok(ex.execute("shop", {"collMod": "c", "changeStreamPreAndPostImages": {"enabled": True}}))
    for i, doc_id in enumerate(ids):
        _ok(ex.execute("shop", {"insert": "c", "documents": [{"_id": doc_id, "n": i}]}))
        _ok(ex.execute("shop", {"update": "c", "updates": [{"q": {"_id": doc_id}, "u": {"$set": {"n": i + 1}}}]}))
        _ok(ex.execute("shop", {"update": "c", "updates": [{"q": {"_id": doc_id}, "u": {"m": "x"}}]}))
        _ok(ex.execute("shop", {"delete": "c", "deletes": [{"q": {"_id": doc_id}, "limit": 1}]}))
    with ex.engine.reading():
        rows = ex.engine.storage.reader().execute("SELECT entry FROM oplog ORDER BY ts").fetchall()
    ex.close()
    writes = [data for (data,) in rows if bson.decode(data, CODEC)["op"] in ("u", "d")]
    expected = []
    for i, doc_id in enumerate(ids):
        key = {"_id": doc_id}
        steps = [
            ("u", {"_id": doc_id, "n": i + 1}, {"_id": doc_id, "n": i}, False),
            ("u", {"_id": doc_id, "m": "x"}, {"_id": doc_id, "n": i + 1}, True),
            ("d", key, {"_id": doc_id, "m": "x"}, False),
        ]
        for op, o, pre, replace in steps:
            fields: dict[str, Any] = {"op": op, "ns": "shop.c", "o": o}
            if op == "u":
                fields.update(o2=key, pre=pre)
                if replace:
                    fields["r"] = True
            elif images:
                fields["pre"] = pre
            if images:
                fields["img"] = True
            expected.append(fields)
    assert len(writes) == len(expected)
    for data, fields in zip(writes, expected, strict=True):
        entry = bson.decode(data, CODEC)
        head = {"ts": entry["ts"], "t": Int64(1), "op": fields.pop("op"), "ns": fields.pop("ns"), "ui": entry["ui"]}
        assert data == bson.encode({**head, **fields, "wall": entry["wall"]}, codec_options=CODEC)


def test_a_transaction_is_one_apply_ops_entry_at_commit(executor: Executor) -> None:
    lsid = {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}
    base = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
    _ok(executor.execute("shop", {"create": "c"}))
    before = len(_entries(executor))
    _ok(executor.execute("shop", {"insert": "c", "documents": [{"_id": 1}], "startTransaction": True, **base}))
    _ok(executor.execute("shop", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}], **base}))
    assert len(_entries(executor)) == before  # nothing before the commit
    _ok(executor.execute("admin", {"commitTransaction": 1, **base}))
    entry = _entries(executor)[-1]
    assert (entry["op"], entry["ns"], entry["txnNumber"], entry["lsid"]) == ("c", "admin.$cmd", 1, lsid)
    assert [(op["op"], op["ns"]) for op in entry["o"]["applyOps"]] == [("i", "shop.c"), ("u", "shop.c")]


def test_catalog_changes_are_entries(executor: Executor) -> None:
    _ok(executor.execute("shop", {"create": "c"}))
    _ok(executor.execute("shop", {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}))
    _ok(executor.execute("shop", {"collMod": "c", "validator": {"a": {"$exists": True}}}))
    _ok(executor.execute("shop", {"dropIndexes": "c", "index": "a_1"}))
    _ok(executor.execute("admin", {"renameCollection": "shop.c", "to": "shop.d"}))
    _ok(executor.execute("shop", {"drop": "d"}))
    _ok(executor.execute("shop", {"create": "e"}))
    _ok(executor.execute("shop", {"dropDatabase": 1}))
    names = [next(iter(e["o"])) for e in _entries(executor)]
    assert names == [
        "create",
        "createIndexes",
        "collMod",
        "dropIndexes",
        "renameCollection",
        "drop",
        "create",
        "drop",
        "dropDatabase",
    ]


def test_cluster_times_keep_increasing_across_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    first = Executor.open(path, ReplicaSet())
    _ok(first.execute("shop", {"insert": "c", "documents": [{"_id": i} for i in range(5)]}))
    last = first.engine.storage.cluster_time
    first.close()
    again = Executor.open(path, ReplicaSet())
    _ok(again.execute("shop", {"insert": "c", "documents": [{"_id": 9}]}))
    assert pack(again.engine.storage.cluster_time) > pack(last)
    again.close()


def test_resuming_where_the_oplog_was_trimmed_is_history_lost(executor: Executor) -> None:
    stream = _ok(executor.execute("shop", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}}))
    for i in range(20):
        _ok(executor.execute("shop", {"insert": "c", "documents": [{"_id": i, "pad": "x" * 200}]}))
    more = _ok(executor.execute("shop", {"getMore": stream["cursor"]["id"], "collection": "c"}))
    first_token = more["cursor"]["nextBatch"][0]["_id"]
    oplog = executor.engine.storage.oplog
    oplog.size_bytes = 1_000  # keep only the newest few entries
    executor.engine.housekeeping()
    assert oplog.trimmed_through > 0
    lost = executor.execute(
        "shop", {"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": first_token}}], "cursor": {}}
    )
    assert lost["code"] == 286 and lost["codeName"] == "ChangeStreamHistoryLost"
    recent = more["cursor"]["nextBatch"][-1]["_id"]
    _ok(
        executor.execute(
            "shop", {"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": recent}}], "cursor": {}}
        )
    )


UPDATES = [
    # (before, after, expected updateDescription), written from the change events reference.
    ({"a": 1}, {"a": 2}, {"updatedFields": {"a": 2}, "removedFields": [], "truncatedArrays": []}),
    ({"a": 1, "b": 1}, {"a": 1}, {"updatedFields": {}, "removedFields": ["b"], "truncatedArrays": []}),
    (
        {"a": {"b": 1, "c": 1}},
        {"a": {"b": 2, "c": 1}},
        {"updatedFields": {"a.b": 2}, "removedFields": [], "truncatedArrays": []},
    ),
    ({"a": [1, 2, 3]}, {"a": [1, 2, 3, 4]}, {"updatedFields": {"a.3": 4}, "removedFields": [], "truncatedArrays": []}),
    (
        {"a": [1, 2, 3]},
        {"a": [1]},
        {"updatedFields": {}, "removedFields": [], "truncatedArrays": [{"field": "a", "newSize": 1}]},
    ),
    ({"a": [{"x": 1}]}, {"a": [{"x": 2}]}, {"updatedFields": {"a.0.x": 2}, "removedFields": [], "truncatedArrays": []}),
    ({"a": 1}, {"a": 1.0}, {"updatedFields": {"a": 1.0}, "removedFields": [], "truncatedArrays": []}),  # a type change
    (
        {"m": {"1": "x"}},
        {"m": {"1": "y"}},
        {
            "updatedFields": {"m.1": "y"},
            "removedFields": [],
            "truncatedArrays": [],
            "disambiguatedPaths": {"m.1": ["m", "1"]},
        },
    ),
]


@pytest.mark.parametrize(("before", "after", "expected"), UPDATES)
def test_update_descriptions(before: Any, after: Any, expected: Any) -> None:
    assert update_description({"_id": 1, **before}, {"_id": 1, **after}) == expected


def test_timestamps_pack_in_order() -> None:
    stamps = [Timestamp(5, 1), Timestamp(5, 2), Timestamp(6, 0), Timestamp(1 << 31, 7)]
    assert [unpack(pack(ts)) for ts in stamps] == stamps
    assert sorted(stamps, key=pack) == stamps
    assert pack(Timestamp(int(time.time()), 1)) > 0


def test_resuming_inside_a_transaction_delivers_its_remaining_writes() -> None:
    """Regression: resuming after a transaction's first event skipped the rest of the
    transaction (its ops share one cluster time). Resuming after any event continues
    with the next one (https://www.mongodb.com/docs/manual/changeStreams/#resume-a-change-stream)."""
    import foliodb

    with foliodb.MongoClient(":memory:") as client:
        coll = client.shop.c
        coll.insert_one({"_id": -1})  # created before: the transaction's first op is an insert
        stream = coll.watch()
        with client.start_session() as session, session.start_transaction():
            coll.insert_many([{"_id": i} for i in range(3)], session=session)
        coll.insert_one({"_id": 3})
        events = [stream.next() for _ in range(4)]
        assert [e["documentKey"]["_id"] for e in events] == [0, 1, 2, 3]
        assert len({e["clusterTime"] for e in events[:3]}) == 1  # one commit

        def ids(**start: Any) -> list[Any]:
            with coll.watch(max_await_time_ms=50, **start) as again:
                return [e["documentKey"]["_id"] for e in iter(again.try_next, None)]

        for k, event in enumerate(events):
            assert ids(resume_after=event["_id"]) == list(range(k + 1, 4))
        assert ids(start_at_operation_time=events[0]["clusterTime"]) == [0, 1, 2, 3]
        assert ids(start_at_operation_time=events[3]["clusterTime"]) == [3]


def test_resuming_inside_the_newest_commit_delivers_its_remaining_writes() -> None:
    """Regression: when the transaction was the newest commit, a stream resumed after its
    first event took "no commit since the position" for "nothing to read" and never gave
    the rest (``foliodb sync --once`` stopped there lost the transaction's later writes)."""
    import foliodb

    with foliodb.MongoClient(":memory:") as client:
        coll = client.shop.c
        coll.insert_one({"_id": -1})
        stream = coll.watch()
        with client.start_session() as session, session.start_transaction():
            coll.insert_many([{"_id": i} for i in range(3)], session=session)
        first, second = stream.next(), stream.next()
        for event, rest in ((first, [1, 2]), (second, [2])):
            with coll.watch(max_await_time_ms=50, resume_after=event["_id"]) as again:
                assert [e["documentKey"]["_id"] for e in iter(again.try_next, None)] == rest
