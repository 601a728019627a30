"""The server's edges: startup warnings (log, ``getLog: "startupWarnings"``,
mongosh's banner), exhaust cursors, getMore's maxTimeMS rule, malformed
legacy messages, and ``foliodb serve``'s TLS options.

Manual: https://www.mongodb.com/docs/manual/reference/command/getLog/,
https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/ (exhaustAllowed, moreToCome),
https://www.mongodb.com/docs/manual/reference/command/getMore/
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure

from foliodb.server import Server
from tests.clients.certs import make_certificates
from tests.clients.conftest import RunningServer, needs_node_clients
from tests.clients.test_mongosh import run_mongosh

pytestmark = pytest.mark.clients

ROOT = Path(__file__).resolve().parents[2]
HEADER = struct.Struct("<iiii")
MORE_TO_COME, EXHAUST_ALLOWED = 1 << 1, 1 << 16


class Serve:
    """``python -m foliodb serve ...`` in a child process."""

    def __init__(self, tmp: Path, *options: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "foliodb", "serve", "--dbpath", str(tmp / "data"), "--port", "0", *options],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "waiting for connections on" in line, line + (self.proc.stderr.read() if self.proc.stderr else "")
        self.port = int(line.split(" on ")[1].split()[0].rsplit(":", 1)[1])

    def stop(self) -> str:
        self.proc.terminate()
        _out, err = self.proc.communicate(timeout=20)
        return err


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    started: list[Serve] = []

    def start(*options: str) -> Serve:
        directory = tmp_path / f"s{len(started)}"
        directory.mkdir()
        started.append(Serve(directory, *options))
        return started[-1]

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.stop()


def test_an_open_network_address_without_auth_or_tls_warns_at_startup(serve: Any, tmp_path: Path) -> None:
    exposed = serve("--bind_ip", "0.0.0.0")
    with pymongo.MongoClient("127.0.0.1", exposed.port, serverSelectionTimeoutMS=5000) as client:
        lines = client.admin.command("getLog", "startupWarnings")["log"]
    entries = [json.loads(line) for line in lines]  # mongod's JSON log lines, which mongosh parses
    assert [e["s"] for e in entries] == ["W", "W"]
    assert entries[0]["msg"].startswith("Access control is not enabled for the database.")
    assert "TLS is not enabled" in entries[1]["msg"]
    assert exposed.stop().count("** WARNING") == 2
    quiet = serve()  # 127.0.0.1: nothing to warn about
    with pymongo.MongoClient("127.0.0.1", quiet.port, serverSelectionTimeoutMS=5000) as client:
        assert client.admin.command("getLog", "startupWarnings")["log"] == []
    assert "WARNING" not in quiet.stop()


@needs_node_clients
def test_mongosh_shows_the_startup_warnings(serve: Any, tmp_path: Path) -> None:
    exposed = serve("--bind_ip", "0.0.0.0")
    shell = run_mongosh(tmp_path, f"mongodb://127.0.0.1:{exposed.port}/", stdin="exit\n")
    assert "The server generated these startup warnings when booting" in shell.stdout, shell.stdout + shell.stderr
    assert "Access control is not enabled for the database" in shell.stdout


def test_serve_takes_tls_options(serve: Any, tmp_path: Path) -> None:
    certs = make_certificates(tmp_path)
    secure = serve("--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(certs.server), "--maxConns", "50")
    with pymongo.MongoClient(
        "localhost", secure.port, tls=True, tlsCAFile=str(certs.ca), serverSelectionTimeoutMS=5000
    ) as client:
        status = client.admin.command("serverStatus")["connections"]
        assert status["current"] + status["available"] == 50
    secure.stop()
    failed = subprocess.run(
        [sys.executable, "-m", "foliodb", "serve", "--dbpath", str(tmp_path / "x"), "--tlsMode", "requireTLS"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failed.returncode == 1 and "needs --tlsCertificateKeyFile" in failed.stderr


def _op_msg(command: dict[str, Any], request_id: int, flags: int = 0) -> bytes:
    body = struct.pack("<I", flags) + b"\x00" + bson.encode(command)
    return HEADER.pack(HEADER.size + len(body), request_id, 0, 2013) + body


_PENDING: dict[int, bytes] = {}  # bytes read past the last message, per socket (streamed replies)


def _read(sock: socket.socket) -> tuple[int, int, int, dict[str, Any]]:
    """(requestID, responseTo, OP_MSG flags, document) of the next message."""
    data = _PENDING.pop(sock.fileno(), b"")
    while len(data) < 4 or len(data) < struct.unpack_from("<i", data)[0]:
        chunk = sock.recv(1 << 20)
        assert chunk, "the server closed the connection"
        data += chunk
    length, request_id, response_to, _op = HEADER.unpack_from(data)
    _PENDING[sock.fileno()] = data[length:]
    (flags,) = struct.unpack_from("<I", data, HEADER.size)
    return request_id, response_to, flags, bson.decode(data[HEADER.size + 5 : length])


def test_an_exhaust_get_more_streams_its_batches(server: RunningServer) -> None:
    with server.client() as client:
        client.shop.items.insert_many([{"_id": i} for i in range(250)])
        # pymongo's exhaust cursors: one getMore, then batches the server streams (moreToCome).
        assert [d["_id"] for d in client.shop.items.find(cursor_type=CursorType.EXHAUST, batch_size=40)] == list(
            range(250)
        )
        # On the wire: each reply answers the previous one, and all but the last say more will come.
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            sock.sendall(_op_msg({"find": "items", "batchSize": 100, "$db": "shop"}, 1))
            first = _read(sock)[3]["cursor"]
            sock.sendall(
                _op_msg(
                    {"getMore": first["id"], "collection": "items", "batchSize": 50, "$db": "shop"}, 2, EXHAUST_ALLOWED
                )
            )
            replies = []
            previous = 2
            while True:
                request_id, response_to, flags, doc = _read(sock)
                assert response_to == previous
                replies.append((bool(flags & MORE_TO_COME), len(doc["cursor"]["nextBatch"]), doc["cursor"]["id"]))
                previous = request_id
                if not flags & MORE_TO_COME:
                    break
            # The third batch ends at the last document, which the scan does not know until it reads
            # on (as mongod's): one more, empty, reply ends the stream.
            assert replies == [(True, 50, first["id"])] * 3 + [(False, 0, 0)]
            # Without exhaustAllowed, one reply per getMore, as before.
            sock.sendall(_op_msg({"find": "items", "batchSize": 1, "$db": "shop"}, 3))
            cursor_id = _read(sock)[3]["cursor"]["id"]
            sock.sendall(_op_msg({"getMore": cursor_id, "collection": "items", "batchSize": 1, "$db": "shop"}, 4))
            assert _read(sock)[2] == 0


def test_max_time_ms_on_get_more_needs_an_await_data_cursor(wire_client: Any) -> None:
    wire_client.shop.items.insert_many([{"_id": i} for i in range(5)])
    cursor_id = wire_client.shop.command("find", "items", batchSize=1)["cursor"]["id"]
    with pytest.raises(OperationFailure) as info:
        wire_client.shop.command("getMore", cursor_id, collection="items", maxTimeMS=100)
    assert (info.value.code, info.value.details["errmsg"]) == (  # type: ignore[index]
        2,
        "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
    )
    wire_client.shop.create_collection("log", capped=True, size=4096)
    wire_client.shop.log.insert_one({"_id": 1})
    tail = wire_client.shop.command("find", "log", tailable=True, awaitData=True, batchSize=1)["cursor"]["id"]
    assert wire_client.shop.command("getMore", tail, collection="log", maxTimeMS=100)["ok"] == 1.0


def test_a_legacy_query_whose_query_is_no_document_gets_an_error_reply(server: RunningServer) -> None:
    query = bson.encode({"$query": 5})
    body = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + query
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(HEADER.pack(HEADER.size + len(body), 7, 0, 2004) + body)
        data = sock.recv(65536)
        length, _rid, response_to, op_code = HEADER.unpack_from(data)
        assert (response_to, op_code) == (7, 1)  # an OP_REPLY to it
        doc = bson.decode(data[HEADER.size + 20 : length])
        assert (doc["ok"], doc["code"]) == (0.0, 14)
        sock.sendall(_op_msg({"ping": 1, "$db": "admin"}, 8))  # and the connection goes on
        assert _read(sock)[3]["ok"] == 1.0


def test_the_server_object_takes_the_same_options(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "d"), "127.0.0.1", 0, max_conns=7)
    try:
        server.start()
        assert server.max_conns == 7
    finally:
        server.shutdown()
