"""A counter incremented by one on every request (page views, plays,
downloads): a write per read, on a few hot documents, for a number nobody
needs exact. The approximation pattern increments by N one time in N (or
sums increments in the application and writes them now and then): about
the same number, N times fewer writes.

Fires on a top-level field that the workload ``$inc``s by exactly 1, alone
(the update changes nothing else), at least :data:`MIN_INCREMENTS` times
on documents picked by one field, at least :data:`HOT` times per document
on average, when :data:`ALONE` of those increments have no other write
next to them in their request (a counter kept beside something written in
the same request, such as a comment count beside its comment, must stay
exact). Requests served back to back by one thread run together in the
profile, so "next to" is the operation just before and just after.

The change is how the application writes (a template): nothing runs.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/approximation-schema-pattern/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from bson import json_util

from foliodb.advisor.context import Context
from foliodb.advisor.joins import requests
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import call, count
from foliodb.advisor.workload import Operation

MIN_INCREMENTS = 50
HOT = 5
ALONE = 0.8
STEP = 10
_WRITES = ("insert", "update", "delete", "findAndModify")


def rule_hot_counter(ctx: Context) -> Iterator[Finding]:
    increments: dict[tuple[str, str], list[Operation]] = {}
    for op in ctx.workload.operations:
        field = _increment(op)
        if field is not None:
            increments.setdefault((op.collection, field), []).append(op)
    if not increments:
        return
    alone: set[int] = set()
    for request in requests(ctx.workload):
        for i, op in enumerate(request):
            mine = _increment(op)
            beside = request[max(i - 1, 0) : i] + request[i + 1 : i + 2]
            if mine is not None and not any(_other_write(near, op.collection, mine) for near in beside):
                alone.add(id(op))
    for (collection, field), ops in increments.items():
        targets = Counter(json_util.dumps(op.filter, sort_keys=True) for op in ops)
        solo = sum(1 for op in ops if id(op) in alone)
        if len(ops) < MIN_INCREMENTS or len(ops) / len(targets) < HOT or solo < ALONE * len(ops):
            continue
        yield _finding(collection, field, ops, targets, solo)


def _other_write(op: Operation, collection: str, field: str) -> bool:
    """A write next to an increment that is not the same increment (of another request, back to back)."""
    return op.kind in _WRITES and (op.collection != collection or _increment(op) != field)


def _increment(op: Operation) -> str | None:
    """The field an update increments by exactly 1 and nothing else, one document picked by one field."""
    if op.kind != "update" or not isinstance(op.update, Mapping) or list(op.update) != ["$inc"]:
        return None
    spec = op.update["$inc"]
    if not isinstance(spec, Mapping) or len(spec) != 1 or len(op.filter) != 1:
        return None
    field, by = next(iter(spec.items()))
    return str(field) if by == 1 and not isinstance(by, bool) and "." not in str(field) else None


def _finding(collection: str, field: str, ops: list[Operation], targets: Counter[str], solo: int) -> Finding:
    key = next(iter(ops[0].filter))
    example: Any = ops[0].filter[key]
    return Finding(
        collection=collection,
        path=field,
        problem="hot-counter",
        recommendation="approximation",
        severity="low",
        summary=(
            f"{count(len(ops))} updates each added 1 to {field} in {count(len(targets))} {collection} documents "
            f"(up to {count(targets.most_common(1)[0][1])} on one), {count(solo)} of them with no other write "
            "beside them: a write per view for a number read as an estimate."
        ),
        evidence={
            "increments": len(ops),
            "documents": len(targets),
            "most_on_one": targets.most_common(1)[0][1],
            "alone_in_their_request": solo,
        },
        change=Change(
            f"Add {STEP} to {field} one time in {STEP} (the application draws a random number first), or sum "
            "the increments in the application and write them every few seconds; if the exact count matters, "
            "keep it as it is.",
            [call(collection, "updateOne", {key: f"<{key}>"}, {"$inc": {field: STEP}})],
            {key: example, field: f"<about the count, in steps of {STEP}>"},
        ),
        effect=(
            f"About {STEP} times fewer writes to {collection} ({count(len(ops) // STEP)} instead of "
            f"{count(len(ops))} in the window)."
        ),
    )
