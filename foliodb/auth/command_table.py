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

docs/security.md's tables are generated from this table and
:data:`foliodb.auth.privileges.BUILT_IN_ROLES` by scripts/gen_security_docs.py.

Manual: https://www.mongodb.com/docs/manual/reference/privilege-actions/,
https://www.mongodb.com/docs/manual/reference/command/ (each command's "Access Control")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import json_util

from foliodb.auth import roles as role_graph
from foliodb.auth.pipelines import ViewLookup, namespace_reads, pipeline_privileges, view_definition_reads
from foliodb.auth.privileges import (
    ANY_NORMAL,
    CLUSTER,
    Privilege,
    PrivilegeSet,
    Resource,
    database,
    namespace,
    parse_resource,
    privilege,
)
from foliodb.auth.redaction import redact
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string


@dataclass
class Subject:
    """Who runs a command: the authenticated users, every role they hold
    (inherited ones included) and the union of their privileges."""

    users: frozenset[tuple[str, str]]  # (db, user)
    roles: frozenset[tuple[str, str]]  # (role, db)
    privileges: PrivilegeSet

    def allows(self, needed: Iterable[Privilege]) -> bool:
        return self.privileges.allows_all(needed)


@dataclass
class Decision:
    """The privileges a command needs (a cursor it opens keeps them), and why it may not run."""

    privileges: list[Privilege] = field(default_factory=list)
    refusal: CommandError | None = None


Check = Callable[[Subject, str, Mapping[str, Any], ViewLookup], Decision]


@dataclass(frozen=True)
class Rule:
    target: str  # open, authenticated, namespace, database, cluster, special
    actions: tuple[str, ...] = ()
    check: Check | None = None
    note: str = ""  # for the docs table: what a special rule checks


def unauthorized(db: str, cmd: Mapping[str, Any]) -> CommandError:
    shown = json_util.dumps({k: v for k, v in redact(cmd).items() if k not in ("lsid", "$clusterTime")})
    return CommandError(ErrorCode.Unauthorized, f"not authorized on {db} to execute command {shown}")


def _decide(subject: Subject, db: str, cmd: Mapping[str, Any], needed: list[Privilege]) -> Decision:
    return Decision(needed, None if subject.allows(needed) else unauthorized(db, cmd))


def _target(db: str, cmd: Mapping[str, Any]) -> Resource:
    """``<db>.<the command's value>``; a value that names no collection is checked on the database,
    and the handler refuses it."""
    value = cmd[next(iter(cmd))]
    return namespace(db, value) if is_string(value) and value else database(db)


def _bypass(cmd: Mapping[str, Any]) -> tuple[str, ...]:
    return ("bypassDocumentValidation",) if cmd.get("bypassDocumentValidation") is True else ()


# -- special rules --------------------------------------------------------------------------


def _reads(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    target = _target(db, cmd)
    if target.kind != "exact":
        return _decide(subject, db, cmd, [privilege(target, "find")])
    return _decide(subject, db, cmd, namespace_reads(db, target.collection, views))


def _update(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    statements = cmd.get("updates")
    upsert = isinstance(statements, list) and any(isinstance(s, Mapping) and s.get("upsert") for s in statements)
    actions = ("update", *(("insert",) if upsert else ()), *_bypass(cmd))
    return _decide(subject, db, cmd, [privilege(_target(db, cmd), *actions)])


def _find_and_modify(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    actions = ["find", "remove" if cmd.get("remove") else "update", *_bypass(cmd)]
    if cmd.get("upsert"):
        actions.append("insert")
    return _decide(subject, db, cmd, [privilege(_target(db, cmd), *actions)])


def _create(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    """mongod's ``checkAuthForCreate``: a collection needs createCollection or insert (and
    convertToCapped when capped); a view needs createCollection, and a creator who may read the
    view must also be able to read everything its definition reads."""
    target = _target(db, cmd)
    view_on = cmd.get("viewOn")
    if cmd.get("capped") and not subject.allows([privilege(target, "convertToCapped")]):
        return Decision([privilege(target, "convertToCapped")], unauthorized(db, cmd))
    if view_on is not None:
        needed = [privilege(target, "createCollection")]
        if is_string(view_on) and subject.allows([privilege(target, "find")]):
            stages = cmd.get("pipeline")
            needed += view_definition_reads(db, view_on, stages if isinstance(stages, list) else [], views)
        return _decide(subject, db, cmd, needed)
    for action in ("createCollection", "insert"):
        if subject.allows([privilege(target, action)]):
            return Decision([privilege(target, action)])
    return Decision([privilege(target, "createCollection")], unauthorized(db, cmd))


def _coll_mod(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    target = _target(db, cmd)
    needed = [privilege(target, "collMod")]
    if ("viewOn" in cmd or "pipeline" in cmd) and target.kind == "exact":
        current = views(db, target.collection)
        view_on = cmd.get("viewOn", current[0] if current else None)
        stages = cmd.get("pipeline", current[1] if current else [])
        if is_string(view_on) and subject.allows([privilege(target, "find")]):
            needed += view_definition_reads(db, view_on, stages if isinstance(stages, list) else [], views)
    return _decide(subject, db, cmd, needed)


def _split(ns: Any) -> Resource | None:
    if not is_string(ns) or "." not in ns:
        return None
    db, _, coll = ns.partition(".")
    return namespace(db, coll)


def _rename(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    """mongod's ``rename_collection_common``: within a database, renameCollectionSameDB (and no
    gain in read access: find on the source, or no find on the target); otherwise find and
    dropCollection on the source, insert and createIndex on the target; dropTarget adds
    dropCollection on the target."""
    source, target = _split(cmd.get("renameCollection")), _split(cmd.get("to"))
    if source is None or target is None:
        return _decide(subject, db, cmd, [privilege(database(db), "renameCollectionSameDB")])
    drop = [privilege(target, "dropCollection")] if cmd.get("dropTarget") else []
    same_db = [privilege(database(source.db), "renameCollectionSameDB")]
    if source.db == target.db and subject.allows(same_db):
        refused = not subject.allows([privilege(source, "find")]) and subject.allows([privilege(target, "find")])
        needed = same_db + drop
        return Decision(needed, unauthorized(db, cmd) if refused or not subject.allows(drop) else None)
    needed = [privilege(source, "find", "dropCollection"), privilege(target, "insert", "createIndex"), *drop]
    return _decide(subject, db, cmd, needed)


def _aggregate(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    stages = cmd.get("pipeline")
    stages = stages if isinstance(stages, list) else []
    coll = cmd["aggregate"]
    bypass = cmd.get("bypassDocumentValidation") is True
    if is_string(coll) and coll:
        return _decide(subject, db, cmd, pipeline_privileges(db, coll, stages, views, bypass, subject.users))
    if coll == 1:
        return _decide(subject, db, cmd, pipeline_privileges(db, None, stages, views, bypass, subject.users))
    return _decide(subject, db, cmd, [privilege(database(db), "find")])


def _map_reduce(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    # Manual, mapReduce "Access Control": find on the input; with a collection out, replace needs
    # insert and remove on it, merge and reduce insert and update.
    needed = [privilege(_target(db, cmd), "find")]
    out = cmd.get("out")
    target: tuple[str, Any, str] | None = None
    if is_string(out):
        target = ("replace", out, db)
    elif isinstance(out, Mapping) and out:
        mode = next(iter(out))
        out_db = out.get("db", db)
        if mode != "inline":
            target = (mode, out.get(mode), out_db if is_string(out_db) else db)
    if target is not None:
        mode, coll, out_db = target
        actions: tuple[str, ...] = ("insert", "remove") if mode == "replace" else ("insert", "update")
        if cmd.get("bypassDocumentValidation") is True:
            actions = (*actions, "bypassDocumentValidation")
        resource = namespace(out_db, coll) if is_string(coll) and coll else database(out_db)
        needed.append(privilege(resource, *actions))
    return _decide(subject, db, cmd, needed)


def _explain(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    inner = cmd["explain"]
    if not isinstance(inner, Mapping) or not inner:
        return Decision()  # the handler refuses it: nothing runs
    if next(iter(inner)) == "explain":
        return Decision([], unauthorized(db, cmd))
    return authorize(subject, db, inner, views)


def _bulk_write(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    ns_info, ops = cmd.get("nsInfo"), cmd.get("ops")
    entries = ns_info if isinstance(ns_info, list) else []
    namespaces = [_split(entry.get("ns")) if isinstance(entry, Mapping) else None for entry in entries]
    wanted: dict[Resource, set[str]] = {}
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, Mapping) or not op:
            continue
        kind = next(iter(op))
        index = op[kind]
        if not isinstance(index, int) or not 0 <= index < len(namespaces) or namespaces[index] is None:
            continue
        target = namespaces[index]
        assert target is not None
        actions = wanted.setdefault(target, set(_bypass(cmd)))
        if kind == "insert":
            actions.add("insert")
        elif kind == "delete":
            actions.add("remove")
        else:
            actions.update(("update", "insert") if op.get("upsert") else ("update",))
    needed = [Privilege(resource, frozenset(actions)) for resource, actions in wanted.items()]
    return _decide(subject, db, cmd, needed)


def _list_collections(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if cmd.get("authorizedCollections") is True and cmd.get("nameOnly") is True:
        return Decision()  # the handler lists only collections the user has a privilege on
    return _decide(subject, db, cmd, [privilege(database(db), "listCollections")])


def _current_op(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if cmd.get("$ownOps") is True:
        return Decision()  # the handler shows only the caller's users' operations
    return _decide(subject, db, cmd, [privilege(CLUSTER, "inprog")])


def _list_databases(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if cmd.get("authorizedDatabases") is False:
        return _decide(subject, db, cmd, [privilege(CLUSTER, "listDatabases")])
    return Decision()  # the handler lists only the databases the user may see


# -- user and role management (mongod's user_management_commands_common.cpp) ---------------


def _refuse(message: str) -> Decision:
    return Decision([], CommandError(ErrorCode.Unauthorized, message))


def _role_names(value: Any, db: str) -> list[tuple[str, str]]:
    out = []
    for item in value if isinstance(value, list) else []:
        if is_string(item):
            out.append((item, db))
        else:
            ref = role_graph.role_ref(item)
            if ref is not None:
                out.append(ref)
    return out


def _grant_roles(subject: Subject, roles: list[tuple[str, str]], verb: str = "grant") -> Decision | None:
    action = "grantRole" if verb == "grant" else "revokeRole"
    for role, role_db in roles:
        if not subject.allows([privilege(database(role_db), action)]):
            return _refuse(f"Not authorized to {verb} role: {role}@{role_db}")
    return None


def _grant_privileges(subject: Subject, privileges: Any, verb: str = "grant") -> Decision | None:
    action = "grantRole" if verb == "grant" else "revokeRole"
    for entry in privileges if isinstance(privileges, list) else []:
        try:
            resource = parse_resource(entry.get("resource") if isinstance(entry, Mapping) else None)
        except ValueError:
            continue  # the handler refuses it
        if resource.kind in ("database", "exact"):
            if not subject.allows([privilege(database(resource.db), action)]):
                return _refuse(f"Not authorized to {verb} privileges on the {resource.db}database")
        elif not subject.allows([privilege(database("admin"), action)]):
            return _refuse(
                f"To {verb} privileges affecting multiple databases or the cluster,"
                f" must be authorized to {verb} roles from the admin database"
            )
    return None


def _restrictions(subject: Subject, db: str, cmd: Mapping[str, Any]) -> Decision | None:
    if "authenticationRestrictions" in cmd and not subject.allows(
        [privilege(database(db), "setAuthenticationRestriction")]
    ):
        return _refuse("Unauthorized")
    return None


def _first(*decisions: Decision | None) -> Decision:
    return next((d for d in decisions if d is not None), Decision())


def _create_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "createUser")]):
        return _refuse(f"Not authorized to create users on db: {db}")
    return _first(_grant_roles(subject, _role_names(cmd.get("roles"), db)), _restrictions(subject, db, cmd))


def _as_user(subject: Subject, db: str, user: str | None, action: str) -> bool:
    """mongod's ``isAuthorizedToChangeAsUser``: logged in as the user, holding ``action`` on its database."""
    return (db, user) in subject.users and subject.allows([privilege(database(db), action)])


def _update_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    user = cmd["updateUser"] if is_string(cmd["updateUser"]) else None  # not a name: the handler refuses it
    change_password = _as_user(subject, db, user, "changeOwnPassword") or subject.allows(
        [privilege(database(db), "changePassword")]
    )
    if "pwd" in cmd and not change_password:
        return _refuse(f"Not authorized to change password of user: {user}@{db}")
    if "mechanisms" in cmd and not change_password:
        return _refuse(f"Not authorized to change mechanisms of user: {user}@{db}")
    if "customData" in cmd and not (
        _as_user(subject, db, user, "changeOwnCustomData")
        or subject.allows([privilege(database(db), "changeCustomData")])
    ):
        return _refuse(f"Not authorized to change customData of user: {user}@{db}")
    if "roles" in cmd:
        if not subject.allows([privilege(ANY_NORMAL, "revokeRole")]):
            return _refuse(
                "In order to use updateUser to set roles array, must be authorized to revoke any role in the system"
            )
        refused = _grant_roles(subject, _role_names(cmd.get("roles"), db))
        if refused is not None:
            return refused
    return _first(_restrictions(subject, db, cmd))


def _grant_roles_to_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    verb = "grant" if next(iter(cmd)).startswith("grant") else "revoke"
    return _first(_grant_roles(subject, _role_names(cmd.get("roles"), db), verb))


def _drop_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "dropUser")]):
        return _refuse(f"Not authorized to drop users from the {db} database")
    return Decision()


def _users_info(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    wanted = cmd["usersInfo"]
    if isinstance(wanted, Mapping) and wanted.get("forAllDBs") is True:
        if not subject.allows([privilege(CLUSTER, "viewUser")]):
            return _refuse("Not authorized to view users from all databases")
        return Decision()
    if wanted == 1 and not isinstance(wanted, bool):
        if not subject.allows([privilege(database(db), "viewUser")]):
            return _refuse(f"Not authorized to view users from the {db} database")
        return Decision()
    for item in wanted if isinstance(wanted, list) else [wanted]:
        if is_string(item):
            user_db, user = db, item
        elif isinstance(item, Mapping) and is_string(item.get("db")) and is_string(item.get("user")):
            user_db, user = item["db"], item["user"]
        else:
            continue  # the handler refuses it
        if (user_db, user) in subject.users:
            continue  # users may always see themselves
        if not subject.allows([privilege(database(user_db), "viewUser")]):
            return _refuse(f"Not authorized to view users from the {db} database")
    return Decision()


def _roles_info(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    wanted = cmd["rolesInfo"]
    if wanted == 1 and not isinstance(wanted, bool):
        if not subject.allows([privilege(database(db), "viewRole")]):
            return _refuse(f"Not authorized to view roles from the {db} database")
        return Decision()
    for role, role_db in _role_names(wanted if isinstance(wanted, list) else [wanted], db):
        if (role, role_db) in subject.roles:
            continue  # users may always see the roles they hold
        if not subject.allows([privilege(database(role_db), "viewRole")]):
            return _refuse(f"Not authorized to view roles from the {role_db} database")
    return Decision()


def _create_role(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "createRole")]):
        return _refuse(f"Not authorized to create roles on db: {db}")
    return _first(
        _grant_roles(subject, _role_names(cmd.get("roles"), db)),
        _grant_privileges(subject, cmd.get("privileges")),
        _restrictions(subject, db, cmd),
    )


def _update_role(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(ANY_NORMAL, "revokeRole")]):
        return _refuse("updateRole command required the ability to revoke any role in the system")
    return _first(
        _grant_roles(subject, _role_names(cmd.get("roles"), db)) if "roles" in cmd else None,
        _grant_privileges(subject, cmd.get("privileges")) if "privileges" in cmd else None,
        _restrictions(subject, db, cmd),
    )


def _drop_role(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "dropRole")]):
        return _refuse(f"Not authorized to drop roles from the {db} database")
    return Decision()


def _role_privileges(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    verb = "grant" if next(iter(cmd)).startswith("grant") else "revoke"
    return _first(_grant_privileges(subject, cmd.get("privileges"), verb))


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
            needed.append(privilege(namespace(*ns.split(".", 1)), *actions, *_bypass(cmd)))
    return _decide(subject, db, cmd, needed)


def _open(note: str = "") -> Rule:
    return Rule("open", note=note)


def _authenticated(note: str = "") -> Rule:
    return Rule("authenticated", note=note)


def _clone_capped(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    target = cmd.get("toCollection")
    to = namespace(db, target) if is_string(target) and target else database(db)
    return _decide(subject, db, cmd, [privilege(_target(db, cmd), "find"), privilege(to, "insert", "createCollection")])


def _ns(*actions: str) -> Rule:
    return Rule("namespace", actions)


def _db(*actions: str) -> Rule:
    return Rule("database", actions)


def _cluster(*actions: str, note: str = "") -> Rule:
    return Rule("cluster", actions, note=note)


def _special(check: Check, note: str) -> Rule:
    return Rule("special", check=check, note=note)


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
        _list_databases,
        "authenticated; without listDatabases on the cluster only the databases the user has a privilege in "
        "(authorizedDatabases: false needs listDatabases)",
    ),
    "listCollections": _special(
        _list_collections,
        "listCollections on the database; with authorizedCollections and nameOnly, any user, who sees the "
        "collections they have a privilege on",
    ),
    # Reads and writes of one namespace.
    **dict.fromkeys(("find", "count", "distinct"), _special(_reads, "find on the namespace" + _VIEWS)),
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
    "update": _special(_update, "update; insert too when a statement upserts"),
    **dict.fromkeys(
        ("findAndModify", "findandmodify"),
        _special(_find_and_modify, "find and update (remove with remove: true); insert too with upsert"),
    ),
    "create": _special(
        _create,
        "createCollection or insert (convertToCapped too when capped); a view: createCollection, and find on "
        "everything it reads when the creator may read the view",
    ),
    "drop": _ns("dropCollection"),
    "convertToCapped": _ns("convertToCapped"),
    "cloneCollectionAsCapped": _special(
        _clone_capped, "find on the source; insert and createCollection on the target (mongod's clone_collection.cpp)"
    ),
    "reIndex": _ns("reIndex"),
    "createIndexes": _ns("createIndex"),
    "createSearchIndexes": _ns("createSearchIndexes"),
    "updateSearchIndex": _ns("updateSearchIndex"),
    "dropSearchIndex": _ns("dropSearchIndex"),
    **dict.fromkeys(("dropIndexes", "deleteIndexes"), _ns("dropIndex")),
    "collMod": _special(_coll_mod, "collMod; changing a view as create does"),
    "renameCollection": _special(
        _rename,
        "same database: renameCollectionSameDB (and find on the source if the user may read the target); "
        "across databases: find, dropCollection on the source, insert, createIndex on the target; "
        "dropTarget adds dropCollection on the target",
    ),
    "aggregate": _special(
        _aggregate, "find on the source, and each stage's privileges at any depth (see the stage table)" + _VIEWS
    ),
    **dict.fromkeys(
        ("mapReduce", "mapreduce"),
        _special(
            _map_reduce,
            "find on the input; out to a collection: insert, remove on it (replace) or insert, update (merge, reduce)",
        ),
    ),
    "explain": _special(_explain, "the privileges of the explained command"),
    "bulkWrite": _special(_bulk_write, "insert, update (and insert when upserting), remove on each namespace"),
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
    "currentOp": _special(_current_op, "inprog on the cluster; with $ownOps: true, none (only one's own operations)"),
    # Users and roles.
    "createUser": _special(_create_user, "createUser on the database; " + _GRANTS),
    "updateUser": _special(
        _update_user,
        "changePassword / changeCustomData on the database (own user: changeOwnPassword / changeOwnCustomData); "
        "roles: revokeRole on every database and " + _GRANTS,
    ),
    "grantRolesToUser": _special(_grant_roles_to_user, _GRANTS),
    "revokeRolesFromUser": _special(_grant_roles_to_user, "revokeRole on each revoked role's database"),
    "dropUser": _special(_drop_user, "dropUser on the database"),
    "dropAllUsersFromDatabase": _special(_drop_user, "dropUser on the database"),
    "usersInfo": _special(
        _users_info,
        "viewUser on each named user's database (own user: nothing); all users of the database: viewUser on "
        "it; forAllDBs: viewUser on the cluster",
    ),
    "createRole": _special(
        _create_role,
        "createRole on the database; " + _GRANTS + "; grantRole on each privilege's database (admin for "
        "cluster-wide privileges)",
    ),
    "updateRole": _special(_update_role, "revokeRole on every database, and the grants of createRole"),
    "dropRole": _special(_drop_role, "dropRole on the database"),
    "dropAllRolesFromDatabase": _special(_drop_role, "dropRole on the database"),
    "grantRolesToRole": _special(_grant_roles_to_user, _GRANTS),
    "revokeRolesFromRole": _special(_grant_roles_to_user, "revokeRole on each revoked role's database"),
    "grantPrivilegesToRole": _special(
        _role_privileges, "grantRole on each privilege's database (admin for cluster-wide privileges)"
    ),
    "revokePrivilegesFromRole": _special(
        _role_privileges, "revokeRole on each privilege's database (admin for cluster-wide privileges)"
    ),
    "rolesInfo": _special(
        _roles_info, "viewRole on each named role's database (roles the user holds: nothing); 1: viewRole on it"
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
    resource = {"namespace": _target(db, cmd), "database": database(db), "cluster": CLUSTER}[rule.target]
    actions = rule.actions + (_bypass(cmd) if name == "insert" else ())
    return _decide(subject, db, cmd, [privilege(resource, *actions)])
