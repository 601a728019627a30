"""Joins made by ``$lookup`` on every read: the pipeline's join is the same
application-level join as a find followed by finds (:mod:`.joins`), run by
the server. The texts' answers are the same:

* a lookup by ``_id`` (each document references one other) that the later
  stages use at most :data:`foliodb.advisor.rules.joins.FEW_FIELDS` fields
  of, in a collection whose copies of those fields change rarely (at most
  :data:`foliodb.advisor.rules.joins.READ_MOSTLY` updates of them per
  lookup): copy the fields beside the reference (``extended-reference``),
  with what keeping them true costs (the documents holding each copy);
* a lookup of a parent's children (by a field of theirs holding the
  parent's ``_id``) that reads them whole, few and small, and never reads
  them alone: ``embed``.

A pipeline counts when it ran at least :data:`foliodb.advisor.context.MIN_RUNS`
times. The change only adds the copies (a ``$merge``); the pipeline then
drops its ``$lookup`` (the evidence shows it rewritten).

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-access-patterns/extended-reference-pattern/
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bson import json_util

from foliodb.advisor.context import MIN_RUNS, Context
from foliodb.advisor.measure import per_value
from foliodb.advisor.pipelines import Lookup, lookups
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.rules.joins import FEW, FEW_FIELDS, READ_MOSTLY, SMALL_CHILD, sets_any
from foliodb.advisor.shell import call, count


@dataclass
class _Seen:
    lookup: Lookup
    runs: int = 0
    millis: int = 0
    fields: set[str] | None = field(default_factory=set)
    example: list[dict[str, Any]] = field(default_factory=list)


def rule_lookup_on_read(ctx: Context) -> Iterator[Finding]:
    seen: dict[tuple[Any, ...], _Seen] = {}
    for op in ctx.workload.operations:
        for lookup in lookups(op):
            if lookup.local is None or lookup.foreign is None or lookup.target not in ctx.profiles:
                continue
            key = (lookup.collection, lookup.target, lookup.local, lookup.foreign)
            entry = seen.setdefault(key, _Seen(lookup, example=op.pipeline))
            entry.runs += 1
            entry.millis += op.millis
            if entry.fields is not None:
                entry.fields = None if lookup.fields is None else entry.fields | lookup.fields
    for entry in seen.values():
        if entry.runs < MIN_RUNS:
            continue
        lookup = entry.lookup
        if lookup.foreign == "_id" and entry.fields and len(entry.fields) <= FEW_FIELDS:
            finding = _extended_reference(ctx, entry)
        elif lookup.local == "_id" and entry.fields is None:
            finding = _embed(ctx, entry)
        else:
            finding = None
        if finding is not None:
            yield finding


def _evidence(entry: _Seen) -> dict[str, Any]:
    return {
        "runs": entry.runs,
        "total_millis": entry.millis,
        "lookup": {"from": entry.lookup.target, "localField": entry.lookup.local, "foreignField": entry.lookup.foreign},
        "pipeline": entry.example,
    }


def _extended_reference(ctx: Context, entry: _Seen) -> Finding | None:
    lookup = entry.lookup
    assert lookup.local is not None and entry.fields
    fields = sorted(entry.fields)
    changes = [op for op in ctx.updates(lookup.target) if sets_any(op.update, fields)]
    if len(changes) > READ_MOSTLY * entry.runs:
        return None
    local = lookup.local
    prefix, _, leaf = local.rpartition(".")
    stem = leaf[: -len("_id")] if leaf.endswith("_id") else leaf[: -len("Id")] if leaf.endswith("Id") else leaf
    base = f"{prefix}." if prefix else ""
    copies = {f: f"{base}{stem}_{f}" for f in fields}
    fan = per_value(ctx, lookup.collection, local)
    evidence = _evidence(entry) | {
        "fields_read": fields,
        "copies": copies,
        "source_changes_recorded": len(changes),
        "changes_per_1000_reads": round(1000 * len(changes) / entry.runs, 1),
        "copies_per_source_avg": fan.avg,
        "copies_per_source_max": fan.max,
        "fan_out_exact": fan.exact,
        "pipeline_after": _without_lookup(entry.example, lookup, copies),
    }
    first_copy = next(iter(copies.values()))
    return Finding(
        collection=lookup.collection,
        path=local,
        problem="join-on-read",
        recommendation="extended-reference",
        severity="medium",
        summary=(
            f"{count(entry.runs)} aggregations of {lookup.collection} $lookup {lookup.target} by {local} for "
            f"{', '.join(fields)} ({count(entry.millis)} ms in all); {lookup.target} changed those fields "
            f"{len(changes)} times in the same window."
        ),
        evidence=evidence,
        change=Change(
            f"Copy {', '.join(fields)} from {lookup.target} beside {local} ({', '.join(copies.values())}) and drop "
            f"the $lookup from the pipeline; when one changes, update the copies (on average {fan.avg:g} "
            f"{lookup.collection} documents, at most {fan.max}).",
            [
                call(
                    lookup.collection,
                    "aggregate",
                    [
                        {"$lookup": {"from": lookup.target, "localField": local, "foreignField": "_id", "as": "_src"}},
                        {"$set": {c: {"$first": f"$_src.{f}"} for f, c in copies.items()}},
                        {"$unset": "_src"},
                        {"$merge": {"into": lookup.collection, "whenMatched": "merge", "whenNotMatched": "discard"}},
                    ],
                ),
                call(lookup.collection, "updateMany", {local: "<id>"}, {"$set": {first_copy: "<new value>"}}),
            ],
            {local: "<id>", **{c: "..." for c in copies.values()}},
        ),
        effect=(
            f"The pipeline reads {lookup.collection} alone: {count(entry.runs)} joins fewer in the window; each "
            f"change of {', '.join(fields)} costs an updateMany of about {fan.avg:g} documents."
        ),
    )


def _without_lookup(pipeline: list[dict[str, Any]], lookup: Lookup, copies: dict[str, str]) -> list[dict[str, Any]]:
    """The pipeline as it reads with the copies: the $lookup and its $unwind gone, ``as.f`` read as the copy."""
    kept = [
        stage
        for n, stage in enumerate(pipeline)
        if n != lookup.position and stage.get("$unwind") not in (f"${lookup.into}", {"path": f"${lookup.into}"})
    ]
    text = json_util.dumps(kept)
    for name, copy in copies.items():
        text = text.replace(f'"${lookup.into}.{name}"', json.dumps(f"${copy}"))
        text = text.replace(f'"{lookup.into}.{name}"', json.dumps(copy))
    rewritten: list[dict[str, Any]] = json_util.loads(text)
    return rewritten


def _embed(ctx: Context, entry: _Seen) -> Finding | None:
    lookup = entry.lookup
    assert lookup.foreign is not None
    children = ctx.profiles[lookup.target]
    alone = [op for op in ctx.workload.on(lookup.target) if op.kind in ("find", "aggregate")]
    if children.avg_bytes > SMALL_CHILD or alone:
        return None
    spread = per_value(ctx, lookup.target, lookup.foreign)
    if spread.max > FEW:
        return None
    return Finding(
        collection=lookup.target,
        path=lookup.foreign,
        problem="join-on-read",
        recommendation="embed",
        severity="medium",
        summary=(
            f"{count(entry.runs)} aggregations of {lookup.collection} $lookup all their {lookup.target} "
            f"(at most {spread.max}, about {round(children.avg_bytes)} bytes each, never read alone): one-to-few."
        ),
        evidence=_evidence(entry) | {"children_per_parent_max": spread.max, "children_per_parent_avg": spread.avg},
        change=Change(
            f"Embed {lookup.target} in {lookup.collection} as an array {lookup.into}, drop the $lookup, then "
            f"drop {lookup.target} (not run here: the application moves first).",
            [
                call(
                    lookup.collection,
                    "aggregate",
                    [
                        {
                            "$lookup": {
                                "from": lookup.target,
                                "localField": "_id",
                                "foreignField": lookup.foreign,
                                "as": lookup.into,
                            }
                        },
                        {"$merge": {"into": lookup.collection, "whenMatched": "merge", "whenNotMatched": "discard"}},
                    ],
                )
            ],
            {"_id": "<id>", lookup.into: ["..."]},
        ),
        effect=f"Reads of {lookup.collection} stop joining: {count(entry.runs)} lookups fewer in the window.",
    )
