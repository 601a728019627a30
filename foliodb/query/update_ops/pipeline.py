"""Update pipelines: the aggregation stages an update may run.

Manual: https://www.mongodb.com/docs/manual/tutorial/update-with-aggregation-pipeline/

``$addFields``/``$set``, ``$project``/``$unset`` and ``$replaceRoot``/
``$replaceWith``, each compiled once into a function of one document. Every
stage's expressions see that stage's input as ``$$ROOT`` and ``$$CURRENT``,
the command's ``let`` variables and ``$$NOW``. Other MongoDB stages are
InvalidOptions (72) here; unknown names are 40324. No stage modifies its
input document. The stages' checks and document rules are the aggregation
stages' own, from :mod:`foliodb.query.reshape`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.context import Context
from foliodb.query.expr import Scope, compile_expression, root_variables
from foliodb.query.projection import compile_projection
from foliodb.query.registry import Registry
from foliodb.query.reshape import apply_tree, compile_add_fields, new_root_spec, replacement, unset_fields

Transform = Callable[[dict[str, Any]], dict[str, Any]]
StageCompiler = Callable[[Any, Context, str], Transform]


def _unknown_stage(name: str) -> CommandError:
    return location(40324, f"Unrecognized pipeline stage name: '{name}'")


STAGES: Registry[StageCompiler] = Registry("update pipeline stage", _unknown_stage)

# MongoDB's other stages: known, but not allowed within an update.
NOT_IN_UPDATES = frozenset(
    {
        "$bucket",
        "$bucketAuto",
        "$changeStream",
        "$changeStreamSplitLargeEvent",
        "$collStats",
        "$count",
        "$currentOp",
        "$densify",
        "$documents",
        "$facet",
        "$fill",
        "$geoNear",
        "$graphLookup",
        "$group",
        "$indexStats",
        "$limit",
        "$listLocalSessions",
        "$listSampledQueries",
        "$listSearchIndexes",
        "$listSessions",
        "$lookup",
        "$match",
        "$merge",
        "$out",
        "$planCacheStats",
        "$querySettings",
        "$rankFusion",
        "$queryStats",
        "$redact",
        "$sample",
        "$scoreFusion",
        "$search",
        "$searchMeta",
        "$setWindowFields",
        "$shardedDataDistribution",
        "$skip",
        "$sort",
        "$sortByCount",
        "$unionWith",
        "$unwind",
        "$vectorSearch",
    }
)


def compile_pipeline(stages: list[Any], ctx: Context) -> Transform:
    transforms = []
    for stage in stages:
        if not isinstance(stage, Mapping):
            raise CommandError(ErrorCode.TypeMismatch, "Each element of the 'pipeline' array must be an object")
        if len(stage) != 1:
            raise location(40323, "A pipeline stage specification object must contain exactly one field.")
        name, spec = next(iter(stage.items()))
        if name in NOT_IN_UPDATES:
            raise CommandError(ErrorCode.InvalidOptions, f"{name} is not allowed to be used within an update")
        transforms.append(STAGES.get(name)(spec, ctx, name))

    def run(doc: dict[str, Any]) -> dict[str, Any]:
        for transform in transforms:
            doc = transform(doc)
        return doc

    return run


# -- $addFields / $set ---------------------------------------------------------------


@STAGES.register("$addFields", "$set")
def stage_addFields(spec: Any, ctx: Context, name: str) -> Transform:
    tree = compile_add_fields(name, spec, Scope(frozenset(ctx.variables), ctx.collator))
    let, now = ctx.variables, ctx.now
    return lambda doc: apply_tree(doc, tree, doc, root_variables(doc, let, now))


# -- $project / $unset ---------------------------------------------------------------


@STAGES.register("$project")
def stage_project(spec: Any, ctx: Context, name: str) -> Transform:
    return compile_projection(spec, ctx, find=False).apply


@STAGES.register("$unset")
def stage_unset(spec: Any, ctx: Context, name: str) -> Transform:
    return compile_projection(dict.fromkeys(unset_fields(spec), 0), ctx, find=False).apply


# -- $replaceRoot / $replaceWith -----------------------------------------------------


def _replace(spec: Any, ctx: Context, what: str) -> Transform:
    """``what`` leads MongoDB's message (which has two spaces after it here)."""
    expr = compile_expression(spec, Scope(frozenset(ctx.variables), ctx.collator))
    let, now = ctx.variables, ctx.now
    return lambda doc: replacement(expr(doc, root_variables(doc, let, now)), doc, what)


@STAGES.register("$replaceRoot")
def stage_replaceRoot(spec: Any, ctx: Context, name: str) -> Transform:
    return _replace(new_root_spec(spec), ctx, "'newRoot' expression ")


@STAGES.register("$replaceWith")
def stage_replaceWith(spec: Any, ctx: Context, name: str) -> Transform:
    return _replace(spec, ctx, "'replacement document' ")
