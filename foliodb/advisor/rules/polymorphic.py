"""One kind of thing split across collections that requests read together:
cars, trucks and motorcycles each in a collection, and every garage page
asking all three the same question. The polymorphic pattern keeps them in
one collection with a field naming the kind, so one query (and one index)
answers.

Fires when, in at least :data:`foliodb.advisor.context.MIN_RUNS` requests
(one identity's consecutive operations, each within
:data:`foliodb.advisor.joins.JOIN_WINDOW` of the one before), the same
filter, values and all, is sent to two collections or more, and each of
those collections shares at least :data:`SHARED` of its fields (the ones
most of its documents have) with all the others.

The change only adds: a new collection holding every document with its
kind, and the indexes the old collections have; the application then reads
it, and the old collections go (said, not run).

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/polymorphic-schema-pattern/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from bson import json_util

from foliodb.advisor.context import MIN_RUNS, Context
from foliodb.advisor.joins import requests
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import Command, call, count

SHARED = 2 / 3
COMMON = 0.5  # a field most documents have


def rule_split_collections(ctx: Context) -> Iterator[Finding]:
    together: Counter[tuple[str, ...]] = Counter()
    fields_asked: dict[tuple[str, ...], Counter[str]] = {}
    for request in requests(ctx.workload):
        by_filter: dict[str, set[str]] = {}
        tested: dict[str, tuple[str, ...]] = {}
        for op in request:
            if op.kind in ("find", "count") and op.filter:
                text = json_util.dumps(op.filter, sort_keys=True)
                by_filter.setdefault(text, set()).add(op.collection)
                tested[text] = tuple(op.filter)
        for text, names in by_filter.items():
            if len(names) >= 2 and all(n in ctx.profiles for n in names):
                group = tuple(sorted(names))
                together[group] += 1
                fields_asked.setdefault(group, Counter()).update(tested[text])
    for group, runs in together.items():
        if runs < MIN_RUNS:
            continue
        profiles = [ctx.profiles[name] for name in group]
        common = [_common_fields(p) for p in profiles]
        shared = set.intersection(*common)
        if any(len(shared) < SHARED * len(own) for own in common):
            continue
        yield _finding(profiles, runs, shared, fields_asked[group])


def _common_fields(profile: CollectionProfile) -> set[str]:
    sampled = max(len(profile.documents), 1)
    return {
        s.path
        for s in profile.fields.values()
        if "." not in s.path and s.path != "_id" and s.present >= COMMON * sampled
    }


def _finding(profiles: list[CollectionProfile], runs: int, shared: set[str], asked: Counter[str]) -> Finding:
    names = [p.name for p in profiles]
    target = "_".join(names)
    kind = next(k for k in ("kind", "type", "_kind") if all(k not in p.fields for p in profiles))
    steps: list[Command] = [
        call(name, "aggregate", [{"$set": {kind: name}}, {"$merge": {"into": target, "whenMatched": "fail"}}])
        for name in names
    ]
    keys: dict[str, dict[str, Any]] = {}
    for profile in profiles:
        for index in profile.indexes:
            if index.get("name") != "_id_":
                options = {k: index[k] for k in ("unique", "sparse", "partialFilterExpression") if k in index}
                keys.setdefault(json_util.dumps(index["key"]), {"key": dict(index["key"]), "options": options})
    for spec in keys.values():
        args = (spec["key"], spec["options"]) if spec["options"] else (spec["key"],)
        steps.append(call(target, "createIndex", *args))
    documents = sum(p.count for p in profiles)
    path = asked.most_common(1)[0][0]
    return Finding(
        collection=names[0],
        path=path,
        problem="split-collections",
        recommendation="polymorphic",
        severity="medium",
        summary=(
            f"{count(runs)} requests asked {', '.join(names)} the same question (by {path}): one kind of "
            f"thing in {len(names)} collections sharing {len(shared)} fields."
        ),
        evidence={
            "requests": runs,
            "collections": {p.name: p.count for p in profiles},
            "shared_fields": sorted(shared),
            "filter_fields": dict(asked),
        },
        change=Change(
            f"Keep them in one collection, {target}, each document with its {kind} ({', '.join(names)}): copy "
            f"them there with their indexes, read {target} with one query, then drop the "
            f"{len(names)} collections (not run here: the application moves first).",
            steps,
            {kind: names[0], **{f: "..." for f in sorted(shared)[:4]}},
        ),
        effect=f"One query instead of {len(names)} per request, over one index of {count(documents)} documents.",
    )
