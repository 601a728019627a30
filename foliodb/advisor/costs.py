"""The workload at a glance: every operation of the profile grouped into
query shapes (the filter with its values dropped, the sort, or the
pipeline's stages), each with what it cost over the window, costliest
first. Every report lists them, so "nothing to change" never hides a slow
aggregation.

A shape is rendered as mongosh reads a query, values as ``?``:
``find {status: ?, created_at: {$gte: ?}} sort {created_at: -1}``;
``aggregate [$match {product_id: ?}, $group, $sort, $limit]``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from typing import Any

from foliodb.advisor.report import ShapeCost
from foliodb.advisor.workload import Operation, Workload

SHOWN = 10
_STRUCTURAL = frozenset({"$and", "$or", "$nor", "$elemMatch", "$not"})


def costliest(workload: Workload, shown: int = SHOWN) -> list[ShapeCost]:
    groups: dict[tuple[str, str, str], list[Operation]] = {}
    for op in workload.operations:
        if op.kind == "insert":
            continue
        groups.setdefault((op.collection, op.kind, render(op)), []).append(op)
    costs = [
        ShapeCost(
            collection=collection,
            kind=kind,
            shape=shape,
            runs=len(ops),
            millis=sum(op.millis for op in ops),
            median_millis=float(statistics.median(op.millis for op in ops)),
            docs_examined=sum(op.docs_examined for op in ops),
            keys_examined=sum(op.keys_examined for op in ops),
            returned=sum(op.returned for op in ops),
            plans=[plan for plan, _ in Counter(op.plan for op in ops if op.plan).most_common(3)],
        )
        for (collection, kind, shape), ops in groups.items()
    ]
    costs.sort(key=lambda c: (-c.millis, -(c.docs_examined + c.keys_examined), -c.runs, c.collection, c.shape))
    return costs[:shown]


def render(op: Operation) -> str:
    """The operation's shape, values dropped."""
    if op.kind == "aggregate" or (op.kind == "count" and op.pipeline):
        stages = []
        for stage in op.pipeline:
            name = next(iter(stage), "?")
            spec = stage.get(name)
            if name == "$match":
                stages.append(f"$match {_shape(spec)}")
            elif name == "$lookup" and isinstance(spec, Mapping):
                stages.append(f"$lookup {spec.get('from')}")
            elif name == "$sort" and isinstance(spec, Mapping):
                stages.append(f"$sort {_plain(spec)}")
            else:
                stages.append(name)
        return "aggregate [" + ", ".join(stages) + "]"
    text = f"{op.kind} {_shape(op.filter)}"
    if op.sort:
        text += f" sort {_plain(op.sort)}"
    if op.kind in ("update", "findAndModify") and isinstance(op.update, Mapping):
        text += " " + " ".join(f"{k} {{{', '.join(map(str, v))}}}" for k, v in _update_shape(op.update).items())
    return text


def _update_shape(update: Mapping[str, Any]) -> dict[str, list[str]]:
    if not any(str(k).startswith("$") for k in update):
        return {"replace": ["..."]}
    return {str(k): list(v) if isinstance(v, Mapping) else [] for k, v in update.items()}


def _shape(value: Any) -> str:
    """A filter with its values as ``?``: operators and nesting kept, lists of values one ``?``."""
    if not isinstance(value, Mapping):
        return "?"
    if not value:
        return "{}"
    parts = []
    for key, child in value.items():
        key = str(key)
        if key in _STRUCTURAL and isinstance(child, list):
            parts.append(f"{key}: [{', '.join(_shape(c) for c in child)}]")
        elif isinstance(child, Mapping) and child and (key in _STRUCTURAL or _operators(child)):
            parts.append(f"{key}: {_shape(child)}")
        else:
            parts.append(f"{key}: ?")
    return "{" + ", ".join(parts) + "}"


def _operators(value: Mapping[str, Any]) -> bool:
    return all(str(k).startswith("$") for k in value)


def _plain(spec: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in spec.items()) + "}"
