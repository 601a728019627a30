"""Authorization read from storage: the :class:`~foliodb.auth.command_table.Subject`
of a set of authenticated users (their user and role documents), and the
catalog's view definitions for the pipeline walker.

Users and roles are read afresh for each command (one primary-key lookup per
user and per user-defined role), so a grant, a revocation or a dropped user
takes effect on the very next command, as mongod's user cache invalidation
does. A user that no longer exists holds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from foliodb.auth import roles as role_graph
from foliodb.auth.command_table import authorize
from foliodb.auth.decision import Decision, Subject
from foliodb.auth.pipelines import ViewLookup
from foliodb.commands.roles import lookup
from foliodb.commands.users import find_user
from foliodb.engine.engine import Engine


def subject_of(engine: Engine, users: Iterable[tuple[str, str]]) -> Subject:
    """What the ``(db, user)`` pairs hold now, together."""
    present = []
    direct: list[tuple[str, str]] = []
    for db, name in users:
        user = find_user(engine, db, name)
        if user is None:
            continue
        present.append((db, name))
        direct.extend(ref for ref in map(role_graph.role_ref, user.get("roles") or []) if ref is not None)
    find = lookup(engine)
    held = role_graph.closure(direct, find)
    return Subject(frozenset(present), frozenset(held), role_graph.privileges_of(held, find))


def views(engine: Engine) -> ViewLookup:
    """The catalog's views: (db, name) -> (viewOn, pipeline), None for anything else."""

    def definition(db: str, name: str) -> tuple[str, list[Any]] | None:
        info = engine.catalog.get(db, name)
        if info is None or not info.is_view:
            return None
        return info.view_on, info.view_pipeline

    return definition


def decide(engine: Engine, subject: Subject, db: str, cmd: Mapping[str, Any]) -> Decision:
    return authorize(subject, db, cmd, views(engine))
