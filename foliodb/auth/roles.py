"""Roles: built-in ones (:mod:`foliodb.auth.privileges`) and user-defined ones,
stored as mongod stores them in ``admin.system.roles``::

    {_id: "<db>.<role>", role, db,
     privileges: [{resource: {db, collection} | {cluster: true} | {anyResource: true}, actions: [...]}],
     roles: [{role, db}],                       # inherited roles
     authenticationRestrictions: [...]}         # optional, kept as given

A role holds its own privileges and every privilege of the roles it inherits,
transitively. The role graph has no cycles (the role commands refuse one),
but the walk below keeps a visited set anyway: a document written directly
into ``admin.system.roles`` is data, not a promise.

Manual: https://www.mongodb.com/docs/manual/core/security-user-defined-roles/
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from foliodb.auth.privileges import (
    ACTIONS,
    PrivilegeSet,
    Resource,
    built_in_direct,
    built_in_parents,
    is_built_in,
    parse_resource,
)
from foliodb.query.bsontypes import is_string

RoleName = tuple[str, str]  # (role, db)
# (role, db) -> the role's admin.system.roles document, or None.
RoleLookup = Callable[[str, str], Mapping[str, Any] | None]


def role_ref(value: Any) -> RoleName | None:
    """A ``{role, db}`` document as a RoleName; None when it is not one."""
    if isinstance(value, Mapping) and is_string(value.get("role")) and is_string(value.get("db")):
        return value["role"], value["db"]
    return None


def exists(role: RoleName, lookup: RoleLookup) -> bool:
    return is_built_in(*role) or lookup(*role) is not None


def parents(role: RoleName, lookup: RoleLookup) -> list[RoleName]:
    """The roles ``role`` inherits directly."""
    if is_built_in(*role):
        return list(built_in_parents(*role))
    doc = lookup(*role)
    if doc is None:
        return []
    return [ref for ref in map(role_ref, doc.get("roles") or []) if ref is not None]


def closure(roles: Iterable[RoleName], lookup: RoleLookup) -> list[RoleName]:
    """``roles`` and every role they inherit, each once, in discovery order."""
    start = tuple(roles)
    if all(is_built_in(*role) for role in start):
        return list(_built_in_closure(start))
    return _closure(start, lookup)


@functools.cache
def _built_in_closure(roles: tuple[RoleName, ...]) -> tuple[RoleName, ...]:
    return tuple(_closure(roles, lambda role, db: None))


def _closure(roles: tuple[RoleName, ...], lookup: RoleLookup) -> list[RoleName]:
    out: list[RoleName] = []
    seen: set[RoleName] = set()
    stack = list(roles)[::-1]
    while stack:
        role = stack.pop()
        if role in seen:
            continue
        seen.add(role)
        out.append(role)
        stack.extend(reversed(parents(role, lookup)))
    return out


def stored_privileges(doc: Mapping[str, Any]) -> list[tuple[Resource, frozenset[str]]]:
    """A role document's own privileges; entries that do not parse grant nothing."""
    out = []
    for entry in doc.get("privileges") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("actions"), list):
            continue
        try:
            resource = parse_resource(entry.get("resource"))
        except ValueError:
            continue
        out.append((resource, frozenset(a for a in entry["actions"] if is_string(a) and a in ACTIONS)))
    return out


def direct_privileges(role: RoleName, lookup: RoleLookup) -> PrivilegeSet:
    """The privileges a role names itself."""
    out = PrivilegeSet()
    if is_built_in(*role):
        for resource, actions in built_in_direct(*role):
            out.add(resource, actions)
        return out
    doc = lookup(*role)
    for resource, actions in stored_privileges(doc) if doc is not None else []:
        out.add(resource, actions)
    return out


def privileges_of(roles: Iterable[RoleName], lookup: RoleLookup) -> PrivilegeSet:
    """Everything ``roles`` grant, inheritance included (a shared set when they are all built-in:
    callers only read it)."""
    start = tuple(roles)
    if all(is_built_in(*role) for role in start):
        return _built_in_privileges(frozenset(_built_in_closure(start)))
    held = _closure(start, lookup)
    built_in = _built_in_privileges(frozenset(role for role in held if is_built_in(*role)))
    custom = [role for role in held if not is_built_in(*role)]
    if not custom:
        return built_in
    out = PrivilegeSet()
    out.update(built_in)
    for role in custom:
        out.update(direct_privileges(role, lookup))
    return out


@functools.cache
def _built_in_privileges(roles: frozenset[RoleName]) -> PrivilegeSet:
    """The union of built-in roles' own privileges (built-in roles never change: computed once)."""
    out = PrivilegeSet()
    for role in roles:
        for resource, actions in built_in_direct(*role):
            out.add(resource, actions)
    return out
