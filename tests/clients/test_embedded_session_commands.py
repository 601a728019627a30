"""The embedded client's sessions send what pymongo sends (issue 10): one
scenario of sessions, transactions, causal and snapshot reads, cursors and
retryable writes runs on ``foliodb.MongoClient`` and on real pymongo against
``foliodb serve``; the command documents both publish to command monitoring
must be equal, field by field and in order.

Left out of the comparison: ``$clusterTime`` and ``$readPreference`` (the
gossip and routing of a topology, which an embedded client has none of), and
the values that differ between any two runs (lsid values, compared as "the
n-th distinct session"; cluster times; cursor ids). With retryWrites=True both
clients send implicit sessions and txnNumbers; without it (the embedded
default, and retryWrites=False), only the operations of explicit sessions run,
so both send the same lsids there too.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pymongo
import pytest
from bson import Timestamp
from pymongo import DeleteMany, InsertOne, ReplaceOne, UpdateOne
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteConcernError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

import foliodb
from tests.clients.conftest import RunningServer
from tests.sent_commands import SentCommands

pytestmark = pytest.mark.clients


def _explicit_sessions(client: Any) -> None:
    db = client.shop
    items = db.items
    with client.start_session() as s:
        items.insert_one({"_id": 1}, session=s)
        items.find_one({"_id": 1}, session=s)
        items.insert_many([{"_id": 2}, {"_id": 3}, {"_id": 4}], session=s)
        list(items.find({}, session=s).batch_size(2))
        cursor = items.find({}, session=s).batch_size(1)
        next(cursor)
        cursor.close()
        items.count_documents({}, session=s)
        items.distinct("_id", session=s)
        list(items.aggregate([{"$match": {}}], session=s, batchSize=1))
        items.update_one({"_id": 1}, {"$set": {"a": 1}}, session=s)
        items.update_many({}, {"$set": {"b": 1}}, session=s)
        items.replace_one({"_id": 2}, {"r": 1}, session=s)
        items.delete_one({"_id": 3}, session=s)
        items.find_one_and_update({"_id": 1}, {"$inc": {"a": 1}}, session=s)
        items.find_one_and_replace({"_id": 2}, {"r": 2}, session=s)
        items.bulk_write(
            [InsertOne({"_id": 5}), UpdateOne({"_id": 5}, {"$set": {"x": 1}}), InsertOne({"_id": 6})], session=s
        )
        items.bulk_write([InsertOne({"_id": 7}), DeleteMany({"_id": 7})], session=s)
        items.create_index("a", session=s)
        list(items.list_indexes(session=s))
        db.list_collection_names(session=s)
        db.create_collection("fresh", session=s)
        db.drop_collection("fresh", session=s)
        db.command("ping", session=s)
        list(db.cursor_command("find", "items", batchSize=1, session=s))
        client.bulk_write(
            [InsertOne({"_id": 8}, namespace="shop.items"), ReplaceOne({"_id": 8}, {"y": 1}, namespace="shop.other")],
            session=s,
        )
        items.delete_many({"_id": {"$gte": 100}}, session=s)
        with s.start_transaction(
            read_concern=ReadConcern("snapshot"), write_concern=WriteConcern(w="majority"), max_commit_time_ms=500
        ):
            items.insert_one({"_id": 10}, session=s)
            items.find_one({"_id": 10}, session=s)
            list(items.find({}, session=s).batch_size(2))
            items.update_one({"_id": 10}, {"$set": {"t": 1}}, session=s)
        s.commit_transaction()  # a retried commit
        s.start_transaction()
        items.insert_one({"_id": 11}, session=s)
        s.abort_transaction()

        def both(session: Any) -> None:
            items.insert_one({"_id": 12}, session=session)
            db.orders.insert_one({"_id": 12}, session=session)

        s.with_transaction(both)
        s.start_transaction()
        with pytest.raises(DuplicateKeyError):
            items.insert_one({"_id": 12}, session=s)
        with pytest.raises(OperationFailure):
            s.commit_transaction()  # NoSuchTransaction: the failed insert aborted it
        s.start_transaction(write_concern=WriteConcern(w=2))
        items.insert_one({"_id": 13}, session=s)
        with pytest.raises(WriteConcernError):
            s.commit_transaction()
        items.find_one({"_id": 13}, session=s)
    with client.start_session(snapshot=True) as s:
        items.find_one({}, session=s)
        list(items.find({}, session=s))
        list(items.aggregate([], session=s))
        items.distinct("_id", session=s)
    with client.start_session(causal_consistency=False) as s:
        items.insert_one({"_id": 20}, session=s)
        items.find_one({"_id": 20}, session=s)


def _implicit_sessions(client: Any) -> None:
    items = client.shop.items
    items.insert_one({"_id": 0})
    items.find_one({"_id": 0})
    list(items.find().batch_size(1))
    _explicit_sessions(client)
    items.update_many({}, {"$set": {"z": 1}})
    items.find_one_and_delete({"_id": 20})
    items.estimated_document_count()
    client.bulk_write([InsertOne({"_id": 30}, namespace="shop.items")])


def _normalized(sent: list[dict[str, Any]]) -> list[str]:
    sessions: dict[bytes, int] = {}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("$clusterTime", "$readPreference")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return "<timestamp>" if isinstance(value, Timestamp) else value

    out = []
    for cmd in sent:
        cmd = dict(cmd)
        name = next(iter(cmd))
        if "lsid" in cmd:
            cmd["lsid"] = sessions.setdefault(bytes(cmd["lsid"]["id"]), len(sessions))
        if name == "getMore":
            cmd["getMore"] = "<cursor id>"
        elif name == "killCursors":
            cmd["cursors"] = ["<cursor id>"] * len(cmd["cursors"])
        elif name == "endSessions":
            cmd["endSessions"] = len(cmd["endSessions"])
        # The wire carries document sequences after the body, so field order differs there only.
        out.append(repr(sorted(strip(cmd).items())))
    return out


MODES = {
    "retryWrites=True": ({"retryWrites": True}, {"retryWrites": True}, _implicit_sessions),
    "retryWrites=False": ({"retryWrites": False}, {"retryWrites": False}, _explicit_sessions),
    "embedded default": ({}, {"retryWrites": False}, _explicit_sessions),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_embedded_sessions_send_pymongos_commands(mode: str, tmp_path: Path) -> None:
    embedded_options, wire_options, scenario = MODES[mode]
    embedded_commands, wire_commands = SentCommands(), SentCommands()
    with foliodb.MongoClient(str(tmp_path / "embedded"), event_listeners=[embedded_commands], **embedded_options) as c:
        scenario(c)
    server = RunningServer(tmp_path / "served")
    try:
        wire: pymongo.MongoClient[Any] = server.client(event_listeners=[wire_commands], **wire_options)
        scenario(wire)
        wire.close()
    finally:
        server.stop()
    embedded, over_the_wire = _normalized(embedded_commands.sent), _normalized(wire_commands.sent)
    diff = "\n".join(difflib.unified_diff(embedded, over_the_wire, "embedded", "pymongo", lineterm="", n=1))
    assert embedded == over_the_wire, diff
    assert len(embedded) > 50
