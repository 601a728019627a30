"""The explain command: how a find, aggregate, count, distinct, update,
delete or findAndModify would run (and, with executionStats, how it ran).

Manual: https://www.mongodb.com/docs/manual/reference/command/explain/
Writes are planned but never executed by explain, as in MongoDB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import compile_pipeline
from foliodb.commands import params
from foliodb.commands.aggregate import EngineEnv
from foliodb.commands.diagnostics import MONGODB_VERSION
from foliodb.commands.executor import Request
from foliodb.commands.find import count_execution, distinct_execution, execution, find_spec
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import collection_name
from foliodb.engine.query import FindSpec, explain_count, explain_distinct, explain_find
from foliodb.errors import CommandError, ErrorCode

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")


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
    elif command == "count":
        name = collection_name(inner, "count")
        out = explain_count(count_execution(request, name, inner), f"{request.db}.{name}", verbosity)
        return _finish(out, inner)
    elif command == "distinct":
        name = collection_name(inner, "distinct")
        distinct = distinct_execution(request, name, inner)
        if distinct.scan is not None:
            return _finish(explain_distinct(distinct, f"{request.db}.{name}", verbosity), inner)
        spec = FindSpec(filter=params.field(inner, "query", "object", "distinct"), hint=inner.get("hint"))
    elif command in ("update", "delete"):
        name = collection_name(inner, command)
        statements = inner.get("updates" if command == "update" else "deletes") or [{}]
        first = statements[0]
        spec = FindSpec(filter=first.get("q"), hint=first.get("hint"))
    elif command in ("findAndModify", "findandmodify"):
        name = collection_name(inner, command)
        spec = FindSpec(filter=inner.get("query"), sort=inner.get("sort"), limit=1, hint=inner.get("hint"))
    elif command == "aggregate":
        return _explain_aggregate(request, inner, verbosity)
    else:
        raise CommandError(ErrorCode.CommandNotFound, f"Explain failed due to unknown command: {command}")
    run = execution(request, name, spec, let)
    if command in ("update", "delete", "findAndModify", "findandmodify"):
        out = explain_find(run, f"{request.db}.{name}", "queryPlanner")
        stage = {"update": "UPDATE", "delete": "DELETE"}.get(command, "UPDATE" if inner.get("update") else "DELETE")
        out["queryPlanner"]["winningPlan"] = {"stage": stage, "inputStage": out["queryPlanner"]["winningPlan"]}
    else:
        out = explain_find(run, f"{request.db}.{name}", verbosity)
    return _finish(out, inner)


def _finish(out: dict[str, Any], inner: Mapping[str, Any]) -> dict[str, Any]:
    out["command"] = dict(inner)
    out["serverInfo"] = _server_info()
    out["ok"] = 1.0
    return out


def _explain_aggregate(request: Request, inner: Mapping[str, Any], verbosity: str) -> dict[str, Any]:
    name = collection_name(inner, "aggregate")
    stages = params.field(inner, "pipeline", "array", "aggregate") or []
    let = params.field(inner, "let", "object", "aggregate")
    env = EngineEnv(request, request.context(let), True, name)
    pipeline = compile_pipeline(list(stages), env)
    filter_spec, sort, limit = pipeline.pushdown()
    spec = FindSpec(filter=filter_spec, sort=sort, limit=limit, hint=inner.get("hint"))
    run = execution(request, name, spec, let)
    cursor = explain_find(run, f"{request.db}.{name}", verbosity)
    pushed = int(filter_spec is not None) + int(sort is not None or limit is not None)
    rest = pipeline.explain()[pushed:]
    out: dict[str, Any] = {"explainVersion": "1"}
    if not rest:
        out.update(cursor)
    else:
        out["stages"] = [{"$cursor": cursor}, *rest]
    out["command"] = dict(inner)
    out["serverInfo"] = _server_info()
    out["ok"] = 1.0
    return out
