"""The aggregate command, and the engine side of pipelines (PipelineEnv).

Manual: https://www.mongodb.com/docs/manual/reference/command/aggregate/

A pipeline's leading ``$match``/``$sort``/``$limit`` go to the query planner
as a find (so they use indexes); the remaining stages stream over its
results. Pipelines ending in ``$out`` or ``$merge`` run to completion inside
the command, in one storage transaction, so their writes land all or nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import bson
from bson import Int64

from foliodb.aggregation.pipeline import FIRST_ONLY, compile_pipeline
from foliodb.commands import change_streams, collation, oplog_rs, params, plan_cache, search_indexes, sessions, stats
from foliodb.commands.accesses import counted
from foliodb.commands.current_op import current_ops
from foliodb.commands.cursors import DEFAULT_FIRST_BATCH, cursor_reply
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.timeseries import check_options as ts_options
from foliodb.commands.timeseries import create as timeseries_create
from foliodb.commands.write import Target, apply_replacement, check_new_database, prepare_insert
from foliodb.engine.buckets import BucketSpec
from foliodb.engine.catalog import CODEC
from foliodb.engine.query import FindExecution, FindSpec
from foliodb.engine.search.text.search import documents, text_search
from foliodb.engine.search.vector_search import vector_search
from foliodb.engine.timeseries import TimeSeriesWriter, check_measurement
from foliodb.errors import INTERRUPTIONS, CommandError, ErrorCode
from foliodb.query import collation as collation_module
from foliodb.query import metadata
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.compare import is_number
from foliodb.query.context import Context
from foliodb.query.search_query import SearchQuery
from foliodb.query.vector_query import VectorQuery


class EngineEnv:
    """PipelineEnv over the engine, for one aggregate command."""

    def __init__(
        self,
        request: Request,
        ctx: Context,
        allow_disk_use: bool,
        coll: str | None = None,
        bypass: bool = False,
        expand_views: bool = True,
    ) -> None:
        self.request = request
        # A $lookup from a view compiles the view's pipeline within its own (sub-pipeline depth); a view's
        # definition is checked without: mongod counts that depth when the view is read.
        self.expand_views = expand_views
        self.bypass = bypass  # bypassDocumentValidation: $out and $merge skip their target's validator
        self.coll = coll  # the collection aggregated; None for `aggregate: 1`
        self.engine = request.engine
        self.ctx = ctx
        self.db = request.db
        self.allow_disk_use = allow_disk_use

    def source(
        self,
        coll: str,
        stages: list[Mapping[str, Any]],
        db: str | None = None,
        ctx: Context | None = None,
        hint: Any = None,
    ) -> Iterator[dict[str, Any]]:
        """Run ``stages`` over a collection, leading stages through the planner
        (with the aggregate command's ``hint``, for its own collection)."""
        env = EngineEnv(self.request, ctx or self.ctx, self.allow_disk_use, coll, self.bypass)
        source, view_pipeline = self.engine.resolve_view(db or self.db, coll)
        if stages and isinstance(stages[0], Mapping) and "$collStats" in stages[0]:
            # $collStats reports on the namespace named, a view too: the view's pipeline is not applied.
            source, view_pipeline = coll, []
        pipeline = compile_pipeline(view_pipeline + list(stages), env)
        if pipeline.stages and pipeline.stages[0].name in FIRST_ONLY:
            # $collStats, $indexStats...: a source stage that reads no documents, so runs no find.
            return pipeline.run(iter(()))
        if oplog_rs.is_oplog(db or self.db, source):  # the oplog's entries, every stage run here
            return pipeline.run(oplog_rs.oplog_find(self.engine, FindSpec(), env.ctx, tailable=False))
        filter_spec, sort, limit, projection = pipeline.pushdown()
        near = pipeline.geo_near()
        store = self.engine.store(db or self.db, source)
        spec = FindSpec(
            filter=filter_spec,
            sort=sort,
            limit=limit,
            projection=projection,
            geo_near=near,
            hint=hint,
            allow_disk_use=self.allow_disk_use,
            keep_metadata=True,
            count_only=pipeline.needs_no_fields(),
        )
        run = counted(self.request, store, FindExecution(store, spec, env.ctx))
        return pipeline.run(iter(run), pushed=True)

    # -- PipelineEnv ---------------------------------------------------------------------

    def aggregate(
        self,
        coll: str,
        pipeline: list[Mapping[str, Any]],
        db: str | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> Iterator[dict[str, Any]]:
        ctx = self.ctx
        if variables:
            ctx = Context({**self.ctx.variables, **variables}, self.ctx.now, self.ctx.collator)
        field_match = _field_match(pipeline)
        if field_match is not None:
            source, view_pipeline = self.engine.resolve_view(db or self.db, coll)
            if not view_pipeline:
                # $lookup's per-document match is a find: no pipeline to compile.
                store = self.engine.store(db or self.db, source)
                spec = FindSpec(filter=field_match, allow_disk_use=self.allow_disk_use)
                return iter(counted(self.request, store, FindExecution(store, spec, ctx)))
        return self.source(coll, pipeline, db, ctx)

    def has_text_index(self, coll: str, db: str | None = None) -> bool:
        source = self.engine.resolve_view(db or self.db, coll)[0]
        info = self.engine.catalog.get(db or self.db, source)
        return info is not None and any(index.kind == "text" for index in info.indexes.values())

    def view_pipeline(self, coll: str, db: str | None = None) -> list[Any]:
        return self.engine.resolve_view(db or self.db, coll)[1] if self.expand_views else []

    def collection_exists(self, coll: str, db: str | None = None) -> bool:
        return self.engine.catalog.get(db or self.db, coll) is not None

    def replace_collection(
        self,
        coll: str,
        docs: Iterable[Mapping[str, Any]],
        db: str | None = None,
        timeseries: Mapping[str, Any] | None = None,
    ) -> None:
        db = db or self.db
        engine = self.engine
        existing = engine.catalog.get(db, coll)
        if timeseries is not None or (existing is not None and existing.is_timeseries):
            self._replace_measurements(db, coll, docs, timeseries)
            return
        if existing is not None and existing.is_view:
            raise CommandError(
                ErrorCode.CommandNotSupportedOnView, f"Namespace {db}.{coll} is a view, not a collection"
            )
        if existing is not None and existing.options.get("capped"):  # the $out page: never to a capped collection
            raise CommandError(17152, f"namespace '{db}.{coll}' is capped so it can't be used for $out")
        check_new_database(engine, db)
        with engine.storage.write():
            # Results go to a temporary collection first: the pipeline may be
            # reading the very collection it replaces.
            temp_name = f"tmp.agg_out.{uuid.uuid4().hex}"
            temp = engine.create_collection(db, temp_name)
            check = Target(self.request, db, coll, self.bypass)  # the target's validator, as mongod's temp copy has
            for doc in docs:
                new = prepare_insert(metadata.strip(dict(doc)))
                check.validate(new)
                temp.insert(new)
            target = engine.store(db, coll)
            if target is None:
                engine.rename_collection(db, temp_name, db, coll, drop_target=False)
                return
            # An existing target keeps its options and indexes.
            target.truncate()
            for _rid, data in temp.scan():
                target.insert(bson.decode(data, CODEC), data)
            engine.drop_collection(db, temp_name)

    def _replace_measurements(
        self, db: str, coll: str, docs: Iterable[Mapping[str, Any]], timeseries: Mapping[str, Any] | None
    ) -> None:
        """``$out`` to a time-series collection (MongoDB 7.0.3+): created with
        ``timeseries`` when missing; an existing one must have those options.
        The results are gathered first, as the pipeline may read the target."""
        engine = self.engine
        options = {"timeseries": ts_options(timeseries, "$out")} if timeseries is not None else None
        results = [dict(doc) for doc in docs]
        check_new_database(engine, db)
        with engine.storage.write():
            existing = engine.catalog.get(db, coll)
            if existing is None:
                if options is None:
                    return
                timeseries_create(self.request, coll, options, db)
                existing = engine.catalog.get(db, coll)
                assert existing is not None
            elif not existing.is_timeseries:
                raise CommandError(
                    ErrorCode.InvalidOptions, f"Cannot write time-series $out output to the collection {db}.{coll}"
                )
            elif options is not None and options["timeseries"] != existing.options["timeseries"]:
                raise CommandError(
                    ErrorCode.InvalidOptions,
                    f"Time-series options of $out do not match the existing collection {db}.{coll}",
                )
            spec = BucketSpec.of(existing.options["timeseries"])
            measurements = [check_measurement(spec, metadata.strip(doc)) for doc in results]
            store = engine.store(db, f"system.buckets.{coll}")
            assert store is not None
            store.truncate()
            TimeSeriesWriter(store, spec, self.ctx).insert(measurements)

    def unique_index_on(self, coll: str, fields: list[str], db: str | None = None) -> bool:
        if sorted(fields) == ["_id"]:
            return True
        info = self.engine.catalog.get(db or self.db, coll)
        if info is None:
            return False
        # Unique, not partial, ascending/descending keys only (a text, 2dsphere, 2d or hashed key
        # does not hold each value once) and of the aggregate's collation (mongod's supportsUniqueKey
        # and keyPatternNamesExactPaths).
        return any(
            index.unique
            and sorted(index.key) == sorted(fields)
            and all(is_number(direction) for direction in index.key.values())
            and "partialFilterExpression" not in index.spec
            and collation_module.same(index.collator, self.ctx.collator)
            for index in info.indexes.values()
        )

    def indexed(self, coll: str, field: str, db: str | None = None) -> bool:
        info = self.engine.catalog.get(db or self.db, coll)
        if info is None or info.is_view:
            return False
        return any(
            index.kind in ("btree", "hashed")
            and index.key_names[0] == field
            and "partialFilterExpression" not in index.spec
            and not index.spec.get("sparse")
            and collation_module.same(index.collator, self.ctx.collator)
            for index in info.indexes.values()
        )

    def find_one(self, coll: str, filter: Mapping[str, Any], db: str | None = None) -> dict[str, Any] | None:
        store = self.engine.store(db or self.db, coll)
        for doc in counted(self.request, store, FindExecution(store, FindSpec(filter=filter, limit=1), self.ctx)):
            return doc
        return None

    def insert(self, coll: str, doc: Mapping[str, Any], db: str | None = None) -> None:
        db = db or self.db
        with self.engine.storage.write():
            if self.engine.store(db, coll) is None:
                check_new_database(self.engine, db)
            store = self.engine.ensure_collection(db, coll)
            new = prepare_insert(metadata.strip(dict(doc)))
            Target(self.request, db, coll, self.bypass).validate(new)
            store.insert(new)

    def replace(self, coll: str, filter: Mapping[str, Any], doc: Mapping[str, Any], db: str | None = None) -> None:
        store = self.engine.store(db or self.db, coll)
        if store is None:
            raise CommandError(ErrorCode.NamespaceNotFound, f"ns does not exist: {db or self.db}.{coll}")
        target = Target(self.request, db or self.db, coll, self.bypass)
        with self.engine.storage.write():
            apply_replacement(target, store, filter, metadata.strip(dict(doc)), self.ctx)

    def coll_stats(self, coll: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        return stats.coll_stats(self.engine, self.db, coll, spec, self.ctx.now)

    def current_ops(
        self, idle_connections: bool, idle_cursors: bool, all_users: bool, idle_sessions: bool, truncate: bool
    ) -> list[dict[str, Any]]:
        return current_ops(self.request, idle_connections, idle_cursors, all_users, idle_sessions, truncate)

    def index_stats(self, coll: str) -> list[dict[str, Any]]:
        return stats.index_stats(self.engine, self.db, coll)

    def plan_cache_stats(self, coll: str) -> list[dict[str, Any]]:
        return plan_cache.cache_stats(self.request, coll)

    def sessions(self, all_users: bool, users: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return sessions.listed_sessions(self.request, all_users, users)

    def vector_search(self, coll: str, query: VectorQuery) -> list[dict[str, Any]]:
        return vector_search(self.engine.search, self.engine.store(self.db, coll), query)

    def text_search(self, coll: str, query: SearchQuery) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
        store = self.engine.store(self.db, coll)
        found = text_search(self.engine.search, store, query, collection=lambda name: self.engine.store(self.db, name))
        if store is None or query.meta_only:
            return found.meta, iter(())
        return found.meta, documents(store, query, found)

    def search_indexes(self, coll: str, name: str | None, index_id: str | None) -> list[dict[str, Any]]:
        return search_indexes.listed(self.engine, self.db, coll, name, index_id)


def _field_match(stages: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The filter of a pipeline that is one ``$match`` on fields only (as $lookup builds per document)."""
    if len(stages) != 1 or len(stages[0]) != 1:
        return None
    spec = stages[0].get("$match")
    if not isinstance(spec, Mapping) or any(not is_string(k) or k.startswith("$") for k in spec):
        return None
    return spec


def _drain_writing(
    request: Request, stages: list[Mapping[str, Any]], run: Callable[[], Iterator[dict[str, Any]]]
) -> None:
    """Run a pipeline ending in ``$out`` or ``$merge`` in one storage transaction. ``$out``
    replaces its target whole or not at all; a ``$merge`` that fails keeps the writes it did, as
    mongod's (its batches are separate write commands), unless the command was interrupted
    (FolioDB rolls an interrupted write command back, see docs/differences.md)."""
    failure: CommandError | None = None
    with request.engine.storage.write():
        try:
            for _ in run():
                pass
        except CommandError as error:
            if "$merge" not in stages[-1] or error.code in INTERRUPTIONS:
                raise
            failure = error
    if failure is not None:
        raise failure


# aggregate's fields (mongod's aggregate.idl, the internal ones left out).
AGGREGATE_FIELDS = {
    "pipeline": "array",
    "explain": "bool",
    "allowDiskUse": "bool",
    "cursor": "object",
    "bypassDocumentValidation": "bool",
    "collation": "object",
    "hint": params.ANY,
    "let": "object",
}


@COMMANDS.register("aggregate")
def cmd_aggregate(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    target = cmd["aggregate"]
    fields = params.parse(cmd, "aggregate", AGGREGATE_FIELDS)
    params.read_concern(cmd, request.executor.replica_set is not None)
    stages = fields.get("pipeline")
    if stages is None:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'aggregate.pipeline' is missing but a required field")
    for i, stage in enumerate(stages):  # mongod's IDL types the pipeline array<object>, checked before the rest
        if not isinstance(stage, Mapping):
            raise CommandError(
                ErrorCode.TypeMismatch,
                f"BSON field 'aggregate.pipeline.{i}' is the wrong type '{type_name(stage)}', expected type 'object'",
            )
    cursor_opts = fields.get("cursor")
    explain = fields.get("explain", False)
    if cursor_opts is None and not explain:
        raise CommandError(
            ErrorCode.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument"
        )
    if explain:
        # The legacy form of explain; the registry lookup keeps explain.py (which builds on this module) out of
        # this module's imports.
        inner = {key: value for key, value in cmd.items() if key != "explain"}
        return COMMANDS.get("explain")(request, {"explain": inner, "verbosity": "queryPlanner"})
    batch_size = params.field(cursor_opts or {}, "batchSize", "integer", "aggregate.cursor")
    if stages and isinstance(stages[0], Mapping) and "$changeStream" in stages[0]:
        return change_streams.open_stream(request, cmd, stages, batch_size)
    let = fields.get("let")
    if is_string(target):
        collator = collation.resolve(request, target, cmd.get("collation"), "aggregate")
    else:
        collator = collation.given(cmd, "aggregate")
    allow_disk_use = fields.get("allowDiskUse", True)
    hint = fields.get("hint")
    ctx = request.context(let, collator)
    env = EngineEnv(request, ctx, allow_disk_use, bypass=fields.get("bypassDocumentValidation", False))
    writes = bool(stages) and isinstance(stages[-1], Mapping) and any(k in ("$out", "$merge") for k in stages[-1])
    concern = cmd.get("readConcern")
    if writes and isinstance(concern, Mapping) and concern.get("level") == "linearizable":
        stage = next(iter(stages[-1]))
        raise CommandError(ErrorCode.InvalidOptions, f"{stage} cannot be used with a 'linearizable' read concern level")
    if is_string(target):
        ns = f"{request.db}.{target}"
        if writes:
            _drain_writing(request, stages, lambda: env.source(target, stages, hint=hint))
            return cursor_reply(request, ns, iter(()), batch_size)
        docs = env.source(target, stages, hint=hint)
    elif target == 1:
        ns = f"{request.db}.$cmd.aggregate"
        pipeline = compile_pipeline(list(stages), env)
        if writes:
            _drain_writing(request, stages, lambda: pipeline.run(iter(())))
            return cursor_reply(request, ns, iter(()), batch_size)
        docs = pipeline.run(iter(()))
    else:
        raise CommandError(ErrorCode.InvalidNamespace, "aggregate requires a collection name or 1")
    if batch_size is None:
        batch_size = DEFAULT_FIRST_BATCH
    if batch_size == 0:
        # batchSize 0: open the cursor, return nothing yet (pymongo's aggregate_raw_batches asks for this).
        cursor = request.cursors.open(ns, map(metadata.strip, docs))
        return {"cursor": {"firstBatch": [], "id": Int64(cursor.id), "ns": ns}, "ok": 1.0}
    return cursor_reply(request, ns, map(metadata.strip, docs), batch_size)
