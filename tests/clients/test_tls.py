"""TLS on ``foliodb serve`` (--tlsMode, --tlsCertificateKeyFile, --tlsCAFile) and
MONGODB-X509 authentication, through pymongo and the Node.js driver, with a
CA and certificates made at test time.

Manual: https://www.mongodb.com/docs/manual/tutorial/configure-ssl/,
https://www.mongodb.com/docs/manual/tutorial/configure-x509-client-authentication/
"""

from __future__ import annotations

import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from bson import json_util
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError

from foliodb.server import Server
from foliodb.server.tls import TLSError
from tests.clients.certs import CLIENT_SUBJECT, Certificates, make_certificates
from tests.clients.conftest import NODE, NODE_DIR, needs_node_clients

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


class TLSServer:
    def __init__(self, dbpath: Path, certs: Certificates, mode: str, **options: Any) -> None:
        self.certs = certs
        self.server = Server(
            str(dbpath), "127.0.0.1", 0, tls_mode=mode, tls_certificate_key_file=str(certs.server), **options
        )
        self.host, self.port = self.server.start()
        self.clients: list[Any] = []

    def client(self, tls: bool = True, **options: Any) -> Any:
        if tls:
            options = {"tls": True, "tlsCAFile": str(self.certs.ca), **options}
        client: Any = pymongo.MongoClient("localhost", self.port, serverSelectionTimeoutMS=2000, **options)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.server.shutdown()


@pytest.fixture
def serve(tmp_path: Path, certs: Certificates) -> Iterator[Any]:
    started: list[TLSServer] = []

    def start(mode: str, **options: Any) -> TLSServer:
        server = TLSServer(tmp_path / f"data{len(started)}", certs, mode, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_require_tls_serves_tls_and_refuses_plain_connections(serve: Any) -> None:
    server = serve("requireTLS")
    secure = server.client()
    secure.shop.notes.insert_one({"_id": 1})
    assert secure.shop.notes.find_one() == {"_id": 1}
    with pytest.raises(ServerSelectionTimeoutError):
        server.client(tls=False).admin.command("ping")
    # A client that does not trust the server's CA refuses it.
    with pytest.raises(ServerSelectionTimeoutError):
        server.client(tls=True, tlsCAFile=str(server.certs.client)).admin.command("ping")


@pytest.mark.parametrize("mode", ["allowTLS", "preferTLS"])
def test_allow_and_prefer_tls_take_both(serve: Any, mode: str) -> None:
    server = serve(mode)
    server.client().shop.notes.insert_one({"_id": 1})
    assert server.client(tls=False).shop.notes.find_one() == {"_id": 1}


def test_tls_options_are_checked_before_serving(tmp_path: Path, certs: Certificates) -> None:
    with pytest.raises(TLSError):
        Server(str(tmp_path / "a"), "127.0.0.1", 0, tls_mode="requireTLS")  # no certificate
    with pytest.raises(TLSError):
        Server(str(tmp_path / "b"), "127.0.0.1", 0, tls_mode="requireTLS", tls_certificate_key_file=str(tmp_path))
    with pytest.raises(TLSError):
        Server(str(tmp_path / "c"), "127.0.0.1", 0, tls_mode="sometimes")


def test_x509_logs_in_as_the_certificate_subject(serve: Any, certs: Certificates) -> None:
    server = serve("requireTLS", auth=True, tls_ca_file=str(certs.ca))
    local = server.client(tlsCertificateKeyFile=str(server.certs.client))
    local.admin.command("createUser", "root", pwd="pw", roles=["root"])  # the localhost exception
    admin = server.client(tlsCertificateKeyFile=str(server.certs.client), username="root", password="pw")
    admin["$external"].command("createUser", CLIENT_SUBJECT, roles=[{"role": "readWrite", "db": "shop"}])
    assert admin.admin.system.users.find_one({"_id": f"$external.{CLIENT_SUBJECT}"})["credentials"] == {
        "external": True
    }
    reporting = server.client(tlsCertificateKeyFile=str(server.certs.client), authMechanism="MONGODB-X509")
    reporting.shop.notes.insert_one({"_id": 1})
    status = reporting.admin.command("connectionStatus")["authInfo"]
    assert status["authenticatedUsers"] == [{"user": CLIENT_SUBJECT, "db": "$external"}]
    with pytest.raises(OperationFailure) as other:
        reporting.other.notes.find_one()
    assert other.value.code == 13
    # Without --tlsAllowConnectionsWithoutCertificates, a CA means every client shows a certificate...
    with pytest.raises(ServerSelectionTimeoutError):
        server.client().admin.command("ping")
    # ...signed by that CA.
    with pytest.raises(ServerSelectionTimeoutError):
        server.client(tlsCertificateKeyFile=str(server.certs.stranger)).admin.command("ping")


def test_x509_needs_a_certificate_and_a_user(serve: Any, certs: Certificates) -> None:
    server = serve("requireTLS", auth=True, tls_ca_file=str(certs.ca), tls_allow_connections_without_certificates=True)
    plain_tls = server.client()
    plain_tls.admin.command("ping")  # allowed in without a certificate...
    with pytest.raises(OperationFailure) as missing:
        server.client(authMechanism="MONGODB-X509").admin.command("ping")  # ...but not logged in
    assert missing.value.code == 18
    with pytest.raises(OperationFailure) as unknown:  # a valid certificate of no $external user
        server.client(tlsCertificateKeyFile=str(server.certs.client), authMechanism="MONGODB-X509").admin.command(
            "ping"
        )
    assert unknown.value.code == 18


@needs_node_clients
def test_node_driver_over_tls_and_x509(serve: Any, certs: Certificates) -> None:
    server = serve("requireTLS", auth=True, tls_ca_file=str(certs.ca))
    local = server.client(tlsCertificateKeyFile=str(certs.client))
    local.admin.command("createUser", "root", pwd="pw", roles=["root"])
    admin = server.client(tlsCertificateKeyFile=str(certs.client), username="root", password="pw")
    admin["$external"].command("createUser", CLIENT_SUBJECT, roles=[{"role": "readWrite", "db": "shop"}])
    quoted = urllib.parse.quote
    base = f"mongodb://localhost:{server.port}/?tls=true&tlsCAFile={quoted(str(certs.ca))}"
    client_cert = f"&tlsCertificateKeyFile={quoted(str(certs.client))}"
    x509 = run_node(base + client_cert + "&authMechanism=MONGODB-X509&authSource=%24external", "shop")
    assert x509 == {"found": {"_id": 1, "text": "over TLS"}, "users": [{"user": CLIENT_SUBJECT, "db": "$external"}]}
    scram = run_node(base.replace("mongodb://", "mongodb://root:pw@") + client_cert, "other")
    assert scram["users"] == [{"user": "root", "db": "admin"}]
    refused = run_node(f"mongodb://localhost:{server.port}/?serverSelectionTimeoutMS=1000", "shop")
    assert refused["error"]["name"] == "MongoServerSelectionError"


def run_node(uri: str, db: str) -> dict[str, Any]:
    assert NODE is not None
    proc = subprocess.run(
        [NODE, str(NODE_DIR / "tls.js"), uri, db], cwd=NODE_DIR, capture_output=True, text=True, timeout=60
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, proc.stderr
    result: dict[str, Any] = json_util.loads(lines[-1])
    return result


def test_tls_connections_wait_in_the_server_loop(serve: Any) -> None:
    """Once its first message is answered a TLS connection waits in the server's loop
    (foliodb/server/loop.py) like a plain one: no thread of its own, and large replies,
    whose writes cannot finish at once, and many small ones arrive whole."""
    import threading
    import time

    server = serve("requireTLS")
    clients = [server.client(maxPoolSize=1) for _ in range(8)]
    for i, client in enumerate(clients):
        client.test.c.insert_one({"_id": i, "pad": "x" * 1_000_000})
    # Each monitor's awaitable hello waits on a loop thread, beside the loop; no connection keeps its own.
    deadline = time.monotonic() + 10
    while sum(t.name.startswith("foliodb-conn") for t in threading.enumerate()) > 0:
        assert time.monotonic() < deadline, "connection threads stayed after their first message"
        time.sleep(0.05)
    for _ in range(3):
        for client in clients:
            assert len(list(client.test.c.find())) == 8  # an 8 MB batch through TLS
            assert [doc["_id"] for doc in client.test.c.find({}, {"pad": 0}).batch_size(2)] == list(range(8))
