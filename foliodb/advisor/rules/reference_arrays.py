"""Arrays of references past one-to-many: one-to-squillions wants a
reference to the parent in each child instead (a ``follows {follower,
followee}`` collection rather than a celebrity's followers in one array).

The texts put one-to-many at "hundreds to a few thousand" and say an array
of ids is right there; :data:`HUGE_REFERENCES` (ten thousand) is past that
with room, and is where MongoDB's schema advisor flags arrays too. The
longest array comes from the exact checks of :mod:`foliodb.advisor.sampling`,
so one celebrity among 20,000 users is found when the sample misses it.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unbounded-arrays/
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from foliodb.advisor.context import Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import call, count, size
from foliodb.advisor.workload import touched_paths

HUGE_REFERENCES = 10_000


def rule_huge_reference_array(ctx: Context) -> Iterator[Finding]:
    for relation in ctx.relations:
        profile = ctx.profiles[relation.source]
        stats = profile.fields.get(relation.path)
        if stats is None or not stats.array_lengths or stats.under_array:
            continue
        longest = profile.longest_length(relation.path)
        if longest < HUGE_REFERENCES:
            continue
        where = profile.longest.get(relation.path)
        pushes = sum(
            1
            for op in ctx.updates(profile.name)
            if relation.path
            in touched_paths(op.update).get("$push", set()) | touched_paths(op.update).get("$addToSet", set())
        )
        parent = f"{_singular(profile.name)}_id"
        child = _singular(relation.path.rsplit(".", 1)[-1])
        edges = f"{profile.name}_{relation.path}"
        yield Finding(
            collection=profile.name,
            path=relation.path,
            problem="huge-reference-array",
            recommendation="parent-reference",
            severity="critical" if profile.max_bytes() >= 8 << 20 else "high",
            summary=(
                f"{relation.path} holds up to {count(longest)} references to {relation.target} "
                f"(median {count(statistics.median(stats.array_lengths))}): one-to-squillions in one array."
            ),
            evidence={
                "longest": longest,
                "document_id": where.document_id if where else None,
                "document_bytes": profile.largest.value if profile.largest else None,
                "median_length": statistics.median(stats.array_lengths),
                "arrays_sampled": len(stats.array_lengths),
                "references": relation.target,
                "pushes_recorded": pushes,
                "found_by": "exact check" if profile.exhaustive else "candidate check",
            },
            change=Change(
                f"Store each reference as its own document in {edges} ({{{parent}, {child}}}), index "
                f"{parent}, and keep a {relation.path}_count in {profile.name} with $inc.",
                [
                    call(edges, "createIndex", {parent: 1, child: 1}, {"unique": True}),
                    call(edges, "insertOne", {parent: "<id>", child: "<ref>"}),
                    call(profile.name, "updateOne", {"_id": "<id>"}, {"$inc": {f"{relation.path}_count": 1}}),
                ],
                {parent: "<id>", child: "<ref>"},
            ),
            effect=(
                f"The largest {profile.name} document shrinks from {size(profile.max_bytes())}; adding a "
                f"reference writes one small document instead of rewriting an array of {count(longest)}."
            ),
        )


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name
