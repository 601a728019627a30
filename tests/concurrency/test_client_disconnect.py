"""An operation dies with its client: mongod (since 4.2) kills the running operations
of a connection that closes, with ClientDisconnect (279); an embedded client's running
operations stop when it is closed.

Manual: https://www.mongodb.com/docs/manual/release-notes/4.2/#mongod-kills-operations-on-client-disconnect
(the 4.2 release notes), https://www.mongodb.com/docs/manual/reference/command/currentOp/
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import OperationFailure

import foliodb
from tests.concurrency.background import Background, wait_for
from tests.concurrency.conftest import Deployment
from tests.server.test_abuse import frame

ENDLESS = {"find": "c", "filter": {"$where": "while (true) {} return true;"}, "comment": "endless", "$db": "test"}


def _endless(admin: Any) -> list[dict[str, Any]]:
    return [
        op for op in admin.admin.command("currentOp")["inprog"] if op.get("command", {}).get("comment") == "endless"
    ]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks of 1/100 s


def test_a_server_operation_is_killed_when_its_connection_closes(tmp_path: Path) -> None:
    deployment = Deployment("server", str(tmp_path / "data"))
    try:
        admin = deployment.connect()
        admin.test.c.insert_one({"_id": 1})
        sock = socket.create_connection(("127.0.0.1", deployment.port), timeout=10)
        sock.sendall(frame(ENDLESS))
        wait_for(lambda: _endless(admin))
        sock.close()
        closed = time.monotonic()
        wait_for(lambda: not _endless(admin))
        # About 1 s is what the issue asks; generous for a loaded machine (unkilled, it runs for ever).
        assert time.monotonic() - closed < 5.0
        assert deployment.process is not None
        before = _cpu_seconds(deployment.process.pid)
        time.sleep(1.0)
        assert _cpu_seconds(deployment.process.pid) - before < 0.5  # idle again: nothing spins
        # The server goes on serving, and the kill left its other operations alone.
        assert admin.test.c.find_one() == {"_id": 1}
    finally:
        deployment.close()


def test_a_get_more_is_killed_when_its_connection_closes(tmp_path: Path) -> None:
    deployment = Deployment("server", str(tmp_path / "data"))
    try:
        admin = deployment.connect()
        admin.test.c.insert_many([{"_id": i} for i in range(3)])
        sock = socket.create_connection(("127.0.0.1", deployment.port), timeout=10)
        where = {"$where": "if (this._id > 0) { while (true) {} } return true;"}
        sock.sendall(frame({"find": "c", "filter": where, "batchSize": 1, "sort": {"_id": 1}, "$db": "test"}))
        from tests.server.test_abuse import reply

        first = reply(sock)
        assert first is not None and first["cursor"]["firstBatch"] == [{"_id": 0}]
        cursor_id = first["cursor"]["id"]
        sock.sendall(frame({"getMore": cursor_id, "collection": "c", "comment": "endless", "$db": "test"}, 2))
        wait_for(lambda: [op for op in admin.admin.command("currentOp")["inprog"] if op.get("op") == "getmore"])
        sock.close()
        wait_for(lambda: not [op for op in admin.admin.command("currentOp")["inprog"] if op.get("op") == "getmore"])
    finally:
        deployment.close()


def test_an_embedded_clients_operations_stop_when_it_closes(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    client, watcher = foliodb.MongoClient(path), foliodb.MongoClient(path)
    try:
        client.test.c.insert_one({"_id": 1})
        running = Background(
            lambda: list(client.test.c.find({"$where": "while (true) {} return true;"}, comment="endless"))
        )
        wait_for(lambda: _endless(watcher))
        client.close()
        running.join(timeout=10)
        assert isinstance(running.error, OperationFailure) and running.error.code == 279
        assert not _endless(watcher)
        assert watcher.test.c.find_one() == {"_id": 1}  # the other client of the dbpath is untouched
    finally:
        watcher.close()
        client.close()


@pytest.mark.parametrize("kind", ["server"])
def test_closing_a_connection_leaves_other_connections_operations(kind: str, tmp_path: Path) -> None:
    deployment = Deployment(kind, str(tmp_path / "data"))
    try:
        admin = deployment.connect()
        admin.test.c.insert_one({"_id": 1})
        keeper = Background(
            lambda: admin.test.command("find", "c", filter={"$where": "sleep(1500); return true;"}, comment="kept")
        )
        wait_for(
            lambda: [
                op
                for op in admin.admin.command("currentOp")["inprog"]
                if op.get("command", {}).get("comment") == "kept"
            ]
        )
        sock = socket.create_connection(("127.0.0.1", deployment.port), timeout=10)
        sock.sendall(frame(ENDLESS))
        wait_for(lambda: _endless(admin))
        sock.close()
        wait_for(lambda: not _endless(admin))
        assert keeper.join()["cursor"]["firstBatch"] == [{"_id": 1}]
    finally:
        deployment.close()
