"""What the server is doing: the ``currentOp`` command, the documents of the
``$currentOp`` stage, and ``killOp``.

Every running command is listed - from server connections and from embedded
clients alike - with its opid, namespace, command, running time,
``waitingForLock`` (waiting for the writer), ``locks`` and ``lockStats`` (the writer is
mongod's Global lock in mode w, held or waited for), ``planSummary`` and, for an index
build, ``progress`` and ``msg``. These commands never wait for another one:
they read only the engine's table of operations. Passwords in a listed
command show as ``"xxx"``, as mongod shows them. With ``idleConnections``
(``$all`` for the command) the server's idle connections are listed too.

``killOp`` marks an operation killed; it stops with Interrupted (11601) at its
next interruption check (see :mod:`foliodb.interrupt`), within milliseconds.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/currentOp/
https://www.mongodb.com/docs/manual/reference/command/killOp/
"""

from __future__ import annotations

import datetime
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import bson
from bson import Int64
from bson.binary import UUID_SUBTYPE, Binary

from foliodb.auth.caller import CALLER
from foliodb.auth.privileges import CLUSTER, privilege
from foliodb.commands import params
from foliodb.commands.profiler import OP_NAMES
from foliodb.commands.registry import COMMANDS
from foliodb.engine.catalog import CODEC
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.filter import compile_filter
from foliodb.query.render import render_document

if TYPE_CHECKING:
    from foliodb.commands.cursors import Cursor
    from foliodb.commands.executor import Request
    from foliodb.interrupt import Operation

MAX_SHOWN_BYTES = 1000  # of a command, with truncateOps


def current_ops(
    request: Request,
    idle_connections: bool,
    idle_cursors: bool = False,
    all_users: bool = True,
    idle_sessions: bool = False,
    truncate: bool = False,
) -> list[dict[str, Any]]:
    """``$currentOp`` documents: the running operations, this one included; with
    ``idle_cursors``, also the open cursors no getMore is using (``type: "idleCursor"``); with
    ``idle_sessions``, the sessions holding a transaction open between its commands
    (``type: "idleSession"``); with ``truncate`` (``truncateOps``), a command over 1000 bytes
    shows as ``{$truncated: <its text, cut at 1000 characters>, comment}``, as mongod's
    (the currentOp command always truncates: its reply is one document).
    Without ``all_users``, under access control, only what belongs to a user of the caller's
    (mongod's "coauthorized": sharing an authenticated user)."""
    executor = request.executor
    caller = CALLER.get()
    mine = None if all_users or caller is None else caller.users

    def shown(users: frozenset[tuple[str, str]] | None) -> bool:
        return mine is None or bool(users and users & mine)

    now = time.monotonic()
    host = socket.gethostname()
    out = []
    busy: set[int] = set()
    for op in list(executor.operations.values()):
        if op.connection_id is not None:
            busy.add(op.connection_id)
        if shown(op.users):
            out.append(_describe(op, now, host, truncate))
    if idle_connections and executor.connection_list is not None:
        for connection_id, client, users in executor.connection_list():
            if connection_id not in busy and shown(users):
                out.append(
                    {
                        "type": "op",
                        "host": host,
                        "desc": f"conn{connection_id}",
                        "connectionId": connection_id,
                        "client": client,
                        "active": False,
                        "currentOpTime": datetime.datetime.now(datetime.UTC).isoformat(),
                    }
                )
    if idle_sessions:
        running = {op.session for op in executor.operations.values() if op.session is not None}
        for session in request.engine.sessions.idle_transactions(running):
            owner = session.get("effectiveUsers")
            if shown(frozenset((u["db"], u["user"]) for u in owner) if owner else None):
                out.append({**session, "host": host})
    if idle_cursors:
        for cursor in request.cursors.idle():
            if not shown(cursor.owners):
                continue
            entry: dict[str, Any] = {"type": "idleCursor", "host": host, "ns": cursor.ns}
            if cursor.lsid is not None:
                entry["lsid"] = {"id": Binary(cursor.lsid, UUID_SUBTYPE)}
            if cursor.plan_summary is not None:
                entry["planSummary"] = cursor.plan_summary
            entry["cursor"] = _cursor_shown(cursor, truncate)
            out.append(entry)
    return out


def _describe(op: Operation, now: float, host: str, truncate: bool) -> dict[str, Any]:
    command = op.command
    name = next(iter(command))
    running = max(now - op.started, 0.0)
    target = command.get("collection") if name == "getMore" else command[name]
    doc: dict[str, Any] = {"type": "op", "host": host}
    if op.connection_id is not None:
        doc.update(desc=f"conn{op.connection_id}", connectionId=op.connection_id, client=op.client)
    else:
        doc["desc"] = "embedded"
    doc.update(
        active=True,
        currentOpTime=datetime.datetime.now(datetime.UTC).isoformat(),
        opid=op.opid,
        secs_running=int(running),
        microsecs_running=int(running * 1_000_000),
        op=OP_NAMES.get(name, "command"),
        ns=f"{op.db}.{target if isinstance(target, str) else '$cmd'}",
        command=_shown(command, truncate),
    )
    cursor = op.cursor
    plan_summary = op.plan_summary if cursor is None or cursor.plan_summary is None else cursor.plan_summary
    if plan_summary is not None:
        doc["planSummary"] = plan_summary
    if cursor is not None:  # a getMore: the cursor it works on, as mongod shows it
        shown_cursor = _cursor_shown(cursor, truncate)
        if "originatingCommand" in shown_cursor:
            doc["originatingCommand"] = shown_cursor["originatingCommand"]
        doc["cursor"] = {**shown_cursor, "operationUsingCursorId": Int64(op.opid)}
    if op.progress is not None:
        done, total = op.progress
        percent = done * 100 // total if total else 100
        doc["msg"] = f"Index Build: scanning collection Index Build: scanning collection: {done}/{total} {percent}%"
        doc["progress"] = {"done": done, "total": total}
    doc.update(waitingForLock=op.waiting_for_lock, killPending=op.killed, numYields=0, locks=dict(op.locks))
    acquired, waits, micros = op.lock_waits
    stats: dict[str, Any] = {}
    if acquired:
        stats["acquireCount"] = {"w": Int64(acquired)}
    if waits:
        stats["acquireWaitCount"] = {"w": Int64(waits)}
        stats["timeAcquiringMicros"] = {"w": Int64(micros)}
    doc["lockStats"] = {"Global": stats} if stats else {}
    return doc


def _cursor_shown(cursor: Cursor, truncate: bool) -> dict[str, Any]:
    """A cursor's currentOp document, its originating command truncated as an op's command is."""
    shown = cursor.describe()
    if "originatingCommand" in shown:
        shown["originatingCommand"] = _shown(shown["originatingCommand"], truncate)
    return shown


def _shown(command: Mapping[str, Any], truncate: bool) -> dict[str, Any]:
    """The command as currentOp shows it: a password as ``"xxx"``; truncated past
    :data:`MAX_SHOWN_BYTES` when asked (mongod's CurOp appendAsObjOrString)."""
    shown = dict(command)
    if "pwd" in shown:
        shown["pwd"] = "xxx"
    if not truncate or len(bson.encode(shown, codec_options=CODEC)) <= MAX_SHOWN_BYTES:
        return shown
    text = render_document(shown)
    if len(text) > MAX_SHOWN_BYTES:
        text = text[: MAX_SHOWN_BYTES - 3] + "..."
    truncated: dict[str, Any] = {"$truncated": text}
    if "comment" in shown:
        truncated["comment"] = shown["comment"]
    return truncated


@COMMANDS.register("currentOp")
def cmd_currentOp(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    if request.db != "admin":
        raise CommandError(ErrorCode.Unauthorized, "currentOp may only be run against the admin database.")
    include_idle = bool(params.field(cmd, "$all", "bool", "currentOp", default=False))
    own = bool(params.field(cmd, "$ownOps", "bool", "currentOp", default=False))
    conditions = {
        k: v for k, v in cmd.items() if k not in ("currentOp", "$all", "$ownOps") and k not in params.GENERIC_FIELDS
    }
    matcher = compile_filter(conditions) if conditions else None
    listed = current_ops(request, include_idle, all_users=not own, truncate=True)
    ops = [op for op in listed if matcher is None or matcher(op)]
    reply: dict[str, Any] = {"inprog": ops}
    if request.engine.storage.fsync_locks:  # as mongod's currentOp while fsyncLock holds writes back
        reply.update(fsyncLock=True, info="use db.fsyncUnlock() to terminate the fsync write/snapshot lock")
    reply["ok"] = 1.0
    return reply


@COMMANDS.register("killOp")
def cmd_killOp(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    if request.db != "admin":
        raise CommandError(ErrorCode.Unauthorized, "killOp may only be run against the admin database.")
    opid = cmd.get("op")
    if opid is None:
        raise CommandError(ErrorCode.FailedToParse, 'Did not provide "op" field')
    if isinstance(opid, bool) or not isinstance(opid, int | float):
        raise CommandError(ErrorCode.TypeMismatch, '"op" field must be a number')
    op = request.executor.operations.get(int(opid))
    caller = CALLER.get()
    # As mongod: without killop, a user may kill only an operation of one of its own users (an
    # operation that does not exist is no one's).
    if (
        caller is not None
        and not caller.subject.allows([privilege(CLUSTER, "killop")])
        and (op is None or not (op.users and op.users & caller.users))
    ):
        raise CommandError(ErrorCode.Unauthorized, "Unauthorized")
    if op is not None:
        op.killed = True
    return {"info": "attempting to kill op", "ok": 1.0}
