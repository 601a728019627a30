"""The authorization matrix: for each built-in role and a user-defined role,
each command family and each cross-database pipeline stage, allowed or
refused (Unauthorized, 13) over the wire through pymongo, as MongoDB 8's
documented privileges say.

Every user lives in ``shop``; database roles are granted on ``shop``, the
"AnyDatabase" and cluster roles on ``admin``. ``other`` is a database no
database role reaches. The user-defined role ``custom@admin`` holds find and
insert on ``shop.orders`` only, and inherits ``read@other``.

The expected sets below are worked out from the manual, one operation at a
time, never from FolioDB's code: "Built-In Roles"
(https://www.mongodb.com/docs/manual/reference/built-in-roles/), "Privilege
Actions" (https://www.mongodb.com/docs/manual/reference/privilege-actions/)
and each command's "Access Control" section. "Allowed" means the command got
past authorization: it may still fail for another reason (dropping an index
that does not exist answers IndexNotFound), which is not Unauthorized.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

from foliodb.server import Server

pytestmark = pytest.mark.clients

DB_ROLES = ("read", "readWrite", "dbAdmin", "dbOwner", "userAdmin")
ADMIN_ROLES = (
    "readAnyDatabase",
    "readWriteAnyDatabase",
    "userAdminAnyDatabase",
    "dbAdminAnyDatabase",
    "clusterMonitor",
    "hostManager",
    "clusterManager",
    "clusterAdmin",
    "backup",
    "restore",
    "root",
)
ROLES = (*DB_ROLES, *ADMIN_ROLES, "custom")

# Shorthands for the role sets the manual's role descriptions give.
READERS = {"read", "readWrite", "dbOwner", "readAnyDatabase", "readWriteAnyDatabase", "backup", "root", "custom"}
WRITERS = {"readWrite", "dbOwner", "readWriteAnyDatabase", "root"}  # insert, update and remove on shop
DB_ADMINS = {"dbAdmin", "dbOwner", "dbAdminAnyDatabase", "root"}
USER_ADMINS_SHOP = {"userAdmin", "dbOwner", "userAdminAnyDatabase", "restore", "root"}  # restore: user admin actions
USER_ADMINS_ADMIN = {"userAdminAnyDatabase", "restore", "root"}  # the same actions on the admin database
MONITORS = {"clusterMonitor", "clusterAdmin", "root"}  # clusterMonitor's cluster actions; clusterAdmin inherits
STATS = {  # collStats and dbStats: read and dbAdmin give them on shop, clusterMonitor on every database
    "read",
    "readWrite",
    "dbAdmin",
    "dbOwner",
    "readAnyDatabase",
    "readWriteAnyDatabase",
    "dbAdminAnyDatabase",
    "clusterMonitor",
    "clusterAdmin",
    "root",
}
ACROSS_READERS = {"readAnyDatabase", "readWriteAnyDatabase", "backup", "root", "custom"}  # find on shop and other

EXPECTED: dict[str, set[str]] = {
    # find: read, readWrite (and dbOwner), the AnyDatabase readers, backup (find on every non-system
    # collection); the custom role's own privilege.
    "find shop.orders": READERS,
    "count shop.orders": READERS,
    "explain find shop.orders": READERS,
    "aggregate shop.orders": READERS,
    # insert: readWrite, readWriteAnyDatabase, restore (insert on non-system collections), the custom role.
    "insert shop.orders": WRITERS | {"restore", "custom"},
    "bulkWrite insert shop.orders": WRITERS | {"restore", "custom"},
    # update / remove: readWrite; restore has neither.
    "update shop.orders": WRITERS,
    "upsert shop.orders": WRITERS,
    "delete shop.orders": WRITERS,
    "findAndModify shop.orders": WRITERS,
    "find other.things": {"readAnyDatabase", "readWriteAnyDatabase", "backup", "root", "custom"},
    "insert other.things": {"readWriteAnyDatabase", "restore", "root"},
    # admin.system.users: userAdminAnyDatabase (read actions on it), backup and restore (find on
    # system.users), root; no database-wide role reaches a system collection.
    "find admin.system.users": {"userAdminAnyDatabase", "backup", "restore", "root"},
    # system.profile: dbAdmin's own privilege, dbAdminAnyDatabase's, clusterMonitor's find, backup's find.
    "find shop.system.profile": DB_ADMINS | {"clusterMonitor", "clusterAdmin", "backup"},
    # create: createCollection or insert on the namespace (readWrite, dbAdmin, restore).
    "create shop.new": WRITERS | DB_ADMINS | {"restore"},
    "drop shop.scratch": WRITERS | DB_ADMINS | {"restore"},
    "createIndexes shop.orders": WRITERS | DB_ADMINS | {"restore"},
    "dropIndexes shop.orders": WRITERS | DB_ADMINS,
    # listCollections: read, readWrite, dbAdmin; backup and restore hold it on anyResource.
    "listCollections shop": READERS - {"custom"} | DB_ADMINS | {"restore"},
    "listIndexes shop.orders": READERS - {"custom"} | DB_ADMINS,
    "collMod shop.orders": DB_ADMINS | {"restore"},
    "validate shop.orders": DB_ADMINS,
    "profile shop": DB_ADMINS,
    "dbStats shop": STATS,
    "collStats shop.orders": STATS | {"backup"},  # backup: collStats on anyResource
    # renameCollection within shop: renameCollectionSameDB (readWrite, dbAdmin).
    "renameCollection shop->shop": WRITERS | DB_ADMINS,
    # across databases: find and dropCollection on the source, insert and createIndex on the target.
    "renameCollection shop->other": {"readWriteAnyDatabase", "root"},
    # Pipelines: find on the source and on every namespace a stage reads, at any depth.
    "$lookup other.things": ACROSS_READERS,
    "$lookup admin.system.users": {"backup", "root"},
    "$graphLookup other.things": ACROSS_READERS,
    "$unionWith other.things": ACROSS_READERS,
    "$facet/$lookup other.things": ACROSS_READERS,
    "$lookup/$lookup other.things": ACROSS_READERS,
    "$unionWith/$facet/$lookup admin.system.users": {"backup", "root"},
    # $out: insert and remove on the target; $merge (default modes): insert and update.
    "$out shop.copy": WRITERS,
    "$out other.copy": {"readWriteAnyDatabase", "root"},
    "$merge other.copy": {"readWriteAnyDatabase", "root"},
    "$collStats shop.orders": STATS | {"backup"},
    "$indexStats shop.orders": {"clusterMonitor", "clusterAdmin", "root"},  # indexStats: clusterMonitor
    # $currentOp of every user: inprog; of one's own users (allUsers false, the default): anyone.
    "$currentOp allUsers": MONITORS,
    "$currentOp": set(ROLES),
    # Users and roles: createUser/viewUser/createRole/viewRole on the database, grantRole on each
    # granted role's database.
    "createUser shop [read]": USER_ADMINS_SHOP,
    "createUser shop [root@admin]": USER_ADMINS_ADMIN,
    "grantRolesToUser readWriteAnyDatabase@admin": USER_ADMINS_ADMIN,
    "usersInfo 1 shop": USER_ADMINS_SHOP,
    "usersInfo admin.root": USER_ADMINS_ADMIN,
    "usersInfo forAllDBs": {"userAdminAnyDatabase", "root"},  # viewUser on the cluster
    "createRole shop": USER_ADMINS_SHOP,
    "rolesInfo 1 shop": USER_ADMINS_SHOP,
    # The server.
    "serverStatus": MONITORS | {"backup"},
    "getLog": MONITORS,
    "hostInfo": MONITORS,
    "currentOp": MONITORS,
    "currentOp $ownOps": set(ROLES),
    "getParameter": MONITORS | {"backup", "restore"},
    "setParameter": {"hostManager", "clusterAdmin", "root"},
    "killAllSessions": {"hostManager", "clusterAdmin", "root"},  # killAnySession
    "listDatabases authorizedDatabases=false": {
        "readAnyDatabase",
        "readWriteAnyDatabase",
        "userAdminAnyDatabase",
        "dbAdminAnyDatabase",
        "clusterMonitor",
        "clusterAdmin",
        "backup",
        "root",
    },
}


def _ops(role: str) -> dict[str, Callable[[Any], Any]]:
    """Each operation of the matrix, as run by the user holding ``role`` (names unique per role)."""
    lookup_other = {"$lookup": {"from": {"db": "other", "coll": "things"}, "pipeline": [], "as": "t"}}
    lookup_users = {"$lookup": {"from": {"db": "admin", "coll": "system.users"}, "pipeline": [], "as": "u"}}

    def agg(c: Any, *stages: dict[str, Any]) -> Any:
        return list(c.shop.orders.aggregate(list(stages)))

    return {
        "find shop.orders": lambda c: c.shop.orders.find_one(),
        "count shop.orders": lambda c: c.shop.orders.count_documents({}),
        "explain find shop.orders": lambda c: c.shop.command("explain", {"find": "orders"}),
        "aggregate shop.orders": lambda c: agg(c, {"$match": {}}),
        "insert shop.orders": lambda c: c.shop.orders.insert_one({"by": role}),
        "bulkWrite insert shop.orders": lambda c: c.admin.command(
            "bulkWrite", 1, ops=[{"insert": 0, "document": {"by": role}}], nsInfo=[{"ns": "shop.orders"}]
        ),
        "update shop.orders": lambda c: c.shop.orders.update_one({"_id": "none"}, {"$set": {"x": 1}}),
        "upsert shop.orders": lambda c: c.shop.orders.update_one({"_id": f"up-{role}"}, {"$set": {"x": 1}}, True),
        "delete shop.orders": lambda c: c.shop.orders.delete_one({"_id": "none"}),
        "findAndModify shop.orders": lambda c: c.shop.orders.find_one_and_update({"_id": "none"}, {"$set": {"x": 1}}),
        "find other.things": lambda c: c.other.things.find_one(),
        "insert other.things": lambda c: c.other.things.insert_one({"by": role}),
        "find admin.system.users": lambda c: c.admin.system.users.find_one(),
        "find shop.system.profile": lambda c: c.shop.system.profile.find_one(),
        "create shop.new": lambda c: c.shop.command("create", f"new_{role}"),
        "drop shop.scratch": lambda c: c.shop.command("drop", f"scratch_{role}"),
        "createIndexes shop.orders": lambda c: c.shop.orders.create_index(f"f_{role}"),
        "dropIndexes shop.orders": lambda c: c.shop.command("dropIndexes", "orders", index=f"none_{role}"),
        "listCollections shop": lambda c: c.shop.list_collection_names(),
        "listIndexes shop.orders": lambda c: list(c.shop.orders.list_indexes()),
        "collMod shop.orders": lambda c: c.shop.command("collMod", "orders"),
        "validate shop.orders": lambda c: c.shop.command("validate", "orders"),
        "profile shop": lambda c: c.shop.command("profile", -1),
        "dbStats shop": lambda c: c.shop.command("dbStats"),
        "collStats shop.orders": lambda c: c.shop.command("collStats", "orders"),
        "renameCollection shop->shop": lambda c: c.admin.command(
            "renameCollection", f"shop.src_{role}", to=f"shop.dst_{role}"
        ),
        "renameCollection shop->other": lambda c: c.admin.command(
            "renameCollection", f"shop.src_{role}", to=f"other.dst_{role}"
        ),
        "$lookup other.things": lambda c: agg(c, lookup_other),
        "$lookup admin.system.users": lambda c: agg(c, lookup_users),
        "$graphLookup other.things": lambda c: agg(
            c,
            {
                "$graphLookup": {
                    "from": {"db": "other", "coll": "things"},
                    "startWith": "$x",
                    "connectFromField": "x",
                    "connectToField": "x",
                    "as": "g",
                }
            },
        ),
        "$unionWith other.things": lambda c: agg(c, {"$unionWith": {"coll": {"db": "other", "coll": "things"}}}),
        "$facet/$lookup other.things": lambda c: agg(c, {"$facet": {"f": [lookup_other]}}),
        "$lookup/$lookup other.things": lambda c: agg(
            c, {"$lookup": {"from": "orders", "pipeline": [lookup_other], "as": "o"}}
        ),
        "$unionWith/$facet/$lookup admin.system.users": lambda c: agg(
            c, {"$unionWith": {"coll": "orders", "pipeline": [{"$facet": {"f": [lookup_users]}}]}}
        ),
        "$out shop.copy": lambda c: agg(c, {"$out": "copy"}),
        "$out other.copy": lambda c: agg(c, {"$out": {"db": "other", "coll": "copy"}}),
        "$merge other.copy": lambda c: agg(c, {"$merge": {"into": {"db": "other", "coll": "copy"}}}),
        "$collStats shop.orders": lambda c: agg(c, {"$collStats": {"count": {}}}),
        "$indexStats shop.orders": lambda c: agg(c, {"$indexStats": {}}),
        "$currentOp allUsers": lambda c: list(c.admin.aggregate([{"$currentOp": {"allUsers": True}}])),
        "$currentOp": lambda c: list(c.admin.aggregate([{"$currentOp": {}}])),
        "createUser shop [read]": lambda c: c.shop.command("createUser", f"made_{role}", pwd="x", roles=["read"]),
        "createUser shop [root@admin]": lambda c: c.shop.command(
            "createUser", f"boss_{role}", pwd="x", roles=[{"role": "root", "db": "admin"}]
        ),
        "grantRolesToUser readWriteAnyDatabase@admin": lambda c: c.shop.command(
            "grantRolesToUser", "pawn", roles=[{"role": "readWriteAnyDatabase", "db": "admin"}]
        ),
        "usersInfo 1 shop": lambda c: c.shop.command("usersInfo", 1),
        "usersInfo admin.root": lambda c: c.shop.command("usersInfo", {"user": "root", "db": "admin"}),
        "usersInfo forAllDBs": lambda c: c.shop.command("usersInfo", {"forAllDBs": True}),
        "createRole shop": lambda c: c.shop.command("createRole", f"role_{role}", privileges=[], roles=[]),
        "rolesInfo 1 shop": lambda c: c.shop.command("rolesInfo", 1),
        "serverStatus": lambda c: c.admin.command("serverStatus"),
        "getLog": lambda c: c.admin.command("getLog", "global"),
        "hostInfo": lambda c: c.admin.command("hostInfo"),
        "currentOp": lambda c: c.admin.command("currentOp"),
        "currentOp $ownOps": lambda c: c.admin.command("currentOp", **{"$ownOps": True}),
        "getParameter": lambda c: c.admin.command("getParameter", 1, cursorTimeoutMillis=1),
        "setParameter": lambda c: c.admin.command("setParameter", 1, cursorTimeoutMillis=600000),
        "killAllSessions": lambda c: c.admin.command("killAllSessions", []),
        "listDatabases authorizedDatabases=false": lambda c: c.admin.command(
            "listDatabases", 1, authorizedDatabases=False
        ),
    }


class Matrix:
    def __init__(self, dbpath: Path) -> None:
        self.server = Server(str(dbpath), "127.0.0.1", 0, auth=True)
        self.host, self.port = self.server.start()
        self.clients: list[Any] = []
        self.client().admin.command("createUser", "root", pwd="pw", roles=["root"])
        self.root = self.client("root", "admin")
        self.root.shop.orders.insert_many([{"_id": i, "x": i} for i in range(3)])
        self.root.other.things.insert_many([{"_id": i, "x": i} for i in range(3)])
        self.root.admin.command(
            "createRole",
            "custom",
            privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "insert"]}],
            roles=[{"role": "read", "db": "other"}],
        )
        self.root.shop.command("createUser", "pawn", pwd="pw", roles=[])
        for role in ROLES:
            granted = role if role in DB_ROLES else {"role": role, "db": "admin"}
            self.root.shop.command("createUser", role, pwd="pw", roles=[granted])

    def client(self, user: str | None = None, source: str = "shop") -> Any:
        credentials = {"username": user, "password": "pw", "authSource": source} if user else {}
        client: Any = pymongo.MongoClient(self.host, self.port, serverSelectionTimeoutMS=3000, **credentials)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.server.shutdown()


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    running = Matrix(tmp_path_factory.mktemp("matrix") / "data")
    yield running
    running.stop()


def test_the_matrix_covers_every_operation_once() -> None:
    assert set(EXPECTED) == set(_ops("x"))
    assert all(roles <= {*ROLES} for roles in EXPECTED.values())


@pytest.mark.parametrize("role", ROLES)
def test_role(matrix: Matrix, role: str) -> None:
    client = matrix.client(role)
    allowed: set[str] = set()
    for name, run in _ops(role).items():
        try:
            run(client)
        except OperationFailure as exc:
            if exc.code == 13:
                continue
        allowed.add(name)
    expected = {name for name, roles in EXPECTED.items() if role in roles}
    assert sorted(allowed - expected) == [], f"{role} may do what the manual does not give it"
    assert sorted(expected - allowed) == [], f"{role} is refused what the manual gives it"
