"""User management: createUser, updateUser, dropUser,
dropAllUsersFromDatabase, usersInfo, grantRolesToUser, revokeRolesFromUser.

Users live where MongoDB keeps them, in ``admin.system.users``, one document
per user with ``_id`` ``"<db>.<user>"`` and SCRAM credentials (salted keys,
never the password); users of ``$external`` (X.509 certificate subjects) have
``credentials: {external: true}`` instead. User-defined roles live in
``admin.system.roles`` (:mod:`foliodb.commands.roles` manages them). The
embedded client can manage both; only ``foliodb serve --auth`` enforces them
(what each command needs is :mod:`foliodb.auth.command_table`).

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-user-management/
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from bson.binary import Binary, UuidRepresentation

from foliodb.auth import scram
from foliodb.auth.privileges import is_built_in
from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.engine.engine import Engine
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string

USERS_DB, USERS_COLLECTION, ROLES_COLLECTION = "admin", "system.users", "system.roles"
EXTERNAL_DB = "$external"  # users authenticated outside FolioDB's own credentials (X.509)


def _store(engine: Engine, create: bool = False, collection: str = USERS_COLLECTION) -> CollectionStore | None:
    if create:
        return engine.ensure_collection(USERS_DB, collection)
    return engine.store(USERS_DB, collection)


def users_store(engine: Engine) -> CollectionStore | None:
    return _store(engine)


def roles_store(engine: Engine, create: bool = False) -> CollectionStore | None:
    return _store(engine, create, ROLES_COLLECTION)


def find_role(engine: Engine, role: str, db: str) -> dict[str, Any] | None:
    """The ``admin.system.roles`` document of the user-defined role ``role@db``, or None."""
    store = roles_store(engine)
    if store is None:
        return None
    row = store.row_by_id_key(keystring.encode(f"{db}.{role}"))
    return store.get(row[0]) if row is not None else None


def all_documents(store: CollectionStore | None) -> list[dict[str, Any]]:
    """Every document of a users or roles store, by ``_id``."""
    if store is None:
        return []
    docs = [store.get(rid) for rid, _ in store.scan()]
    return sorted((d for d in docs if d is not None), key=lambda d: str(d["_id"]))


def find_user(engine: Engine, db: str, name: str) -> dict[str, Any] | None:
    """The ``admin.system.users`` document of ``name@db``, or None."""
    store = _store(engine)
    if store is None:
        return None
    row = store.row_by_id_key(keystring.encode(f"{db}.{name}"))
    return store.get(row[0]) if row is not None else None


def has_users(engine: Engine) -> bool:
    store = _store(engine)
    return store is not None and store.count() > 0


def all_users(engine: Engine) -> list[dict[str, Any]]:
    return all_documents(_store(engine))


def _user_name(cmd: Mapping[str, Any], command: str) -> str:
    name = cmd[command]
    if not is_string(name) or not name:
        raise CommandError(ErrorCode.BadValue, f"{command} must be a non-empty string")
    return name


def role_list(engine: Engine, value: Any, db: str, command: str) -> list[dict[str, str]]:
    """``roles`` as ``[{role, db}]`` of existing roles: a bare name means a role of the command's database."""
    if not isinstance(value, list):
        raise CommandError(ErrorCode.BadValue, f"BSON field '{command}.roles' must be an array")
    out: list[dict[str, str]] = []
    for item in value:
        if is_string(item):
            role = {"role": item, "db": db}
        elif isinstance(item, Mapping) and isinstance(item.get("role"), str) and isinstance(item.get("db"), str):
            role = {"role": item["role"], "db": item["db"]}
        else:
            raise CommandError(ErrorCode.BadValue, "roles must be role names or {role: <name>, db: <database>}")
        if not is_built_in(role["role"], role["db"]) and find_role(engine, role["role"], role["db"]) is None:
            raise CommandError(ErrorCode.RoleNotFound, f"Could not find role: {role['role']}@{role['db']}")
        if role not in out:
            out.append(role)
    return out


def no_restrictions(cmd: Mapping[str, Any]) -> None:
    """Refuse ``authenticationRestrictions``: stored but not enforced, they would promise a protection
    that does not exist."""
    if "authenticationRestrictions" in cmd:
        raise CommandError(ErrorCode.NotImplemented, "authenticationRestrictions are not implemented in FolioDB")


def _credentials(name: str, password: str, mechanisms: tuple[str, ...]) -> dict[str, Any]:
    try:
        return scram.credentials(name, password, mechanisms)
    except (ValueError, IndexError) as exc:  # SASLprep refuses it (pymongo's raises IndexError when nothing is left)
        raise CommandError(ErrorCode.BadValue, f"Error preparing the password: {exc}") from None


def _mechanisms(cmd: Mapping[str, Any], command: str) -> tuple[str, ...]:
    value = params.field(cmd, "mechanisms", "array", command)
    if value is None:
        return scram.MECHANISMS
    if not value or any(m not in scram.MECHANISMS for m in value):
        raise CommandError(ErrorCode.BadValue, f"mechanisms must be a non-empty subset of {list(scram.MECHANISMS)}")
    return tuple(value)


def _not_found(db: str, name: str) -> CommandError:
    return CommandError(ErrorCode.UserNotFound, f'Could not find user "{name}" for db "{db}"')


@COMMANDS.register("createUser")
def cmd_createUser(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = _user_name(cmd, "createUser")
    external = request.db == EXTERNAL_DB
    if external and "pwd" in cmd:
        raise CommandError(ErrorCode.BadValue, "Cannot set the password of a user of the $external database")
    password = None if external else params.required(cmd, "pwd", "string", "createUser")
    engine = request.engine
    roles = role_list(engine, params.required(cmd, "roles", "array", "createUser"), request.db, "createUser")
    mechanisms = _mechanisms(cmd, "createUser")
    custom = params.field(cmd, "customData", "object", "createUser")
    no_restrictions(cmd)
    with engine.storage.write():
        if find_user(engine, request.db, name) is not None:
            raise CommandError(51003, f'User "{name}@{request.db}" already exists')
        doc: dict[str, Any] = {
            "_id": f"{request.db}.{name}",
            "userId": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD),
            "user": name,
            "db": request.db,
            "credentials": {"external": True} if password is None else _credentials(name, password, mechanisms),
            "roles": roles,
        }
        if custom is not None:
            doc["customData"] = dict(custom)
        store = _store(engine, create=True)
        assert store is not None
        store.insert(doc)
    return {"ok": 1.0}


def _existing(engine: Engine, db: str, name: str) -> tuple[CollectionStore, int, dict[str, Any]]:
    """(the users store, the record id, the document) of ``name@db``; UserNotFound if absent."""
    store = _store(engine)
    row = store.row_by_id_key(keystring.encode(f"{db}.{name}")) if store is not None else None
    user = store.get(row[0]) if store is not None and row is not None else None
    if store is None or row is None or user is None:
        raise _not_found(db, name)
    return store, row[0], user


def _replace(request: Request, name: str, change: Any) -> None:
    with request.engine.storage.write():
        store, rid, old = _existing(request.engine, request.db, name)
        store.update(rid, old, change(dict(old)))


@COMMANDS.register("updateUser")
def cmd_updateUser(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = _user_name(cmd, "updateUser")
    password = params.field(cmd, "pwd", "string", "updateUser")
    roles = params.field(cmd, "roles", "array", "updateUser")
    custom = params.field(cmd, "customData", "object", "updateUser")
    no_restrictions(cmd)
    if password is None and roles is None and custom is None and "mechanisms" not in cmd:
        raise CommandError(ErrorCode.BadValue, "Must specify at least one field to update in updateUser")
    if password is not None and request.db == EXTERNAL_DB:
        raise CommandError(ErrorCode.BadValue, "Cannot set the password of a user of the $external database")
    new_roles = role_list(request.engine, roles, request.db, "updateUser") if roles is not None else None
    mechanisms = _mechanisms(cmd, "updateUser") if "mechanisms" in cmd else None

    def change(user: dict[str, Any]) -> dict[str, Any]:
        if password is not None:
            user["credentials"] = _credentials(name, password, mechanisms or tuple(user["credentials"]))
        elif mechanisms is not None:
            user["credentials"] = {m: c for m, c in user["credentials"].items() if m in mechanisms}
        if new_roles is not None:
            user["roles"] = new_roles
        if custom is not None:
            user["customData"] = dict(custom)
        return user

    _replace(request, name, change)
    return {"ok": 1.0}


@COMMANDS.register("grantRolesToUser", "revokeRolesFromUser")
def cmd_grantRolesToUser(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    command = next(iter(cmd))
    name = _user_name(cmd, command)
    roles = role_list(request.engine, params.required(cmd, "roles", "array", command), request.db, command)

    def change(user: dict[str, Any]) -> dict[str, Any]:
        if command == "grantRolesToUser":
            user["roles"] = user["roles"] + [r for r in roles if r not in user["roles"]]
        else:
            user["roles"] = [r for r in user["roles"] if r not in roles]
        return user

    _replace(request, name, change)
    return {"ok": 1.0}


@COMMANDS.register("dropUser")
def cmd_dropUser(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = _user_name(cmd, "dropUser")
    with request.engine.storage.write():
        store, rid, user = _existing(request.engine, request.db, name)
        store.delete(rid, user)
    return {"ok": 1.0}


@COMMANDS.register("dropAllUsersFromDatabase")
def cmd_dropAllUsersFromDatabase(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    engine = request.engine
    removed = 0
    with engine.storage.write():
        store = _store(engine)
        for user in all_users(engine):
            if user["db"] == request.db and store is not None:
                row = store.row_by_id_key(keystring.encode(user["_id"]))
                if row is not None:
                    store.delete(row[0], user)
                    removed += 1
    return {"n": removed, "ok": 1.0}


@COMMANDS.register("usersInfo")
def cmd_usersInfo(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    wanted = cmd["usersInfo"]
    show_credentials = bool(params.field(cmd, "showCredentials", "bool", "usersInfo", default=False))
    users = all_users(request.engine)
    if isinstance(wanted, Mapping) and wanted.get("forAllDBs") is True:
        chosen = users
    elif wanted == 1 or wanted == 1.0:
        chosen = [u for u in users if u["db"] == request.db]
    else:
        names = {_user_ref(item, request.db) for item in (wanted if isinstance(wanted, list) else [wanted])}
        chosen = [u for u in users if (u["db"], u["user"]) in names]
    out = []
    for user in chosen:
        entry = {k: v for k, v in user.items() if k != "credentials" or show_credentials}
        entry["mechanisms"] = sorted(m for m in user["credentials"] if m != "external") or ["external"]
        out.append(entry)
    return {"users": out, "ok": 1.0}


def _user_ref(item: Any, db: str) -> tuple[str, str]:
    if is_string(item):
        return db, item
    if isinstance(item, Mapping) and isinstance(item.get("user"), str) and isinstance(item.get("db"), str):
        return item["db"], item["user"]
    raise CommandError(
        ErrorCode.BadValue, "usersInfo takes 1, {forAllDBs: true}, a user name, {user, db} or an array of them"
    )
