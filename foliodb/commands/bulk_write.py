"""The bulkWrite command (MongoDB 8.0): ordered or unordered writes to many
collections in one command, answered with a cursor of per-op results.

Manual: https://www.mongodb.com/docs/manual/reference/command/bulkWrite/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.commands import collation, params
from foliodb.commands.cursors import cursor_reply
from foliodb.commands.delete import run_delete
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.update import NOT_UPSERTED, UpdateStatement, run_update
from foliodb.commands.write import Writes, finish, ordered_flag
from foliodb.errors import INTERRUPTIONS, CommandError, ErrorCode
from foliodb.query.bsontypes import is_string

BULK_WRITE_NS = "admin.$cmd.bulkWrite"


@COMMANDS.register("bulkWrite")
def cmd_bulkWrite(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """Manual: https://www.mongodb.com/docs/manual/reference/command/bulkWrite/

    The cursor holds one result per op (only the errors with
    ``errorsOnly``): ``{ok, idx, n, nModified, upserted: {_id}}`` or
    ``{ok: 0, idx, code, codeName, errmsg, ...}``; the reply sums them up."""
    if request.db != "admin":
        raise CommandError(ErrorCode.Unauthorized, "bulkWrite may only be run against the admin database.")
    ops = params.write_batch(params.required(cmd, "ops", "array", "bulkWrite"))
    ns_info = params.required(cmd, "nsInfo", "array", "bulkWrite")
    namespaces = [_namespace(entry) for entry in ns_info]
    ordered = ordered_flag(cmd, "bulkWrite")
    errors_only = bool(params.field(cmd, "errorsOnly", "bool", "bulkWrite", default=False))
    writes = Writes(request, cmd, "bulkWrite")
    totals = {"nErrors": 0, "nInserted": 0, "nUpserted": 0, "nMatched": 0, "nModified": 0, "nDeleted": 0}
    results: list[dict[str, Any]] = []
    with request.engine.storage.write():
        for idx, op in enumerate(ops):
            try:
                result = _bulk_op(writes, namespaces, op, totals)
            except CommandError as exc:
                if exc.code in INTERRUPTIONS:
                    raise  # fails the whole command, as an interrupted write command
                totals["nErrors"] += 1
                error = {"ok": 0.0, "idx": idx, "code": exc.code, "codeName": exc.code_name, "errmsg": exc.errmsg}
                results.append({**error, **exc.extra})
                if ordered:
                    break
                continue
            if not errors_only:
                results.append({"ok": 1.0, "idx": idx, **result})
    reply = cursor_reply(request, BULK_WRITE_NS, iter(results), None)
    reply.update(totals)
    reply["ok"] = 1.0
    return finish(request, cmd, reply)


def _namespace(entry: Any) -> tuple[str, str]:
    ns = entry.get("ns") if isinstance(entry, Mapping) else None
    if not is_string(ns):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'bulkWrite.nsInfo.ns' is missing or not a string")
    db, dot, name = ns.partition(".")
    if not dot or not db or not name:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{ns}'")
    return db, name


def _bulk_op(writes: Writes, namespaces: list[tuple[str, str]], op: Any, totals: dict[str, int]) -> dict[str, Any]:
    """Run one ``bulkWrite`` op; its result fields, added into ``totals``."""
    if not isinstance(op, Mapping) or not op:
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'bulkWrite.ops' is the wrong type, expected object")
    kind, index = next(iter(op.items()))
    if kind not in ("insert", "update", "delete"):
        raise CommandError(ErrorCode.FailedToParse, f"Unrecognized bulkWrite operation: {kind}")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(namespaces):
        raise CommandError(ErrorCode.BadValue, f"BulkWrite ops entry {kind} has an invalid nsInfo index: {index}")
    target = writes.target(*namespaces[index])
    where = f"bulkWrite.ops.{kind}"
    if kind == "insert":
        target.insert(params.required(op, "document", "object", where))
        totals["nInserted"] += 1
        return {"n": 1}
    if kind == "delete":
        filter_spec = params.required(op, "filter", "object", where)
        collation.given(op, where)
        multi = bool(params.field(op, "multi", "bool", where, default=False))
        n = run_delete(writes, target, filter_spec, multi, op.get("hint"), None, op.get("collation"))
        totals["nDeleted"] += n
        return {"n": n}
    statement = UpdateStatement.parse(op, where, ("filter", "updateMods", "constants"))
    n, modified, upserted_id = run_update(writes, target, statement)
    totals["nModified"] += modified
    result: dict[str, Any] = {"n": n, "nModified": modified}
    if upserted_id is NOT_UPSERTED:
        totals["nMatched"] += n
    else:
        totals["nUpserted"] += 1
        result["upserted"] = {"_id": upserted_id}
    return result
