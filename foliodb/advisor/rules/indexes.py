"""Indexes that cost writes and serve nothing: unused ones (no recorded
plan used them, and ``$indexStats`` counts no access), and redundant ones
(a prefix of another index with the same directions, which serves the same
queries).

Unused needs a workload to judge by: at least :data:`MIN_OPERATIONS`
profiled operations on the collection, and ``$indexStats`` counting since
the profile window began (its counters restart with the server and with
the index: a count that started later has not seen the whole window, and
the index is not called unused on its word). Unique, TTL (any index with
``expireAfterSeconds``, 0 included: 0 expires each document at the time
its field names), hidden and ``_id`` indexes do work of their own and are
never proposed for dropping; neither is a prefix of a partial or sparse
index (which does not cover every document).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/ and
https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unnecessary-indexes/
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count, size
from foliodb.advisor.workload import index_used

MIN_OPERATIONS = 50
_WORKING = ("unique", "hidden")
_NARROWING = ("partialFilterExpression", "sparse", "collation")


def is_ttl(index: dict[str, Any]) -> bool:
    """A TTL index: one with ``expireAfterSeconds``, whatever its value (0 included)."""
    return "expireAfterSeconds" in index


def _droppable(index: dict[str, Any]) -> bool:
    return index.get("name") != "_id_" and not is_ttl(index) and not any(index.get(o) for o in _WORKING)


def redundant_to(profile: CollectionProfile, index: dict[str, Any]) -> dict[str, Any] | None:
    """The index that makes ``index`` redundant (``index``'s key is a prefix of its key), if any."""
    if not _droppable(index) or any(option in index for option in _NARROWING):
        return None
    key = list(index["key"].items())
    for other in profile.indexes:
        other_key = list(other["key"].items())
        covers = other is not index and len(other_key) > len(key) and other_key[: len(key)] == key
        if covers and not any(option in other for option in _NARROWING):
            return other
    return None


def rule_redundant_index(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        for index in profile.indexes:
            other = redundant_to(profile, index)
            if other is None:
                continue
            yield Finding(
                collection=profile.name,
                path=next(iter(index["key"])),
                problem="redundant-index",
                recommendation="drop-index",
                severity="low",
                summary=f"Index {index['name']} is a prefix of {other['name']}, which serves the same queries.",
                evidence={
                    "index": dict(index["key"]),
                    "covered_by": dict(other["key"]),
                    "bytes": profile.index_sizes.get(index["name"]),
                },
                change=Change(
                    f"Drop {index['name']} (hide it first, to see that no query slows down).",
                    [call(profile.name, "hideIndex", index["name"]), call(profile.name, "dropIndex", index["name"])],
                    None,
                ),
                effect=f"Every insert and every update of {', '.join(index['key'])} writes one index entry fewer.",
            )


def rule_unused_index(ctx: Context) -> Iterator[Finding]:
    window = ctx.workload.window
    for profile in ctx.profiles.values():
        ops = [op for op in ctx.workload.on(profile.name) if op.kind != "insert"]
        if len(ops) < MIN_OPERATIONS or window is None:
            continue
        plans = [op.plan for op in ops]
        first = min(op.ts for op in ops if op.ts is not None) if any(op.ts for op in ops) else None
        stats = {row.get("name"): row for row in ctx.workload.index_stats.get(profile.name, [])}
        for index in profile.indexes:
            if not _droppable(index) or redundant_to(profile, index) is not None or index_used(index, plans):
                continue
            accesses = stats.get(index["name"], {}).get("accesses", {})
            since = accesses.get("since")
            if int(accesses.get("ops", 0)) > 0 or not _counted_through(since, first):
                continue
            yield Finding(
                collection=profile.name,
                path=next(iter(index["key"])) if "_fts" not in index["key"] else None,
                problem="unused-index",
                recommendation="drop-index",
                severity="low",
                summary=(
                    f"No plan of the {count(len(ops))} operations on {profile.name} profiled from "
                    f"{window[0]:%Y-%m-%d %H:%M} to {window[1]:%Y-%m-%d %H:%M} used {index['name']}."
                ),
                evidence={
                    "index": dict(index["key"]),
                    "operations": len(ops),
                    "window_seconds": round((window[1] - window[0]).total_seconds()),
                    "index_stats_ops": accesses.get("ops"),
                    "index_stats_since": accesses.get("since"),
                    "bytes": profile.index_sizes.get(index["name"]),
                },
                change=Change(
                    f"Hide {index['name']} (unhideIndex brings it back at once), watch a full business cycle "
                    f"(month-end reports use indexes too; the profile covers {_span(window)}), then drop it: "
                    f"{call(profile.name, 'dropIndex', index['name']).shell()}. Only the hiding is proposed now: "
                    "it can be undone, a drop cannot.",
                    [call(profile.name, "hideIndex", index["name"])],
                    None,
                ),
                effect=(
                    f"Writes to {profile.name} stop maintaining it"
                    + (
                        f"; {size(profile.index_sizes[index['name']])} freed."
                        if index["name"] in profile.index_sizes
                        else "."
                    )
                ),
            )


def _span(window: tuple[datetime.datetime, datetime.datetime]) -> str:
    seconds = (window[1] - window[0]).total_seconds()
    for unit, scale in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * scale:
            return f"{seconds / scale:.0f} {unit}"
    return f"{seconds:.0f} seconds"


def _counted_through(since: Any, first: datetime.datetime | None) -> bool:
    """Whether ``$indexStats`` has counted since before the first profiled operation."""
    if not isinstance(since, datetime.datetime) or first is None:
        return False
    return since.replace(tzinfo=None) <= first.replace(tzinfo=None)
