"""Update pipelines: the aggregation stages an update may run.

Manual: https://www.mongodb.com/docs/manual/tutorial/update-with-aggregation-pipeline/

``$addFields``/``$set``, ``$project``/``$unset`` and ``$replaceRoot``/
``$replaceWith``, each compiled once into a function of one document. Every
stage's expressions see that stage's input as ``$$ROOT`` and ``$$CURRENT``,
the command's ``let`` variables and ``$$NOW``. Other MongoDB stages are
InvalidOptions (72) here; unknown names are 40324. No stage modifies its
input document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import type_name
from foliodb.query.context import Context
from foliodb.query.expr import Expr, Scope, compile_expression, root_variables
from foliodb.query.paths import MISSING
from foliodb.query.projection import compile_projection
from foliodb.query.registry import Registry
from foliodb.query.render import render, render_document

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
        "$queryStats",
        "$redact",
        "$sample",
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

FieldTree = dict[str, Union[Expr, "FieldTree"]]


def _field_tree(spec: Mapping[str, Any], scope: Scope, tree: FieldTree, prefix: str) -> None:
    for key, value in spec.items():
        if not key:
            raise location(40352, "FieldPath cannot be constructed with empty string")
        if key.startswith("$"):
            raise location(
                16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."
            )
        parts = key.split(".")
        if "" in parts:
            raise location(15998, "FieldPath field names may not be empty strings.")
        full = prefix + key
        node: Any = tree
        for i, part in enumerate(parts[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise _collision(prefix + ".".join(parts[: i + 1]), full)
        last = parts[-1]
        if isinstance(value, Mapping) and not (value and next(iter(value)).startswith("$")):
            if not value:
                raise location(40180, f"an empty object is not a valid value. Found empty object at path {full}")
            child = node.setdefault(last, {})
            if not isinstance(child, dict):
                raise _collision(full, full)
            _field_tree(value, scope, child, full + ".")
        else:
            if last in node:
                raise _collision(full, full)
            node[last] = compile_expression(value, scope)


def _collision(first: str, second: str) -> CommandError:
    return location(
        40176, f"specification contains two conflicting paths. Cannot specify both '{first}' and '{second}'"
    )


def _set_fields(doc: dict[str, Any], tree: FieldTree, root: Any, vars: dict[str, Any]) -> dict[str, Any]:
    """MongoDB's computed-field rules: a missing value removes the field; a
    nested path enters documents and every array element (a non-document
    becomes a document of the computed fields); existing fields keep their
    place, new ones are appended."""
    out = dict(doc)
    for name, node in tree.items():
        if isinstance(node, dict):
            value = _set_into(out.get(name, MISSING), node, root, vars)
        else:
            value = node(root, vars)
        if value is MISSING:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _set_into(value: Any, tree: FieldTree, root: Any, vars: dict[str, Any]) -> Any:
    if value.__class__ is dict:
        return _set_fields(value, tree, root, vars)
    if value.__class__ is list:
        return [_set_into(v, tree, root, vars) for v in value]
    return _set_fields({}, tree, root, vars)


@STAGES.register("$addFields", "$set")
def stage_addFields(spec: Any, ctx: Context, name: str) -> Transform:
    if not isinstance(spec, Mapping):
        raise location(40272, f"{name} specification stage must be an object, got {type_name(spec)}")
    tree: FieldTree = {}
    try:
        _field_tree(spec, Scope(frozenset(ctx.variables)), tree, "")
    except CommandError as error:
        raise CommandError(error.code, f"Invalid {name} :: caused by :: {error.errmsg}") from None
    let, now = ctx.variables, ctx.now
    return lambda doc: _set_fields(doc, tree, doc, root_variables(doc, let, now))


# -- $project / $unset ---------------------------------------------------------------


@STAGES.register("$project")
def stage_project(spec: Any, ctx: Context, name: str) -> Transform:
    return compile_projection(spec, ctx, find=False).apply


@STAGES.register("$unset")
def stage_unset(spec: Any, ctx: Context, name: str) -> Transform:
    fields = [spec] if isinstance(spec, str) else spec
    if not isinstance(fields, list):
        raise location(31002, "$unset specification must be a string or an array")
    if not fields:
        raise location(31119, "$unset specification must be a string or an array with at least one field")
    if not all(isinstance(f, str) for f in fields):
        raise location(31120, "$unset specification must be a string or an array containing only string values")
    return compile_projection(dict.fromkeys(fields, 0), ctx, find=False).apply


# -- $replaceRoot / $replaceWith -----------------------------------------------------


def _replacement(expr: Expr, ctx: Context, what: str) -> Transform:
    """``what`` leads MongoDB's message (which has two spaces after it)."""
    let, now = ctx.variables, ctx.now

    def replace(doc: dict[str, Any]) -> dict[str, Any]:
        value = expr(doc, root_variables(doc, let, now))
        if value.__class__ is dict:
            return value
        shown = "MISSING" if value is MISSING else render(value)
        kind = "missing" if value is MISSING else type_name(value)
        raise location(
            40228,
            f"{what} must evaluate to an object, but resulting value was: {shown}. Type of resulting value: "
            f"'{kind}'. Input document: {render_document(doc)}",
        )

    return replace


@STAGES.register("$replaceRoot")
def stage_replaceRoot(spec: Any, ctx: Context, name: str) -> Transform:
    if not isinstance(spec, Mapping):
        raise location(40229, f"expected an object as specification for $replaceRoot stage, got {type_name(spec)}")
    for key in spec:
        if key != "newRoot":
            raise location(40415, f"BSON field '$replaceRoot.{key}' is an unknown field.")
    if "newRoot" not in spec:
        raise location(40414, "BSON field '$replaceRoot.newRoot' is missing but a required field")
    expr = compile_expression(spec["newRoot"], Scope(frozenset(ctx.variables)))
    return _replacement(expr, ctx, "'newRoot' expression ")


@STAGES.register("$replaceWith")
def stage_replaceWith(spec: Any, ctx: Context, name: str) -> Transform:
    expr = compile_expression(spec, Scope(frozenset(ctx.variables)))
    return _replacement(expr, ctx, "'replacement document' ")
