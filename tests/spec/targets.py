"""The two targets the spec suites run against: the embedded client over a
fresh dbpath, and pymongo over a fresh ``foliodb serve`` (a one-member
replica set). Both run with test commands enabled, so ``failPoint`` works.

What the embedded facade lacks is probed, not assumed, so a skip keyed on it
disappears once the facade has it:

* :func:`facade_sends_read_preference`: a command read with a non-primary read
  preference carries ``$readPreference``, as pymongo sends it to a replica set.

The few tests that cannot apply to an in-process client are
:data:`EMBEDDED_SKIPS`, each with its reason.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pymongo
from pymongo import monitoring
from pymongo.read_preferences import SecondaryPreferred

import foliodb
from foliodb.commands import Executor
from foliodb.commands.failpoints import enable_test_commands
from foliodb.commands.replication import ReplicaSet
from foliodb.server import Server
from tests.spec.events import CommandRecorder

USER, PASSWORD = "spec-runner", "spec-runner-password"  # the auth target's user


# pymongo, which the embedded facade follows, raises a retried network error itself, not the BulkWriteError
# with the partial result these tests expect; pymongo's own runner skips them (PYTHON-4597).
NETWORK_PARTIAL_RESULT = (
    "pymongo raises the retried network error itself, not a BulkWriteError with the partial result the test"
    " expects; pymongo's own runner skips it (PYTHON-4597)"
)
# The tests that cannot apply to the embedded client, in one place: test id -> why.
EMBEDDED_SKIPS = {
    "error-labels-blockConnection: add RetryableWriteError and UnknownTransactionCommitResult labels to"
    " connection errors": (
        "socketTimeoutMS: the test blocks a command past the client's socket timeout to lose the connection;"
        " an in-process client has no socket to time out (the same labels on a lost connection are tested"
        " through closeConnection)"
    ),
    "bulkWrite: First insertOne is never committed": NETWORK_PARTIAL_RESULT,
    "bulkWrite: Second updateOne is never committed": NETWORK_PARTIAL_RESULT,
    "bulkWrite: Third updateOne is never committed": NETWORK_PARTIAL_RESULT,
}


class EmbeddedTarget:
    """Clients of one fresh embedded dbpath; they publish pymongo's command events."""

    monitors_commands = True
    monitors_pools = False  # no connections, no pools
    auth = False

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        # Holds the dbpath's engine (shared with the clients) open, test commands enabled, until close().
        self.executor = Executor.open(self.path, ReplicaSet())
        enable_test_commands(self.executor)

    def open_client(self, uri_options: Mapping[str, Any], recorder: CommandRecorder | None = None) -> Any:
        listeners = [recorder] if recorder is not None else []
        # The specs' clients are drivers', whose retryWrites defaults to true (the Retryable Writes
        # spec); the embedded client's defaults to false (docs/differences.md), so the tests ask for it.
        options = {"retryWrites": True, **uri_options}
        return foliodb.MongoClient(self.path, event_listeners=listeners, **options)

    def close(self) -> None:
        self.executor.close()


class ServerTarget:
    """pymongo clients of one FolioDB server over a fresh dbpath; they emit command and CMAP
    events. With ``auth``, the server requires authentication and every client
    authenticates (SCRAM) as a root user, created through the localhost exception."""

    monitors_commands = True
    monitors_pools = True

    def __init__(self, path: Path, auth: bool = False) -> None:
        self.auth = auth
        self.server = Server(str(path), "127.0.0.1", 0, auth=auth)
        enable_test_commands(self.server.executor)
        host, port = self.server.start()
        self.uri = f"mongodb://{host}:{port}/"
        if auth:
            with pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=1000) as first:
                first.admin.command("createUser", USER, pwd=PASSWORD, roles=["root"])
            self.uri = f"mongodb://{USER}:{PASSWORD}@{host}:{port}/?authSource=admin"

    def open_client(self, uri_options: Mapping[str, Any], recorder: CommandRecorder | None = None) -> Any:
        listeners = [recorder, recorder.pool] if recorder is not None else []
        # One local server: selection fails only when no member can match (a secondary read preference).
        options = {"serverSelectionTimeoutMS": 1000, **uri_options}
        return pymongo.MongoClient(self.uri, event_listeners=listeners, **options)

    def close(self) -> None:
        self.server.shutdown()


class _Started(monitoring.CommandListener):
    """The commands a client started."""

    def __init__(self) -> None:
        self.commands: list[Mapping[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.commands.append(event.command)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@functools.cache
def facade_sends_read_preference() -> bool:
    """Whether an embedded client's secondaryPreferred find carries ``$readPreference``."""
    with tempfile.TemporaryDirectory() as path:
        target = EmbeddedTarget(Path(path) / "db")
        listener = _Started()
        client = foliodb.MongoClient(target.path, event_listeners=[listener])
        try:
            client.db.get_collection("c", read_preference=SecondaryPreferred()).find_one()
            return any("$readPreference" in command for command in listener.commands if "find" in command)
        finally:
            client.close()
            target.close()


FACADE_READ_PREFERENCE_REASON = (
    "the embedded facade does not send $readPreference with a non-primary read preference, as pymongo does to"
    " a replica set (the test asserts it in command events)"
)
