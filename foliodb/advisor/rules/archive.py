"""Most documents older than anything the workload reads: five years of
orders when every read asks for the last six months. The archive pattern
moves the old documents into an archive collection (or cheaper storage),
so the working set and the indexes hold what is read.

Fires on a collection of at least :data:`foliodb.advisor.context.MIN_DOCS`
documents with a top-level date field, when every recorded read of it (at
least :data:`foliodb.advisor.context.MIN_RUNS`) bounds that field from
below, and at least :data:`COLD` of the documents lie before the oldest
bound (counted on an index of the field, else estimated from the sample).
Collections whose documents should go altogether (carts, sessions) are the
TTL rule's.

The change copies the documents older than the oldest bound, less a
margin of :data:`MARGIN` of the window read, into ``<name>_archive`` (with
the collection's indexes), then deletes them; the proof replays the reads,
which must answer as before.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/archive/
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping

from foliodb.advisor.context import MIN_DOCS, MIN_RUNS, Context
from foliodb.advisor.kinds import tests
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import Command, call, count
from foliodb.advisor.workload import Operation

COLD = 0.5
MARGIN = 0.1
PRESENT = 0.95


def rule_cold_documents(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if profile.count < MIN_DOCS:
            continue
        reads = ctx.reads(profile.name)
        if len(reads) < MIN_RUNS:
            continue
        sampled = max(len(profile.documents), 1)
        dates = [
            s.path
            for s in profile.fields.values()
            if "." not in s.path and s.present >= PRESENT * sampled and s.share("date") >= PRESENT
        ]
        for path in dates:
            bounds = [_lower_bound(op, path) for op in reads]
            if any(b is None for b in bounds):
                continue
            oldest = min(b for b in bounds if b is not None)
            cold, exact = _older(ctx, profile, path, oldest)
            if cold >= COLD * profile.count:
                yield _finding(ctx, profile, path, oldest, cold, exact, len(reads))
                break


def _lower_bound(op: Operation, path: str) -> datetime.datetime | None:
    """The oldest date a read can return: its $gt/$gte on ``path`` (an aggregation's: in its leading $match)."""
    spec = op.filter
    found = None
    for tested, condition in tests(spec, ""):
        if tested == path and isinstance(condition, Mapping):
            for name in ("$gt", "$gte"):
                value = condition.get(name)
                if isinstance(value, datetime.datetime):
                    found = value if found is None else max(found, value)
    return found


def _older(ctx: Context, profile: CollectionProfile, path: str, when: datetime.datetime) -> tuple[int, bool]:
    """Documents whose ``path`` is before ``when``: counted on an index of it, else estimated."""
    if any(next(iter(index["key"])) == path for index in profile.indexes) or ctx.exact(profile.name):
        return ctx.database[profile.name].count_documents({path: {"$lt": when}}), True
    values = [d.get(path) for d in profile.documents]
    older = sum(1 for v in values if isinstance(v, datetime.datetime) and v < when)
    return round(older / max(len(values), 1) * profile.count), False


def _finding(
    ctx: Context,
    profile: CollectionProfile,
    path: str,
    oldest: datetime.datetime,
    cold: int,
    exact: bool,
    reads: int,
) -> Finding:
    newest = _newest(ctx, profile, path) or oldest
    cutoff = oldest - max(newest - oldest, datetime.timedelta(days=1)) * MARGIN
    cutoff = cutoff.replace(microsecond=0)
    target = f"{profile.name}_archive"
    steps: list[Command] = [
        call(
            profile.name,
            "aggregate",
            [{"$match": {path: {"$lt": cutoff}}}, {"$merge": {"into": target, "whenMatched": "keepExisting"}}],
        )
    ]
    for index in profile.indexes:
        if index.get("name") != "_id_" and "expireAfterSeconds" not in index:
            steps.append(call(target, "createIndex", dict(index["key"])))
    steps.append(call(profile.name, "deleteMany", {path: {"$lt": cutoff}}))
    share = cold / max(profile.count, 1)
    return Finding(
        collection=profile.name,
        path=path,
        problem="cold-documents",
        recommendation="archive",
        severity="medium",
        summary=(
            f"Every one of the {count(reads)} recorded reads of {profile.name} asks for {path} from "
            f"{oldest:%Y-%m-%d} on, and {count(cold)} of its {count(profile.count)} documents "
            f"({share:.0%}) are older."
        ),
        evidence={
            "reads": reads,
            "oldest_read": oldest,
            "older_documents": cold,
            "exact": exact,
            "share": round(share, 3),
            "cutoff": cutoff,
        },
        change=Change(
            f"Move the documents with {path} before {cutoff:%Y-%m-%d} (the oldest read, less a margin) into "
            f"{target}, with the same indexes, and delete them from {profile.name}; repeat as they age (a "
            "scheduled job). Reads of older ones go to the archive.",
            steps,
            None,
        ),
        effect=(
            f"{profile.name} keeps about {count(profile.count - cold)} documents instead of "
            f"{count(profile.count)}: its indexes and working set shrink by about {share:.0%}."
        ),
    )


def _newest(ctx: Context, profile: CollectionProfile, path: str) -> datetime.datetime | None:
    found = next(
        iter(ctx.database[profile.name].find({path: {"$type": "date"}}, {path: 1}).sort(path, -1).limit(1)), None
    )
    value = found.get(path) if found else None
    return value if isinstance(value, datetime.datetime) else None
