"""Source and diagnostics stages: $documents $collStats $indexStats $planCacheStats $changeStream,
and $_internalSplitPipeline (a sharded cluster's split point: nothing to do on one node).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/documents/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/planCacheStats/

``$changeStream`` is opened by the aggregate command itself
(commands/change_streams.py) when it is a pipeline's first stage; anywhere
the pipeline compiler meets it (later in a pipeline, in ``$lookup`` or
``$facet``) it is misplaced (40602). ``$changeStreamSplitLargeEvent`` is the
change stream's own last stage; in any other pipeline it is IllegalOperation.

These stages must come first (checked by the pipeline compiler) and ignore
their input. ``$documents`` follows MongoDB's desugaring (a one-document
queue, ``$project`` of the expression, ``$unwind``, ``$replaceRoot``): an
array gives one document per element, a lone object one document, null or
missing nothing, and every element must be an object (40228).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import type_name
from foliodb.query.idl import unknown_field, wrong_type
from foliodb.query.paths import MISSING
from foliodb.query.render import render


@STAGES.register("$changeStream")
def stage_changeStream(spec: Any, where: Where) -> Stage:
    raise location(40602, "$changeStream is only valid as the first stage in a pipeline")


@STAGES.register("$changeStreamSplitLargeEvent")
def stage_changeStreamSplitLargeEvent(spec: Any, where: Where) -> Stage:
    raise CommandError(
        ErrorCode.IllegalOperation, "$changeStreamSplitLargeEvent can only be used in a $changeStream pipeline"
    )


@STAGES.register("$documents")
def stage_documents(spec: Any, where: Where) -> Stage:
    produce = where.expression(spec)
    vars_for = where.variables()

    def run(docs: Docs) -> Docs:
        value = produce({}, vars_for({}))
        if value is None or value is MISSING:
            return
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                raise location(
                    40228,
                    f"'newRoot' expression must evaluate to an object, but resulting value was: {render(item)}. "
                    f"Type of resulting value: '{type_name(item)}'. Input document: {{}}",
                )
            yield item

    return Stage("$documents", spec, run)


def _current_collection(where: Where, stage: str) -> str:
    coll = where.env.coll
    if coll is None:
        raise CommandError(ErrorCode.InvalidNamespace, f"{stage} must be run against a collection namespace")
    return coll


_COLL_STATS_FIELDS = ("latencyStats", "storageStats", "count", "queryExecStats")


@STAGES.register("$collStats")
def stage_collStats(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(5447000, f"$collStats must take a nested object but found: $collStats: {render(spec)}")
    for key, value in spec.items():
        if key not in _COLL_STATS_FIELDS:
            raise unknown_field("$collStats", key)
        if not isinstance(value, Mapping):
            raise wrong_type(f"$collStats.{key}", value, "object")
    coll = _current_collection(where, "$collStats")
    env = where.env

    def run(docs: Docs) -> Docs:
        yield env.coll_stats(coll, spec)

    return Stage("$collStats", spec, run)


_CURRENT_OP_OPTIONS = (
    "allUsers",
    "idleConnections",
    "idleCursors",
    "idleSessions",
    "localOps",
    "backtrace",
    "truncateOps",
    "targetAllNodes",
)


@STAGES.register("$currentOp")
def stage_currentOp(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise wrong_type("$currentOp", spec, "object")
    for key, value in spec.items():
        if key not in _CURRENT_OP_OPTIONS:
            raise unknown_field("$currentOp", key)
        if not isinstance(value, bool):
            raise wrong_type(f"$currentOp.{key}", value, "bool")
    env = where.env
    if env.coll is not None or env.db != "admin":
        raise CommandError(
            ErrorCode.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}"
        )
    idle = bool(spec.get("idleConnections", False))
    idle_cursors = bool(spec.get("idleCursors", False))
    all_users = bool(spec.get("allUsers", False))
    idle_sessions = bool(spec.get("idleSessions", True))  # mongod's default: open transactions between commands
    truncate = bool(spec.get("truncateOps", False))

    def run(docs: Docs) -> Docs:
        yield from env.current_ops(idle, idle_cursors, all_users, idle_sessions, truncate)

    return Stage("$currentOp", spec, run)


@STAGES.register("$planCacheStats")
def stage_planCacheStats(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.FailedToParse, f"$planCacheStats value must be an object. Found: {type_name(spec)}"
        )
    for key, value in spec.items():
        if key != "allHosts":
            raise unknown_field("$planCacheStats", key)
        if not isinstance(value, bool):
            raise wrong_type("$planCacheStats.allHosts", value, "bool")
        if value:  # the option is for a sharded cluster's mongos
            raise CommandError(
                ErrorCode.FailedToParse, "$planCacheStats with allHosts: true can only be run on a sharded cluster"
            )
    coll = _current_collection(where, "$planCacheStats")
    env = where.env

    def run(docs: Docs) -> Docs:
        yield from env.plan_cache_stats(coll)

    return Stage("$planCacheStats", spec, run)


@STAGES.register("$indexStats")
def stage_indexStats(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping) or spec:
        raise location(28803, "The $indexStats stage specification must be an empty object")
    coll = _current_collection(where, "$indexStats")
    env = where.env

    def run(docs: Docs) -> Docs:
        yield from env.index_stats(coll)

    return Stage("$indexStats", spec, run)


_MERGE_TYPES = ("localOnly", "anyShard", "primaryShard", "mongos")


@STAGES.register("$_internalSplitPipeline")
def stage_internalSplitPipeline(spec: Any, where: Where) -> Stage:
    """Where a sharded cluster splits a pipeline (mongod's DocumentSourceInternalSplitPipeline, which
    tests use to force a merge): one node has no split, so documents pass through unchanged."""
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch, f"$_internalSplitPipeline must take a nested object but found: {render(spec)}"
        )
    for name, value in spec.items():
        if name != "mergeType":
            raise CommandError(
                ErrorCode.BadValue, f"unrecognized field while parsing $_internalSplitPipeline: '{name}'"
            )
        if not isinstance(value, str):
            raise CommandError(ErrorCode.BadValue, f"'mergeType' must be a string value but found: {type_name(value)}")
        if value not in _MERGE_TYPES:
            raise CommandError(ErrorCode.BadValue, f"unrecognized field while parsing mergeType: '{name}'")

    def run(docs: Docs) -> Docs:
        return docs

    return Stage("$_internalSplitPipeline", spec, run, keeps=lambda field: True)


@STAGES.register("$_internalInhibitOptimization")
def stage_internalInhibitOptimization(spec: Any, where: Where) -> Stage:
    """mongod's DocumentSourceInternalInhibitOptimization: documents pass through unchanged, and no
    stage moves or merges across it (tests use it to keep a pipeline's shape)."""
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"$_internalInhibitOptimization must take a nested object but found: "
            f"$_internalInhibitOptimization: {render(spec)}",
        )
    if spec:
        raise CommandError(
            ErrorCode.FailedToParse,
            f"$_internalInhibitOptimization must take an empty object but found: {render(spec)}",
        )

    def run(docs: Docs) -> Docs:
        return docs

    return Stage("$_internalInhibitOptimization", {}, run)
