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
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import bson
from bson import ObjectId, json_util

from foliodb.commands import params
from foliodb.commands.registry import COMMANDS
from foliodb.engine.planner.plans import AccessStage
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string

if TYPE_CHECKING:
    from foliodb.commands.executor import Request
    from foliodb.engine.records import CollectionStore

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


def _settings(request: Request) -> ProfileSettings | None:
    """The database's settings when it profiles this command, else None."""
    settings: ProfileSettings | None = request.engine.profiling.get(request.db)
    if settings is None or settings.level == 0 or request.command_name in _SKIPPED:
        return None
    return settings


def _sampled(settings: ProfileSettings, millis: int) -> bool:
    if settings.level == 1 and millis < settings.slowms:
        return False
    return settings.sample_rate >= 1.0 or random.random() < settings.sample_rate


def record(request: Request, cmd: Mapping[str, Any], reply: Mapping[str, Any], millis: int) -> None:
    """Write the profile entry of one finished command, if its database's level asks for one.

    Reads of system.profile are profiled too, as mongod profiles them (so
    counting the entries counts itself: mongoengine's query_counter relies on
    it). An update or delete that ran has one entry per statement instead
    (:class:`Statement`)."""
    settings = _settings(request)
    if settings is None or not _sampled(settings, millis):
        return
    if request.command_name in ("update", "delete") and reply.get("ok") == 1.0:
        return
    target = cmd.get(request.command_name)
    if request.command_name == "getMore":
        target = cmd.get("collection")  # mongod's getMore entry names the cursor's collection
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
    elif request.command_name == "insert" and "n" in reply:
        entry["ninserted"] = reply["n"]
        entry["keysInserted"] = _inserted_keys(request, cmd, reply)
    entry.update(request.extra.pop(_COUNTS, {}))
    if reply.get("ok") != 1.0:
        entry.update(ok=0.0, errCode=reply.get("code"), errName=reply.get("codeName"), errMsg=reply.get("errmsg"))
    _write(request, entry, millis)


def _index_keys(store: CollectionStore, doc: Mapping[str, Any]) -> set[tuple[str, bytes]]:
    """The entries ``doc`` has in the collection's indexes: (index name, key)."""
    out: set[tuple[str, bytes]] = set()
    for writer in store.writers:
        try:
            out.update((writer.info.name, key) for key in writer.keys(dict(doc)))
        except CommandError:
            continue  # a document with no entry in that index (a geo index's non-geometry...)
    return out


@dataclass
class KeyTally:
    """The index entries a profiled write inserted and deleted (mongod's keysInserted/keysDeleted)."""

    inserted: int = 0
    deleted: int = 0

    def change(self, store: CollectionStore, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        before = _index_keys(store, old) if old is not None else set()
        after = _index_keys(store, new) if new is not None else set()
        self.inserted += len(after - before)
        self.deleted += len(before - after)

    def counts(self) -> dict[str, int]:
        """The entry's fields: only the counts the write changed (mongod sets them as it writes index entries)."""
        return {name: n for name, n in (("keysInserted", self.inserted), ("keysDeleted", self.deleted)) if n}


def key_tally(request: Request) -> KeyTally | None:
    """A tally for a write of ``request`` when its database profiles it (counting costs key work)."""
    return KeyTally() if _settings(request) is not None else None


def note(request: Request, counts: Mapping[str, int]) -> None:
    """Counts a command's handler knows for its profile entry (findAndModify's nMatched...)."""
    request.extra.setdefault(_COUNTS, {}).update(counts)


_COUNTS = "profile_counts"


class Statement:
    """The profile entry of one statement of an update or delete command:
    mongod profiles each on its own, ``command`` showing the statement
    (``{q, u, multi, upsert}``, ``{q, limit}``) with what it examined and
    changed. ``plans`` collects the access paths the statement ran."""

    def __init__(self, request: Request, command: str, coll: str, statement: Any) -> None:
        self.request = request
        self.command = command
        self.ns = f"{request.db}.{coll}"
        self.statement = statement
        self.plans: list[AccessStage] = []
        self.started = time.perf_counter()
        self.keys = key_tally(request)  # the statement's index entries written, when profiled

    def finish(self, error: CommandError | None = None, **counts: int) -> None:
        settings = _settings(self.request)
        if settings is None:
            return
        millis = int((time.perf_counter() - self.started) * 1000)
        if not _sampled(settings, millis):
            return
        shown = dict(self.statement) if isinstance(self.statement, Mapping) else {}
        if self.command == "update":
            shown.setdefault("multi", False)
            shown.setdefault("upsert", False)
        entry: dict[str, Any] = {
            "_id": ObjectId(),
            "op": OP_NAMES[self.command],
            "ns": self.ns,
            "command": shown,
            "keysExamined": sum(access.keys_examined for access in self.plans),
            "docsExamined": sum(access.docs_examined for access in self.plans),
        }
        entry.update({name: n for name, n in counts.items() if n or name != "nUpserted"})
        if self.keys is not None and error is None:
            entry.update(self.keys.counts())
        # No access path: the collection does not exist (mongod's EOF plan).
        entry["planSummary"] = ", ".join(dict.fromkeys(access.summary() for access in self.plans)) or "EOF"
        if error is not None:
            entry.update(ok=0.0, errCode=error.code, errName=error.code_name, errMsg=error.errmsg)
        _write(self.request, entry, millis)


def _inserted_keys(request: Request, cmd: Mapping[str, Any], reply: Mapping[str, Any]) -> int:
    """The index entries an insert command wrote: those of the documents it inserted."""
    store = request.engine.store(request.db, str(cmd.get("insert")))
    documents = cmd.get("documents")
    if store is None or not isinstance(documents, list):
        return 0
    failed = {error.get("index") for error in reply.get("writeErrors", [])}
    tally = KeyTally()
    for i, doc in enumerate(documents):
        if i not in failed and isinstance(doc, Mapping):
            tally.change(store, None, doc)
    return tally.inserted


def _write(request: Request, entry: dict[str, Any], millis: int) -> None:
    entry.update(
        millis=millis,
        ts=datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
        client=request.extra.get("peer", "embedded"),
        appName=request.extra.get("app_name", ""),
        # Which connection ran it, as $currentOp's connectionId; embedded, the calling thread (a
        # connection of its own, as each thread's operations are one request's): concurrent requests
        # of one process stay apart (the advisor's application joins).
        connectionId=request.extra.get("connection_id", threading.get_ident()),
        allUsers=[],
        user="",
    )
    engine = request.engine
    # An operation of a transaction is profiled at once, outside it (as mongod
    # does): the entry is not the transaction's to commit or abort.
    transaction = engine.storage.transaction_view()
    engine.storage.bind_transaction(None)
    try:
        with engine.storage.write():
            store = engine.store(request.db, PROFILE_COLLECTION) or engine.create_collection(
                request.db, PROFILE_COLLECTION, {"capped": True, "size": PROFILE_SIZE}
            )
            store.insert(entry)
    except CommandError as exc:  # profiling never fails the command it describes
        log.warning("could not write a profile entry for %s: %s", entry["ns"], exc)
    finally:
        engine.storage.bind_transaction(transaction)


# Commands whose fields hold secrets, and those fields: mongod shows them as "xxx".
_SECRETS = {"createUser": ("pwd",), "updateUser": ("pwd",)}


def _command_for_entry(cmd: Mapping[str, Any], db: str) -> dict[str, Any]:
    """The command as the entry shows it, secrets redacted; past 50 KB, a
    truncated text, as mongod does."""
    command = {**cmd, "$db": db}
    for name in _SECRETS.get(next(iter(cmd)), ()):
        if name in command:
            command[name] = "xxx"
    if len(bson.encode(command)) <= MAX_COMMAND_BYTES:
        return command
    return {"$truncated": json_util.dumps(command)[:1024] + "...", "comment": cmd.get("comment")}
