"""Who runs a command, what a rule of the command table is, and the verdict.

A :class:`Subject` is the caller: authenticated users, every role they hold
(inherited ones included) and the union of their privileges. A :class:`Rule`
is one entry of :data:`foliodb.auth.command_table.RULES`; a ``special`` rule
carries a :data:`Check`, which computes a :class:`Decision` from the command
document. A decision lists the privileges the command needs (a cursor it
opens keeps them) and, when the subject lacks one, the refusal: always
``Unauthorized`` (13) with mongod's message, the echoed command redacted
(:func:`foliodb.auth.redaction.redact`) so it never shows ``pwd``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import json_util

from foliodb.auth.pipelines import ViewLookup
from foliodb.auth.privileges import (
    Privilege,
    PrivilegeSet,
    Resource,
    database,
    namespace,
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


def decide(subject: Subject, db: str, cmd: Mapping[str, Any], needed: list[Privilege]) -> Decision:
    return Decision(needed, None if subject.allows(needed) else unauthorized(db, cmd))


def named_resource(db: str, cmd: Mapping[str, Any]) -> Resource:
    """``<db>.<the command's value>``; a value that names no collection is checked on the database,
    and the handler refuses it."""
    value = cmd[next(iter(cmd))]
    return namespace(db, value) if is_string(value) and value else database(db)


def bypass_actions(cmd: Mapping[str, Any]) -> tuple[str, ...]:
    return ("bypassDocumentValidation",) if cmd.get("bypassDocumentValidation") is True else ()
