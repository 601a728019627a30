"""The ``delete`` command and the delete statements ``bulkWrite`` and ``explain`` share.

Manual: https://www.mongodb.com/docs/manual/reference/command/delete/"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson

from foliodb.commands import collation, params, profiler
from foliodb.commands.accesses import count_plan
from foliodb.commands.executor import Request
from foliodb.commands.matching import matching
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import (
    Target,
    Writes,
    collection_name,
    finish,
    ordered_flag,
    point_statement,
    point_target,
    same_store,
)
from foliodb.engine import usage
from foliodb.engine.catalog import CODEC
from foliodb.engine.planner.plans import AccessStage
from foliodb.errors import CommandError, ErrorCode


def run_delete(
    writes: Writes,
    target: Target,
    filter_spec: Mapping[str, Any] | None,
    multi: bool,
    hint: Any,
    plans: list[AccessStage] | None = None,
    collation_spec: Mapping[str, Any] | None = None,
    keys: profiler.KeyTally | None = None,
) -> int:
    """The documents one delete statement removed; its access path is
    counted (and appended to ``plans``), its removed index entries tallied
    in ``keys`` (when profiled)."""
    plans = [] if plans is None else plans
    if target.buckets is not None:
        return target.timeseries().remove_matching(filter_spec, multi)
    store = target.store
    n = 0
    ctx = writes.context(None, writes.collator(target, collation_spec, "delete"))
    for rid, data, doc, _details in matching(store, filter_spec, ctx, hint=hint, one=not multi, plans=plans):
        assert store is not None
        if keys is not None:
            keys.change(store, doc, None)
        store.delete(rid, doc, data)
        n += 1
    if store is not None:
        for access in plans:
            count_plan(writes.request, store, access)
    return n


_POINT_DELETE = frozenset({"q", "limit"})


def point_delete(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to a delete of one document by ``_id`` (mongod's IDHACK) in a
    plain collection (see :func:`point_store`); None when the general path
    must answer. It runs what :func:`run_delete` runs for such a statement."""
    statement = point_statement(cmd, "delete", "deletes")
    if statement is None or statement.get("limit") not in (0, 1) or type(statement.get("limit")) is not int:
        return None
    target = point_target(request, cmd["delete"], statement, _POINT_DELETE)
    if target is None:
        return None
    store, key = target
    with request.engine.storage.write():
        if not same_store(request, store):
            return None
        usage.id_lookup_used(request.engine.usage, store)
        row = store.row_by_id_key(key)
        if row is not None:
            rid, data = row
            if store.only_id_index:
                store.delete_by_id_key(rid, key, data)
            else:
                store.delete(rid, bson.decode(data, CODEC), data)
    return finish(request, cmd, {"n": int(row is not None), "ok": 1.0})


@COMMANDS.register("delete")
def cmd_delete(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    point = point_delete(request, cmd)
    if point is not None:
        return point
    name = collection_name(cmd, "delete")
    statements = params.write_batch(params.required(cmd, "deletes", "array", "delete"))
    ordered = ordered_flag(cmd, "delete")
    writes = Writes(request, cmd, "delete")
    n = 0
    errors: list[dict[str, Any]] = []
    with request.engine.storage.write():
        for i, statement in enumerate(statements):
            statement_run = profiler.Statement(request, "delete", name, statement)
            try:
                filter_spec, limit = delete_statement(statement)
                deleted = run_delete(
                    writes,
                    writes.target(request.db, name),
                    filter_spec,
                    limit == 0,
                    statement.get("hint"),
                    statement_run.plans,
                    statement.get("collation"),
                    statement_run.keys,
                )
            except CommandError as exc:
                statement_run.finish(error=exc)
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
                continue
            statement_run.finish(ndeleted=deleted)
            n += deleted
    reply: dict[str, Any] = {"n": n, "ok": 1.0}
    if errors:
        reply["writeErrors"] = errors
    return finish(request, cmd, reply)


def delete_statement(statement: Any) -> tuple[Mapping[str, Any] | None, int]:
    if not isinstance(statement, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'delete.deletes' is the wrong type, expected object")
    for required in ("q", "limit"):
        if required not in statement:
            raise CommandError(
                ErrorCode.FailedToParse, f"BSON field 'delete.deletes.{required}' is missing but a required field"
            )
    collation.given(statement, "delete.deletes")
    filter_spec = params.field(statement, "q", "object", "delete.deletes")
    limit = params.field(statement, "limit", "integer", "delete.deletes")
    if limit not in (0, 1):
        raise CommandError(ErrorCode.FailedToParse, f"The limit field in delete objects must be 0 or 1. Got {limit}")
    return filter_spec, limit
