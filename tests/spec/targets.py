"""The two targets the spec suites run against: the embedded client over a
fresh dbpath, and pymongo over a fresh ``foliodb serve`` (a one-member
replica set). Both run with test commands enabled, so ``failPoint`` works.

What the embedded facade lacks is probed, not assumed, so a skip keyed on it
disappears once the facade has it:

* :data:`FACADE_SESSIONS`: driver sessions (lsids, transactions, retryable
  writes) - the facade's ClientSession is pymongo's own ClientSession (a
  subclass), which is what the session suites' assertions read;
* :func:`facade_closes_connections`: a fail point's closeConnection surfaces
  as pymongo's ConnectionFailure (as a dropped connection does over the wire).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pymongo
from pymongo.client_session import ClientSession
from pymongo.errors import ConnectionFailure, PyMongoError

import foliodb
from foliodb.client.session import ClientSession as FacadeSession
from foliodb.commands import Executor
from foliodb.commands.failpoints import enable_test_commands
from foliodb.commands.replication import ReplicaSet
from foliodb.server import Server

FACADE_SESSIONS = issubclass(FacadeSession, ClientSession)
FACADE_SESSIONS_REASON = (
    "the embedded facade has no driver sessions yet (foliodb.client.session.ClientSession is not a pymongo"
    " ClientSession: no lsid, transactions or retryable writes)"
)


class EmbeddedTarget:
    """Clients of one fresh embedded dbpath; they publish pymongo's command events."""

    monitors_commands = True

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        # Holds the dbpath's engine (shared with the clients) open, test commands enabled, until close().
        self.executor = Executor.open(self.path, ReplicaSet())
        enable_test_commands(self.executor)

    def open_client(self, uri_options: Mapping[str, Any], listener: Any = None) -> Any:
        listeners = [listener] if listener is not None else []
        return foliodb.MongoClient(self.path, event_listeners=listeners, **uri_options)

    def close(self) -> None:
        self.executor.close()


class ServerTarget:
    """pymongo clients of one FolioDB server over a fresh dbpath; they emit command events."""

    monitors_commands = True

    def __init__(self, path: Path) -> None:
        self.server = Server(str(path), "127.0.0.1", 0)
        enable_test_commands(self.server.executor)
        host, port = self.server.start()
        self.uri = f"mongodb://{host}:{port}/"

    def open_client(self, uri_options: Mapping[str, Any], listener: Any = None) -> Any:
        listeners = [listener] if listener is not None else []
        # One local server: selection fails only when no member can match (a secondary read preference).
        options = {"serverSelectionTimeoutMS": 1000, **uri_options}
        return pymongo.MongoClient(self.uri, event_listeners=listeners, **options)

    def close(self) -> None:
        self.server.shutdown()


@functools.cache
def facade_closes_connections() -> bool:
    """Whether a closeConnection fail point reaches an embedded client as ConnectionFailure."""
    with tempfile.TemporaryDirectory() as path:
        target = EmbeddedTarget(Path(path) / "db")
        client = target.open_client({})
        try:
            client.admin.command(
                {
                    "configureFailPoint": "failCommand",
                    "mode": {"times": 1},
                    "data": {"failCommands": ["ping"], "closeConnection": True},
                }
            )
            try:
                client.admin.command("ping")
            except ConnectionFailure:
                return True
            except PyMongoError:
                return False
            return False
        finally:
            client.close()
            target.close()


FACADE_CLOSE_REASON = (
    "the embedded facade does not yet turn a fail point's closeConnection (a ClosedConnection reply) into"
    " pymongo's AutoReconnect"
)
