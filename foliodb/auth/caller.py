"""Who is running the current command, for the handlers that answer
differently per user: cursors belong to the users that opened them, and
``listDatabases`` / ``listCollections`` list only what the user may see.

The server sets :data:`CALLER` around each command of a connection that
enforces authorization (``foliodb serve --auth``); it is None otherwise (the
embedded client, or a server without ``--auth``), and then nothing is
restricted, as with mongod without access control. A context variable, not a
command field: the command document is the client's, and a client must not
be able to say who it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from foliodb.auth.decision import Subject
from foliodb.auth.privileges import CLUSTER, Privilege, database, namespace


@dataclass(frozen=True)
class Caller:
    subject: Subject
    needed: tuple[Privilege, ...]  # what the running command needs; a cursor it opens keeps them

    @property
    def users(self) -> frozenset[tuple[str, str]]:
        return self.subject.users


CALLER: ContextVar[Caller | None] = ContextVar("foliodb_caller", default=None)


@contextlib.contextmanager
def running_as(caller: Caller | None) -> Iterator[None]:
    token = CALLER.set(caller)
    try:
        yield
    finally:
        CALLER.reset(token)


def authorized_databases(cmd: Mapping[str, Any]) -> Callable[[str], bool]:
    """Which databases ``listDatabases`` shows: all, or without the listDatabases action (or with
    ``authorizedDatabases: true``) those the caller holds some privilege in."""
    caller = CALLER.get()
    if caller is None:
        return lambda db: True
    privileges = caller.subject.privileges
    wanted = cmd.get("authorizedDatabases")
    if wanted is not True and privileges.allows(CLUSTER, ["listDatabases"]):
        return lambda db: True
    return privileges.allows_any_action_in_database


def authorized_collections(db: str, cmd: Mapping[str, Any]) -> Callable[[str], bool]:
    """Which collections ``listCollections`` shows: with ``authorizedCollections`` and without the
    listCollections action, those the caller holds some privilege on."""
    caller = CALLER.get()
    if caller is None or cmd.get("authorizedCollections") is not True:
        return lambda name: True
    privileges = caller.subject.privileges
    if privileges.allows(database(db), ["listCollections"]):
        return lambda name: True
    return lambda name: privileges.allows_any_action_on(namespace(db, name))
