"""Many similar fields, each in a few documents, each queried on its own:
the attribute pattern moves them into one array of key-value pairs under
one compound index (``attrs: [{k: "ram_gb", v: 32}]``, ``{"attrs.k": 1,
"attrs.v": 1}``), so a new attribute needs neither an index nor a
migration, and one index serves every attribute query.

Fires on a group of fields (the fields of one sub-document, or the
top-level fields) holding at least :data:`MIN_SPARSE` fields that each
appear in fewer than :data:`SPARSE` of the sampled documents, when the
workload queries at least :data:`MIN_QUERIED` of them, at least
:data:`foliodb.advisor.context.MIN_RUNS` times in all. Fields named by
numbers (a map of minutes, of positions) are not attributes.

The change only adds: the pairs beside the fields, and their index. The
queries move to ``{attrs: {$elemMatch: {k: ..., v: ...}}}``; then the old
fields and their indexes go (said, not run: the application must move
first).

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/attribute-pattern/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import MIN_RUNS, Context
from foliodb.advisor.kinds import tests
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count

SPARSE = 0.5
MIN_SPARSE = 6
MIN_QUERIED = 3


def rule_sparse_attributes(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        sampled = max(len(profile.documents), 1)
        groups: dict[str, list[str]] = {}
        for stats in profile.fields.values():
            if stats.under_array or stats.array_lengths or stats.types.get("object"):
                continue
            parent, _, leaf = stats.path.rpartition(".")
            if leaf.isdigit() or leaf == "_id" or stats.present >= SPARSE * sampled:
                continue
            groups.setdefault(parent, []).append(stats.path)
        if not groups:
            continue
        queried: Counter[str] = Counter()
        for op in ctx.workload.on(profile.name):
            for path, _ in tests(op.filter, ""):
                queried[path] += 1
        for parent, fields in groups.items():
            asked = {f: queried[f] for f in fields if queried[f]}
            if len(fields) >= MIN_SPARSE and len(asked) >= MIN_QUERIED and sum(asked.values()) >= MIN_RUNS:
                yield _finding(ctx, profile, parent, fields, asked)


def _finding(
    ctx: Context, profile: CollectionProfile, parent: str, fields: list[str], asked: dict[str, int]
) -> Finding:
    sampled = max(len(profile.documents), 1)
    pairs = "attrs" if "attrs" not in profile.fields else "attributes"
    indexed = [
        index["name"]
        for index in profile.indexes
        if next(iter(index["key"])) in fields and "partialFilterExpression" not in index
    ]
    leaves = {f: f.rpartition(".")[2] for f in fields}
    if parent:
        build: Any = {"$objectToArray": f"${parent}"}
        selector: dict[str, Any] = {parent: {"$type": "object"}}
    else:
        build = {"$filter": {"input": {"$objectToArray": "$$ROOT"}, "cond": {"$in": ["$$this.k", sorted(fields)]}}}
        selector = {"$or": [{f: {"$exists": True}} for f in sorted(fields)]}
    example_field = max(asked, key=asked.__getitem__)
    example_test = next(
        (c for op in ctx.workload.on(profile.name) for p, c in tests(op.filter, "") if p == example_field), None
    )
    rewritten = {pairs: {"$elemMatch": {"k": leaves[example_field], "v": example_test}}}
    where = parent or "the top level"
    return Finding(
        collection=profile.name,
        path=parent or next(iter(asked)),
        problem="sparse-attributes",
        recommendation="attribute",
        severity="medium",
        summary=(
            f"{where} holds {len(fields)} fields that each appear in few documents "
            f"({min(profile.fields[f].present for f in fields) / sampled:.0%} to "
            f"{max(profile.fields[f].present for f in fields) / sampled:.0%}); the queries test "
            f"{len(asked)} of them ({count(sum(asked.values()))} queries)"
            + (f", with an index each ({len(indexed)} indexes)." if indexed else ".")
        ),
        evidence={
            "fields": len(fields),
            "presence": {f: round(profile.fields[f].present / sampled, 3) for f in sorted(fields)},
            "queried": asked,
            "indexes_on_them": indexed,
            "query_before": {example_field: example_test},
            "query_after": rewritten,
        },
        change=Change(
            f"Keep the attributes as pairs in {pairs} ([{{k, v}}], one index on {pairs}.k and {pairs}.v), built "
            f"beside {where}; query them with $elemMatch ({{{pairs}: {{$elemMatch: {{k: "
            f'"{leaves[example_field]}", v: ...}}}}}}). Once the application reads {pairs}, drop the '
            + (f"{len(indexed)} per-field indexes and " if indexed else "")
            + "the old fields (not run here: the application moves first).",
            [
                call(profile.name, "updateMany", selector, [{"$set": {pairs: build}}]),
                call(profile.name, "createIndex", {f"{pairs}.k": 1, f"{pairs}.v": 1}),
            ],
            {pairs: [{"k": leaves[f], "v": "..."} for f in list(asked)[:3]]},
        ),
        effect=(
            "One index serves every attribute query"
            + (f" instead of {len(indexed)}" if indexed else "")
            + "; a new attribute needs no index and no migration."
        ),
    )
