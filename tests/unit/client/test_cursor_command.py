"""``Database.cursor_command`` on the embedded client (issue 14), as pymongo 4.20
documents it: run a command that opens a cursor and iterate it, getMore by
getMore; ``comment`` and ``max_await_time_ms`` travel on the getMores; a reply
without a cursor raises InvalidOperation.

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson.codec_options import CodecOptions
from bson.son import SON
from pymongo.errors import InvalidOperation, OperationFailure
from pymongo.monitoring import CommandListener

import foliodb

CURSOR_COMMAND = (
    "https://pymongo.readthedocs.io/en/stable/api/pymongo/database.html#pymongo.database.Database.cursor_command"
)
GET_MORE = "https://www.mongodb.com/docs/manual/reference/command/getMore/"


class Recorder(CommandListener):
    def __init__(self) -> None:
        self.started_commands: list[dict[str, Any]] = []

    def started(self, event: Any) -> None:
        self.started_commands.append(dict(event.command))

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def db(recorder: Recorder) -> Iterator[Any]:
    with foliodb.MongoClient(":memory:", event_listeners=[recorder]) as client:
        client.test.items.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(5)])
        recorder.started_commands.clear()
        yield client.test


def test_find_by_name_and_value_iterates_every_batch(db: Any, recorder: Recorder) -> None:
    # CURSOR_COMMAND: command given as a name, value and keyword arguments.
    cursor = db.cursor_command("find", "items", filter={"even": True}, sort={"_id": -1}, batchSize=1)
    assert [doc["_id"] for doc in cursor] == [4, 2, 0]
    # GET_MORE: a getMore without batchSize returns the rest (pymongo's cursor_command sets none).
    names = [next(iter(cmd)) for cmd in recorder.started_commands]
    assert names == ["find", "getMore"]
    assert recorder.started_commands[1]["collection"] == "items"
    assert "batchSize" not in recorder.started_commands[1]


def test_aggregate_as_a_document(db: Any) -> None:
    cmd = SON([("aggregate", "items"), ("pipeline", [{"$match": {"_id": {"$lt": 2}}}]), ("cursor", {})])
    assert list(db.cursor_command(cmd)) == [{"_id": 0, "even": True}, {"_id": 1, "even": False}]


def test_list_collections_cursor(db: Any) -> None:
    assert [info["name"] for info in db.cursor_command("listCollections", nameOnly=True)] == ["items"]


def test_comment_and_max_await_time_go_on_each_get_more(db: Any, recorder: Recorder) -> None:
    # CURSOR_COMMAND: "comment: A user-provided comment to attach to future getMores";
    # "max_await_time_ms: The number of ms to wait for more data on future getMores".
    db.create_collection("log", capped=True, size=4096)
    db.log.insert_many([{"_id": i} for i in range(3)])
    recorder.started_commands.clear()
    cursor = db.cursor_command(
        "find", "log", tailable=True, awaitData=True, batchSize=1, comment="tail", max_await_time_ms=5
    )
    assert [cursor.next()["_id"] for _ in range(3)] == [0, 1, 2]
    assert cursor.try_next() is None  # a tailable cursor stays open with nothing new
    assert cursor.alive
    first, *get_mores = recorder.started_commands
    assert "comment" not in first  # pymongo sends the comment on the getMores only
    assert [(cmd["comment"], cmd["maxTimeMS"]) for cmd in get_mores] == [("tail", 5), ("tail", 5)]
    cursor.close()


def test_codec_options_decode_the_documents(db: Any) -> None:
    options = CodecOptions(document_class=SON)
    docs = list(db.cursor_command("find", "items", filter={"_id": 1}, codec_options=options))
    assert docs == [SON([("_id", 1), ("even", False)])]
    assert type(docs[0]) is SON


def test_a_reply_without_a_cursor_is_refused(db: Any) -> None:
    with pytest.raises(InvalidOperation, match=r"Command does not return a cursor\."):
        db.cursor_command("ping")


def test_an_error_reply_raises(db: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        db.cursor_command("find", "items", filter={"_id": {"$bogus": 1}})
    assert info.value.code == 2  # BadValue: unknown operator
