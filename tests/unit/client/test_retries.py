"""The embedded client's driver-side retries and error labels, against fail points.

A fail point answers as a failing server would; the client then retries as
pymongo does. Each case cites the driver specification it follows; expected
attempt counts and labels are written out from those pages (and pymongo
4.20's ``_ClientConnectionRetryable``), never computed by FolioDB:

* RETRYABLE_WRITES: one retry, with the same lsid and txnNumber, after an
  error labelled RetryableWriteError or a lost connection; only with
  ``retryWrites`` (the embedded client's default is false);
* RETRYABLE_READS: one retry after a lost connection or an error with a
  retryable code, ``retryReads`` defaulting to true;
* TRANSACTIONS: commit and abort are retried once; a retried commit asks for
  ``w: "majority"`` and a 10-second wtimeout; a lost connection in a
  transaction is a TransientTransactionError, one on commit an
  UnknownTransactionCommitResult; abort's errors are swallowed;
* BACKPRESSURE: SystemOverloadedError with RetryableError is retried up to
  ``maxAdaptiveRetries`` (default 2) times.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo import monitoring
from pymongo.errors import AutoReconnect, ConnectionFailure, OperationFailure

import foliodb
from foliodb.commands import Executor
from foliodb.commands.failpoints import enable_test_commands
from foliodb.commands.replication import ReplicaSet

RETRYABLE_WRITES = "https://github.com/mongodb/specifications/blob/master/source/retryable-writes/retryable-writes.md"
RETRYABLE_READS = "https://github.com/mongodb/specifications/blob/master/source/retryable-reads/retryable-reads.md"
TRANSACTIONS = "https://github.com/mongodb/specifications/blob/master/source/transactions/transactions.md"
BACKPRESSURE = "https://github.com/mongodb/specifications/blob/master/source/client-backpressure/client-backpressure.md"

OVERLOADED = ["RetryableError", "SystemOverloadedError"]
# The retryable codes of the Retryable Reads spec, and two that are not (BadValue, WriteConflict).
RETRYABLE_CODES = [11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001, 262, 134]
OTHER_CODES = [2, 112]


class Events(monitoring.CommandListener):
    """The commands a client started, and the names of those that failed."""

    def __init__(self) -> None:
        self.started_commands: list[dict[str, Any]] = []
        self.failures: list[tuple[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.started_commands.append(dict(event.command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.failures.append((event.command_name, event.failure))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [cmd for cmd in self.started_commands if next(iter(cmd)) == name]

    def clear(self) -> None:
        self.started_commands.clear()
        self.failures.clear()


@pytest.fixture
def dbpath(tmp_path: Path) -> Iterator[str]:
    """A dbpath with test commands enabled, held open while the test's clients use it."""
    path = str(tmp_path / "db")
    executor = Executor.open(path, ReplicaSet())
    enable_test_commands(executor)
    yield path
    executor.close()


@pytest.fixture
def events() -> Events:
    return Events()


def _client(dbpath: str, events: Events, **options: Any) -> Any:
    return foliodb.MongoClient(dbpath, event_listeners=[events], **options)


def _fail(client: Any, mode: Any, **data: Any) -> None:
    client.admin.command({"configureFailPoint": "failCommand", "mode": mode, "data": data})


def _off(client: Any) -> None:
    client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})


def test_a_closed_connection_is_autoreconnect(dbpath: str, events: Events) -> None:
    # RETRYABLE_WRITES: a command whose connection closed raises a network error (pymongo's
    # AutoReconnect), published as a failed command; the next command runs.
    with _client(dbpath, events) as client:
        _fail(client, {"times": 1}, failCommands=["ping"], closeConnection=True)
        with pytest.raises(AutoReconnect):
            client.admin.command("ping")
        assert [name for name, _ in events.failures] == ["ping"]
        assert events.failures[0][1]["errtype"] == "AutoReconnect"
        assert client.admin.command("ping")["ok"] == 1.0


def test_without_listeners_too(dbpath: str) -> None:
    # RETRYABLE_READS, RETRYABLE_WRITES: the same rules on a client that publishes no events.
    with foliodb.MongoClient(dbpath) as client:
        client.db.c.insert_one({"_id": 1})
        _fail(client, {"times": 1}, failCommands=["find"], closeConnection=True)
        assert client.db.c.find_one({"_id": 1}) == {"_id": 1}
        _fail(client, {"times": 1}, failCommands=["delete"], closeConnection=True)
        with pytest.raises(AutoReconnect):
            client.db.c.delete_one({"_id": 1})
        assert client.db.c.count_documents({}) == 1


def test_by_default_a_write_is_not_retried(dbpath: str, events: Events) -> None:
    # RETRYABLE_WRITES: without retryWrites no write is retried, and no lsid or txnNumber is sent
    # (the embedded client's default, docs/differences.md); the error has no RetryableWriteError.
    with _client(dbpath, events) as client:
        _fail(client, {"times": 1}, failCommands=["insert"], closeConnection=True)
        with pytest.raises(AutoReconnect) as raised:
            client.db.c.insert_one({"_id": 1})
        assert not raised.value.has_error_label("RetryableWriteError")
        inserts = events.named("insert")
        assert len(inserts) == 1 and "lsid" not in inserts[0] and "txnNumber" not in inserts[0]
        assert client.db.c.count_documents({}) == 0


def test_retry_writes_retries_once_with_the_same_txn_number(dbpath: str, events: Events) -> None:
    # RETRYABLE_WRITES: after a lost connection the same command goes again, same lsid and txnNumber.
    with _client(dbpath, events, retryWrites=True) as client:
        _fail(client, {"times": 1}, failCommands=["insert"], closeConnection=True)
        assert client.db.c.insert_one({"_id": 1}).inserted_id == 1
        first, second = events.named("insert")
        assert first["lsid"] == second["lsid"] and first["txnNumber"] == second["txnNumber"]
        assert list(client.db.c.find()) == [{"_id": 1}]


def test_a_retryable_write_is_retried_only_once(dbpath: str, events: Events) -> None:
    # RETRYABLE_WRITES: the second error is the operation's, labelled RetryableWriteError.
    with _client(dbpath, events, retryWrites=True) as client:
        _fail(client, {"times": 2}, failCommands=["update"], errorCode=91)  # ShutdownInProgress
        with pytest.raises(OperationFailure) as raised:
            client.db.c.update_one({"_id": 1}, {"$set": {"x": 1}}, upsert=True)
        assert raised.value.code == 91 and raised.value.has_error_label("RetryableWriteError")
        assert len(events.named("update")) == 2


def test_a_multi_document_write_is_not_retried(dbpath: str, events: Events) -> None:
    # RETRYABLE_WRITES: update_many is not a retryable write (no txnNumber, no retry).
    with _client(dbpath, events, retryWrites=True) as client:
        _fail(client, {"times": 1}, failCommands=["update"], closeConnection=True)
        with pytest.raises(AutoReconnect):
            client.db.c.update_many({}, {"$set": {"x": 1}})
        assert len(events.named("update")) == 1 and "txnNumber" not in events.named("update")[0]


def test_a_write_concern_error_with_the_label_is_retried(dbpath: str, events: Events) -> None:
    # RETRYABLE_WRITES: a write concern error labelled RetryableWriteError is retried; the retry is
    # answered from the stored reply, so the document is inserted once.
    with _client(dbpath, events, retryWrites=True) as client:
        concern_error = {"code": 91, "errmsg": "Replication is being shut down", "errorLabels": ["RetryableWriteError"]}
        _fail(client, {"times": 1}, failCommands=["insert"], writeConcernError=concern_error)
        client.db.c.insert_one({"_id": 1})
        assert len(events.named("insert")) == 2
        assert client.db.c.count_documents({}) == 1


@pytest.mark.parametrize("code", RETRYABLE_CODES)
def test_a_read_is_retried_once_after_a_retryable_code(dbpath: str, events: Events, code: int) -> None:
    # RETRYABLE_READS: retryReads is on by default, sessions or not.
    with _client(dbpath, events) as client:
        client.db.c.insert_one({"_id": 1})
        _fail(client, {"times": 1}, failCommands=["find"], errorCode=code)
        assert client.db.c.find_one() == {"_id": 1}
        assert len(events.named("find")) == 2


def test_retry_reads_false_and_a_lost_connection(dbpath: str, events: Events) -> None:
    # RETRYABLE_READS: with retryReads=false the first error is the operation's.
    with _client(dbpath, events, retryReads=False) as client:
        _fail(client, {"times": 1}, failCommands=["distinct"], closeConnection=True)
        with pytest.raises(ConnectionFailure):
            client.db.c.distinct("x")
        assert len(events.named("distinct")) == 1


def test_a_get_more_and_a_run_command_are_not_retried(dbpath: str, events: Events) -> None:
    # RETRYABLE_READS: getMore and runCommand are not retryable reads.
    with _client(dbpath, events) as client:
        client.db.c.insert_many([{"_id": i} for i in range(5)])
        cursor = client.db.c.find(batch_size=2)
        assert [next(cursor), next(cursor)] == [{"_id": 0}, {"_id": 1}]  # the first batch
        _fail(client, {"times": 2}, failCommands=["getMore", "count"], errorCode=11600)
        with pytest.raises(OperationFailure):
            next(cursor)
        with pytest.raises(OperationFailure):
            client.db.command("count", "c")
        assert len(events.named("getMore")) == 1 and len(events.named("count")) == 1


@settings(max_examples=40, deadline=None)
@given(
    failures=st.integers(min_value=0, max_value=3),
    code=st.sampled_from(RETRYABLE_CODES + OTHER_CODES),
    retry_reads=st.booleans(),
)
def test_read_attempts_follow_the_rule(failures: int, code: int, retry_reads: bool) -> None:
    # RETRYABLE_READS: attempts = 2 when the first fails with a retryable code and retryReads is on,
    # else 1; the operation succeeds when the last attempt is past the failures.
    directory = tempfile.TemporaryDirectory()
    path = str(Path(directory.name) / "db")
    executor = Executor.open(path, ReplicaSet())
    enable_test_commands(executor)
    events = Events()
    try:
        with _client(path, events, retryReads=retry_reads) as client:
            if failures:
                _fail(client, {"times": failures}, failCommands=["find"], errorCode=code)
            retried = failures > 0 and retry_reads and code in RETRYABLE_CODES
            attempts = 2 if retried else 1
            if failures >= attempts:
                with pytest.raises(OperationFailure):
                    client.db.c.find_one()
            else:
                assert client.db.c.find_one() is None
            assert len(events.named("find")) == attempts
            _off(client)
    finally:
        executor.close()
        directory.cleanup()


def test_a_lost_connection_in_a_transaction_is_transient(dbpath: str, events: Events) -> None:
    # TRANSACTIONS: a network error inside a transaction carries TransientTransactionError; a
    # statement in a transaction is not retried.
    with _client(dbpath, events, retryWrites=True) as client, client.start_session() as session:
        client.db.create_collection("c")
        session.start_transaction()
        _fail(client, {"times": 1}, failCommands=["insert"], closeConnection=True)
        with pytest.raises(ConnectionFailure) as raised:
            client.db.c.insert_one({"_id": 1}, session=session)
        assert raised.value.has_error_label("TransientTransactionError")
        assert len(events.named("insert")) == 1
        session.abort_transaction()


def test_commit_is_retried_once_with_majority(dbpath: str, events: Events) -> None:
    # TRANSACTIONS: commitTransaction is retried once after a retryable error, whatever
    # retryWrites says; the retry is upgraded to w: "majority" with wtimeout 10000.
    with _client(dbpath, events) as client, client.start_session() as session:
        client.db.create_collection("c")
        session.start_transaction()
        client.db.c.insert_one({"_id": 1}, session=session)
        _fail(client, {"times": 1}, failCommands=["commitTransaction"], errorCode=189)  # PrimarySteppedDown
        session.commit_transaction()
        first, second = events.named("commitTransaction")
        assert "writeConcern" not in first
        assert second["writeConcern"] == {"w": "majority", "wtimeout": 10000}
        assert client.db.c.count_documents({}) == 1


def test_a_commit_that_lost_its_connection_twice(dbpath: str, events: Events) -> None:
    # TRANSACTIONS: a network error on commit is an UnknownTransactionCommitResult (and
    # RetryableWriteError), not a TransientTransactionError; a commit may be sent again after it.
    with _client(dbpath, events) as client, client.start_session() as session:
        client.db.create_collection("c")
        session.start_transaction()
        client.db.c.insert_one({"_id": 1}, session=session)
        _fail(client, {"times": 2}, failCommands=["commitTransaction"], closeConnection=True)
        with pytest.raises(ConnectionFailure) as raised:
            session.commit_transaction()
        error = raised.value
        assert error.has_error_label("UnknownTransactionCommitResult")
        assert error.has_error_label("RetryableWriteError")
        assert not error.has_error_label("TransientTransactionError")
        assert len(events.named("commitTransaction")) == 2
        session.commit_transaction()
        assert client.db.c.count_documents({}) == 1


def test_abort_is_retried_once_and_its_errors_swallowed(dbpath: str, events: Events) -> None:
    # TRANSACTIONS: abortTransaction is retried once; its error is never raised.
    with _client(dbpath, events) as client, client.start_session() as session:
        client.db.create_collection("c")
        session.start_transaction()
        client.db.c.insert_one({"_id": 1}, session=session)
        _fail(client, "alwaysOn", failCommands=["abortTransaction"], closeConnection=True)
        session.abort_transaction()
        _off(client)
        assert len(events.named("abortTransaction")) == 2
        assert not session.in_transaction


@pytest.mark.parametrize(("options", "attempts"), [({}, 3), ({"maxAdaptiveRetries": 1}, 2), ({"retryReads": False}, 1)])
def test_backpressure_retries(dbpath: str, events: Events, options: dict[str, Any], attempts: int) -> None:
    # BACKPRESSURE: an overloaded, retryable error is retried maxAdaptiveRetries times (default 2)
    # after jittered backoff, whatever its code (BadValue here), when retryReads allows the read to
    # retry at all.
    with _client(dbpath, events, **options) as client:
        _fail(client, "alwaysOn", failCommands=["find"], errorCode=2, errorLabels=OVERLOADED)
        with pytest.raises(OperationFailure) as raised:
            client.db.c.find_one()
        _off(client)
        assert raised.value.has_error_label("SystemOverloadedError")
        assert len(events.named("find")) == attempts


def test_backpressure_retries_a_statement_in_a_transaction(dbpath: str, events: Events) -> None:
    # BACKPRESSURE: unlike other errors, an overloaded one is retried inside a transaction; the
    # first statement of one is sent again as the transaction's start.
    with _client(dbpath, events, retryWrites=True) as client, client.start_session() as session:
        client.db.create_collection("c")
        session.start_transaction()
        _fail(client, {"times": 1}, failCommands=["insert"], errorCode=112, errorLabels=OVERLOADED)
        client.db.c.insert_one({"_id": 1}, session=session)
        session.commit_transaction()
        first, second = events.named("insert")
        assert first["startTransaction"] is True and second["startTransaction"] is True
        assert first["txnNumber"] == second["txnNumber"]
        assert client.db.c.count_documents({}) == 1


def test_the_app_name_reaches_the_fail_point(dbpath: str, events: Events) -> None:
    # The failCommand fail point's appName matches the client's appName, as a server learns it
    # from the connection handshake.
    with _client(dbpath, events, appName="app-a") as named, _client(dbpath, Events()) as other:
        _fail(other, "alwaysOn", failCommands=["ping"], errorCode=2, appName="app-a")
        assert other.admin.command("ping")["ok"] == 1.0
        with pytest.raises(OperationFailure):
            named.admin.command("ping")
        _off(other)
