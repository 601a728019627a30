"""An aggregation recomputed on every request over many documents (a
"top rated" page grouping every review, a count per page view): the
computed pattern stores the result and updates it when the data changes,
so a read reads one document.

Fires on an aggregation shape with a ``$group``, ``$count``, ``$bucket``
(or a ``count_documents``) that ran at least
:data:`foliodb.advisor.context.MIN_RUNS` times and examined at least
:data:`MIN_EXAMINED` index keys and documents a run, or at least
:data:`FEW_RUNS` times examining :data:`LARGE` a run (a page that takes
seconds is worth storing after a handful of views). The result goes into
the referenced collection when it is grouped by a reference
(``reviews.product_id`` -> ``products``), else into a collection of its
own. What it costs: an update of the stored result with each recorded
write to the collection (the evidence counts them against the reads); when
writes outnumber reads, recomputing on a schedule is cheaper, and the
change says so.

The change only adds (the stored results, and an index to read them in
order); the application then reads them and keeps them up to date.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/computed-schema-pattern/
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.advisor.context import MIN_RUNS, Context
from foliodb.advisor.costs import render
from foliodb.advisor.pipelines import computes, grouped_by, writes
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import Command, call, count, millis
from foliodb.advisor.workload import Operation, predicates

MIN_EXAMINED = 1_000
FEW_RUNS = 5
LARGE = 10_000
_WRITES = ("insert", "update", "delete", "findAndModify")


def rule_recomputed_aggregate(ctx: Context) -> Iterator[Finding]:
    shapes: dict[tuple[str, str], list[Operation]] = {}
    for op in ctx.workload.operations:
        if op.kind in ("aggregate", "count") and op.pipeline and computes(op) and not writes(op):
            shapes.setdefault((op.collection, render(op)), []).append(op)
    done: set[tuple[str, str | None]] = set()
    for (collection, _), ops in sorted(shapes.items(), key=lambda item: -sum(op.millis for op in item[1])):
        examined = sum(op.docs_examined + op.keys_examined for op in ops) / len(ops)
        often = len(ops) >= MIN_RUNS and examined >= MIN_EXAMINED
        if not (often or (len(ops) >= FEW_RUNS and examined >= LARGE)) or collection not in ctx.profiles:
            continue
        key = _key(ops[0])
        if (collection, key) in done:
            continue
        done.add((collection, key))
        yield _finding(ctx, collection, ops, key, examined)


def _key(op: Operation) -> str | None:
    """The field each result is computed for: the $group's key, else the equality the $match fixes."""
    group = grouped_by(op)
    if isinstance(group, str) and group.startswith("$") and not group.startswith("$$"):
        return group[1:]
    head = op.pipeline[0].get("$match") if op.pipeline else None
    if isinstance(head, Mapping):
        equality = predicates(head).equality
        if len(equality) == 1:
            return next(iter(equality))
    return None


def _group_stage(op: Operation, key: str | None) -> dict[str, Any]:
    """The $group that computes the stored result, an average kept with its sum and count."""
    spec = next((s["$group"] for s in op.pipeline if isinstance(s.get("$group"), Mapping)), None)
    by: Any = f"${key}" if key else None
    if spec is None:  # a count
        return {"_id": by, "count": {"$sum": 1}}
    out: dict[str, Any] = {"_id": by}
    for name, accumulator in spec.items():
        if name == "_id" or not isinstance(accumulator, Mapping):
            continue
        out[name] = dict(accumulator)
        if "$avg" in accumulator:
            out[f"{name}_sum"] = {"$sum": accumulator["$avg"]}
            out[f"{name}_count"] = {"$sum": 1}
    return out


def _finding(ctx: Context, collection: str, ops: list[Operation], key: str | None, examined: float) -> Finding:
    relation = ctx.relation(collection, key) if key else None
    target = relation.target if relation and not relation.many else f"{collection}_{'by_' + key if key else 'totals'}"
    group = _group_stage(ops[0], key)
    stored = {name: f"{collection}_{name}" if relation else name for name in group if name != "_id"}
    merge: dict[str, Any] = {"into": target, "whenMatched": "merge"}
    if relation:
        merge["whenNotMatched"] = "discard"
    steps: list[Command] = [
        call(
            collection,
            "aggregate",
            [
                {"$group": group},
                {"$project": {new: f"${old}" for old, new in stored.items()}},
                {"$merge": merge},
            ],
        )
    ]
    order = _sorted_by(ops[0])
    if order and order[0] in stored:
        steps.append(call(target, "createIndex", {stored[order[0]]: order[1]}))
    incs = {new: 1 if "count" in old or old == "n" else "<value>" for old, new in stored.items() if "avg" not in old}
    steps.append(call(target, "updateOne", {"_id": f"<{key or 'id'}>"}, {"$inc": incs}))
    writes_seen = [op for op in ctx.workload.on(collection) if op.kind in _WRITES]
    runs = len(ops)
    total = sum(op.millis for op in ops)
    on_write = len(writes_seen) < runs
    where = f"{target} (beside each {target[:-1] if target.endswith('s') else target})" if relation else target
    return Finding(
        collection=collection,
        path=key,
        problem="recomputed-aggregate",
        recommendation="computed",
        severity="medium",
        summary=(
            f"{count(runs)} runs of {render(ops[0])} on {collection} each examined {count(round(examined))} "
            f"keys and documents (median {millis(statistics.median(op.millis for op in ops))}, "
            f"{millis(total)} in all) to recompute a result only {count(len(writes_seen))} recorded writes changed."
        ),
        evidence={
            "runs": runs,
            "examined_per_run": round(examined),
            "total_millis": total,
            "median_millis": statistics.median(op.millis for op in ops),
            "writes_recorded": len(writes_seen),
            "stored_in": target,
            "stored_fields": stored,
            "pipeline": ops[0].pipeline,
        },
        change=Change(
            f"Store the result in {where} ({', '.join(stored.values())}), computed once now; then "
            + (
                f"update it in the same write that changes {collection} ($inc the sums and counts; an average is "
                f"sum / count): {count(len(writes_seen))} more updates in the window against {count(runs)} "
                "recomputations."
                if on_write
                else f"recompute it on a schedule (writes outnumber reads: {count(len(writes_seen))} against "
                f"{count(runs)})."
            )
            + f" Read {target} instead of aggregating {collection}.",
            steps,
            {"_id": f"<{key or 'id'}>", **dict.fromkeys(stored.values(), "...")},
        ),
        effect=(
            f"Each read reads the stored result instead of {count(round(examined))} keys and documents "
            f"({millis(total)} of aggregation in the window)."
        ),
    )


def _sorted_by(op: Operation) -> tuple[str, int] | None:
    """The first field a $sort after the $group orders by."""
    grouped = False
    for stage in op.pipeline:
        if "$group" in stage:
            grouped = True
        spec = stage.get("$sort")
        if grouped and isinstance(spec, Mapping) and spec:
            name, direction = next(iter(spec.items()))
            return str(name), -1 if direction == -1 else 1
    return None
