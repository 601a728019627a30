"""Stored counts that drifted from what they count: the texts keep
``comment_count`` (``followers_count``, ``total_reviews``) in the parent
instead of counting on every read, which holds only while every write that
adds or removes a child also updates the count.

A counter is a top-level number named ``<thing>_count``, ``<thing>Count``,
``num_<things>`` or ``total_<things>``. What it counts is an array of the
same document named for the thing, or the documents of a collection named
for it (sharing the first :data:`STEM` letters) that reference the parent;
when several could be, the one that agrees most often is taken, and only if
it agrees at least :data:`AGREES` of the time (else the counter counts
something the advisor cannot see). Up to :data:`COMPARED` sampled parents
are checked, their children counted with one aggregation.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/computed-schema-pattern/
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import Context
from foliodb.advisor.report import Affected, Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call

COMPARED = 200
STEM = 5
AGREES = 0.5
_COUNTER = re.compile(r"^(?:(\w+?)_count|(\w+?)Count|num_(\w+)|total_(\w+))$")


def rule_drifting_counter(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        for stats in profile.fields.values():
            match = _COUNTER.match(stats.path)
            if match is None or stats.share("number") < 0.9:
                continue
            thing = next(g for g in match.groups() if g).lower()
            parents = [d for d in profile.documents[:COMPARED] if isinstance(d.get(stats.path), (int, float))]
            best: tuple[int, str, dict[str, int]] | None = None
            for label, actual in _candidates(ctx, profile, thing, parents):
                agree = sum(1 for d in parents if actual.get(repr(d["_id"]), 0) == d[stats.path])
                if best is None or agree > best[0]:
                    best = (agree, label, actual)
            if best is None or not parents or best[0] < AGREES * len(parents) or best[0] == len(parents):
                continue
            yield _finding(profile, stats.path, parents, best[1], best[2])


def _candidates(
    ctx: Context, profile: CollectionProfile, thing: str, parents: list[dict[str, Any]]
) -> Iterator[tuple[str, dict[str, int]]]:
    """(what is counted, parent id -> its count) for each thing the counter may count."""
    for stats in profile.fields.values():
        if "." not in stats.path and stats.array_lengths and _same_thing(stats.path, thing):
            yield (
                f"{profile.name}.{stats.path} (array length)",
                {repr(d["_id"]): len(d[stats.path]) for d in parents if isinstance(d.get(stats.path), list)},
            )
    ids = [d["_id"] for d in parents]
    for relation in ctx.relations:
        if relation.target != profile.name or relation.many or not _same_thing(relation.source, thing):
            continue
        rows = ctx.database[relation.source].aggregate(
            [{"$match": {relation.path: {"$in": ids}}}, {"$group": {"_id": f"${relation.path}", "n": {"$sum": 1}}}]
        )
        yield f"{relation.source} by {relation.path}", {repr(r["_id"]): int(r["n"]) for r in rows}


def _same_thing(name: str, thing: str) -> bool:
    a, b = name.lower(), thing.lower()
    n = min(STEM, len(a), len(b))
    return a[:n] == b[:n]


def _finding(
    profile: CollectionProfile, path: str, parents: list[dict[str, Any]], counted: str, actual: dict[str, int]
) -> Finding:
    wrong = [d for d in parents if actual.get(repr(d["_id"]), 0) != d[path]]
    drift = [d[path] - actual.get(repr(d["_id"]), 0) for d in wrong]
    source, _, by = counted.partition(" by ")
    examples = [{"_id": d["_id"], "stored": d[path], "actual": actual.get(repr(d["_id"]), 0)} for d in wrong[:3]]
    if by:
        repair = call(
            profile.name,
            "aggregate",
            [
                {"$lookup": {"from": source, "localField": "_id", "foreignField": by, "as": "_c"}},
                {"$set": {path: {"$size": "$_c"}}},
                {"$unset": "_c"},
                {"$merge": {"into": profile.name, "whenMatched": "merge"}},
            ],
        )
        keep = f"insert and delete each {source} document together with an $inc of {path} in its parent (a transaction)"
    else:
        array = source.split(".", 1)[1].split(" ")[0]
        repair = call(profile.name, "updateMany", {}, [{"$set": {path: {"$size": {"$ifNull": [f"${array}", []]}}}}])
        keep = f"$inc {path} in the same update that pushes to or pulls from {array}"
    return Finding(
        collection=profile.name,
        path=path,
        problem="drifting-counter",
        recommendation="computed-field",
        severity="high",
        summary=(
            f"{len(wrong)} of {len(parents)} sampled {path} values differ from the count of {counted} "
            f"(off by {min(drift)} to {max(drift)})."
        ),
        evidence={
            "compared": len(parents),
            "wrong": len(wrong),
            "counted": counted,
            "drift_min": min(drift),
            "drift_max": max(drift),
            "examples": examples,
        },
        change=Change(
            f"Recompute {path} once, then {keep}.",
            [repair],
            None,
            [Affected(profile.name, [path], f"{path} becomes the true count")],
        ),
        effect=f"{path} is exact again, so reads can keep using it instead of counting.",
    )
