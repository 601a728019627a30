"""The database profiler: the ``profile`` command and the ``system.profile``
entries it turns on, in MongoDB's shape, so tools that read them (and
FolioDB's own advisor) see the workload.

Level 0 records nothing, level 1 the operations slower than ``slowms``,
level 2 every operation. Levels are per database and last as long as the
process, as with mongod. ``system.profile`` is a capped collection of 1 MiB.

Manual: https://www.mongodb.com/docs/manual/reference/command/profile/ and
https://www.mongodb.com/docs/manual/reference/database-profiler/
"""

from __future__ import annotations

import datetime
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import bson
from bson import ObjectId, json_util

from foliodb.commands import params
from foliodb.commands.registry import COMMANDS
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

log = logging.getLogger("foliodb")

PROFILE_COLLECTION = "system.profile"
PROFILE_SIZE = 1024 * 1024
MAX_COMMAND_BYTES = 50 * 1024
OP_NAMES = {"find": "query", "insert": "insert", "update": "update", "delete": "remove", "getMore": "getmore"}
# Never profiled: the handshake, and the profiler's own commands.
_SKIPPED = frozenset({"hello", "isMaster", "ismaster", "profile", "saslStart", "saslContinue", "ping", "endSessions"})


@dataclass
class ProfileSettings:
    level: int = 0
    slowms: int = 100
    sample_rate: float = 1.0


@COMMANDS.register("profile")
def cmd_profile(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    level = params.field(cmd, "profile", "integer", "profile")
    if level not in (-1, 0, 1, 2):
        raise CommandError(ErrorCode.BadValue, "Invalid profiling level; valid values are -1, 0, 1 and 2")
    if "filter" in cmd:
        raise CommandError(ErrorCode.NotImplemented, "the profile filter is not supported by FolioDB yet")
    settings = request.engine.profiling.setdefault(request.db, ProfileSettings())
    reply = {"was": settings.level, "slowms": settings.slowms, "sampleRate": settings.sample_rate, "ok": 1.0}
    if level != -1:
        settings.level = level
    slowms = params.field(cmd, "slowms", "integer", "profile")
    if slowms is not None:
        settings.slowms = slowms
    rate = params.field(cmd, "sampleRate", "number", "profile")
    if rate is not None:
        if not 0 <= rate <= 1:
            raise CommandError(ErrorCode.BadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
        settings.sample_rate = float(rate)
    return reply


def record(request: Request, cmd: Mapping[str, Any], reply: Mapping[str, Any], millis: int) -> None:
    """Write the profile entry of one finished command, if its database's level asks for one."""
    settings = request.engine.profiling.get(request.db)
    if settings is None or settings.level == 0 or request.command_name in _SKIPPED:
        return
    if settings.level == 1 and millis < settings.slowms:
        return
    if settings.sample_rate < 1.0 and random.random() >= settings.sample_rate:
        return
    target = cmd.get(request.command_name)
    if target == PROFILE_COLLECTION or cmd.get("collection") == PROFILE_COLLECTION:
        return
    engine = request.engine
    entry: dict[str, Any] = {
        "_id": ObjectId(),  # FolioDB's record store keys every document by _id (mongod's entries have none)
        "op": OP_NAMES.get(request.command_name, "command"),
        "ns": f"{request.db}.{target if is_string(target) else '$cmd'}",
        "command": _command_for_entry(cmd, request.db),
    }
    scans = request.scans
    if scans is not None:
        scans.fold(done_only=False)
    if scans is not None and scans.plans:
        entry.update(keysExamined=scans.keys, docsExamined=scans.docs, planSummary=", ".join(scans.plans))
    cursor = reply.get("cursor")
    if isinstance(cursor, Mapping):
        entry["nreturned"] = len(cursor.get("firstBatch", cursor.get("nextBatch", [])))
        if cursor.get("id"):
            entry["cursorid"] = cursor["id"]
    elif request.command_name in ("insert", "delete") and "n" in reply:
        entry["ninserted" if request.command_name == "insert" else "ndeleted"] = reply["n"]
    elif request.command_name == "update" and "n" in reply:
        entry.update(nMatched=reply["n"], nModified=reply.get("nModified", 0))
    if reply.get("ok") != 1.0:
        entry.update(ok=0.0, errCode=reply.get("code"), errName=reply.get("codeName"), errMsg=reply.get("errmsg"))
    entry.update(
        millis=millis,
        ts=datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
        client=request.extra.get("peer", "embedded"),
        appName=request.extra.get("app_name", ""),
        allUsers=[],
        user="",
    )
    try:
        with engine.storage.write():
            store = engine.store(request.db, PROFILE_COLLECTION) or engine.create_collection(
                request.db, PROFILE_COLLECTION, {"capped": True, "size": PROFILE_SIZE}
            )
            store.insert(entry)
    except CommandError as exc:  # profiling never fails the command it describes
        log.warning("could not write a profile entry for %s: %s", entry["ns"], exc)


def _command_for_entry(cmd: Mapping[str, Any], db: str) -> dict[str, Any]:
    """The command as the entry shows it; past 50 KB, a truncated text, as mongod does."""
    command = {**cmd, "$db": db}
    if len(bson.encode(command)) <= MAX_COMMAND_BYTES:
        return command
    return {"$truncated": json_util.dumps(command)[:1024] + "...", "comment": cmd.get("comment")}
