"""Recorded query shapes that scan or sort in memory, and the index that
serves them: the fields tested for equality, then the sort, then the
ranges (the ESR guideline); a partial index when the shape always selects
the same few values of a status-like field.

A shape counts when it ran at least :data:`foliodb.advisor.context.MIN_RUNS`
times on a collection of at least :data:`foliodb.advisor.context.MIN_DOCS`
documents, and examined :data:`MIN_EXAMINED` documents a run or more while
scanning (``COLLSCAN`` in most runs, or more than :data:`EXAMINED_PER_RETURNED`
examined per document returned) or sorting them in memory.
Status-like: at most :data:`FEW_VALUES` values in the sample, the same
value set in :data:`CONSTANT` of the runs, selecting at most
:data:`PARTIAL_SHARE` of the documents. Shapes whose key is a prefix of
another's share the longer index.

Manual: https://www.mongodb.com/docs/manual/tutorial/equality-sort-range-guideline/ and
https://www.mongodb.com/docs/manual/core/index-partial/
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bson import json_util

from foliodb.advisor.context import MIN_DOCS, MIN_RUNS, Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count
from foliodb.advisor.workload import Shape

EXAMINED_PER_RETURNED = 10
MIN_EXAMINED = 1_000
FEW_VALUES = 10
CONSTANT = 0.9
PARTIAL_SHARE = 0.3

Key = tuple[tuple[str, int], ...]


def rule_collection_scan(ctx: Context) -> Iterator[Finding]:
    wanted: dict[tuple[str, Key, str | None], list[tuple[Shape, str]]] = {}
    partials: dict[tuple[str, Key, str | None], tuple[str, list[Any], float]] = {}
    for shape in ctx.shapes:
        profile = ctx.profiles.get(shape.collection)
        if profile is None or profile.count < MIN_DOCS or shape.runs < MIN_RUNS:
            continue
        problem = _problem(shape)
        if problem is None:
            continue
        key = tuple(shape.index_key())
        partial = _partial(shape, profile)
        name = None
        if partial is not None:
            name = partial[0]
            key = tuple(k for k in key if k[0] != name) or ((name, 1),)
            partials[(shape.collection, key, name)] = partial
        wanted.setdefault((shape.collection, key, name), []).append((shape, problem))
    for collection, key, name in list(wanted):
        longer = [
            k for c, k, n in wanted if c == collection and n == name and len(k) > len(key) and k[: len(key)] == key
        ]
        if longer:
            wanted[(collection, longer[0], name)] += wanted.pop((collection, key, name))
    for (collection, key, name), served in wanted.items():
        profile = ctx.profiles[collection]
        partial = partials.get((collection, key, name))
        if _served_by_existing(profile, key, partial):
            continue
        yield _finding(profile, key, partial, served)


def _problem(shape: Shape) -> str | None:
    examined = shape.docs_examined / shape.runs
    if examined < MIN_EXAMINED:
        return None
    scanning = shape.plans.get("COLLSCAN", 0) >= shape.runs / 2
    # An index that filters but cannot give the order reads every match to sort it: the sort is the problem.
    if not scanning and shape.sort and shape.sort_stages >= shape.runs / 2:
        return "in-memory-sort"
    if scanning or shape.docs_examined > EXAMINED_PER_RETURNED * max(shape.returned, 1):
        return "collection-scan"
    return None


def _partial(shape: Shape, profile: CollectionProfile) -> tuple[str, list[Any], float] | None:
    """(field, values, share of documents) when one equality field always selects the same few values."""
    for name in shape.equality:
        seen = shape.values.get(name)
        stats = profile.fields.get(name)
        if not seen or stats is None or len(set(map(repr, stats.values))) > FEW_VALUES:
            continue
        text, runs = seen.most_common(1)[0]
        if runs < CONSTANT * shape.runs:
            continue
        value = json_util.loads(text)
        values = value if isinstance(value, list) else [value]
        share = sum(1 for d in profile.documents if d.get(name) in values) / max(len(profile.documents), 1)
        if share <= PARTIAL_SHARE:
            return name, values, share
    return None


def _partial_filter(partial: tuple[str, list[Any], float]) -> dict[str, Any]:
    name, values, _ = partial
    return {name: {"$in": values}} if len(values) > 1 else {name: values[0]}


def _served_by_existing(profile: CollectionProfile, key: Key, partial: tuple[str, list[Any], float] | None) -> bool:
    for index in profile.indexes:
        if tuple(index.get("key", {}).items())[: len(key)] != key:
            continue
        existing = index.get("partialFilterExpression")
        if existing is None or (partial is not None and existing == _partial_filter(partial)):
            return True
    return False


def _finding(
    profile: CollectionProfile, key: Key, partial: tuple[str, list[Any], float] | None, served: list[tuple[Shape, str]]
) -> Finding:
    shapes = [s for s, _ in served]
    problem = "collection-scan" if any(p == "collection-scan" for _, p in served) else "in-memory-sort"
    runs = sum(s.runs for s in shapes)
    examined = sum(s.docs_examined for s in shapes)
    returned = sum(s.returned for s in shapes)
    spec = dict(key)
    options: dict[str, Any] = {"partialFilterExpression": _partial_filter(partial)} if partial else {}
    command = call(profile.name, "createIndex", spec, options) if options else call(profile.name, "createIndex", spec)
    what = "scanned" if problem == "collection-scan" else "sorted in memory"
    evidence: dict[str, Any] = {
        "runs": runs,
        "docs_examined_avg": round(examined / runs),
        "returned_avg": round(returned / runs, 1),
        "in_memory_sorts": sum(s.sort_stages for s in shapes),
        "plans": sorted({plan for s in shapes for plan in s.plans}),
        "shapes": [
            {"equality": list(s.equality), "sort": [list(x) for x in s.sort], "range": list(s.ranges)} for s in shapes
        ],
        "example": shapes[0].example,
        "documents": profile.count,
    }
    if partial:
        evidence["partial_share"] = round(partial[2], 3)
    return Finding(
        collection=profile.name,
        path=partial[0] if partial else key[0][0],
        problem=problem,
        recommendation="partial-index" if partial else "compound-index",
        severity="medium",
        summary=(
            f"{count(runs)} queries of {len(shapes)} shape(s) {what}: {count(examined / runs)} documents "
            f"examined per run to return {count(returned / runs)}."
        ),
        evidence=evidence,
        change=Change(
            "Create the index in equality, sort, range order"
            + (f", over only the {partial[2]:.0%} of documents the queries select." if partial else "."),
            [command],
            {"key": spec, **options},
        ),
        effect=(
            f"Each run reads about {count(max(returned / runs, 1))} index entries and documents instead of "
            f"{count(examined / runs)}" + (", in index order (no sort)." if shapes[0].sort else ".")
        ),
    )
