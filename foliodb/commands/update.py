"""The ``update`` command and the update statements ``bulkWrite`` and ``explain`` share.

Manual: https://www.mongodb.com/docs/manual/reference/command/update/"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import bson

from foliodb.aggregation.pipeline import STAGES
from foliodb.commands import collation, params, profiler
from foliodb.commands.accesses import count_plan
from foliodb.commands.executor import Request
from foliodb.commands.matching import matching
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import (
    Target,
    Writes,
    check_id,
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
from foliodb.engine.timeseries import check_measurement
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails
from foliodb.query.update import CompiledUpdate, compile_update


@dataclass
class UpdateStatement:
    """One update, from an ``update`` command's ``updates`` or a ``bulkWrite`` op."""

    filter: Mapping[str, Any] | None
    update: Any
    multi: bool
    upsert: bool
    array_filters: list[Any] | None
    sort: Mapping[str, Any] | None
    hint: Any
    constants: Mapping[str, Any] | None
    collation: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, statement: Any, where: str, names: tuple[str, str, str]) -> UpdateStatement:
        """``names``: the filter, update and constants fields (``q``, ``u``,
        ``c`` in ``update``; ``filter``, ``updateMods``, ``constants`` in
        ``bulkWrite``)."""
        if not isinstance(statement, Mapping):
            raise CommandError(ErrorCode.TypeMismatch, f"BSON field '{where}' is the wrong type, expected object")
        q, u, c = names
        for required in (q, u):
            if required not in statement:
                raise CommandError(
                    ErrorCode.FailedToParse, f"BSON field '{where}.{required}' is missing but a required field"
                )
        collation.given(statement, where)
        return cls(
            filter=params.field(statement, q, "object", where),
            update=params.field(statement, u, "objectOrArray", where),
            multi=bool(params.field(statement, "multi", "bool", where, default=False)),
            upsert=bool(params.field(statement, "upsert", "bool", where, default=False)),
            array_filters=params.field(statement, "arrayFilters", "array", where),
            sort=params.field(statement, "sort", "object", where),
            hint=statement.get("hint"),
            constants=params.field(statement, c, "object", where),
            collation=statement.get("collation"),
        )


NOT_UPSERTED = object()


def _check_pipeline_stages(statements: list[Any]) -> None:
    """An update pipeline naming an unknown stage fails the whole command (40324), as mongod's
    LiteParsedPipeline does while authorizing it, before any statement runs."""
    for statement in statements:
        pipeline = statement.get("u") if isinstance(statement, Mapping) else None
        if isinstance(pipeline, list):
            for stage in pipeline:
                if isinstance(stage, Mapping) and len(stage) == 1:
                    name = next(iter(stage))
                    if name not in STAGES and name not in STAGES.unbuilt:
                        STAGES.get(name)  # raises the registry's unknown-stage error


def run_update(
    writes: Writes,
    target: Target,
    statement: UpdateStatement,
    plans: list[AccessStage] | None = None,
    keys: profiler.KeyTally | None = None,
) -> tuple[int, int, Any]:
    """(matched, modified, upserted _id or NOT_UPSERTED) of one update
    statement; its access path is counted (and appended to ``plans``), the
    index entries it changes tallied in ``keys`` (when profiled)."""
    plans = [] if plans is None else plans
    ctx = writes.context(statement.constants, writes.collator(target, statement.collation, "update"))
    update = compile_update(statement.update, ctx, statement.array_filters)
    if statement.multi and update.is_replacement:
        raise CommandError(ErrorCode.FailedToParse, "multi update is not supported for replacement-style update")
    if statement.multi and statement.sort:
        raise CommandError(ErrorCode.FailedToParse, "The sort option is only supported for updateOne")
    if target.buckets is not None:
        return _update_measurements(target, statement, update)
    store = target.store
    n = modified = 0
    if store is not None:
        for rid, data, doc, details in matching(
            store,
            statement.filter,
            ctx,
            hint=statement.hint,
            sort=statement.sort,
            one=not statement.multi,
            plans=plans,
        ):
            n += 1
            changed, new = target.update(store, update, rid, data, doc, details)
            modified += changed
            if keys is not None:
                keys.change(store, doc, new)
        for access in plans:
            count_plan(writes.request, store, access)
    if n == 0 and statement.upsert:
        doc = target.upsert(update, statement.filter)
        if keys is not None and target.store is not None:
            keys.change(target.store, None, doc)
        return 1, 0, doc["_id"]
    return n, modified, NOT_UPSERTED


def _update_measurements(target: Target, statement: UpdateStatement, update: CompiledUpdate) -> tuple[int, int, Any]:
    """An update of a time-series collection: matched measurements leave their
    buckets and their updated versions are inserted again (as mongod 7+)."""
    assert target.buckets is not None
    writer = target.timeseries()
    results: list[dict[str, Any]] = []
    modified = 0

    def each(doc: dict[str, Any], details: MatchDetails) -> None:
        nonlocal modified
        new = update.apply(doc, details.array_index)
        if update.is_replacement and "_id" not in new:
            new = {**new, "_id": doc["_id"]}
        modified += bson.encode(new) != bson.encode(doc)
        results.append(new)

    # One unit: a result that is no measurement (no date) leaves every bucket as it was.
    with target.engine.storage.savepoint():
        n = writer.remove_matching(statement.filter, statement.multi, each)
        writer.insert([check_measurement(target.buckets, doc) for doc in results])
    if n == 0 and statement.upsert:
        doc = target.upsert(update, statement.filter)
        return 1, 0, doc["_id"]
    return n, modified, NOT_UPSERTED


_POINT_UPDATE = frozenset({"q", "u", "multi", "upsert"})
# Update operators whose compiled form depends on nothing but the spec (a point update's context
# has no variables and no collation): $currentDate reads the command's clock and $pull compiles a
# query, so neither is here.
_CACHEABLE_OPERATORS = frozenset(
    {
        "$set",
        "$unset",
        "$inc",
        "$mul",
        "$min",
        "$max",
        "$rename",
        "$push",
        "$addToSet",
        "$pop",
        "$pullAll",
        "$bit",
    }
)
_COMPILED_UPDATES: dict[bytes, CompiledUpdate] = {}  # by the spec's BSON: equal bytes, the same update
_COMPILED_UPDATES_MAX = 256


def _point_compiled_update(spec: Any) -> CompiledUpdate:
    """``compile_update(spec)`` in a plain context, compiled once per distinct operator spec: a
    driver's update_one sends the same few shapes and values over and over."""
    if type(spec) is not dict or not spec.keys() <= _CACHEABLE_OPERATORS:
        return compile_update(spec, Context(), None)
    try:
        key = bson.encode(spec, codec_options=CODEC)
    except (bson.errors.InvalidDocument, TypeError, OverflowError, ValueError):
        return compile_update(spec, Context(), None)  # what compiling reports, if anything
    update = _COMPILED_UPDATES.get(key)
    if update is None:
        update = compile_update(spec, Context(), None)
        if len(_COMPILED_UPDATES) >= _COMPILED_UPDATES_MAX:
            _COMPILED_UPDATES.clear()
        _COMPILED_UPDATES[key] = update
    return update


def point_update(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to an update of one document by ``_id`` (mongod's IDHACK) in a
    plain collection (see :func:`point_store`), without an upsert; None when
    the general path must answer. It runs what :func:`run_update` runs for such
    a statement - the same compiled update, record store and ``_id`` access
    count - without its statement, target and plan objects."""
    statement = point_statement(cmd, "update", "updates")
    if statement is None or statement.get("upsert", False) is not False or statement.get("multi", False) is not False:
        return None
    spec = statement.get("u")
    target = point_target(request, cmd["update"], statement, _POINT_UPDATE) if type(spec) in (dict, list) else None
    if target is None:
        return None
    store, key = target
    with request.engine.storage.write():
        if not same_store(request, store):
            return None
        try:
            update = _point_compiled_update(spec)
            modified = 0
            row = store.row_by_id_key(key)
            if row is not None:
                rid, data = row
                doc = bson.decode(data, CODEC)
                new = update.apply(doc, None)
                if "_id" in new:
                    check_id(new["_id"])
                new_data = store.encode(new, after_update=True)
                if new_data != data:
                    store.update(rid, doc, new, new_data, data, update.is_replacement)
                    modified = 1
            usage.id_lookup_used(request.engine.usage, store)  # as run_update: a failed statement counts none
            reply: dict[str, Any] = {"n": int(row is not None), "nModified": modified, "ok": 1.0}
        except CommandError as exc:
            reply = {"n": 0, "nModified": 0, "writeErrors": [exc.to_write_error(0)], "ok": 1.0}
    return finish(request, cmd, reply)


@COMMANDS.register("update")
def cmd_update(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    point = point_update(request, cmd)
    if point is not None:
        return point
    name = collection_name(cmd, "update")
    statements = params.write_batch(params.required(cmd, "updates", "array", "update"))
    _check_pipeline_stages(statements)
    ordered = ordered_flag(cmd, "update")
    writes = Writes(request, cmd, "update")
    n = modified = 0
    upserted: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    with request.engine.storage.write():
        for i, raw in enumerate(statements):
            statement_run = profiler.Statement(request, "update", name, raw)
            try:
                statement = UpdateStatement.parse(raw, "update.updates", ("q", "u", "c"))
                n_i, modified_i, upserted_id = run_update(
                    writes, writes.target(request.db, name), statement, statement_run.plans, statement_run.keys
                )
            except CommandError as exc:
                statement_run.finish(error=exc)
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
                continue
            upserts = int(upserted_id is not NOT_UPSERTED)
            statement_run.finish(nMatched=n_i - upserts, nModified=modified_i, nUpserted=upserts)
            n += n_i
            modified += modified_i
            if upserted_id is not NOT_UPSERTED:
                upserted.append({"index": i, "_id": upserted_id})
    reply: dict[str, Any] = {"n": n, "nModified": modified}
    if upserted:
        reply["upserted"] = upserted
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return finish(request, cmd, reply)
