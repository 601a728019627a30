"""Embedded arrays that grow with use: bucket them, or keep a bounded subset
(``$push`` with ``$each`` and ``$slice``) and the rest in their own collection.

Fires on an array (not of references: see :mod:`.reference_arrays`) at least
:data:`LONG_ARRAY` long somewhere ("breaks past a few hundred comments", the
texts' blog design B) that shows growth: the workload pushes to it without
``$slice``, or its lengths are skewed (the longest :data:`SKEW` times the
median or more: arrays that grow with age or popularity). A fixed-size
array, however long, is left alone. The fix is ``subset`` when the reads
already project a ``$slice`` of it (they want the latest few), else ``bucket``.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unbounded-arrays/
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import call, count
from foliodb.advisor.workload import positional, touched_paths

LONG_ARRAY = 500
SKEW = 5
BUCKET = 100  # items per bucket, the texts' comment buckets
SUBSET = 100
OUTLIERS = 0.02  # at most this share of long arrays: a few outliers, not a design that grows everywhere


def rule_unbounded_array(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        for stats in profile.array_paths():
            relation = ctx.relation(profile.name, stats.path)
            if stats.under_array or (relation is not None and relation.many):
                continue
            longest = profile.longest_length(stats.path)
            if longest < LONG_ARRAY:
                continue
            updates = ctx.updates(profile.name)
            pushes = [op for op in updates if stats.path in touched_paths(op.update).get("$push", set())]
            sliced = [op for op in pushes if _sliced(op.update, stats.path)]
            if sliced:
                continue  # already a bounded subset
            median = statistics.median(stats.array_lengths)
            if not pushes and longest < SKEW * max(median, 1):
                continue
            in_place = sum(1 for op in updates if positional(op.update) and _touches(op.update, stats.path))
            reads = [op for op in ctx.workload.on(profile.name) if op.kind == "find"]
            slicing = any(_projects_slice(op.projection, stats.path) for op in reads)
            where = profile.longest.get(stats.path)
            yield _finding(
                profile.name, stats.path, longest, median, stats.array_lengths, where, pushes, in_place, slicing
            )


def _finding(
    collection: str,
    path: str,
    longest: int,
    median: float,
    lengths: list[int],
    where: Any,
    pushes: list[Any],
    in_place: int,
    slicing: bool,
) -> Finding:
    ordered = sorted(lengths)
    long_share = sum(1 for n in lengths if n >= LONG_ARRAY) / max(len(lengths), 1)
    evidence = {
        "longest": longest,
        "document_id": where.document_id if where else None,
        "median_length": median,
        "p95_length": ordered[int(0.95 * (len(ordered) - 1))],
        "arrays_sampled": len(ordered),
        "pushes_recorded": len(pushes),
        "element_updates_recorded": in_place,
        "long_share_sampled": round(long_share, 4),
    }
    summary = f"{path} holds up to {count(longest)} elements (median {count(median)}) and grows" + (
        f": {count(len(pushes))} $push without $slice in the profile." if pushes else " with age."
    )
    # The outlier pattern: when only a few documents grow long, an overflow document for those few
    # (a has_extras flag in the parent) keeps the common case one read.
    outliers = (
        f" Only {long_share:.1%} of the sampled documents are that long: the outlier pattern "
        f"(the first {BUCKET} embedded, an overflow document for the few beyond, flagged in the parent) is the "
        "lighter change."
        if long_share <= OUTLIERS and median < BUCKET
        else ""
    )
    parent = f"{collection.rstrip('s')}_id"
    if slicing:
        return Finding(
            collection,
            path,
            "unbounded-array",
            "subset",
            "high" if longest >= 10 * LONG_ARRAY else "medium",
            summary + " The reads show only a $slice of it.",
            evidence,
            Change(
                f"Keep the latest {SUBSET} in {path} and every one in a {path} collection holding {parent}.",
                [
                    call(
                        collection,
                        "updateOne",
                        {"_id": "<id>"},
                        {"$push": {path: {"$each": ["<new>"], "$slice": -SUBSET}}},
                    ),
                    call(path, "insertOne", {parent: "<id>", "...": "<new>"}),
                ],
                {"_id": "<id>", path: [f"... the latest {SUBSET} ..."]},
            ),
            f"Documents stop growing: {path} stays at {SUBSET} elements instead of {count(longest)}.",
        )
    bucket_coll = f"{collection}_{path}"
    return Finding(
        collection,
        path,
        "unbounded-array",
        "bucket",
        "high" if longest >= 10 * LONG_ARRAY else "medium",
        summary,
        evidence,
        Change(
            f"Move {path} into {bucket_coll}, one document per {BUCKET} elements: fill the open bucket "
            f"with an upsert, read the latest page from the newest bucket." + outliers,
            [
                call(
                    bucket_coll,
                    "updateOne",
                    {parent: "<id>", "count": {"$lt": BUCKET}},
                    {"$push": {path: "<new>"}, "$inc": {"count": 1}},
                    {"upsert": True},
                ),
                call(bucket_coll, "createIndex", {parent: 1, "bucket": -1}),
            ],
            {parent: "<id>", "bucket": 0, "count": BUCKET, path: [f"... {BUCKET} elements ..."]},
        ),
        f"The parent document stops growing; a read of the latest {BUCKET} reads one bucket, not "
        f"{count(longest)} elements.",
    )


def _sliced(update: Any, path: str) -> bool:
    push = update.get("$push", {}) if isinstance(update, dict) else {}
    spec = push.get(path)
    return isinstance(spec, dict) and "$slice" in spec


def _touches(update: Any, path: str) -> bool:
    return any(p == path or p.startswith(path + ".") for paths in touched_paths(update).values() for p in paths)


def _projects_slice(projection: dict[str, Any], path: str) -> bool:
    spec = projection.get(path)
    return isinstance(spec, dict) and "$slice" in spec
