"""User-defined roles over the wire: createRole, updateRole, dropRole,
grantPrivilegesToRole, revokePrivilegesFromRole, grantRolesToRole,
revokeRolesFromRole, rolesInfo, stored in ``admin.system.roles`` as mongod
stores them, with inheritance enforced on the next command.

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-role-management/,
https://www.mongodb.com/docs/manual/reference/system-roles-collection/
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

from foliodb.server import Server

pytestmark = pytest.mark.clients


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Any]:
    server = Server(str(tmp_path / "data"), "127.0.0.1", 0, auth=True)
    host, port = server.start()
    pymongo.MongoClient(host, port).admin.command("createUser", "root", pwd="pw", roles=["root"])
    client: Any = pymongo.MongoClient(host, port, username="root", password="pw")
    client.server = server
    yield client
    client.close()
    server.shutdown()


def login(root: Any, user: str) -> Any:
    host, port = root.server.address
    return pymongo.MongoClient(host, port, username=user, password="pw", authSource="shop")


def code_of(call: Any) -> int:
    with pytest.raises(OperationFailure) as info:
        call()
    return int(info.value.code or 0)


def test_a_role_is_stored_as_mongod_stores_it(root: Any) -> None:
    root.shop.command(
        "createRole",
        "clerk",
        privileges=[
            {"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert", "find", "find"]},
            {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections"]},
        ],
        roles=["read"],
    )
    stored = root.admin.system.roles.find_one({"_id": "shop.clerk"})
    assert stored == {
        "_id": "shop.clerk",
        "role": "clerk",
        "db": "shop",
        "privileges": [
            {"resource": {"db": "shop", "collection": ""}, "actions": ["listCollections"]},
            {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "insert"]},
        ],
        "roles": [{"role": "read", "db": "shop"}],
    }


def test_inherited_privileges_are_enforced_and_follow_changes(root: Any) -> None:
    root.shop.orders.insert_one({"_id": 1})
    root.admin.command("createRole", "base", privileges=[], roles=[{"role": "read", "db": "other"}])
    root.admin.command(
        "createRole",
        "clerk",
        privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}],
        roles=["base"],
    )
    root.shop.command("createUser", "ann", pwd="pw", roles=[{"role": "clerk", "db": "admin"}])
    ann = login(root, "ann")
    assert ann.shop.orders.find_one() == {"_id": 1}
    ann.other.things.find_one()  # from read@other, two levels up
    assert code_of(lambda: ann.shop.orders.insert_one({})) == 13
    root.admin.command(
        "grantPrivilegesToRole",
        "clerk",
        privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert"]}],
    )
    ann.shop.orders.insert_one({"_id": 2})  # the next command sees the grant
    root.admin.command("revokeRolesFromRole", "base", roles=[{"role": "read", "db": "other"}])
    assert code_of(lambda: ann.other.things.find_one()) == 13
    root.admin.command("grantRolesToRole", "base", roles=[{"role": "readWrite", "db": "other"}])
    ann.other.things.insert_one({"_id": 1})
    root.admin.command(
        "revokePrivilegesFromRole",
        "clerk",
        privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["insert", "find"]}],
    )
    assert code_of(lambda: ann.shop.orders.find_one()) == 13
    root.admin.command("updateRole", "clerk", privileges=[{"resource": {"cluster": True}, "actions": ["getLog"]}])
    ann.admin.command("getLog", "startupWarnings")
    root.admin.command("dropRole", "base")
    assert code_of(lambda: ann.other.things.find_one()) == 13
    assert root.admin.system.roles.find_one({"_id": "admin.clerk"})["roles"] == []  # dropped role forgotten
    root.admin.command("dropRole", "clerk")
    assert root.admin.system.users.find_one({"_id": "shop.ann"})["roles"] == []


def test_roles_info(root: Any) -> None:
    root.shop.command(
        "createRole",
        "clerk",
        privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}],
        roles=["read"],
    )
    plain = root.shop.command("rolesInfo", "clerk")["roles"]
    assert plain == [
        {
            "role": "clerk",
            "db": "shop",
            "isBuiltin": False,
            "_id": "shop.clerk",
            "roles": [{"role": "read", "db": "shop"}],
            "inheritedRoles": [{"role": "read", "db": "shop"}],
        }
    ]
    full = root.shop.command("rolesInfo", {"role": "clerk", "db": "shop"}, showPrivileges=True)["roles"][0]
    assert full["privileges"] == [{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}]
    inherited = {(p["resource"].get("collection"), tuple(p["actions"])) for p in full["inheritedPrivileges"]}
    # read's privileges (the manual: find, listCollections... on the database and on system.js) come along.
    read_actions = [
        "changeStream",
        "collStats",
        "dbHash",
        "dbStats",
        "find",
        "killCursors",
        "listCollections",
        "listIndexes",
        "listSearchIndexes",
        "planCacheRead",
    ]
    assert ("", tuple(sorted(read_actions))) in inherited
    assert ("system.js", tuple(sorted(read_actions))) in inherited
    everything = root.shop.command("rolesInfo", 1, showBuiltinRoles=True)["roles"]
    assert {r["role"] for r in everything} == {"read", "readWrite", "dbAdmin", "dbOwner", "userAdmin", "clerk"}
    dbowner = root.shop.command("rolesInfo", "dbOwner")["roles"][0]
    assert dbowner["isBuiltin"] and {r["role"] for r in dbowner["inheritedRoles"]} == {
        "readWrite",
        "dbAdmin",
        "userAdmin",
    }
    fragment = root.shop.command("rolesInfo", ["clerk"], showPrivileges="asUserFragment")["userFragment"]
    assert fragment["roles"] == [{"role": "clerk", "db": "shop"}]
    assert root.shop.command("rolesInfo", "nosuch")["roles"] == []


def test_role_commands_refuse_what_mongod_refuses(root: Any) -> None:
    shop = root.shop
    shop.command("createRole", "a", privileges=[], roles=[])
    assert code_of(lambda: shop.command("createRole", "a", privileges=[], roles=[])) == 51002
    assert code_of(lambda: shop.command("createRole", "read", privileges=[], roles=[])) == 2  # a built-in name
    assert code_of(lambda: shop.command("createRole", "b", privileges=[], roles=["nosuch"])) == 31
    assert (
        code_of(
            lambda: shop.command(
                "createRole", "b", privileges=[{"resource": {"db": "shop", "collection": ""}, "actions": ["fly"]}]
            )
        )
        == 9  # an unknown action
    )
    # A role outside admin names only its own database.
    other_db = [{"resource": {"db": "other", "collection": ""}, "actions": ["find"]}]
    assert code_of(lambda: shop.command("createRole", "b", privileges=other_db, roles=[])) == 49
    assert code_of(lambda: shop.command("createRole", "b", privileges=[], roles=[{"role": "read", "db": "x"}])) == 49
    # No cycles, not even through another role.
    shop.command("createRole", "b", privileges=[], roles=["a"])
    assert code_of(lambda: shop.command("grantRolesToRole", "a", roles=["b"])) == 49
    assert code_of(lambda: shop.command("grantRolesToRole", "a", roles=["a"])) == 49
    # Built-in roles cannot change.
    assert code_of(lambda: shop.command("dropRole", "read")) == 49
    assert code_of(lambda: shop.command("dropRole", "nosuch")) == 31
    assert (
        code_of(lambda: shop.command("createRole", "c", privileges=[], roles=[], authenticationRestrictions=[])) == 238
    )
    assert shop.command("dropAllRolesFromDatabase")["n"] == 2
    assert root.admin.system.roles.count_documents({}) == 0
