"""Exact numbers the rules ask for when a pass is cheap (see
:data:`foliodb.advisor.sampling.EXACT_SCAN_DOCS`), estimates from the
sample otherwise; each answer says which it is."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

from foliodb.advisor.context import Context


@dataclass
class PerValue:
    """How many documents (array elements count once each) share one value of a path."""

    avg: float
    max: int
    values: int  # distinct values
    exact: bool


def per_value(ctx: Context, collection: str, path: str) -> PerValue:
    profile = ctx.profiles[collection]
    if ctx.exact(collection):
        pipeline: list[dict[str, Any]] = []
        parts = path.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in profile.fields and profile.fields[prefix].array_lengths:
                pipeline.append({"$unwind": f"${prefix}"})
        if path in profile.fields and profile.fields[path].array_lengths:
            pipeline.append({"$unwind": f"${path}"})
        pipeline += [
            {"$match": {path: {"$exists": True}}},
            {"$group": {"_id": f"${path}", "n": {"$sum": 1}}},
            {"$group": {"_id": None, "avg": {"$avg": "$n"}, "max": {"$max": "$n"}, "values": {"$sum": 1}}},
        ]
        result = next(iter(ctx.database[collection].aggregate(pipeline)), None)
        if result is None:
            return PerValue(0.0, 0, 0, True)
        return PerValue(round(float(result["avg"]), 1), int(result["max"]), int(result["values"]), True)
    stats = profile.fields.get(path)
    seen = Counter(repr(v) for v in (stats.values if stats else []))
    if not seen:
        return PerValue(0.0, 0, 0, False)
    scale = profile.count / max(len(profile.documents), 1)
    return PerValue(
        round(statistics.fmean(seen.values()) * scale, 1), int(max(seen.values()) * scale), len(seen), False
    )
