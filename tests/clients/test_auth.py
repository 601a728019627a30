"""Users, SCRAM authentication and built-in roles on ``foliodb serve --auth``,
through pymongo, the Node.js driver and mongosh as they log in to mongod.

Manual: https://www.mongodb.com/docs/manual/core/authentication/,
https://www.mongodb.com/docs/manual/reference/built-in-roles/,
https://www.mongodb.com/docs/manual/core/localhost-exception/
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

from foliodb.server import Server
from tests.clients.conftest import NODE_DIR, needs_node_clients
from tests.clients.test_mongosh import run_mongosh

pytestmark = pytest.mark.clients

ROOT_USER, ROOT_PASSWORD = "admin", "s3cret,=ünï"  # ',' and '=' are escaped in SCRAM; SASLprep keeps ü


class AuthServer:
    def __init__(self, dbpath: Path) -> None:
        self.server = Server(str(dbpath), "127.0.0.1", 0, auth=True)
        self.host, self.port = self.server.start()
        self.clients: list[Any] = []

    def client(self, **options: Any) -> Any:
        client: Any = pymongo.MongoClient(self.host, self.port, serverSelectionTimeoutMS=3000, **options)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.server.shutdown()


@pytest.fixture
def auth_server(tmp_path: Path) -> Iterator[AuthServer]:
    server = AuthServer(tmp_path / "data")
    # The localhost exception: with no users yet, a local client may create the first one, in admin.
    server.client().admin.command("createUser", ROOT_USER, pwd=ROOT_PASSWORD, roles=["root"])
    yield server
    server.stop()


def root(server: AuthServer, **options: Any) -> Any:
    return server.client(username=ROOT_USER, password=ROOT_PASSWORD, **options)


def test_unauthenticated_clients_get_only_the_handshake(auth_server: AuthServer) -> None:
    anonymous = auth_server.client()
    assert anonymous.admin.command("ping")["ok"] == 1.0
    assert anonymous.admin.command("buildInfo")["version"] == "8.0.0"
    with pytest.raises(OperationFailure) as info:
        anonymous.shop.orders.find_one()
    assert (info.value.code, str(info.value.details["errmsg"])) == (13, "Command find requires authentication")  # type: ignore[index]
    # The localhost exception closed with the first user.
    with pytest.raises(OperationFailure) as second:
        anonymous.admin.command("createUser", "intruder", pwd="x", roles=["root"])
    assert second.value.code == 13


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1", "DEFAULT"])
def test_scram_mechanisms_log_in(auth_server: AuthServer, mechanism: str) -> None:
    client = root(auth_server, authMechanism=mechanism)
    client.shop.orders.insert_one({"_id": 1})
    status = client.admin.command("connectionStatus")["authInfo"]
    assert status["authenticatedUsers"] == [{"user": ROOT_USER, "db": "admin"}]
    assert status["authenticatedUserRoles"] == [{"role": "root", "db": "admin"}]


def test_wrong_password_and_unknown_user_fail_alike(auth_server: AuthServer) -> None:
    for username, password in ((ROOT_USER, "wrong"), ("nobody", "x")):
        with pytest.raises(OperationFailure) as info:
            auth_server.client(username=username, password=password).admin.command("ping")
        assert (info.value.code, info.value.details["codeName"]) == (18, "AuthenticationFailed")  # type: ignore[index]


def test_built_in_roles(auth_server: AuthServer) -> None:
    admin = root(auth_server)
    admin.shop.orders.insert_many([{"_id": i} for i in range(3)])
    admin.other.things.insert_one({"_id": 1})
    for name, roles in (
        ("reader", ["read"]),
        ("writer", ["readWrite"]),
        ("dba", ["dbAdmin"]),
        ("everywhere", [{"role": "readAnyDatabase", "db": "admin"}]),
    ):
        admin.shop.command("createUser", name, pwd="pw", roles=roles)

    def as_user(name: str) -> Any:
        return auth_server.client(username=name, password="pw", authSource="shop")

    def allowed(call: Any) -> bool:
        try:
            call()
        except OperationFailure as exc:
            assert exc.code == 13, exc
            return False
        return True

    reader, writer, dba, everywhere = (as_user(n) for n in ("reader", "writer", "dba", "everywhere"))
    checks = {
        "read shop": lambda c: c.shop.orders.find_one(),
        "write shop": lambda c: c.shop.orders.insert_one({}),
        "read other": lambda c: c.other.things.find_one(),
        "create index": lambda c: c.shop.orders.create_index("x"),
        "collMod": lambda c: c.shop.command("collMod", "orders", validator={}),
        "$out": lambda c: list(c.shop.orders.aggregate([{"$out": "copy"}])),
        "create user": lambda c: c.shop.command("createUser", f"u{id(c)}", pwd="x", roles=[]),
        "serverStatus": lambda c: c.admin.command("serverStatus"),
    }
    expected = {
        # Manual, built-in roles: read reads; readWrite also writes and manages collections and
        # indexes; dbAdmin administers but reads no user data; readAnyDatabase reads every database.
        "reader": {"read shop"},
        "writer": {"read shop", "write shop", "create index", "$out"},
        "dba": {"create index", "collMod"},
        "everywhere": {"read shop", "read other"},
    }
    for name, client in zip(expected, (reader, writer, dba, everywhere), strict=True):
        got = {check for check, call in checks.items() if allowed(lambda call=call: call(client))}
        assert got == expected[name], name
    assert {check for check, call in checks.items() if allowed(lambda call=call: call(admin))} == set(checks)


def test_user_management(auth_server: AuthServer) -> None:
    admin = root(auth_server)
    admin.shop.command("createUser", "ann", pwd="first-pass!", roles=["read"], customData={"team": "ops"})
    with pytest.raises(OperationFailure) as exists:
        admin.shop.command("createUser", "ann", pwd="x", roles=[])
    assert (exists.value.code, exists.value.details["errmsg"]) == (51003, 'User "ann@shop" already exists')  # type: ignore[index]
    with pytest.raises(OperationFailure) as no_role:
        admin.shop.command("createUser", "bob", pwd="x", roles=["superuser"])
    assert no_role.value.code == 31  # RoleNotFound
    info = admin.shop.command("usersInfo", "ann")["users"][0]
    assert (info["user"], info["db"], info["roles"], info["customData"]) == (
        "ann",
        "shop",
        [{"role": "read", "db": "shop"}],
        {"team": "ops"},
    )
    assert info["mechanisms"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"] and "credentials" not in info
    stored = admin.admin.system.users.find_one({"_id": "shop.ann"})
    # Salted keys only, never the password ('-' and '!' are outside base64's alphabet: no key holds it by chance).
    assert "first-pass!" not in repr(stored)
    admin.shop.command("updateUser", "ann", pwd="two")
    with pytest.raises(OperationFailure):
        auth_server.client(username="ann", password="first-pass!", authSource="shop").shop.orders.find_one()
    ann = auth_server.client(username="ann", password="two", authSource="shop")
    ann.shop.orders.find_one()
    admin.shop.command("grantRolesToUser", "ann", roles=["readWrite"])
    ann.shop.orders.insert_one({"by": "ann"})  # roles are looked up on each command
    admin.shop.command("dropUser", "ann")
    with pytest.raises(OperationFailure) as gone:
        ann.shop.orders.find_one()
    assert gone.value.code == 13
    with pytest.raises(OperationFailure) as missing:
        admin.shop.command("dropUser", "ann")
    assert missing.value.code == 11  # UserNotFound


def test_users_survive_a_restart(tmp_path: Path) -> None:
    first = AuthServer(tmp_path / "data")
    first.client().admin.command("createUser", "keeper", pwd="pw", roles=["root"])
    first.stop()
    second = AuthServer(tmp_path / "data")
    try:
        client = second.client(username="keeper", password="pw")
        assert client.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"][0]["user"] == "keeper"
    finally:
        second.stop()


def test_without_auth_credentials_still_log_in(tmp_path: Path) -> None:
    # As mongod without --auth: users exist and authenticate, nothing is enforced.
    server = Server(str(tmp_path / "data"), "127.0.0.1", 0)
    host, port = server.start()
    try:
        with pymongo.MongoClient(host, port) as anonymous:
            anonymous.admin.command("createUser", "u", pwd="p", roles=["read"])
            anonymous.shop.c.insert_one({"x": 1})  # not enforced
        with pymongo.MongoClient(host, port, username="u", password="p") as user:
            assert user.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [
                {"user": "u", "db": "admin"}
            ]
        with pytest.raises(OperationFailure), pymongo.MongoClient(host, port, username="u", password="bad") as bad:
            bad.admin.command("ping")
    finally:
        server.shutdown()


@needs_node_clients
def test_node_driver_and_mongosh_log_in(auth_server: AuthServer, tmp_path: Path) -> None:
    uri = f"mongodb://{ROOT_USER}:s3cret%2C%3D%C3%BCn%C3%AF@{auth_server.host}:{auth_server.port}/admin"
    script = (
        "const {MongoClient} = require('mongodb');"
        "(async () => { const c = new MongoClient(process.argv[1]);"
        " await c.db('shop').collection('n').insertOne({from: 'node'});"
        " console.log(await c.db('shop').collection('n').countDocuments()); await c.close(); })()"
        ".catch(e => { console.error(e); process.exit(1); });"
    )
    node = subprocess.run(["node", "-e", script, uri], cwd=NODE_DIR, capture_output=True, text=True, timeout=60)
    assert (node.returncode, node.stdout.strip()) == (0, "1"), node.stderr
    shell = run_mongosh(tmp_path, uri, "--quiet", "--eval", "db.getSiblingDB('shop').n.countDocuments()")
    assert (shell.returncode, shell.stdout.strip()) == (0, "1"), shell.stderr
