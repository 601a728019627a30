"""What each command needs under ``--auth``: one table, command -> rule.

A rule names its resource and actions (the manual's "Access Control" section
of the command, or the "Privilege Actions" page): ``open`` commands run for
anyone (the handshake, SASL, ping); ``authenticated`` ones for any logged-in
user (the handler then limits what they see: own cursors, authorized
databases); ``namespace``, ``database`` and ``cluster`` rules name actions on
``<db>.<command value>``, ``<db>`` or the cluster; ``special`` rules compute
their privileges from the command (pipelines, role grants, renames...).

Invariants:

* a registered command without a rule is refused to everyone (fail closed;
  tests/unit/auth checks that every registered command has one);
* every check runs on the command document before the handler sees it, and
  over-approximates when the document is malformed (the handler's parse error
  then reaches only users who hold the privileges);
* a refusal is ``Unauthorized`` (13) with mongod's message; an echoed command
  is redacted (:func:`foliodb.auth.redaction.redact`), never showing ``pwd``.

The rule and decision types are :mod:`foliodb.auth.decision`'s; the checks of
``special`` rules live in :mod:`foliodb.auth.data_checks` (data commands) and
:mod:`foliodb.auth.admin_checks` (users and roles), except explain's and
applyOps', which authorize their inner commands through this table.

docs/security.md's tables are generated from this table and
:data:`foliodb.auth.privileges.BUILT_IN_ROLES` by scripts/gen_security_docs.py.

Manual: https://www.mongodb.com/docs/manual/reference/privilege-actions/,
https://www.mongodb.com/docs/manual/reference/command/ (each command's "Access Control")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.auth.admin_checks import (
    check_create_role,
    check_create_user,
    check_drop_role,
    check_drop_user,
    check_grant_roles_to_user,
    check_role_privileges,
    check_roles_info,
    check_update_role,
    check_update_user,
    check_users_info,
)
from foliodb.auth.data_checks import (
    check_aggregate,
    check_bulk_write,
    check_clone_capped,
    check_coll_mod,
    check_create,
    check_current_op,
    check_find_and_modify,
    check_list_collections,
    check_list_databases,
    check_map_reduce,
    check_reads,
    check_rename,
    check_update,
)
from foliodb.auth.decision import Check, Decision, Rule, Subject, bypass_actions, decide, named_resource, unauthorized
from foliodb.auth.pipelines import ViewLookup
from foliodb.auth.privileges import (
    CLUSTER,
    database,
    namespace,
    privilege,
)
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string


def _open(note: str = "") -> Rule:
    return Rule("open", note=note)


def _authenticated(note: str = "") -> Rule:
    return Rule("authenticated", note=note)


def _ns(*actions: str) -> Rule:
    return Rule("namespace", actions)


def _db(*actions: str) -> Rule:
    return Rule("database", actions)


def _cluster(*actions: str, note: str = "") -> Rule:
    return Rule("cluster", actions, note=note)


def _special(check: Check, note: str) -> Rule:
    return Rule("special", check=check, note=note)


def _explain(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    inner = cmd["explain"]
    if not isinstance(inner, Mapping) or not inner:
        return Decision()  # the handler refuses it: nothing runs
    if next(iter(inner)) == "explain":
        return Decision([], unauthorized(db, cmd))
    return authorize(subject, db, inner, views)


def _apply_ops(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    """applyOps on the cluster, then each op's own privileges (mongod's oplog_application_checks.cpp):
    insert, update (and insert when it may upsert) or remove on its namespace, appendOplogNote on the
    cluster for a note, and a command op's own rule (renameCollection's on admin)."""
    needed = [privilege(CLUSTER, "applyOps")]
    if not subject.allows(needed):
        return Decision(needed, unauthorized(db, cmd))
    ops = cmd.get("applyOps")
    upserts = cmd.get("alwaysUpsert", True) is not False
    crud = {"i": ("insert",), "d": ("remove",)}
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, Mapping):
            continue
        kind, ns, o = op.get("op"), op.get("ns"), op.get("o")
        if kind == "n":
            needed.append(privilege(CLUSTER, "appendOplogNote"))
        elif kind == "c" and isinstance(o, Mapping) and o and is_string(ns):
            inner = authorize(
                subject, "admin" if next(iter(o)) == "renameCollection" else ns.partition(".")[0], o, views
            )
            if inner.refusal is not None:
                return inner
            needed.extend(inner.privileges)
        elif is_string(ns) and "." in ns and kind in ("i", "u", "d"):
            actions = crud.get(kind) or (("update", "insert") if upserts or op.get("b") is True else ("update",))
            needed.append(privilege(namespace(*ns.split(".", 1)), *actions, *bypass_actions(cmd)))
    return decide(subject, db, cmd, needed)


_VIEWS = "; for a view, also find on what its definition reads in other databases"
_GRANTS = "grantRole on each granted role's database"

RULES: dict[str, Rule] = {
    # The handshake, authentication and liveness: no user needed (as mongod's requiresAuth() false).
    **dict.fromkeys(("hello", "isMaster", "ismaster", "ping", "buildInfo", "buildinfo"), _open()),
    **dict.fromkeys(("saslStart", "saslContinue", "authenticate"), _open("authentication itself")),
    "connectionStatus": _open("shows only the caller's own users and roles"),
    "endSessions": _open(),
    "whatsmyuri": _open(),
    "listCommands": _open(),
    # Any authenticated user; the handler limits the answer to what the user owns or may see.
    "getMore": _authenticated("only the cursor's owner, who must still hold the privileges that opened it"),
    "killCursors": _authenticated("own cursors; others' need killAnyCursor on the namespace"),
    "startSession": _authenticated(),
    "refreshSessions": _authenticated(),
    "killSessions": _authenticated(),
    # A test command (enableTestCommands only): mongod's fail_point_cmd.cpp checks no privilege.
    "configureFailPoint": _authenticated("exists only with enableTestCommands"),
    "sleep": _authenticated("exists only with enableTestCommands; mongod's sleep_command.cpp checks no privilege"),
    "listDatabases": _special(
        check_list_databases,
        "authenticated; without listDatabases on the cluster only the databases the user has a privilege in "
        "(authorizedDatabases: false needs listDatabases)",
    ),
    "listCollections": _special(
        check_list_collections,
        "listCollections on the database; with authorizedCollections and nameOnly, any user, who sees the "
        "collections they have a privilege on",
    ),
    # Reads and writes of one namespace.
    **dict.fromkeys(("find", "count", "distinct"), _special(check_reads, "find on the namespace" + _VIEWS)),
    "listIndexes": _ns("listIndexes"),
    **dict.fromkeys(("collStats", "collstats"), _ns("collStats")),
    "planCacheClear": _ns("planCacheWrite"),
    **dict.fromkeys(
        ("planCacheSetFilter", "planCacheListFilters", "planCacheClearFilters"), _ns("planCacheIndexFilter")
    ),
    "validate": _ns("validate"),
    "applyOps": _special(
        _apply_ops,
        "applyOps on the cluster; each op's insert, update (insert too when it may upsert) or remove on its "
        "namespace, appendOplogNote for a note, a command op's own privileges",
    ),
    "insert": _ns("insert"),
    "delete": _ns("remove"),
    "update": _special(check_update, "update; insert too when a statement upserts"),
    **dict.fromkeys(
        ("findAndModify", "findandmodify"),
        _special(check_find_and_modify, "find and update (remove with remove: true); insert too with upsert"),
    ),
    "create": _special(
        check_create,
        "createCollection or insert (convertToCapped too when capped); a view: createCollection, and find on "
        "everything it reads when the creator may read the view",
    ),
    "drop": _ns("dropCollection"),
    "convertToCapped": _ns("convertToCapped"),
    "cloneCollectionAsCapped": _special(
        check_clone_capped,
        "find on the source; insert and createCollection on the target (mongod's clone_collection.cpp)",
    ),
    "reIndex": _ns("reIndex"),
    "createIndexes": _ns("createIndex"),
    "createSearchIndexes": _ns("createSearchIndexes"),
    "updateSearchIndex": _ns("updateSearchIndex"),
    "dropSearchIndex": _ns("dropSearchIndex"),
    **dict.fromkeys(("dropIndexes", "deleteIndexes"), _ns("dropIndex")),
    "collMod": _special(check_coll_mod, "collMod; changing a view as create does"),
    "renameCollection": _special(
        check_rename,
        "same database: renameCollectionSameDB (and find on the source if the user may read the target); "
        "across databases: find, dropCollection on the source, insert, createIndex on the target; "
        "dropTarget adds dropCollection on the target",
    ),
    "aggregate": _special(
        check_aggregate, "find on the source, and each stage's privileges at any depth (see the stage table)" + _VIEWS
    ),
    **dict.fromkeys(
        ("mapReduce", "mapreduce"),
        _special(
            check_map_reduce,
            "find on the input; out to a collection: insert, remove on it (replace) or insert, update (merge, reduce)",
        ),
    ),
    "explain": _special(_explain, "the privileges of the explained command"),
    "bulkWrite": _special(check_bulk_write, "insert, update (and insert when upserting), remove on each namespace"),
    # A database as a whole.
    **dict.fromkeys(("dbStats", "dbstats"), _db("dbStats")),
    **dict.fromkeys(("dbHash", "dbhash"), _db("dbHash")),
    "dropDatabase": _db("dropDatabase"),
    "profile": _db("enableProfiler"),
    # The server.
    "serverStatus": _cluster("serverStatus"),
    "hostInfo": _cluster("hostInfo"),
    "getCmdLineOpts": _cluster("getCmdLineOpts"),
    "getLog": _cluster("getLog"),
    "getParameter": _cluster("getParameter"),
    "setParameter": _cluster("setParameter"),
    "shutdown": _cluster("shutdown"),
    "fsync": _cluster("fsync"),
    "top": _cluster("top"),
    "fsyncUnlock": _cluster("unlock"),
    "killAllSessions": _cluster("killAnySession"),
    "killAllSessionsByPattern": _cluster("killAnySession"),
    "commitTransaction": _authenticated("the session's own transaction"),
    "abortTransaction": _authenticated("the session's own transaction"),
    "replSetGetStatus": _cluster("replSetGetStatus"),
    "replSetGetConfig": _cluster("replSetGetConfig"),
    "replSetInitiate": _cluster("replSetConfigure"),
    "replSetResizeOplog": _cluster("replSetResizeOplog"),
    "killOp": _authenticated("killop on the cluster, or an operation of one of the caller's users"),
    "currentOp": _special(
        check_current_op, "inprog on the cluster; with $ownOps: true, none (only one's own operations)"
    ),
    # Users and roles.
    "createUser": _special(check_create_user, "createUser on the database; " + _GRANTS),
    "updateUser": _special(
        check_update_user,
        "changePassword / changeCustomData on the database (own user: changeOwnPassword / changeOwnCustomData); "
        "roles: revokeRole on every database and " + _GRANTS,
    ),
    "grantRolesToUser": _special(check_grant_roles_to_user, _GRANTS),
    "revokeRolesFromUser": _special(check_grant_roles_to_user, "revokeRole on each revoked role's database"),
    "dropUser": _special(check_drop_user, "dropUser on the database"),
    "dropAllUsersFromDatabase": _special(check_drop_user, "dropUser on the database"),
    "usersInfo": _special(
        check_users_info,
        "viewUser on each named user's database (own user: nothing); all users of the database: viewUser on "
        "it; forAllDBs: viewUser on the cluster",
    ),
    "createRole": _special(
        check_create_role,
        "createRole on the database; " + _GRANTS + "; grantRole on each privilege's database (admin for "
        "cluster-wide privileges)",
    ),
    "updateRole": _special(check_update_role, "revokeRole on every database, and the grants of createRole"),
    "dropRole": _special(check_drop_role, "dropRole on the database"),
    "dropAllRolesFromDatabase": _special(check_drop_role, "dropRole on the database"),
    "grantRolesToRole": _special(check_grant_roles_to_user, _GRANTS),
    "revokeRolesFromRole": _special(check_grant_roles_to_user, "revokeRole on each revoked role's database"),
    "grantPrivilegesToRole": _special(
        check_role_privileges, "grantRole on each privilege's database (admin for cluster-wide privileges)"
    ),
    "revokePrivilegesFromRole": _special(
        check_role_privileges, "revokeRole on each privilege's database (admin for cluster-wide privileges)"
    ),
    "rolesInfo": _special(
        check_roles_info, "viewRole on each named role's database (roles the user holds: nothing); 1: viewRole on it"
    ),
}
OPEN = frozenset(name for name, rule in RULES.items() if rule.target == "open")


def authorize(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    """The privileges ``cmd`` needs on ``db``, and whether ``subject`` may run it."""
    name = next(iter(cmd))
    rule = RULES.get(name)
    if rule is None:
        message = f"FolioDB has no privilege rule for command {name}; it is refused under --auth"
        return Decision([], CommandError(ErrorCode.Unauthorized, message))
    if rule.check is not None:
        return rule.check(subject, db, cmd, views)
    if rule.target in ("open", "authenticated"):
        return Decision()
    resource = {"namespace": named_resource(db, cmd), "database": database(db), "cluster": CLUSTER}[rule.target]
    actions = rule.actions + (bypass_actions(cmd) if name == "insert" else ())
    return decide(subject, db, cmd, [privilege(resource, *actions)])
