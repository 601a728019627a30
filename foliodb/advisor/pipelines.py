"""Aggregation pipelines of the workload, read like finds: the joins they
make (``$lookup``) and which fields of the joined documents the later
stages use, and the computations they repeat (``$group``, ``$count``,
``$bucket``...).

A later stage uses a field ``f`` of a ``$lookup``'s ``as`` array when it
names ``$as.f`` (an expression), ``as.f`` (a projection or sort key) or
unwinds ``$as`` and then uses ``as.f``; naming ``$as`` whole (or
projecting ``as: 1``) uses every field (``None``).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.advisor.workload import Operation

COMPUTING = ("$group", "$count", "$sortByCount", "$bucket", "$bucketAuto", "$facet", "$setWindowFields")
WRITING = ("$out", "$merge")


@dataclass
class Lookup:
    collection: str  # the collection aggregated
    target: str  # ``from``
    local: str | None  # localField (None for a pipeline-only $lookup)
    foreign: str | None
    into: str  # ``as``
    position: int  # the stage's index
    fields: set[str] | None  # fields of the joined documents later stages use; None: all of them


def lookups(op: Operation) -> list[Lookup]:
    found = []
    for position, stage in enumerate(op.pipeline):
        spec = stage.get("$lookup")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("from"), str):
            continue
        into = str(spec.get("as", ""))
        local, foreign = spec.get("localField"), spec.get("foreignField")
        found.append(
            Lookup(
                op.collection,
                spec["from"],
                str(local) if isinstance(local, str) else None,
                str(foreign) if isinstance(foreign, str) else None,
                into,
                position,
                used_fields(op.pipeline[position + 1 :], into),
            )
        )
    return found


def used_fields(stages: list[dict[str, Any]], into: str) -> set[str] | None:
    """The fields of ``into``'s documents that ``stages`` use (None: the whole documents)."""
    used: set[str] = set()
    for stage in stages:
        for key, value in _walk(stage):
            for text in (key, value):
                if not isinstance(text, str):
                    continue
                name = text[1:] if text.startswith("$") and not text.startswith("$$") else text
                if name.startswith(into + "."):
                    used.add(name[len(into) + 1 :].split(".")[0])
                elif text == f"${into}" and not ("$unwind" in stage and _unwinds(stage["$unwind"], into)):
                    return None
            if key == into and value in (1, True) and _projects(stage):
                return None
    return used


def _projects(stage: Mapping[str, Any]) -> bool:
    return any(name in stage for name in ("$project", "$addFields", "$set"))


def _unwinds(spec: Any, into: str) -> bool:
    path = spec.get("path") if isinstance(spec, Mapping) else spec
    return path == f"${into}"


def _walk(value: Any) -> Iterator[tuple[Any, Any]]:
    """(key, value) pairs of every mapping inside ``value``; a list's items as (None, item)."""
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield key, child
            yield from _walk(child)
    elif isinstance(value, list):
        for child in value:
            yield None, child
            yield from _walk(child)


def computes(op: Operation) -> list[str]:
    """The computing stages of an aggregate (``$group``, ``$count``...), in order; a count is one."""
    if op.kind == "count":
        return ["$count"]
    return [name for stage in op.pipeline for name in stage if name in COMPUTING]


def writes(op: Operation) -> bool:
    """Whether the pipeline writes its result ($out, $merge): a job, not a read."""
    return any(name in stage for stage in op.pipeline for name in WRITING)


def grouped_by(op: Operation) -> Any:
    """The ``_id`` of the first ``$group`` (what each result is computed for), or None."""
    for stage in op.pipeline:
        spec = stage.get("$group")
        if isinstance(spec, Mapping):
            return spec.get("_id")
    return None
