"""Aggregation pipelines of the workload, read like finds: the joins they
make (``$lookup``) and which fields of the joined documents the later
stages use, and the computations they repeat (``$group``, ``$count``,
``$bucket``...).

A later stage uses a field ``f`` of a ``$lookup``'s ``as`` array when it
names ``$as.f`` (an expression), ``as.f`` (a projection or sort key) or
unwinds ``$as`` and then uses ``as.f``; naming ``$as`` whole (or
projecting ``as: 1``) uses every field (``None``). A ``$lookup`` with
``let`` and a ``pipeline`` whose first stage matches ``{$expr: {$eq:
["$foreign", "$$var"]}}`` joins like ``localField``/``foreignField``, and
its inner ``$project`` names the fields it brings.

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
        used = used_fields(op.pipeline[position + 1 :], into)
        inner = spec.get("pipeline")
        if not isinstance(local, str) and isinstance(inner, list):
            local, foreign = _correlated(spec.get("let"), inner)
            shown = _projected(inner)
            if shown is not None:
                used = shown if used is None else used & shown
        found.append(
            Lookup(
                op.collection,
                spec["from"],
                str(local) if isinstance(local, str) else None,
                str(foreign) if isinstance(foreign, str) else None,
                into,
                position,
                used,
            )
        )
    return found


def _correlated(let: Any, inner: list[Any]) -> tuple[str | None, str | None]:
    """(local, foreign) of a ``$lookup`` by ``let`` and a first ``$match: {$expr: {$eq: ["$f", "$$v"]}}``."""
    head = inner[0].get("$match") if inner and isinstance(inner[0], Mapping) else None
    test = head.get("$expr") if isinstance(head, Mapping) else None
    pair = test.get("$eq") if isinstance(test, Mapping) else None
    if not isinstance(let, Mapping) or not isinstance(pair, list) or len(pair) != 2:
        return None, None
    names = [p for p in pair if isinstance(p, str)]
    fields = [p[1:] for p in names if p.startswith("$") and not p.startswith("$$")]
    variables = [p[2:] for p in names if p.startswith("$$")]
    local = let.get(variables[0]) if variables else None
    if len(fields) == 1 and isinstance(local, str) and local.startswith("$") and not local.startswith("$$"):
        return local[1:], fields[0]
    return None, None


def _projected(inner: list[Any]) -> set[str] | None:
    """The fields an inner pipeline's inclusion ``$project`` keeps (None: no such projection)."""
    for stage in inner:
        spec = stage.get("$project") if isinstance(stage, Mapping) else None
        if isinstance(spec, Mapping):
            kept = {str(k).split(".")[0] for k, v in spec.items() if k != "_id" and v not in (0, False)}
            return kept or None
    return None


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
