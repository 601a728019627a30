"""Regressions of issue 12: each privilege escalation an ordinary account could
perform against ``foliodb serve --auth``, now refused as mongod refuses it.

Manual: https://www.mongodb.com/docs/manual/reference/built-in-roles/ ("a user
with userAdmin on a database can grant themselves any privilege on that
database" - on that database only), grantRole / viewUser in
https://www.mongodb.com/docs/manual/reference/privilege-actions/,
killCursors ("Users can always terminate their own cursors").
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

from foliodb.server import Server

pytestmark = pytest.mark.clients

SECRET = "correct-horse-battery-staple"


class Deployment:
    def __init__(self, dbpath: Path) -> None:
        self.server = Server(str(dbpath), "127.0.0.1", 0, auth=True)
        self.host, self.port = self.server.start()
        self.clients: list[Any] = []
        self.client().admin.command("createUser", "root", pwd=SECRET, roles=["root"])
        self.root = self.client("root", "admin")
        self.root.dbA.secrets.insert_one({"_id": 1, "card": "4111"})
        self.root.dbB.c.insert_many([{"_id": i, "x": i} for i in range(5)])
        for name, roles in (("owner", ["dbOwner"]), ("uadmin", ["userAdmin"]), ("rw", ["readWrite"])):
            self.root.dbB.command("createUser", name, pwd=SECRET, roles=roles)
        self.root.dbB.command("createUser", "dba", pwd=SECRET, roles=["dbAdmin"])
        self.root.dbB.command("createUser", "reader", pwd=SECRET, roles=["read"])

    def client(self, user: str | None = None, source: str = "dbB") -> Any:
        credentials = {"username": user, "password": SECRET, "authSource": source} if user else {}
        client: Any = pymongo.MongoClient(self.host, self.port, serverSelectionTimeoutMS=3000, **credentials)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.server.shutdown()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    running = Deployment(tmp_path / "data")
    yield running
    running.stop()


def refused(call: Any) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        call()
    assert info.value.code == 13, info.value.details
    return info.value


@pytest.mark.parametrize("user", ["uadmin", "owner"])
def test_a_database_user_admin_cannot_grant_roles_of_other_databases(deployment: Deployment, user: str) -> None:
    admin_of_b = deployment.client(user)
    error = refused(
        lambda: admin_of_b.dbB.command("createUser", "evil", pwd="x", roles=[{"role": "root", "db": "admin"}])
    )
    assert error.details["errmsg"] == "Not authorized to grant role: root@admin"  # type: ignore[index]
    refused(
        lambda: admin_of_b.dbB.command(
            "grantRolesToUser", user, roles=[{"role": "readWriteAnyDatabase", "db": "admin"}]
        )
    )
    refused(lambda: admin_of_b.dbB.command("updateUser", user, roles=[{"role": "root", "db": "admin"}]))
    assert deployment.root.admin.system.users.find_one({"_id": "dbB.evil"}) is None
    # What userAdmin may do, on its own database: grant that database's roles, even to itself.
    admin_of_b.dbB.command("grantRolesToUser", user, roles=["readWrite"])
    admin_of_b.dbB.c.insert_one({"_id": "mine"})


def test_a_custom_role_cannot_smuggle_cluster_privileges(deployment: Deployment) -> None:
    admin_of_b = deployment.client("uadmin")
    refused(
        lambda: admin_of_b.dbB.command(
            "createRole", "sneaky", privileges=[{"resource": {"cluster": True}, "actions": ["shutdown"]}], roles=[]
        )
    )
    refused(
        lambda: admin_of_b.dbB.command(
            "createRole", "sneaky", privileges=[], roles=[{"role": "readAnyDatabase", "db": "admin"}]
        )
    )


@pytest.mark.parametrize(
    "stage",
    [
        {"$lookup": {"from": {"db": "admin", "coll": "system.users"}, "pipeline": [], "as": "u"}},
        {
            "$lookup": {
                "from": {"db": "admin", "coll": "system.users"},
                "localField": "x",
                "foreignField": "x",
                "as": "u",
            }
        },
        {
            "$graphLookup": {
                "from": {"db": "admin", "coll": "system.users"},
                "startWith": "admin.root",
                "connectFromField": "_id",
                "connectToField": "_id",
                "as": "u",
            }
        },
        {"$unionWith": {"coll": {"db": "admin", "coll": "system.users"}}},
        {"$facet": {"deep": [{"$lookup": {"from": {"db": "dbA", "coll": "secrets"}, "pipeline": [], "as": "s"}}]}},
    ],
)
def test_read_write_on_one_database_reads_no_other_through_a_pipeline(
    deployment: Deployment, stage: dict[str, Any]
) -> None:
    rw = deployment.client("rw")
    error = refused(lambda: list(rw.dbB.c.aggregate([stage])))
    assert "storedKey" not in str(error.details)


@pytest.mark.parametrize(
    "stage",
    [{"$out": {"db": "dbA", "coll": "secrets"}}, {"$merge": {"into": {"db": "dbA", "coll": "secrets"}}}],
)
def test_read_write_on_one_database_writes_no_other_through_a_pipeline(
    deployment: Deployment, stage: dict[str, Any]
) -> None:
    rw = deployment.client("rw")
    refused(lambda: list(rw.dbB.c.aggregate([stage])))
    assert list(deployment.root.dbA.secrets.find()) == [{"_id": 1, "card": "4111"}]


def test_users_info_across_databases_needs_view_user_there(deployment: Deployment) -> None:
    uadmin = deployment.client("uadmin")
    refused(lambda: uadmin.dbB.command("usersInfo", {"forAllDBs": True}, showCredentials=True))
    refused(lambda: uadmin.dbB.command("usersInfo", {"user": "root", "db": "admin"}, showCredentials=True))
    # Its own database's users, with credentials, as mongod shows them to a viewUser holder.
    users = uadmin.dbB.command("usersInfo", 1, showCredentials=True)["users"]
    assert {u["_id"] for u in users} == {"dbB.owner", "dbB.uadmin", "dbB.rw", "dbB.dba", "dbB.reader"}
    # Anyone may see themselves.
    rw = deployment.client("rw")
    assert rw.dbB.command("usersInfo", "rw")["users"][0]["user"] == "rw"
    refused(lambda: rw.dbB.command("usersInfo", "uadmin"))


def test_cursors_belong_to_their_users(deployment: Deployment) -> None:
    reader = deployment.client("reader")
    rw = deployment.client("rw")
    first = reader.dbB.command("find", "c", batchSize=1)["cursor"]
    cursor_id = first["id"]
    error = refused(lambda: rw.dbB.command("getMore", cursor_id, collection="c"))
    assert error.details["errmsg"] == f"cursor id {cursor_id} was not created by the authenticated user"  # type: ignore[index]
    refused(lambda: rw.dbB.command("killCursors", "c", cursors=[cursor_id]))
    # The owner's cursor survived both.
    assert len(reader.dbB.command("getMore", cursor_id, collection="c", batchSize=2)["cursor"]["nextBatch"]) == 2
    # A user who lost the privileges that opened a cursor cannot go on reading it (mongod re-checks them).
    deployment.root.dbB.command("revokeRolesFromUser", "reader", roles=["read"])
    refused(lambda: reader.dbB.command("getMore", cursor_id, collection="c"))
    reader.dbB.command("killCursors", "c", cursors=[cursor_id])  # but may always kill its own
    # Cursor ids are not guessable from one another.
    ids = [deployment.root.dbB.command("find", "c", batchSize=1)["cursor"]["id"] for _ in range(5)]
    assert all(abs(a - b) > 1 for a, b in itertools.pairwise(ids))


def test_list_databases_shows_only_authorized_ones_and_kill_all_sessions_is_refused(deployment: Deployment) -> None:
    rw = deployment.client("rw")
    assert rw.list_database_names() == ["dbB"]
    refused(lambda: rw.admin.command("listDatabases", 1, authorizedDatabases=False))
    refused(lambda: rw.admin.command("killAllSessions", []))
    assert set(deployment.root.list_database_names()) >= {"admin", "dbA", "dbB"}


def test_a_view_publishes_no_other_database(deployment: Deployment) -> None:
    # dbAdmin may create views (createCollection) though it cannot read them, as with mongod; a view
    # whose definition reads another database then needs find there from whoever reads it.
    dba = deployment.client("dba")
    stage = {"$lookup": {"from": {"db": "admin", "coll": "system.users"}, "pipeline": [], "as": "u"}}
    dba.dbB.command("create", "leak", viewOn="c", pipeline=[stage])
    reader = deployment.client("reader")
    refused(lambda: reader.dbB.leak.find_one())
    refused(lambda: list(reader.dbB.c.aggregate([{"$lookup": {"from": "leak", "pipeline": [], "as": "l"}}])))
    # A same-database view needs only find on the view, as with mongod.
    dba.dbB.command("create", "firsts", viewOn="c", pipeline=[{"$match": {"x": {"$lt": 2}}}])
    assert len(list(reader.dbB.firsts.find())) == 2
    # And a user who may read the view it creates must be able to read what the view reads.
    rw = deployment.client("rw")
    refused(lambda: rw.dbB.command("create", "leak2", viewOn="c", pipeline=[stage]))


def test_secrets_reach_neither_error_messages_nor_logs(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="foliodb")
    rw = deployment.client("rw")
    error = refused(lambda: rw.admin.command("insert", "people", documents=[{"pwd": SECRET}]))
    message = str(error.details["errmsg"])  # type: ignore[index]
    assert SECRET not in message and '"pwd": "xxx"' in message
    for call in (
        lambda: rw.dbB.command("createUser", "x", pwd=SECRET, roles=[{"role": "root", "db": "admin"}]),
        lambda: rw.dbB.command("updateUser", "rw", pwd=SECRET),
    ):
        assert SECRET not in str(refused(call).details)
    with pytest.raises(OperationFailure):
        deployment.client("rw").dbB.command("createUser", "y", pwd=SECRET, roles=["nosuchrole"])
    with pytest.raises(OperationFailure):
        pymongo.MongoClient(
            deployment.host, deployment.port, username="rw", password="wrong" + SECRET, authSource="dbB"
        ).dbB.command("ping")
    assert SECRET not in caplog.text


def test_list_collections_with_authorized_collections_lists_what_the_user_may_touch(deployment: Deployment) -> None:
    deployment.root.dbA.public.insert_one({"_id": 1})
    deployment.root.admin.command(
        "createRole",
        "publicReader",
        privileges=[{"resource": {"db": "dbA", "collection": "public"}, "actions": ["find"]}],
        roles=[],
    )
    deployment.root.dbB.command("createUser", "visitor", pwd=SECRET, roles=[{"role": "publicReader", "db": "admin"}])
    visitor = deployment.client("visitor")
    names = visitor.dbA.command("listCollections", 1, nameOnly=True, authorizedCollections=True)["cursor"]
    assert [c["name"] for c in names["firstBatch"]] == ["public"]
    refused(lambda: visitor.dbA.command("listCollections", 1))  # without both options: listCollections needed
    assert visitor.list_database_names() == ["dbA"]  # a collection privilege shows its database
