"""Old versions kept beside the current one in one collection, each read
skipping them (``{page: id, current: true}``): the collection, its indexes
and its working set grow with every edit. The document versioning pattern
keeps the current version in the collection and the older ones in a
revisions collection, written when a document changes.

Fires on a collection of at least :data:`foliodb.advisor.context.MIN_DOCS`
documents with a top-level boolean named for it (:data:`FLAGS`), when every
recorded read (at least :data:`foliodb.advisor.context.MIN_RUNS`) asks for
``true`` and at least :data:`OLD` of the documents are not ``true``
(counted on an index of the flag, else estimated from the sample).

The change copies the older versions into ``<name>_revisions`` and deletes
them from the collection; the proof replays the reads, which must answer as
before.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/document-versioning/
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import MIN_DOCS, MIN_RUNS, Context
from foliodb.advisor.kinds import tests
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import Command, call, count

FLAGS = ("current", "is_current", "latest", "is_latest", "isCurrent", "isLatest")
OLD = 0.5


def rule_old_versions(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if profile.count < MIN_DOCS:
            continue
        reads = ctx.reads(profile.name)
        if len(reads) < MIN_RUNS:
            continue
        for flag in FLAGS:
            stats = profile.fields.get(flag)
            if stats is None or stats.share("bool") < 0.95 or not all(_asks_current(op, flag) for op in reads):
                continue
            old, exact = _old(ctx, profile, flag)
            if old >= OLD * profile.count:
                yield _finding(profile, flag, old, exact, len(reads))
            break


def _asks_current(op: Any, flag: str) -> bool:
    spec = op.filter
    return any(path == flag and condition in (True, {"$eq": True}) for path, condition in tests(spec, ""))


def _old(ctx: Context, profile: CollectionProfile, flag: str) -> tuple[int, bool]:
    if any(next(iter(index["key"])) == flag for index in profile.indexes) or ctx.exact(profile.name):
        return ctx.database[profile.name].count_documents({flag: {"$ne": True}}), True
    older = sum(1 for d in profile.documents if d.get(flag) is not True)
    return round(older / max(len(profile.documents), 1) * profile.count), False


def _finding(profile: CollectionProfile, flag: str, old: int, exact: bool, reads: int) -> Finding:
    target = f"{profile.name}_revisions"
    steps: list[Command] = [
        call(
            profile.name,
            "aggregate",
            [{"$match": {flag: {"$ne": True}}}, {"$merge": {"into": target, "whenMatched": "keepExisting"}}],
        ),
        call(profile.name, "deleteMany", {flag: {"$ne": True}}),
    ]
    share = old / max(profile.count, 1)
    return Finding(
        collection=profile.name,
        path=flag,
        problem="old-versions",
        recommendation="document-versioning",
        severity="medium",
        summary=(
            f"Every one of the {count(reads)} recorded reads of {profile.name} asks for {flag}: true, and "
            f"{count(old)} of its {count(profile.count)} documents ({share:.0%}) are older versions."
        ),
        evidence={"reads": reads, "older_versions": old, "exact": exact, "share": round(share, 3)},
        change=Change(
            f"Keep only the current versions in {profile.name} and the older ones in {target}: move them now, "
            f"and on each edit insert the version being replaced into {target} before updating the current one.",
            steps,
            None,
        ),
        effect=(
            f"{profile.name} holds {count(profile.count - old)} documents instead of {count(profile.count)}; "
            "its reads and indexes skip no old versions."
        ),
    )
