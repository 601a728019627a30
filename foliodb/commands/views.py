"""Read-only views: a name that reads as its pipeline over another collection.

Manual: https://www.mongodb.com/docs/manual/core/views/

A find, count or distinct on a view runs as an aggregation on the view's
source collection: the view's pipeline (views of views unfold, innermost
first), then the find's own filter, sort, skip, limit and projection as
stages. The source's leading ``$match`` still reaches the query planner.
Writes and index builds on a view fail with CommandNotSupportedOnView (166).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.aggregation.pipeline import compile_pipeline
from foliodb.commands import collation
from foliodb.commands.aggregate import EngineEnv
from foliodb.commands.executor import Request
from foliodb.engine.query import FindSpec
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string
from foliodb.query.collation import same


def is_view(request: Request, name: str) -> bool:
    info = request.engine.catalog.get(request.db, name)
    return info is not None and info.is_view


def find_stages(spec: FindSpec) -> list[Mapping[str, Any]]:
    """A find's options as pipeline stages, in the order find applies them."""
    stages: list[Mapping[str, Any]] = []
    if spec.filter:
        stages.append({"$match": dict(spec.filter)})
    if spec.sort:
        stages.append({"$sort": dict(spec.sort)})
    if spec.skip:
        stages.append({"$skip": spec.skip})
    if spec.limit is not None:
        stages.append({"$limit": spec.limit})
    if spec.projection:
        stages.append({"$project": dict(spec.projection)})
    return stages


def view_documents(
    request: Request, name: str, spec: FindSpec, let: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    ctx = request.context(let, collation.resolve(request, name, spec.collation, "find"))
    env = EngineEnv(request, ctx, spec.allow_disk_use, name)
    return env.source(name, find_stages(spec))


def check_view_options(request: Request, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a new view, checked (its pipeline compiles, writes no stage)."""
    view_on = options.get("viewOn")
    if not is_string(view_on) or not view_on:
        raise CommandError(ErrorCode.TypeMismatch, "'viewOn' option must be a non-empty string")
    pipeline = options.get("pipeline", [])
    if not isinstance(pipeline, list):
        raise CommandError(ErrorCode.TypeMismatch, "'pipeline' option must be an array")
    for stage in pipeline:
        if isinstance(stage, Mapping) and any(key in ("$out", "$merge") for key in stage):
            raise CommandError(
                ErrorCode.OptionNotSupportedOnView, f"{next(iter(stage))} cannot be used in a view definition"
            )
    collator = collation.given(options, "create")
    compile_pipeline(
        list(pipeline), EngineEnv(request, request.context(None, collator), True, view_on, expand_views=False)
    )
    source = request.engine.catalog.get(request.db, view_on)
    if source is not None and source.is_view and not same(collator, collation.default_of(request, view_on)):
        # A view's collation is not inherited, and views on views must agree.
        raise CommandError(
            ErrorCode.OptionNotSupportedOnView,
            f"View {request.db}.{options.get('create')} has conflicting collation with view {request.db}.{view_on}",
        )
    out: dict[str, Any] = {"viewOn": view_on, "pipeline": list(pipeline)}
    if collator is not None:
        out["collation"] = dict(collator.spec)
    return out
