"""Session listing stages: $listLocalSessions $listSessions.

Both take ``{}``, ``{allUsers: true}`` or ``{users: [{user, db}, ...]}``
(mongod's ListSessionsSpec IDL): ``{}`` lists the sessions of the
authenticated user (every session without access control, where all belong
to no user), ``users`` those of the users named, ``allUsers`` every session.
Naming other users or ``allUsers`` needs the ``listSessions`` action on the
cluster (foliodb/auth/pipelines.py). The documents are mongod's session
records: ``{_id: {id, uid}, lastUse, user: {name}}`` (``uid`` the SHA-256 of
``user@db``; ``user`` only under access control).

``$listLocalSessions`` runs as ``aggregate: 1`` (on any database, as mongod
checks only that); ``$listSessions`` on ``config.system.sessions``, where
mongod reads the session records its cache writes there every few minutes.
FolioDB, one node with no such collection, lists the sessions it holds for
both. Both must come first, not in ``$facet``, not in a transaction.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/listLocalSessions/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/listSessions/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import type_name
from foliodb.query.idl import check_fields, wrong_type


def parse_spec(name: str, spec: Any) -> tuple[bool, list[tuple[str, str]]]:
    """(allUsers, the users named as (db, user)) of a ListSessionsSpec, checked as mongod does."""
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch, f"{name} options must be specified in an object, but found: {type_name(spec)}"
        )
    check_fields(spec, name, ("allUsers", "users"))
    all_users = spec.get("allUsers", False)
    if not isinstance(all_users, bool):
        raise wrong_type(f"{name}.allUsers", all_users, "bool")
    named = spec.get("users", [])
    if not isinstance(named, list):
        raise wrong_type(f"{name}.users", named, "array")
    users = []
    for entry in named:
        if not isinstance(entry, Mapping):
            raise wrong_type(f"{name}.users", entry, "object")
        check_fields(entry, f"{name}.users", ("user", "db"), ("user", "db"))
        for key in ("user", "db"):
            if not isinstance(entry[key], str):
                raise wrong_type(f"{name}.users.{key}", entry[key], "string")
        users.append((entry["db"], entry["user"]))
    if all_users and users:
        raise CommandError(
            ErrorCode.UnsupportedFormat,
            f"{name} may not specify {{allUsers:true}} and {{users:[...]}} at the same time",
        )
    return all_users, users


@STAGES.register("$listLocalSessions")
def stage_listLocalSessions(spec: Any, where: Where) -> Stage:
    env = where.env
    if env.coll is not None:
        raise CommandError(
            ErrorCode.InvalidNamespace,
            "$listLocalSessions must be run against the database with {aggregate: 1}, not a collection",
        )
    all_users, users = parse_spec("$listLocalSessions", spec)

    def run(docs: Docs) -> Docs:
        yield from env.sessions(all_users, users)

    return Stage("$listLocalSessions", spec, run)


@STAGES.register("$listSessions")
def stage_listSessions(spec: Any, where: Where) -> Stage:
    env = where.env
    if (env.db, env.coll) != ("config", "system.sessions"):
        raise CommandError(ErrorCode.InvalidNamespace, "$listSessions may only be run against config.system.sessions")
    all_users, users = parse_spec("$listSessions", spec)

    def run(docs: Docs) -> Docs:
        yield from env.sessions(all_users, users)

    return Stage("$listSessions", spec, run)
