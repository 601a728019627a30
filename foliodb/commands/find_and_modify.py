"""The ``findAndModify`` command.

Manual: https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.commands import collation, params, profiler
from foliodb.commands.accesses import count_plan
from foliodb.commands.executor import Request
from foliodb.commands.matching import matching
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import Writes, collection_name, finish
from foliodb.engine.planner.plans import AccessStage
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.projection import compile_projection
from foliodb.query.update import compile_update


@COMMANDS.register("findAndModify", "findandmodify")
def cmd_findAndModify(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    command = next(iter(cmd))
    name = collection_name(cmd, command)
    filter_spec = params.field(cmd, "query", "object", command)
    sort = params.field(cmd, "sort", "object", command)
    remove = bool(params.field(cmd, "remove", "bool", command, default=False))
    spec = params.field(cmd, "update", "objectOrArray", command)
    return_new = bool(params.field(cmd, "new", "bool", command, default=False))
    fields = params.field(cmd, "fields", "object", command)
    do_upsert = bool(params.field(cmd, "upsert", "bool", command, default=False))
    array_filters = params.field(cmd, "arrayFilters", "array", command)
    collation.given(cmd, command)
    writes = Writes(request, cmd, command)
    if remove and spec is not None:
        raise CommandError(ErrorCode.FailedToParse, "Cannot specify both an update and remove=true")
    if not remove and spec is None:
        raise CommandError(ErrorCode.FailedToParse, "Either an update or remove=true must be specified")
    if remove and return_new:
        raise CommandError(
            ErrorCode.FailedToParse,
            "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
        )
    if remove and do_upsert:
        raise CommandError(ErrorCode.FailedToParse, "Cannot specify both upsert=true and remove=true ")
    if remove and array_filters is not None:
        raise CommandError(ErrorCode.FailedToParse, "Cannot specify arrayFilters and remove=true")
    ctx = writes.context(None, collation.resolve(request, name, cmd.get("collation"), command))
    projection = compile_projection(fields, ctx, find=True) if fields else None
    update = compile_update(spec, ctx, array_filters) if spec is not None else None
    last_error: dict[str, Any] = {"n": 0}
    value: dict[str, Any] | None = None
    with request.engine.storage.write():
        target = writes.target(request.db, name)
        if target.buckets is not None:
            raise CommandError(
                ErrorCode.CommandNotSupportedOnView, f"Namespace {request.db}.{name} is a view, not a collection"
            )
        store = target.store
        plans: list[AccessStage] = []
        found = next(matching(store, filter_spec, ctx, hint=cmd.get("hint"), sort=sort, one=True, plans=plans), None)
        if store is not None:
            for access in plans:
                count_plan(request, store, access)
        keys = profiler.key_tally(request)
        counts: dict[str, int] = {}  # the profile entry's, as mongod's findAndModify reports them
        if found is not None:
            assert store is not None
            rid, data, doc, details = found
            if remove:
                if keys is not None:
                    keys.change(store, doc, None)
                store.delete(rid, doc, data)
                last_error = {"n": 1}
                value = doc
                counts = {"ndeleted": 1}
            else:
                assert update is not None
                changed, new = target.update(store, update, rid, data, doc, details)
                if keys is not None:
                    keys.change(store, doc, new)
                last_error = {"n": 1, "updatedExisting": True}
                value = new if return_new else doc
                counts = {"nMatched": 1, "nModified": int(changed)}
        elif do_upsert:
            assert update is not None
            new = target.upsert(update, filter_spec)
            if keys is not None and target.store is not None:
                keys.change(target.store, None, new)
            last_error = {"n": 1, "updatedExisting": False, "upserted": new["_id"]}
            value = new if return_new else None
            counts = {"nMatched": 0, "nModified": 0, "nUpserted": 1}
        elif update is not None:
            last_error = {"n": 0, "updatedExisting": False}
            counts = {"nMatched": 0, "nModified": 0}
        if keys is not None:
            examined = {
                "keysExamined": sum(access.keys_examined for access in plans),
                "docsExamined": sum(access.docs_examined for access in plans),
            }
            profiler.note(request, {**examined, **counts, **keys.counts()})
    if value is not None and projection is not None:
        details = MatchDetails()
        if projection.uses_positional:
            compile_filter(filter_spec, ctx)(value, details)
        value = projection.apply(value, details)
    return finish(request, cmd, {"lastErrorObject": last_error, "value": value, "ok": 1.0})
