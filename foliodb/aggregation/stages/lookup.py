"""Stages that read other collections: $lookup $graphLookup $unionWith.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/unionWith/

Every read goes through ``env.aggregate``, so the foreign collection's
indexes serve it: the equality of ``localField``/``foreignField`` becomes a
leading ``$match`` on ``foreignField`` (``$eq`` for one local value, ``$in``
for several, an ``$or`` of ``$eq`` when a value is a regex, as MongoDB does),
followed by the ``pipeline`` when one is given. The local values are every
value ``localField`` reaches, arrays expanded; none is null. Sub-pipelines
are compiled here once to check them; a ``$lookup`` whose foreign side does
not depend on the input document (no ``localField``, no ``let``) is read
once and reused. ``$graphLookup``'s visited documents and next frontier
stay under ``LIMITS.graph_lookup_bytes`` (40099 past it, as mongod 8, which
does not spill this stage).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Int64

from foliodb import interrupt
from foliodb.aggregation.pipeline import (
    LIMITS,
    STAGES,
    Docs,
    ScopedEnv,
    Stage,
    Where,
    approx_size,
    compile_stages,
    stage_entry,
)
from foliodb.aggregation.stages.hash_join import HashJoin
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import keystring, metadata
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.compare import REGEX, bracket
from foliodb.query.expr import Expr
from foliodb.query.expr.core import check_variable_name
from foliodb.query.idl import unknown_field
from foliodb.query.paths import MISSING, leaf_values
from foliodb.query.render import render, render_document
from foliodb.query.reshape import set_path, split_path

MAX_SUB_PIPELINE_DEPTH = 20  # mongod's internalMaxSubPipelineViewDepth


def _failed(message: str) -> CommandError:
    return CommandError(ErrorCode.FailedToParse, message)


def _namespace(value: Any) -> tuple[str | None, str]:
    """``from``/``coll``: a collection name, or ``{db, coll}``."""
    if is_string(value):
        return None, value
    if isinstance(value, Mapping) and isinstance(value.get("coll"), str) and isinstance(value.get("db"), str):
        return value["db"], value["coll"]
    raise _failed(f"$lookup 'from' field must be a string or an object with 'db' and 'coll', but found {render(value)}")


def sub_pipeline(
    spec: Any,
    where: Where,
    parent: str,
    let_names: tuple[str, ...] = (),
    source: tuple[str | None, str | None] = (None, None),
) -> list[Any]:
    """Check a sub-pipeline (compiling it once, after the pipelines of the views ``source`` (db,
    collection) resolves through) and return it as given. Sub-pipelines nest at most
    MAX_SUB_PIPELINE_DEPTH deep (mongod's internalMaxSubPipelineViewDepth: MaxSubPipelineDepthExceeded)."""
    if not isinstance(spec, list):
        raise _failed("'pipeline' option must be specified as an array")
    depth = where.depth + 1
    if depth > MAX_SUB_PIPELINE_DEPTH:
        raise CommandError(
            ErrorCode.MaxSubPipelineDepthExceeded,
            f"Maximum number of nested sub-pipelines exceeded. Limit is {MAX_SUB_PIPELINE_DEPTH}",
        )
    db, coll = source
    views = where.env.view_pipeline(coll, db) if coll is not None else []
    # The let variables exist (with placeholder values) so that filters'
    # $expr, which read variable names from the context, accept them too.
    env = ScopedEnv(where.env, dict.fromkeys(let_names)) if let_names else where.env
    reads = (db, coll) if coll is not None else None
    inner = Where(env, where.scope.with_vars(*let_names), parent=parent, depth=depth, source=reads)
    compile_stages(views + spec, inner)
    return spec


def _starts_with_documents(pipeline: list[Any]) -> bool:
    return bool(pipeline) and stage_entry(pipeline[0])[0] == "$documents"


def local_values(doc: Any, parts: tuple[str, ...]) -> list[Any]:
    values = [v for v in leaf_values(doc, parts) if v is not MISSING]
    return values or [None]


def equality_match(field: str, values: list[Any]) -> dict[str, Any]:
    if len(values) == 1:
        return {field: {"$eq": values[0]}}
    if any(bracket(v) == REGEX for v in values):
        return {"$or": [{field: {"$eq": v}} for v in values]}
    return {field: {"$in": values}}


def _let(spec: Any, where: Where) -> list[tuple[str, Expr]]:
    if not isinstance(spec, Mapping):
        raise _failed(f"$lookup argument 'let: {render(spec)}' must be an object, is type {type_name(spec)}")
    out = []
    for name, value in spec.items():
        check_variable_name(name)
        out.append((name, where.expression(value)))
    return out


@STAGES.register("$lookup")
def stage_lookup(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise _failed("the $lookup specification must be an Object")
    db: str | None = None
    coll: str | None = None
    strings: dict[str, str] = {}
    lets: list[tuple[str, Expr]] = []
    has_let = False
    pipeline: list[Any] | None = None
    pipeline_spec: Any = MISSING
    for key, value in spec.items():
        if key == "pipeline":
            pipeline_spec = value
        elif key == "let":
            lets = _let(value, where)
            has_let = True
        elif key == "from":
            db, coll = _namespace(value)
        elif not is_string(value):
            raise _failed(f"$lookup argument '{key}: {render(value)}' must be a string, found {type_name(value)}")
        elif key in ("as", "localField", "foreignField"):
            strings[key] = value
        else:
            raise _failed(f"unknown argument to $lookup: {key}")
    if pipeline_spec is not MISSING:
        pipeline = sub_pipeline(pipeline_spec, where, "$lookup", tuple(name for name, _ in lets), (db, coll))
    if coll is None and not (pipeline is not None and _starts_with_documents(pipeline)):
        raise _failed("$lookup stage without explicit collection must have a pipeline with $documents as first stage")
    as_field = strings.get("as", "")
    if not as_field:
        raise _failed("must specify 'as' field for a $lookup")
    local, foreign = strings.get("localField", ""), strings.get("foreignField", "")
    if pipeline is None:
        if not (local and foreign):
            raise _failed("$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
        if has_let:
            raise _failed("$lookup with a 'let' argument must also specify 'pipeline'")
    elif bool(local) != bool(foreign):
        raise _failed("$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
    as_parts = split_path(as_field)
    local_parts = split_path(local) if local else None
    if foreign:
        split_path(foreign)
    env = where.env
    vars_for = where.variables()
    rest = pipeline or []

    joined_on = _expr_equalities(rest, {name for name, _ in lets})

    def foreign_docs(doc: dict[str, Any]) -> list[dict[str, Any]]:
        stages = rest
        if local_parts is not None:
            stages = [{"$match": equality_match(foreign, local_values(doc, local_parts))}, *rest]
        variables = None
        if lets:
            vars = vars_for(doc)
            variables = {}
            for name, fn in lets:
                value = fn(doc, vars)
                variables[name] = None if value is MISSING else value
            if joined_on:
                # The pipeline's own $match still decides; this one lets an index find its candidates.
                narrowing = {field: {"$eq": variables[name]} for field, name in joined_on}
                stages = [{"$match": narrowing}, *stages]
        found = (
            _collectionless(stages, where, variables) if coll is None else env.aggregate(coll, stages, db, variables)
        )
        # The sub-pipeline's metadata (its own $text score) stays with it: the joined documents carry none.
        return [metadata.strip(hit) for hit in found]

    correlated = local_parts is not None or bool(lets)

    def run(docs: Docs) -> Docs:
        cache: list[dict[str, Any]] | None = None
        # A plain localField/foreignField join reads the foreign side once where no index serves it.
        join = HashJoin(env, coll, db, split_path(foreign)) if pipeline is None and coll is not None else None
        for n, doc in enumerate(docs):
            if not n & 63:
                interrupt.check()
            if join is not None:
                assert local_parts is not None
                joined = join.matches(local_values(doc, local_parts))
                found = foreign_docs(doc) if joined is None else joined
            elif correlated:
                found = foreign_docs(doc)
            else:
                if cache is None:
                    cache = foreign_docs(doc)
                found = [dict(d) for d in cache]
            yield set_path(doc, as_parts, found)

    return Stage("$lookup", spec, run, keeps=lambda f: f != as_parts[0])


def _expr_equalities(pipeline: list[Any], let_names: set[str]) -> list[tuple[str, str]]:
    """(field, let variable) of each ``{$eq: ["$field", "$$variable"]}`` (either way round, alone
    or in an ``$and``) in the ``$expr`` of a pipeline's leading ``$match``: the correlated join of
    a ``let``/``pipeline`` ``$lookup``, which mongod answers from an index on the field. Each
    gives the query ``{field: {$eq: value}}``, which matches every document the expression does
    (and more: a null also matches a missing field, a value also an array holding it), so it
    only narrows. Top-level fields only: ``"$a.b"`` through an array of documents is the array
    of their ``b``s to an expression, but each ``b`` alone to a query."""
    if not pipeline or not isinstance(pipeline[0], Mapping) or list(pipeline[0]) != ["$match"]:
        return []
    match = pipeline[0]["$match"]
    expr = match.get("$expr") if isinstance(match, Mapping) else None
    if not isinstance(expr, Mapping) or len(expr) != 1:
        return []
    ((op, arg),) = expr.items()
    terms = arg if op == "$and" and isinstance(arg, list) else [expr]
    pairs = []
    for term in terms:
        if not (isinstance(term, Mapping) and list(term) == ["$eq"]):
            continue
        sides = term["$eq"]
        if not (isinstance(sides, list) and len(sides) == 2 and all(isinstance(side, str) for side in sides)):
            continue
        for field, variable in (sides, sides[::-1]):
            name = field[1:]
            if (
                field.startswith("$")
                and not field.startswith("$$")
                and name
                and "." not in name
                and variable.startswith("$$")
                and variable[2:] in let_names
            ):
                pairs.append((name, variable[2:]))
                break
    return pairs


def _collectionless(stages: list[Any], where: Where, variables: Mapping[str, Any] | None) -> Docs:
    """Run a pipeline that starts with $documents, in this process."""
    from foliodb.aggregation.pipeline import Pipeline

    scope = where.scope.with_vars(*(variables or {}))
    compiled = compile_stages(stages, Where(ScopedEnv(where.env, variables or {}), scope))
    return Pipeline(compiled).run(iter(()))


# ---------------------------------------------------------------------------


@STAGES.register("$graphLookup")
def stage_graphLookup(spec: Any, where: Where) -> Stage:
    # mongod's LiteParsed::parse checks these first (FailedToParse), before the stage's own parse.
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.FailedToParse,
            f"the $graphLookup stage specification must be an object, but found {type_name(spec)}",
        )
    if "from" not in spec:
        raise CommandError(
            ErrorCode.FailedToParse,
            f"missing 'from' option to $graphLookup stage specification: {render_document(dict(spec))}",
        )
    if not is_string(spec["from"]) and not isinstance(spec["from"], Mapping):
        raise CommandError(
            ErrorCode.FailedToParse,
            f"'from' option to $graphLookup must be a string, but was type {type_name(spec['from'])}",
        )
    strings: dict[str, str] = {}
    db: str | None = None
    start_with: Expr | None = None
    max_depth: int | None = None
    restrict: Mapping[str, Any] | None = None
    for key, value in spec.items():
        if key == "startWith":
            start_with = where.expression(value)
        elif key == "maxDepth":
            if not isinstance(value, (int, float, Int64)) or isinstance(value, bool):
                raise location(40100, f"maxDepth must be numeric, found type: {type_name(value)}")
            if value < 0:
                raise location(40101, f"maxDepth requires a nonnegative argument, found: {render(value)}")
            if value != int(value):
                raise location(40102, f"maxDepth could not be represented as a long long: {render(value)}")
            max_depth = int(value)
        elif key == "restrictSearchWithMatch":
            if not isinstance(value, Mapping):
                raise location(40185, f"restrictSearchWithMatch must be an object, found {type_name(value)}")
            STAGES.get("$match")(value, where)  # checks the filter
            restrict = value
        elif key in ("from", "as", "connectFromField", "connectToField", "depthField"):
            if key == "from" and isinstance(value, Mapping):
                db, strings[key] = _namespace(value)
                continue
            if not is_string(value):
                raise location(40103, f"expected string as argument for {key}, found: {render(value)}")
            strings[key] = value
        else:
            raise location(40104, f"Unknown argument to $graphLookup: {key}")
    required = ("as", "connectFromField", "connectToField")
    if start_with is None or "from" not in strings or any(not strings.get(k) for k in required):
        raise location(
            40105, "missing required argument to $graphLookup: from, as, startWith, connectFromField, connectToField"
        )
    if not strings["from"]:
        # mongod builds '<db>.' from an empty 'from', which passes the missing-argument check and then
        # fails NamespaceString::isValid.
        raise CommandError(ErrorCode.InvalidNamespace, f"invalid $graphLookup namespace: {db or where.env.db}.")
    assert start_with is not None
    coll = strings["from"]
    as_parts = split_path(strings["as"])
    from_parts = split_path(strings["connectFromField"])
    to_field = strings["connectToField"]
    split_path(to_field)
    depth_parts = split_path(strings["depthField"]) if "depthField" in strings else None
    env = where.env
    vars_for = where.variables()
    begin = start_with

    def search(doc: dict[str, Any]) -> list[dict[str, Any]]:
        start = begin(doc, vars_for(doc))
        if start is MISSING:
            return []
        frontier = list(start) if isinstance(start, list) else [start]
        queried: set[bytes] = set()
        found: dict[bytes, dict[str, Any]] = {}
        depth = 0
        # mongod 8's checkMemoryUsage: the visited documents and the next frontier's values must
        # stay under the limit, else 40099 (it spills only from 8.1, SERVER-23980).
        visited_bytes = 0
        while frontier and (max_depth is None or depth <= max_depth):
            interrupt.check()
            frontier_bytes = 0
            values = []
            for v in frontier:
                k = keystring.encode(v)
                if k not in queried:
                    queried.add(k)
                    values.append(v)
            if not values:
                break
            match: Mapping[str, Any] = {to_field: {"$in": values}}
            if restrict:
                match = {"$and": [match, restrict]}
            frontier = []
            for hit in env.aggregate(coll, [{"$match": match}], db=db):
                key = keystring.encode(hit.get("_id"))
                if key in found:
                    continue
                if depth_parts is not None:
                    hit = set_path(hit, depth_parts, Int64(depth))
                found[key] = hit
                visited_bytes += approx_size(hit)
                for value in leaf_values(hit, from_parts):
                    if value is not MISSING:
                        frontier.append(value)
                        frontier_bytes += approx_size(value)
                if visited_bytes + frontier_bytes >= LIMITS.graph_lookup_bytes:
                    raise location(40099, "$graphLookup reached maximum memory consumption")
            depth += 1
        return list(found.values())

    def run(docs: Docs) -> Docs:
        for doc in docs:
            yield set_path(doc, as_parts, search(doc))

    return Stage("$graphLookup", spec, run, keeps=lambda f: f != as_parts[0])


# ---------------------------------------------------------------------------


@STAGES.register("$unionWith")
def stage_unionWith(spec: Any, where: Where) -> Stage:
    db: str | None = None
    coll: str | None = None
    pipeline: list[Any] = []
    if is_string(spec):
        coll = spec
    elif isinstance(spec, Mapping):
        for key, value in spec.items():
            if key == "coll":
                db, coll = _union_namespace(value)
            elif key != "pipeline":
                raise unknown_field("$unionWith", key)
        if "pipeline" in spec:
            pipeline = sub_pipeline(spec["pipeline"], where, "$unionWith", source=(db, coll))
        if coll is None and not _starts_with_documents(pipeline):
            raise _failed(
                "$unionWith stage without explicit collection must have a pipeline with $documents as first stage"
            )
    else:
        raise _failed(f"the $unionWith stage specification must be an object or string, but found {type_name(spec)}")
    env = where.env

    def others() -> Docs:
        if coll is None:
            return _collectionless(pipeline, where, None)
        return env.aggregate(coll, pipeline, db=db)

    def run(docs: Docs) -> Docs:
        yield from docs
        yield from others()

    return Stage("$unionWith", spec, run)


def _union_namespace(value: Any) -> tuple[str | None, str]:
    if is_string(value):
        return None, value
    if isinstance(value, Mapping):
        return _namespace(value)
    raise CommandError(
        ErrorCode.TypeMismatch,
        f"BSON field '$unionWith.coll' is the wrong type '{type_name(value)}', expected type 'string'",
    )
