"""configureFailPoint and its fail points, as mongod answers them.

Sources: mongod's CommandHelpers::evaluateFailCommandFailPoint and
shouldActivateFailCommandFailPoint (src/mongo/db/commands.cpp), error_labels.cpp,
the onPrimaryTransactionalWrite fail point (transaction_participant.cpp), and
https://github.com/mongodb/specifications/blob/master/source/unified-test-format/unified-test-format.md#server-fail-points
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pymongo
import pytest
from bson import Int64
from bson.binary import Binary, UuidRepresentation
from pymongo.errors import AutoReconnect, OperationFailure

from foliodb.cli import build_parser
from foliodb.commands import Executor
from foliodb.commands.failpoints import ClosedConnection, enable_test_commands
from foliodb.commands.replication import ReplicaSet
from foliodb.server import Server

MESSAGE = "Failing command via 'failCommand' failpoint"


def _fail(executor: Executor, mode: Any, **data: Any) -> dict[str, Any]:
    return executor.execute("admin", {"configureFailPoint": "failCommand", "mode": mode, "data": data})


def _lsid() -> dict[str, Any]:
    return {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}


def test_without_test_commands_the_command_does_not_exist(tmp_path: Path) -> None:
    ex = Executor.open(str(tmp_path / "db"), ReplicaSet())
    try:
        reply = ex.execute("admin", {"configureFailPoint": "failCommand", "mode": "alwaysOn"})
        assert (reply["code"], reply["errmsg"]) == (59, "no such command: 'configureFailPoint'")
        assert ex.execute("admin", {"getParameter": 1, "enableTestCommands": 1})["enableTestCommands"] is False
    finally:
        ex.close()


def test_enabled_at_startup_only(executor: Executor) -> None:
    reply = executor.execute("admin", {"getParameter": {"showDetails": True}, "enableTestCommands": 1})
    assert reply["enableTestCommands"] == {"value": True, "settableAtRuntime": False, "settableAtStartup": True}
    assert executor.execute("admin", {"setParameter": 1, "enableTestCommands": 0})["code"] == 20


def test_the_serve_option() -> None:
    assert build_parser().parse_args(["serve", "--enableTestCommands"]).enableTestCommands is True
    assert build_parser().parse_args(["serve"]).enableTestCommands is False


@pytest.mark.parametrize(
    ("db", "command", "code"),
    [
        ("test", {"configureFailPoint": "failCommand", "mode": "off"}, 13),  # admin only
        ("admin", {"configureFailPoint": "noSuchFailPoint", "mode": "off"}, 266),  # FailPointSetFailed
        ("admin", {"configureFailPoint": "failCommand"}, 20),  # a mode is required
        ("admin", {"configureFailPoint": "failCommand", "mode": "sometimes"}, 2),
        ("admin", {"configureFailPoint": "failCommand", "mode": {"times": -1}}, 2),
        ("admin", {"configureFailPoint": "failCommand", "mode": {"times": "x"}}, 14),
    ],
)
def test_configure_errors(executor: Executor, db: str, command: dict[str, Any], code: int) -> None:
    assert executor.execute(db, command)["code"] == code


def test_times_and_count(executor: Executor) -> None:
    assert _fail(executor, {"times": 2}, failCommands=["ping"], errorCode=2)["count"] == 0
    replies = [executor.execute("admin", {"ping": 1}) for _ in range(3)]
    assert [r.get("code") for r in replies] == [2, 2, None]
    assert replies[0]["errmsg"] == MESSAGE
    assert _fail(executor, "off")["count"] == 2  # how often it fired before this change


def test_skip_then_always_on(executor: Executor) -> None:
    _fail(executor, {"skip": 1}, failCommands=["ping"], errorCode=2)
    assert [executor.execute("admin", {"ping": 1}).get("code") for _ in range(3)] == [None, 2, 2]
    _fail(executor, "off")
    assert executor.execute("admin", {"ping": 1})["ok"] == 1.0


def test_only_named_commands_and_their_aliases(executor: Executor) -> None:
    _fail(executor, "alwaysOn", failCommands=["isMaster", "configureFailPoint"], errorCode=2)
    assert executor.execute("admin", {"ping": 1})["ok"] == 1.0
    assert executor.execute("admin", {"hello": 1})["code"] == 2  # hello's alias
    assert _fail(executor, "off")["ok"] == 1.0  # configureFailPoint is never failed


def test_app_name_and_namespace(executor: Executor) -> None:
    _fail(executor, "alwaysOn", failCommands=["find"], errorCode=2, appName="app", namespace="db.a")
    assert executor.execute("db", {"find": "a"}, app_name="other")["ok"] == 1.0
    assert executor.execute("db", {"find": "b"}, app_name="app")["ok"] == 1.0
    assert executor.execute("db", {"find": "a"}, app_name="app")["code"] == 2


def test_labels_as_mongod_adds_them(executor: Executor) -> None:
    _fail(executor, "alwaysOn", failCommands=["insert", "commitTransaction"], errorCode=91)
    retryable = executor.execute("db", {"insert": "c", "documents": [{}], "lsid": _lsid(), "txnNumber": Int64(1)})
    assert retryable["errorLabels"] == ["RetryableWriteError"]
    txn = {"lsid": _lsid(), "txnNumber": Int64(1), "autocommit": False}
    statement = executor.execute("db", {"insert": "c", "documents": [{}], "startTransaction": True, **txn})
    assert statement["errorLabels"] == ["TransientTransactionError"]  # a retriable code inside a transaction
    assert executor.execute("admin", {"commitTransaction": 1, **txn})["errorLabels"] == ["RetryableWriteError"]
    assert "errorLabels" not in executor.execute("db", {"insert": "c", "documents": [{}]})  # no session


def test_change_stream_labels_as_mongod_adds_them(executor: Executor) -> None:
    # error_labels.cpp: an aggregate that opens a change stream, failed with a resumable code, is
    # ResumableChangeStreamError; a getMore failed before its cursor is checked out is not a change
    # stream's yet, so it gets none; ChangeStreamFatalError is NonResumableChangeStreamError anywhere.
    stream = {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}}
    cursor = executor.execute("db", stream)["cursor"]["id"]
    _fail(executor, "alwaysOn", failCommands=["aggregate", "getMore"], errorCode=6)
    assert executor.execute("db", stream)["errorLabels"] == ["ResumableChangeStreamError"]
    assert "errorLabels" not in executor.execute("db", {"aggregate": "c", "pipeline": [], "cursor": {}})
    assert "errorLabels" not in executor.execute("db", {"getMore": cursor, "collection": "c"})
    _fail(executor, "alwaysOn", failCommands=["getMore"], errorCode=280)
    reply = executor.execute("db", {"getMore": cursor, "collection": "c"})
    assert reply["errorLabels"] == ["NonResumableChangeStreamError"]
    _fail(executor, "alwaysOn", failCommands=["aggregate"], errorCode=6, errorLabels=[])
    assert "errorLabels" not in executor.execute("db", stream)


def test_error_labels_replace_mongods(executor: Executor) -> None:
    _fail(executor, "alwaysOn", failCommands=["insert"], errorCode=91, errorLabels=[])
    reply = executor.execute("db", {"insert": "c", "documents": [{}], "lsid": _lsid(), "txnNumber": Int64(1)})
    assert reply["code"] == 91 and "errorLabels" not in reply
    _fail(executor, "alwaysOn", failCommands=["insert"], errorCode=8, errorLabels=["Mine"])
    assert executor.execute("db", {"insert": "c", "documents": [{}]})["errorLabels"] == ["Mine"]


def test_write_concern_error_follows_a_write_that_ran(executor: Executor) -> None:
    concern = {"code": 91, "errmsg": "Replication is being shut down"}
    _fail(executor, "alwaysOn", failCommands=["insert", "find"], writeConcernError=concern)
    assert "writeConcernError" not in executor.execute("db", {"find": "c"})  # find takes no write concern
    cmd = {"insert": "c", "documents": [{"_id": 1}], "lsid": _lsid(), "txnNumber": Int64(1)}
    reply = executor.execute("db", cmd)
    assert (reply["ok"], reply["n"], reply["writeConcernError"]) == (1.0, 1, concern)
    assert reply["errorLabels"] == ["RetryableWriteError"]
    _fail(executor, "off")
    # Regression: the retry gets the stored reply, without the error attached to the first answer.
    retried = executor.execute("db", cmd)
    assert retried["n"] == 1 and "writeConcernError" not in retried and "errorLabels" not in retried


def test_close_connection_is_a_reply_no_one_sees(executor: Executor) -> None:
    _fail(executor, {"times": 1}, failCommands=["insert"], closeConnection=True)
    reply = executor.execute("db", {"insert": "c", "documents": [{"_id": 1}]})
    assert isinstance(reply, ClosedConnection) and reply["code"] == 50985
    assert executor.execute("db", {"count": "c"})["n"] == 0  # the command did not run


def test_block_connection_sleeps_and_max_time_still_applies(executor: Executor) -> None:
    _fail(executor, "alwaysOn", failCommands=["ping"], blockConnection=True, blockTimeMS=150)
    started = time.monotonic()
    assert executor.execute("admin", {"ping": 1})["ok"] == 1.0
    assert time.monotonic() - started >= 0.15
    assert executor.execute("admin", {"ping": 1, "maxTimeMS": 20})["code"] == 50  # MaxTimeMSExpired
    _fail(executor, "alwaysOn", failCommands=["ping"], blockConnection=True)
    assert executor.execute("admin", {"ping": 1})["code"] == 72  # blockTimeMS is required


def test_on_primary_transactional_write(executor: Executor) -> None:
    point = {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}}
    lsid = _lsid()
    executor.execute("admin", point)
    first = {"insert": "c", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": Int64(1)}
    assert isinstance(executor.execute("db", first), ClosedConnection)  # committed, then the connection closes
    assert executor.execute("db", first)["n"] == 1  # the retry: the stored reply
    executor.execute("admin", {**point, "data": {"failBeforeCommitExceptionCode": 1, "closeConnection": False}})
    second = {"insert": "c", "documents": [{"_id": 2}], "lsid": lsid, "txnNumber": Int64(2)}
    assert executor.execute("db", second)["code"] == 1
    assert executor.execute("db", {"count": "c"})["n"] == 1  # not committed
    assert executor.execute("db", second)["n"] == 1  # the retry runs it
    assert executor.execute("db", {"insert": "c", "documents": [{"_id": 3}]})["n"] == 1  # not a retryable write


def test_over_the_wire(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "db"), "127.0.0.1", 0)
    enable_test_commands(server.executor)
    host, port = server.start()
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        host, port, appname="mine", retryWrites=False, serverSelectionTimeoutMS=2000
    )
    try:
        client.admin.command(
            "configureFailPoint",
            "failCommand",
            mode={"times": 1},
            data={"failCommands": ["insert"], "closeConnection": True},
        )
        with pytest.raises(AutoReconnect):  # the server closed the connection without replying
            client.db.c.insert_one({"_id": 1})
        data = {"failCommands": ["find"], "errorCode": 2, "appName": "other"}
        client.admin.command("configureFailPoint", "failCommand", mode="alwaysOn", data=data)
        assert client.db.c.find_one() is None  # another application's fail point
        data["appName"] = "mine"
        client.admin.command("configureFailPoint", "failCommand", mode="alwaysOn", data=data)
        with pytest.raises(OperationFailure, match="failCommand"):
            client.db.c.find_one()
    finally:
        client.close()
        server.shutdown()
