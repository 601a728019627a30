"""The same sub-document copied into many documents with nothing to say
where it comes from (the texts' publisher embedded in every book): each
copy is kept up to date by hand, and the copies drift apart. A collection
of its own, referenced from each document (``publisher_id``: the texts'
answer when a publisher has many books), keeps one copy.

A candidate is a top-level sub-document of at least :data:`MIN_FIELDS`
scalar fields, none of them a reference (a copy beside a reference is an
extended reference: :mod:`.stale_copies` checks those), in a collection of
at least :data:`foliodb.advisor.context.MIN_DOCS` documents. Its identity
is the field whose values best tell the copies apart: the one that leaves
the fewest copies disagreeing with the commonest version of their
identity, with at most one value for :data:`REPEATS` copies, and at least
:data:`AGREE` of the copies agreeing with their identity's commonest
version (else the field does not name one thing: prices by currency). It
fires when copies of one identity disagree (counted exactly by one
aggregation when the collection is small enough, else in the sample), or
when the workload updates the copies by their identity (keeping them in
step by hand).

The change only adds: the collection (one document per identity, its
commonest version), a reference to it in each document, and its index;
then the application reads through the reference and the copies go (said,
not run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from bson import json_util

from foliodb.advisor.context import MIN_DOCS, Context
from foliodb.advisor.relations import REFERENCE_NAME
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count

MIN_FIELDS = 2
REPEATS = 10
AGREE = 0.8  # copies of one identity agreeing with its commonest version: one thing copied, drifting
EXAMPLES = 3


def rule_repeated_subdocument(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if profile.count < MIN_DOCS:
            continue
        for stats in profile.fields.values():
            if "." in stats.path or stats.array_lengths or stats.share("object") < 0.9:
                continue
            copies = [d[stats.path] for d in profile.documents if isinstance(d.get(stats.path), Mapping)]
            fields = _scalar_fields(copies)
            if len(fields) < MIN_FIELDS or any(REFERENCE_NAME.search(f) for f in fields):
                continue
            identity = _identity(copies, fields)
            if identity is None:
                continue
            name, disagree = identity
            upkeep = _upkeep(ctx, profile.name, stats.path, name)
            if not disagree and not upkeep:
                continue
            yield _finding(ctx, profile, stats.path, name, fields, copies, upkeep)


def _scalar_fields(copies: list[Mapping[str, Any]]) -> list[str]:
    seen: Counter[str] = Counter()
    for copy in copies:
        seen.update(k for k, v in copy.items() if not isinstance(v, (Mapping, list)))
    return [k for k, n in seen.items() if n >= 0.9 * len(copies)]


def _identity(copies: list[Mapping[str, Any]], fields: list[str]) -> tuple[str, int] | None:
    """(the identity field, copies in the sample disagreeing with their identity's commonest version)."""
    best: tuple[int, int, str] | None = None
    for name in fields:
        versions: dict[str, Counter[str]] = {}
        for copy in copies:
            if isinstance(copy.get(name), str):
                versions.setdefault(copy[name], Counter())[_canonical(copy)] += 1
        if not versions or len(versions) * REPEATS > len(copies):
            continue
        disagree = sum(sum(c.values()) - max(c.values()) for c in versions.values())
        if disagree > (1 - AGREE) * sum(sum(c.values()) for c in versions.values()):
            continue
        if best is None or (disagree, -len(versions)) < (best[0], -best[1]):
            best = (disagree, len(versions), name)
    return (best[2], best[0]) if best else None


def _canonical(value: Any) -> str:
    return json_util.dumps(value, sort_keys=True)


def _upkeep(ctx: Context, collection: str, path: str, identity: str) -> int:
    """Recorded updates that change copies found by their identity (``{"publisher.name": x}``)."""
    return sum(
        1
        for op in ctx.updates(collection)
        if f"{path}.{identity}" in op.filter
        and isinstance(op.update, Mapping)
        and any(
            str(k).startswith(f"{path}.") or k == path
            for spec in op.update.values()
            if isinstance(spec, Mapping)
            for k in spec
        )
    )


def _exact_disagreement(ctx: Context, profile: CollectionProfile, path: str, identity: str) -> tuple[int, int] | None:
    """(copies, copies disagreeing with their identity's commonest version), over the whole collection."""
    if not ctx.exact(profile.name):
        return None
    rows = ctx.database[profile.name].aggregate(
        [
            {"$match": {f"{path}.{identity}": {"$type": "string"}}},
            {"$group": {"_id": {"id": f"${path}.{identity}", "copy": f"${path}"}, "n": {"$sum": 1}}},
            {"$group": {"_id": "$_id.id", "total": {"$sum": "$n"}, "top": {"$max": "$n"}}},
            {"$group": {"_id": None, "copies": {"$sum": "$total"}, "agree": {"$sum": "$top"}}},
        ]
    )
    row = next(iter(rows), None)
    return (int(row["copies"]), int(row["copies"] - row["agree"])) if row else None


def _finding(
    ctx: Context,
    profile: CollectionProfile,
    path: str,
    identity: str,
    fields: list[str],
    copies: list[Mapping[str, Any]],
    upkeep: int,
) -> Finding:
    exact = _exact_disagreement(ctx, profile, path, identity)
    sampled_disagree = _identity(copies, [identity])
    total, disagree = exact if exact else (len(copies), sampled_disagree[1] if sampled_disagree else 0)
    distinct = len({c.get(identity) for c in copies})
    target = f"{path}s" if not path.endswith("s") else f"{path}_entries"
    reference = f"{path}_id"
    examples = _disagreeing(copies, identity)
    steps = [
        call(target, "createIndex", {identity: 1}, {"unique": True}),
        call(
            profile.name,
            "aggregate",
            [
                {"$match": {f"{path}.{identity}": {"$type": "string"}}},
                {"$group": {"_id": {"id": f"${path}.{identity}", "copy": f"${path}"}, "n": {"$sum": 1}}},
                {"$sort": {"n": -1}},
                {"$group": {"_id": "$_id.id", "copy": {"$first": "$_id.copy"}}},
                {"$replaceWith": "$copy"},
                {"$merge": {"into": target, "on": identity, "whenMatched": "keepExisting", "whenNotMatched": "insert"}},
            ],
        ),
        call(
            profile.name,
            "aggregate",
            [
                {"$match": {f"{path}.{identity}": {"$type": "string"}}},
                {
                    "$lookup": {
                        "from": target,
                        "localField": f"{path}.{identity}",
                        "foreignField": identity,
                        "as": "_ref",
                    }
                },
                {"$set": {reference: {"$first": "$_ref._id"}}},
                {"$project": {reference: 1}},
                {"$merge": {"into": profile.name, "whenMatched": "merge", "whenNotMatched": "discard"}},
            ],
        ),
        call(profile.name, "createIndex", {reference: 1}),
    ]
    return Finding(
        collection=profile.name,
        path=path,
        problem="repeated-subdocument",
        recommendation="parent-reference",
        severity="high" if disagree else "medium",
        summary=(
            f"{path} is copied into {count(total)} documents"
            + (" (sampled)" if exact is None else "")
            + f" for about {count(distinct)} distinct {identity}s"
            + (f"; {count(disagree)} copies already disagree with the others of their {identity}" if disagree else "")
            + (f"; {count(upkeep)} recorded updates kept copies in step by hand" if upkeep else "")
            + "."
        ),
        evidence={
            "copies": total,
            "disagreeing": disagree,
            "exact": exact is not None,
            "identity": identity,
            "fields": fields,
            "distinct_in_sample": distinct,
            "upkeep_updates_recorded": upkeep,
            "examples": examples,
        },
        change=Change(
            f"Keep one {path} per {identity} in {target} (its commonest version: {count(disagree)} disagreeing "
            f"copies are left behind, see the examples), and a reference {reference} in each {profile.name} "
            f"document; read {target} by {reference} (or copy only {identity} beside it), then remove {path} "
            "(not run here: the application moves first).",
            steps,
            {reference: "<id>", "...": "..."},
        ),
        effect=(
            f"One copy of each {path} instead of {count(total / max(distinct, 1))} on average: a change is one "
            "update, and the copies cannot disagree."
        ),
    )


def _disagreeing(copies: list[Mapping[str, Any]], identity: str) -> list[dict[str, Any]]:
    versions: dict[Any, Counter[str]] = {}
    for copy in copies:
        versions.setdefault(copy.get(identity), Counter())[_canonical(copy)] += 1
    out: list[dict[str, Any]] = []
    for value, seen in versions.items():
        if len(seen) > 1:
            (common, n), *others = seen.most_common()
            out.append({identity: value, "commonest": json_util.loads(common), "copies": n, "others": len(others)})
        if len(out) == EXAMPLES:
            break
    return out
