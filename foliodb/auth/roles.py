"""Built-in roles and the privilege each command needs, for ``foliodb serve --auth``.

Privileges are coarse action groups rather than MongoDB's individual actions;
each built-in role grants the groups its documented actions fall into:

    read        find, aggregate, count, distinct, getMore, listCollections, listIndexes, stats
    write       insert, update, delete, findAndModify, bulkWrite, $out/$merge
    collections create, drop, createIndexes, dropIndexes, renameCollection (readWrite has them)
    dbAdmin     collMod, dropDatabase, validate, profile, compact
    userAdmin   createUser, updateUser, dropUser, usersInfo, grant/revoke roles
    cluster     serverStatus, hostInfo, getCmdLineOpts, get/setParameter, getLog, shutdown

Manual: https://www.mongodb.com/docs/manual/reference/built-in-roles/
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Commands anyone may run, authenticated or not (the handshake and SASL itself).
UNAUTHENTICATED = frozenset(
    {
        "hello",
        "isMaster",
        "ismaster",
        "saslStart",
        "saslContinue",
        "ping",
        "buildInfo",
        "buildinfo",
        "connectionStatus",
        "endSessions",
        "whatsmyuri",
        "listCommands",
    }
)

_CATEGORY = {
    **dict.fromkeys(
        (
            "find",
            "getMore",
            "killCursors",
            "count",
            "distinct",
            "listCollections",
            "listIndexes",
            "dbStats",
            "collStats",
            "explain",
            "aggregate",
        ),
        "read",
    ),
    **dict.fromkeys(("insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite"), "write"),
    **dict.fromkeys(("create", "drop", "createIndexes", "dropIndexes", "renameCollection"), "collections"),
    **dict.fromkeys(("collMod", "dropDatabase", "validate", "profile", "compact"), "dbAdmin"),
    **dict.fromkeys(
        (
            "createUser",
            "updateUser",
            "dropUser",
            "dropAllUsersFromDatabase",
            "usersInfo",
            "grantRolesToUser",
            "revokeRolesFromUser",
        ),
        "userAdmin",
    ),
    **dict.fromkeys(
        ("serverStatus", "hostInfo", "getCmdLineOpts", "getParameter", "setParameter", "getLog", "shutdown"),
        "cluster",
    ),
}

# Role -> (the groups it grants, whether it spans every database).
BUILT_IN_ROLES: dict[str, tuple[frozenset[str], bool]] = {
    "read": (frozenset({"read"}), False),
    "readWrite": (frozenset({"read", "write", "collections"}), False),
    "dbAdmin": (frozenset({"dbAdmin", "collections"}), False),
    "userAdmin": (frozenset({"userAdmin"}), False),
    "dbOwner": (frozenset({"read", "write", "collections", "dbAdmin", "userAdmin"}), False),
    "readAnyDatabase": (frozenset({"read"}), True),
    "readWriteAnyDatabase": (frozenset({"read", "write", "collections"}), True),
    "userAdminAnyDatabase": (frozenset({"userAdmin"}), True),
    "dbAdminAnyDatabase": (frozenset({"dbAdmin", "collections"}), True),
    "clusterMonitor": (frozenset({"cluster-read"}), True),
    "clusterAdmin": (frozenset({"cluster-read", "cluster"}), True),
    "backup": (frozenset({"read"}), True),
    "restore": (frozenset({"write", "collections", "userAdmin"}), True),
    "root": (frozenset({"read", "write", "collections", "dbAdmin", "userAdmin", "cluster-read", "cluster"}), True),
}
# The "AnyDatabase" and cluster roles exist only in the admin database.
ADMIN_ONLY = frozenset(name for name, (_, any_db) in BUILT_IN_ROLES.items() if any_db)
_CLUSTER_READS = frozenset({"serverStatus", "hostInfo", "getCmdLineOpts", "getParameter", "getLog"})


def required(db: str, cmd: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(database, group)`` privileges ``cmd`` needs; [] when authentication alone suffices."""
    name = next(iter(cmd))
    group = _CATEGORY.get(name)
    if group is None:
        return []  # listDatabases, unknown commands...: any authenticated user
    if group == "cluster":
        return [("admin", "cluster-read" if name in _CLUSTER_READS else "cluster")]
    if name == "aggregate" and _writes(cmd):
        return [(db, "read"), (db, "write")]
    if name == "bulkWrite":
        namespaces = cmd.get("nsInfo") or []
        dbs = {str(ns.get("ns", "")).partition(".")[0] for ns in namespaces if isinstance(ns, Mapping)}
        return [(target, "write") for target in sorted(dbs)]
    if name == "renameCollection":
        source, target = str(cmd.get("renameCollection", "")), str(cmd.get("to", ""))
        return [(source.partition(".")[0], "collections"), (target.partition(".")[0], "collections")]
    return [(db, group)]


def _writes(cmd: Mapping[str, Any]) -> bool:
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list) or not pipeline or not isinstance(pipeline[-1], Mapping):
        return False
    return any(stage in ("$out", "$merge") for stage in pipeline[-1])


def granted(roles: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """``(database or "*", group)`` pairs that a user's ``[{role, db}]`` grant."""
    out: set[tuple[str, str]] = set()
    for role in roles:
        groups, any_db = BUILT_IN_ROLES.get(str(role.get("role")), (frozenset(), False))
        scope = "*" if any_db else str(role.get("db"))
        out.update((scope, group) for group in groups)
    return out


def allows(privileges: set[tuple[str, str]], needed: list[tuple[str, str]]) -> bool:
    return all((db, group) in privileges or ("*", group) in privileges for db, group in needed)
