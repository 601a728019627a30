"""User-defined roles: createRole, updateRole, dropRole, dropAllRolesFromDatabase,
grantPrivilegesToRole, revokePrivilegesFromRole, grantRolesToRole,
revokeRolesFromRole, rolesInfo.

A role document in ``admin.system.roles`` (the format in
:mod:`foliodb.auth.roles`) keeps its privileges normalized: one entry per
resource, actions sorted and unique. Invariants the commands keep, as mongod's:
a role outside ``admin`` names only privileges on its own database and
inherits only roles of its own database; the role graph has no cycle; a
dropped role disappears from every user and role that held it. Built-in roles
cannot be created, changed or dropped. ``authenticationRestrictions`` are
refused (NotImplemented): FolioDB would not enforce them.

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-role-management/
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.auth import roles as role_graph
from foliodb.auth.privileges import ACTIONS, BUILT_IN_ROLES, Resource, built_in_parents, is_built_in, parse_resource
from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.users import (
    EXTERNAL_DB,
    all_documents,
    find_role,
    no_restrictions,
    role_list,
    roles_store,
    users_store,
)
from foliodb.engine.engine import Engine
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string

Grants = dict[Resource, set[str]]


def lookup(engine: Engine) -> role_graph.RoleLookup:
    """Role documents read from ``admin.system.roles``, for :mod:`foliodb.auth.roles`."""
    return lambda role, db: find_role(engine, role, db)


def _role_name(cmd: Mapping[str, Any], command: str) -> str:
    name = cmd[command]
    if not is_string(name) or not name:
        raise CommandError(ErrorCode.BadValue, "Role name must be non-empty")
    return name


def _not_found(role: str, db: str) -> CommandError:
    return CommandError(ErrorCode.RoleNotFound, f"Could not find role: {role}@{db}")


def _not_built_in(role: str, db: str) -> None:
    if is_built_in(role, db):
        raise CommandError(ErrorCode.InvalidRoleModification, f"{role}@{db} is a built-in role and cannot be modified")


def parse_privileges(value: Any, role_db: str, command: str) -> Grants:
    """``privileges`` as resource -> actions, checked as mongod checks a grant to a role of ``role_db``."""
    if not isinstance(value, list):
        raise CommandError(ErrorCode.BadValue, f"BSON field '{command}.privileges' must be an array")
    out: Grants = {}
    for entry in value:
        if not isinstance(entry, Mapping) or set(entry) != {"resource", "actions"}:
            raise CommandError(ErrorCode.FailedToParse, "a privilege must be {resource: <document>, actions: [...]}")
        try:
            resource = parse_resource(entry["resource"])
        except ValueError as exc:
            raise CommandError(ErrorCode.FailedToParse, str(exc)) from None
        actions = entry["actions"]
        if not isinstance(actions, list) or not all(is_string(a) for a in actions):
            raise CommandError(ErrorCode.FailedToParse, "privilege actions must be an array of strings")
        for action in actions:
            if action not in ACTIONS:
                raise CommandError(ErrorCode.FailedToParse, f"Unrecognized action privilege string: {action}")
        if role_db != "admin" and (resource.kind not in ("database", "exact") or resource.db != role_db):
            raise CommandError(
                ErrorCode.InvalidRoleModification,
                f"Roles on the '{role_db}' database cannot be granted privileges that target other databases "
                "or the cluster",
            )
        out.setdefault(resource, set()).update(actions)
    return out


def _privilege_documents(grants: Grants) -> list[dict[str, Any]]:
    return [
        {"resource": resource.document(), "actions": sorted(actions)}
        for resource, actions in sorted(grants.items())
        if actions
    ]


def _stored_grants(doc: Mapping[str, Any]) -> Grants:
    out: Grants = {}
    for resource, actions in role_graph.stored_privileges(doc):
        out.setdefault(resource, set()).update(actions)
    return out


def _check_inheritance(engine: Engine, role: str, db: str, parents: list[dict[str, str]]) -> None:
    """The parents of ``role@db`` exist (role_list checked), live in its database unless it is in admin,
    and do not lead back to it."""
    for parent in parents:
        if db != "admin" and parent["db"] != db:
            raise CommandError(
                ErrorCode.InvalidRoleModification,
                f"Roles on the '{db}' database cannot be granted roles from other databases",
            )
        reached = role_graph.closure([(parent["role"], parent["db"])], lookup(engine))
        if (role, db) in reached:
            raise CommandError(
                ErrorCode.InvalidRoleModification,
                f"Granting {parent['role']}@{parent['db']} to {role}@{db} would introduce a cycle in the role graph",
            )


def _existing(engine: Engine, role: str, db: str) -> tuple[int, dict[str, Any]]:
    _not_built_in(role, db)
    store = roles_store(engine)
    row = store.row_by_id_key(keystring.encode(f"{db}.{role}")) if store is not None else None
    doc = store.get(row[0]) if store is not None and row is not None else None
    if row is None or doc is None:
        raise _not_found(role, db)
    return row[0], doc


def _change(request: Request, role: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    engine = request.engine
    with engine.storage.write():
        rid, old = _existing(engine, role, request.db)
        store = roles_store(engine)
        assert store is not None
        store.update(rid, old, change(dict(old)))


@COMMANDS.register("createRole")
def cmd_createRole(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    role, db, engine = _role_name(cmd, "createRole"), request.db, request.engine
    if db in ("local", EXTERNAL_DB):
        raise CommandError(ErrorCode.BadValue, f"Cannot create roles in the {db} database")
    if is_built_in(role, db):
        raise CommandError(ErrorCode.BadValue, "Cannot create roles with the same name as a built-in role")
    grants = parse_privileges(params.required(cmd, "privileges", "array", "createRole"), db, "createRole")
    parents = role_list(engine, params.required(cmd, "roles", "array", "createRole"), db, "createRole")
    no_restrictions(cmd)
    with engine.storage.write():
        if find_role(engine, role, db) is not None:
            raise CommandError(51002, f'Role "{role}@{db}" already exists')
        _check_inheritance(engine, role, db, parents)
        doc: dict[str, Any] = {
            "_id": f"{db}.{role}",
            "role": role,
            "db": db,
            "privileges": _privilege_documents(grants),
            "roles": parents,
        }
        store = roles_store(engine, create=True)
        assert store is not None
        store.insert(doc)
    return {"ok": 1.0}


@COMMANDS.register("updateRole")
def cmd_updateRole(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    role, db, engine = _role_name(cmd, "updateRole"), request.db, request.engine
    privileges = params.field(cmd, "privileges", "array", "updateRole")
    roles = params.field(cmd, "roles", "array", "updateRole")
    no_restrictions(cmd)
    if privileges is None and roles is None:
        raise CommandError(ErrorCode.BadValue, "Must specify at least one field to update in updateRole")
    grants = parse_privileges(privileges, db, "updateRole") if privileges is not None else None
    parents = role_list(engine, roles, db, "updateRole") if roles is not None else None

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        if grants is not None:
            doc["privileges"] = _privilege_documents(grants)
        if parents is not None:
            _check_inheritance(engine, role, db, parents)
            doc["roles"] = parents
        return doc

    _change(request, role, change)
    return {"ok": 1.0}


@COMMANDS.register("grantPrivilegesToRole", "revokePrivilegesFromRole")
def cmd_grantPrivilegesToRole(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    command = next(iter(cmd))
    role = _role_name(cmd, command)
    grants = parse_privileges(params.required(cmd, "privileges", "array", command), request.db, command)

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        held = _stored_grants(doc)
        for resource, actions in grants.items():
            if command == "grantPrivilegesToRole":
                held.setdefault(resource, set()).update(actions)
            elif resource in held:
                held[resource] -= actions
        doc["privileges"] = _privilege_documents(held)
        return doc

    _change(request, role, change)
    return {"ok": 1.0}


@COMMANDS.register("grantRolesToRole", "revokeRolesFromRole")
def cmd_grantRolesToRole(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    command = next(iter(cmd))
    role, db, engine = _role_name(cmd, command), request.db, request.engine
    named = role_list(engine, params.required(cmd, "roles", "array", command), db, command)

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        current = [r for r in doc.get("roles") or [] if isinstance(r, Mapping)]
        if command == "grantRolesToRole":
            added = [r for r in named if r not in current]
            _check_inheritance(engine, role, db, added)
            doc["roles"] = current + added
        else:
            doc["roles"] = [r for r in current if r not in named]
        return doc

    _change(request, role, change)
    return {"ok": 1.0}


def _forget(engine: Engine, dropped: set[tuple[str, str]]) -> None:
    """Remove ``dropped`` roles from every user and role that holds them."""
    for store in (users_store(engine), roles_store(engine)):
        for doc in all_documents(store):
            kept = [r for r in doc.get("roles") or [] if role_graph.role_ref(r) not in dropped]
            if store is not None and kept != list(doc.get("roles") or []):
                row = store.row_by_id_key(keystring.encode(doc["_id"]))
                if row is not None:
                    store.update(row[0], doc, {**doc, "roles": kept})


@COMMANDS.register("dropRole")
def cmd_dropRole(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    role, engine = _role_name(cmd, "dropRole"), request.engine
    with engine.storage.write():
        rid, doc = _existing(engine, role, request.db)
        store = roles_store(engine)
        assert store is not None
        store.delete(rid, doc)
        _forget(engine, {(role, request.db)})
    return {"ok": 1.0}


@COMMANDS.register("dropAllRolesFromDatabase")
def cmd_dropAllRolesFromDatabase(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    engine = request.engine
    dropped: set[tuple[str, str]] = set()
    with engine.storage.write():
        store = roles_store(engine)
        for doc in all_documents(store):
            if doc.get("db") == request.db and store is not None:
                row = store.row_by_id_key(keystring.encode(doc["_id"]))
                if row is not None:
                    store.delete(row[0], doc)
                    dropped.add((doc["role"], doc["db"]))
        _forget(engine, dropped)
    return {"n": len(dropped), "ok": 1.0}


# -- rolesInfo ------------------------------------------------------------------------------


def _refs(names: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"role": role, "db": db} for role, db in names]


def _describe(engine: Engine, role: str, db: str, show_privileges: bool) -> dict[str, Any] | None:
    """rolesInfo's entry for ``role@db``, or None when there is no such role."""
    find = lookup(engine)
    built_in = is_built_in(role, db)
    doc = None if built_in else find_role(engine, role, db)
    if not built_in and doc is None:
        return None
    parents = list(built_in_parents(role, db)) if built_in else role_graph.parents((role, db), find)
    entry: dict[str, Any] = {"role": role, "db": db, "isBuiltin": built_in}
    if doc is not None:
        entry["_id"] = doc["_id"]
    entry.update({"roles": _refs(parents), "inheritedRoles": _refs(role_graph.closure(parents, find))})
    if show_privileges:
        entry["privileges"] = role_graph.direct_privileges((role, db), find).documents()
        entry["inheritedPrivileges"] = role_graph.privileges_of([(role, db)], find).documents()
    return entry


def _wanted_roles(wanted: Any, db: str) -> list[tuple[str, str]]:
    items = wanted if isinstance(wanted, list) else [wanted]
    out = []
    for item in items:
        if is_string(item):
            out.append((item, db))
        elif (ref := role_graph.role_ref(item)) is not None:
            out.append(ref)
        else:
            raise CommandError(ErrorCode.BadValue, "rolesInfo takes 1, a role name, {role, db} or an array of them")
    return out


@COMMANDS.register("rolesInfo")
def cmd_rolesInfo(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    wanted = cmd["rolesInfo"]
    show = cmd.get("showPrivileges", False)
    if show not in (True, False, "asUserFragment"):
        raise CommandError(ErrorCode.BadValue, "showPrivileges must be a boolean or 'asUserFragment'")
    show_built_in = bool(params.field(cmd, "showBuiltinRoles", "bool", "rolesInfo", default=False))
    engine, db = request.engine, request.db
    if wanted == 1 and not isinstance(wanted, bool):
        names = [(d["role"], d["db"]) for d in all_documents(roles_store(engine)) if d.get("db") == db]
        if show_built_in:
            names = [(r, db) for r in sorted(BUILT_IN_ROLES) if is_built_in(r, db)] + names
    else:
        names = _wanted_roles(wanted, db)
    if show == "asUserFragment":
        find = lookup(engine)
        held = [n for n in names if role_graph.exists(n, find)]
        return {
            "userFragment": {
                "roles": _refs(held),
                "inheritedRoles": _refs(role_graph.closure(held, find)),
                "inheritedPrivileges": role_graph.privileges_of(held, find).documents(),
            },
            "ok": 1.0,
        }
    out = [e for name in names if (e := _describe(engine, *name, bool(show))) is not None]
    return {"roles": out, "ok": 1.0}
