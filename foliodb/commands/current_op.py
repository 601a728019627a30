"""What the server is doing: the ``currentOp`` command and the documents of
the ``$currentOp`` stage.

Commands run one at a time, so at most one operation is active; others from
server connections wait for the engine (``waitingForLock: true``). With
``idleConnections`` (``$all`` for the command) the server's other
connections are listed too.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/currentOp/
"""

from __future__ import annotations

import datetime
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foliodb.commands import params
from foliodb.commands.profiler import OP_NAMES
from foliodb.commands.registry import COMMANDS
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.filter import compile_filter

if TYPE_CHECKING:
    from foliodb.commands.executor import Request


def current_ops(request: Request, idle_connections: bool) -> list[dict[str, Any]]:
    """``$currentOp`` documents: the operations of server connections, this one included."""
    executor = request.executor
    now = time.monotonic()
    host = socket.gethostname()
    out = []
    busy: set[int] = set()
    for op in list(executor.operations.values()):
        busy.add(op.connection_id)
        name = next(iter(op.command))
        running = max(now - op.started, 0.0)
        out.append(
            {
                "type": "op",
                "host": host,
                "desc": f"conn{op.connection_id}",
                "connectionId": op.connection_id,
                "client": op.client,
                "active": True,
                "currentOpTime": datetime.datetime.now(datetime.UTC).isoformat(),
                "opid": op.opid,
                "secs_running": int(running),
                "microsecs_running": int(running * 1_000_000),
                "op": OP_NAMES.get(name, "command"),
                "ns": f"{op.db}.{op.command[name] if isinstance(op.command[name], str) else '$cmd'}",
                "command": dict(op.command),
                "waitingForLock": op.waiting,
                "numYields": 0,
                "locks": {},
            }
        )
    if idle_connections and executor.connection_list is not None:
        for connection_id, client in executor.connection_list():
            if connection_id not in busy:
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
    return out


@COMMANDS.register("currentOp")
def cmd_currentOp(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    if request.db != "admin":
        raise CommandError(ErrorCode.Unauthorized, "currentOp may only be run against the admin database.")
    include_idle = bool(params.field(cmd, "$all", "bool", "currentOp", default=False))
    conditions = {
        k: v for k, v in cmd.items() if k not in ("currentOp", "$all", "$ownOps") and k not in params.GENERIC_FIELDS
    }
    matcher = compile_filter(conditions) if conditions else None
    ops = [op for op in current_ops(request, include_idle) if matcher is None or matcher(op)]
    return {"inprog": ops, "ok": 1.0}
