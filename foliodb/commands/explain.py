"""The explain command: how a find, aggregate, count, distinct, update,
delete or findAndModify would run (and, with executionStats, how it ran).

Manual: https://www.mongodb.com/docs/manual/reference/command/explain/
Writes are never executed by explain, as in MongoDB: with executionStats
their targets are found and the updates worked out, and nothing is written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from foliodb.aggregation.pipeline import FIRST_ONLY, Stage, compile_pipeline
from foliodb.commands import collation, params
from foliodb.commands.aggregate import EngineEnv
from foliodb.commands.delete import delete_statement
from foliodb.commands.diagnostics import MONGODB_VERSION
from foliodb.commands.executor import Request, ScanTotals
from foliodb.commands.find import count_execution, distinct_execution, execution, find_spec
from foliodb.commands.registry import COMMANDS
from foliodb.commands.search_indexes import explain_text_search, explain_vector_search
from foliodb.commands.update import UpdateStatement
from foliodb.commands.views import find_stages, is_view
from foliodb.commands.write import Writes, collection_name, would_modify
from foliodb.engine.count import explain_count
from foliodb.engine.distinct import explain_distinct
from foliodb.engine.find_explain import explain_find
from foliodb.engine.query import FindSpec
from foliodb.engine.text import split_text
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.update import CompiledUpdate, compile_update

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
WRITES = ("update", "delete", "findAndModify", "findandmodify")


def _server_info() -> dict[str, Any]:
    return {"host": "foliodb", "port": 27017, "version": MONGODB_VERSION, "gitVersion": "foliodb"}


@COMMANDS.register("explain")
def cmd_explain(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    inner = cmd["explain"]
    if not isinstance(inner, Mapping) or not inner:
        raise CommandError(ErrorCode.FailedToParse, "explain command requires a nested object")
    verbosity = params.field(cmd, "verbosity", "string", "explain", default="allPlansExecution")
    if verbosity not in VERBOSITIES:
        raise CommandError(
            ErrorCode.BadValue,
            "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}",
        )
    command = next(iter(inner))
    let = inner.get("let") if isinstance(inner.get("let"), Mapping) else None
    if command == "find":
        name = collection_name(inner, "find")
        spec = find_spec(inner)
        if is_view(request, name):
            # A find on a view runs (and so explains) as an aggregate of its pipeline, as mongod's.
            as_aggregate = {"aggregate": name, "pipeline": find_stages(spec), "cursor": {}}
            if let is not None:
                as_aggregate["let"] = let
            return {**_explain_aggregate(request, as_aggregate, verbosity), "command": dict(inner)}
    elif command == "count":
        name = collection_name(inner, "count")
        out = explain_count(count_execution(request, name, inner), f"{request.db}.{name}", verbosity)
        return _finish(out, inner)
    elif command == "distinct":
        name = collection_name(inner, "distinct")
        distinct = distinct_execution(request, name, inner)
        if distinct.scan is not None:
            return _finish(explain_distinct(distinct, f"{request.db}.{name}", verbosity), inner)
        spec = FindSpec(
            filter=params.field(inner, "query", "object", "distinct"),
            hint=inner.get("hint"),
            collation=inner.get("collation"),
        )
    elif command in WRITES:
        return _finish(_explain_write(request, command, inner, verbosity, let), inner)
    elif command == "aggregate":
        return _explain_aggregate(request, inner, verbosity)
    else:
        raise CommandError(ErrorCode.CommandNotFound, f"Explain failed due to unknown command: {command}")
    run = execution(request, name, spec, let)
    out = explain_find(run, f"{request.db}.{name}", verbosity)
    return _finish(out, inner)


def _explain_write(
    request: Request, command: str, inner: Mapping[str, Any], verbosity: str, let: Mapping[str, Any] | None
) -> dict[str, Any]:
    """An update, delete or findAndModify: UPDATE or DELETE over the plan
    that finds its targets. With executionStats the targets are found and
    the update worked out on each (nMatched, nWouldModify, nWouldUpsert;
    nWouldDelete), and nothing is written, as in mongod."""
    name = collection_name(inner, command)
    writes = Writes(request, inner, command)
    ctx = writes.context()
    one = True
    update: CompiledUpdate | None = None
    upsert = False
    if command == "update":
        statements = params.required(inner, "updates", "array", command)
        statement = UpdateStatement.parse(statements[0] if statements else None, "update.updates", ("q", "u", "c"))
        own = statement.collation
        ctx = writes.context(statement.constants, collation.resolve(request, name, own, command))
        update = compile_update(statement.update, ctx, statement.array_filters)
        spec = FindSpec(filter=statement.filter, sort=statement.sort, hint=statement.hint, collation=own)
        one, upsert = not statement.multi, statement.upsert
    elif command == "delete":
        statements = params.required(inner, "deletes", "array", command)
        filter_spec, limit = delete_statement(statements[0] if statements else None)
        own = statements[0].get("collation")
        ctx = writes.context(None, collation.resolve(request, name, own, command))
        spec = FindSpec(filter=filter_spec, hint=statements[0].get("hint"), collation=own)
        one = limit == 1
    else:
        own = inner.get("collation")
        ctx = writes.context(None, collation.resolve(request, name, own, command))
        if not params.field(inner, "remove", "bool", command, default=False):
            spec_update = params.field(inner, "update", "objectOrArray", command)
            update = compile_update(spec_update, ctx, params.field(inner, "arrayFilters", "array", command))
            upsert = bool(params.field(inner, "upsert", "bool", command, default=False))
        spec = FindSpec(
            filter=params.field(inner, "query", "object", command),
            sort=params.field(inner, "sort", "object", command),
            hint=inner.get("hint"),
            collation=own,
        )
    stage = "UPDATE" if update is not None else "DELETE"
    run = execution(request, name, spec, let)
    executed = verbosity in ("executionStats", "allPlansExecution")
    tallies: dict[str, int] = {}
    if executed:
        matched = modified = 0
        # For the positional operator's array index ($text is the index's, not the matcher's).
        matcher = compile_filter(split_text(spec.filter)[1], run.ctx)  # run.ctx judges a $text inside $or
        for doc in run:
            matched += 1
            if update is not None and run.store is not None:
                details = MatchDetails()
                matcher(doc, details)
                modified += would_modify(run.store, update, doc, details)
            if one:
                break
        if update is None:
            tallies = {"nWouldDelete": matched}
        else:
            tallies = {"nMatched": matched, "nWouldModify": modified, "nWouldUpsert": int(upsert and not matched)}
    out = explain_find(run, f"{request.db}.{name}", verbosity, run_it=False)
    planner = out["queryPlanner"]
    planner["winningPlan"] = {"stage": stage, "inputStage": planner["winningPlan"]}
    if executed:
        stats = out["executionStats"]
        stats["nReturned"] = 0
        stats["executionStages"] = {
            "stage": stage,
            "nReturned": 0,
            "executionTimeMillisEstimate": run.stats.millis,
            **tallies,
            "inputStage": stats["executionStages"],
        }
    return out


def _finish(out: dict[str, Any], inner: Mapping[str, Any]) -> dict[str, Any]:
    out["command"] = dict(inner)
    out["serverInfo"] = _server_info()
    out["ok"] = 1.0
    return out


def _explain_aggregate(request: Request, inner: Mapping[str, Any], verbosity: str) -> dict[str, Any]:
    name = collection_name(inner, "aggregate")
    stages = params.field(inner, "pipeline", "array", "aggregate") or []
    let = params.field(inner, "let", "object", "aggregate")
    own = inner.get("collation")
    env = EngineEnv(request, request.context(let, collation.resolve(request, name, own, "aggregate")), True, name)
    # A view (a time-series collection too) explains as its pipeline over its source, as mongod's.
    source, view_pipeline = request.engine.resolve_view(request.db, name)
    pipeline = compile_pipeline(view_pipeline + list(stages), env)
    if pipeline.stages and pipeline.stages[0].search is not None:
        first = pipeline.stages[0]
        explain_search = explain_vector_search if first.name == "$vectorSearch" else explain_text_search
        explained = explain_search(request.engine, request.db, source, first.search, first.spec)
        return _finish({"explainVersion": "1", "stages": [explained, *pipeline.explain()[1:]]}, inner)
    filter_spec, sort, limit, projection = pipeline.pushdown()
    near = pipeline.geo_near()
    spec = FindSpec(
        filter=filter_spec,
        sort=sort,
        limit=limit,
        projection=projection,
        hint=inner.get("hint"),
        collation=own,
        geo_near=near,
        count_only=pipeline.needs_no_fields(),
    )
    run = execution(request, source, spec, let)
    cursor = explain_find(run, f"{request.db}.{source}", verbosity)
    pushed = int(filter_spec is not None) + int(sort is not None or limit is not None) + int(projection is not None)
    rest = pipeline.explain()[pushed:]  # $geoNear stays
    after = pipeline.stages[pushed:]
    if rest and verbosity != "queryPlanner" and not any(stage.name in _NOT_RUN for stage in after):
        rest = _executed_stages(request, after, execution(request, source, spec, let)) or rest
    out: dict[str, Any] = {"explainVersion": "1"}
    if not rest:
        # The whole pipeline ran as this find: mongod's explain says so (queryPlanner.optimizedPipeline).
        cursor["queryPlanner"]["optimizedPipeline"] = True
        out.update(cursor)
    else:
        out["stages"] = [{"$cursor": cursor}, *rest]
    out["command"] = dict(inner)
    out["serverInfo"] = _server_info()
    out["ok"] = 1.0
    return out


# Pipelines explain never runs: stages that write, and sources that read no find's documents.
_NOT_RUN = FIRST_ONLY | {"$out", "$merge", "$changeStream"}


def _executed_stages(request: Request, stages: list[Stage], found: Iterable[Any]) -> list[dict[str, Any]] | None:
    """The stages after the find, each run over the documents before it as the aggregate would
    (the find runs again for them) and explained with what it returned and its time (its inputs'
    included, as mongod estimates it); a $lookup also with the finds its joins ran, as mongod's
    executionStats report them since 5.0 (the manual's "Execution Plan Statistics for Query with
    $lookup Pipeline Stage"). None when a stage fails on these documents (as the aggregate
    would): the plan alone then."""
    runs: list[_StageRun] = []
    docs: Iterator[Any] = iter(found)
    for stage in stages:
        docs = _StageRun(request, stage, docs)
        runs.append(docs)
    try:
        for _ in docs:
            pass
    except CommandError:
        return None
    return [run.explained() for run in runs]


class _StageRun:
    """One stage's documents out, counted and timed; the finds it runs are counted apart."""

    def __init__(self, request: Request, stage: Stage, docs: Iterator[Any]) -> None:
        self.request = request
        self.stage = stage
        self.finds = ScanTotals(accesses=True)
        self.returned = 0
        self.seconds = 0.0
        self._docs = iter(stage.run(docs))

    def __iter__(self) -> _StageRun:
        return self

    def __next__(self) -> Any:
        request = self.request
        outer, request.scans = request.scans, self.finds
        started = time.perf_counter()
        try:
            doc = next(self._docs)
        finally:
            self.seconds += time.perf_counter() - started
            request.scans = outer
        self.returned += 1
        return doc

    def explained(self) -> dict[str, Any]:
        out: dict[str, Any] = {self.stage.name: self.stage.spec}
        if self.stage.name == "$lookup":
            finds = self.finds
            finds.fold(done_only=False)
            out.update(
                totalDocsExamined=finds.docs,
                totalKeysExamined=finds.keys,
                collectionScans=finds.collection_scans,
                indexesUsed=list(finds.indexes),
            )
        out.update(nReturned=self.returned, executionTimeMillisEstimate=int(self.seconds * 1000))
        return out
