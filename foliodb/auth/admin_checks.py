"""The special rules of user and role management (mongod's user_management_commands_common.cpp).

Granting or revoking a role needs grantRole/revokeRole on the role's
database; granting privileges needs it on each privilege's database (admin
for cluster-wide ones); ``authenticationRestrictions`` need
setAuthenticationRestriction; a user may change their own password and
custom data, and view their own user and roles, without privileges. Refusals
carry mongod's own messages (``Not authorized to grant role: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.auth import roles as role_graph
from foliodb.auth.decision import Decision, Subject
from foliodb.auth.pipelines import ViewLookup
from foliodb.auth.privileges import (
    ANY_NORMAL,
    CLUSTER,
    database,
    parse_resource,
    privilege,
)
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string


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


def check_create_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "createUser")]):
        return _refuse(f"Not authorized to create users on db: {db}")
    return _first(_grant_roles(subject, _role_names(cmd.get("roles"), db)), _restrictions(subject, db, cmd))


def _as_user(subject: Subject, db: str, user: str | None, action: str) -> bool:
    """mongod's ``isAuthorizedToChangeAsUser``: logged in as the user, holding ``action`` on its database."""
    return (db, user) in subject.users and subject.allows([privilege(database(db), action)])


def check_update_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
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


def check_grant_roles_to_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    verb = "grant" if next(iter(cmd)).startswith("grant") else "revoke"
    return _first(_grant_roles(subject, _role_names(cmd.get("roles"), db), verb))


def check_drop_user(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "dropUser")]):
        return _refuse(f"Not authorized to drop users from the {db} database")
    return Decision()


def check_users_info(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
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


def check_roles_info(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
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


def check_create_role(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "createRole")]):
        return _refuse(f"Not authorized to create roles on db: {db}")
    return _first(
        _grant_roles(subject, _role_names(cmd.get("roles"), db)),
        _grant_privileges(subject, cmd.get("privileges")),
        _restrictions(subject, db, cmd),
    )


def check_update_role(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(ANY_NORMAL, "revokeRole")]):
        return _refuse("updateRole command required the ability to revoke any role in the system")
    return _first(
        _grant_roles(subject, _role_names(cmd.get("roles"), db)) if "roles" in cmd else None,
        _grant_privileges(subject, cmd.get("privileges")) if "privileges" in cmd else None,
        _restrictions(subject, db, cmd),
    )


def check_drop_role(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if not subject.allows([privilege(database(db), "dropRole")]):
        return _refuse(f"Not authorized to drop roles from the {db} database")
    return Decision()


def check_role_privileges(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    verb = "grant" if next(iter(cmd)).startswith("grant") else "revoke"
    return _first(_grant_privileges(subject, cmd.get("privileges"), verb))
