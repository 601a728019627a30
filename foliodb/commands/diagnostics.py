"""Handshake, diagnostics and administration: hello, ping, buildInfo,
serverStatus, getParameter/setParameter, dbStats, collStats, validate...

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-diagnostic/
"""

from __future__ import annotations

import datetime
import os
import platform
import socket
import time
from collections.abc import Mapping
from typing import Any

from bson import Int64

import foliodb
from foliodb.commands import failpoints, params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.users import find_user
from foliodb.commands.write import collection_name
from foliodb.engine import usage
from foliodb.engine.validate import validate_collection
from foliodb.errors import CommandError, ErrorCode

# FolioDB answers as MongoDB 8.0 (wire version 25) would.
MONGODB_VERSION = "8.0.0"
MAX_WIRE_VERSION = 25
MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE = 48_000_000
FEATURE_COMPATIBILITY_VERSION = "8.0"
_STARTED = time.time()


def hello_reply(request: Request, legacy: bool) -> dict[str, Any]:
    reply: dict[str, Any] = {"ismaster" if legacy else "isWritablePrimary": True}
    reply.update(
        {
            "topologyVersion": {"processId": request.executor.process_id, "counter": 0},
            "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
            "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
            "maxWriteBatchSize": params.MAX_WRITE_BATCH_SIZE,
            "localTime": datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": request.extra.get("connection_id", 1),
            "minWireVersion": 0,
            "maxWireVersion": MAX_WIRE_VERSION,
            "readOnly": request.engine.read_only,
            "ok": 1.0,
        }
    )
    replica_set = request.executor.replica_set
    if replica_set is not None:
        reply.update(replica_set.hello_fields(request.engine.storage.cluster_time))
    return reply


@COMMANDS.register("hello")
def cmd_hello(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return hello_reply(request, legacy=False)


@COMMANDS.register("isMaster", "ismaster")
def cmd_isMaster(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return hello_reply(request, legacy=True)


@COMMANDS.register("ping")
def cmd_ping(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": 1.0}


@COMMANDS.register("buildInfo", "buildinfo")
def cmd_buildInfo(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "version": MONGODB_VERSION,
        "gitVersion": "foliodb-" + foliodb.__version__,
        "versionArray": [8, 0, 0, 0],
        "bits": 64,
        "debug": False,
        "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
        "storageEngines": ["foliodb-sqlite"],
        "javascriptEngine": "none",
        "modules": [],
        "foliodbVersion": foliodb.__version__,
        "ok": 1.0,
    }


def _global_lock(request: Request, uptime: float) -> dict[str, Any]:
    """serverStatus' ``globalLock``: the operations running (``activeClients``) and those waiting
    for the writer (``currentQueue``; readers never wait here), as readers or writers by command."""
    active = {"readers": 0, "writers": 0}
    waiting = 0
    for op in list(request.executor.operations.values()):
        active["writers" if next(iter(op.command), "") in usage.WRITES else "readers"] += 1
        waiting += op.waiting_for_lock
    return {
        "totalTime": Int64(int(uptime * 1_000_000)),
        "currentQueue": {"total": waiting, "readers": 0, "writers": waiting},
        "activeClients": {"total": active["readers"] + active["writers"], **active},
    }


def _memory() -> dict[str, Any]:
    """serverStatus' ``mem`` (MiB), from /proc where there is one."""
    sizes: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmSize:")):
                    name, kib = line.split()[:2]
                    sizes[name] = int(kib) // 1024
    except OSError:
        return {"bits": 64, "supported": False}
    return {"bits": 64, "resident": sizes.get("VmRSS:", 0), "virtual": sizes.get("VmSize:", 0), "supported": True}


@COMMANDS.register("serverStatus")
def cmd_serverStatus(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    uptime = time.time() - _STARTED
    return {
        "host": socket.gethostname(),
        "version": MONGODB_VERSION,
        "process": "foliodb",
        "pid": os.getpid(),
        "uptime": uptime,
        "uptimeMillis": Int64(int(uptime * 1000)),
        "uptimeEstimate": Int64(int(uptime)),
        "localTime": datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
        "globalLock": _global_lock(request, uptime),
        "mem": _memory(),
        "connections": stats() if (stats := request.executor.connection_stats) else {"current": 0, "totalCreated": 0},
        "opcounters": dict(request.executor.opcounters),
        "metrics": {"cursor": {"open": {"total": len(request.cursors)}}},
        "storageEngine": {"name": "foliodb-sqlite", "persistent": not request.engine.storage.memory},
        # FolioDB's decoded-document cache (engine/cache.py), as wiredTiger.cache is WiredTiger's.
        "documentCache": request.engine.storage.cache.status(),
        "ok": 1.0,
    }


@COMMANDS.register("hostInfo")
def cmd_hostInfo(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "system": {"hostname": socket.gethostname(), "numCores": os.cpu_count() or 1, "cpuArch": platform.machine()},
        "os": {"type": platform.system(), "name": platform.platform()},
        "ok": 1.0,
    }


@COMMANDS.register("whatsmyuri")
def cmd_whatsmyuri(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return {"you": request.extra.get("peer", "embedded"), "ok": 1.0}


@COMMANDS.register("getLog")
def cmd_getLog(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    # FolioDB logs through Python's logging, not an in-memory ring: the global log is empty here.
    # startupWarnings are the server's (foliodb.server.server.startup_warnings), one JSON log line each.
    name = cmd["getLog"]
    if name == "*":
        return {"names": ["global", "startupWarnings"], "ok": 1.0}
    if name not in ("global", "startupWarnings"):
        raise CommandError(ErrorCode.OperationFailed, f"No log named '{name}'")
    lines = list(request.extra.get("startup_warnings", ())) if name == "startupWarnings" else []
    return {"totalLinesWritten": len(lines), "log": lines, "ok": 1.0}


@COMMANDS.register("connectionStatus")
def cmd_connectionStatus(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    users = request.extra.get("users", [])  # (db, user) pairs the server's connection authenticated
    roles: list[dict[str, Any]] = []
    for db, name in users:
        user = find_user(request.engine, db, name)
        roles.extend(r for r in (user["roles"] if user else []) if r not in roles)
    return {
        "authInfo": {
            "authenticatedUsers": [{"user": name, "db": db} for db, name in users],
            "authenticatedUserRoles": roles,
        },
        "ok": 1.0,
    }


@COMMANDS.register("getCmdLineOpts")
def cmd_getCmdLineOpts(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    return {"argv": ["foliodb"], "parsed": {"storage": {"dbPath": request.engine.path}}, "ok": 1.0}


@COMMANDS.register("listCommands")
def cmd_listCommands(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    hidden = () if request.engine.parameters.get("enableTestCommands") else failpoints.TEST_COMMANDS
    return {"commands": {name: {"help": ""} for name in COMMANDS.names() if name not in hidden}, "ok": 1.0}


@COMMANDS.register("top")
def cmd_top(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """Time and count of the operations on each namespace since the engine opened (mongotop's
    source), as mongod's Top."""
    params.admin_only(request.db, "top")
    return {"totals": usage.top_totals(request.engine.usage), "ok": 1.0}


@COMMANDS.register("validate")
def cmd_validate(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "validate")
    full = params.field(cmd, "full", "bool", "validate", default=False)
    if full and params.field(cmd, "background", "bool", "validate", default=False):
        # mongod's validate.cpp: a full validation needs the collection to itself.
        raise CommandError(
            ErrorCode.InvalidOptions,
            "Running the validate command with both { background: true } and { full: true } is not supported.",
        )
    store = request.engine.store(request.db, name)
    if store is None:
        raise CommandError(ErrorCode.NamespaceNotFound, f"Collection '{request.db}.{name}' does not exist to validate.")
    return validate_collection(store)
