"""An embedded array far larger than the part the reads use (every review
embedded in a product whose page shows the latest ten): every read of the
document still brings the whole array into memory, so the working set is
mostly data nobody reads. The subset pattern keeps the part that is read
embedded (``$push`` with ``$each`` and ``$slice``) and the rest in a
collection of its own.

Fires on an array of sub-documents (shorter than
:data:`foliodb.advisor.rules.unbounded_arrays.LONG_ARRAY`, where the
unbounded-array rule speaks) holding at least :data:`BULK` of its
documents' bytes, in documents of :data:`MIN_BYTES` or more on average,
when at least :data:`SLICED` of the reads of the collection (at least
:data:`foliodb.advisor.context.MIN_RUNS`) project only a ``$slice`` of it
(or leave it out), and the kept part is at most half the median array.

The change copies the elements into their own collection first, then
trims each array to the part the reads show; the proof replays the reads,
so a read of the whole array refuses it.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/subset-pattern/
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping
from typing import Any

import bson

from foliodb.advisor.context import MIN_RUNS, Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.rules.unbounded_arrays import LONG_ARRAY
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count, size
from foliodb.advisor.workload import Operation

BULK = 0.5
MIN_BYTES = 4096
SLICED = 0.8


def rule_unread_array(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if profile.avg_bytes < MIN_BYTES:
            continue
        reads = [op for op in ctx.workload.on(profile.name) if op.kind == "find"]
        if len(reads) < MIN_RUNS:
            continue
        for stats in profile.array_paths():
            if "." in stats.path or stats.under_array or stats.share("array") < 0.9:
                continue
            if stats.element_types.get("object", 0) < 0.9 * sum(stats.element_types.values()):
                continue
            if profile.longest_length(stats.path) >= LONG_ARRAY:
                continue
            shown = [_shown(op, stats.path) for op in reads]
            partial = [s for s in shown if s is not None]
            if len(partial) < SLICED * len(reads):
                continue
            kept = max((abs(s) for s in partial if s), default=0)
            median = statistics.median(stats.array_lengths)
            share = _share(profile, stats.path)
            if share < BULK or kept > median / 2:
                continue
            slices = [s for s in partial if s]
            newest = sum(1 for s in slices if s < 0) >= len(slices) / 2 if slices else True
            yield _finding(profile, stats.path, len(reads), len(partial), kept, newest, median, share)


def _shown(op: Operation, path: str) -> int | None:
    """How much of the array a find returns: the $slice (negative: the last ones), 0 when left out,
    None when the whole array."""
    projection = op.projection
    spec = projection.get(path)
    if isinstance(spec, Mapping) and "$slice" in spec:
        value = spec["$slice"]
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            return int(value[0]) + int(value[1]) if value[0] >= 0 else int(value[0])
        return int(value) if isinstance(value, int) else None
    if not projection:
        return None
    if spec in (0, False):
        return 0
    included = [k for k, v in projection.items() if k != "_id" and v not in (0, False)]
    excluding = any(v in (0, False) for k, v in projection.items() if k != "_id")
    if not excluding and not any(k == path or k.startswith(path + ".") for k in included):
        return 0  # an inclusion projection (or _id alone) without the array
    return None


def _share(profile: CollectionProfile, path: str) -> float:
    """The share of the sampled documents' bytes the array holds."""
    total = array = 0
    for doc in profile.documents:
        total += len(bson.encode(doc))
        if isinstance(doc.get(path), list):
            array += len(bson.encode({path: doc[path]}))
    return array / max(total, 1)


def _finding(
    profile: CollectionProfile,
    path: str,
    reads: int,
    partial: int,
    kept: int,
    newest: bool,
    median: float,
    share: float,
) -> Finding:
    keep = max(kept, 1)
    parent = f"{profile.name[:-1] if profile.name.endswith('s') else profile.name}_id"
    target = path if path not in (profile.name,) else f"{profile.name}_{path}"
    slice_expr: list[Any] = [f"${path}", -keep] if newest else [f"${path}", keep]
    which = "latest" if newest else "first"
    return Finding(
        collection=profile.name,
        path=path,
        problem="unread-array",
        recommendation="subset",
        severity="medium",
        summary=(
            f"{path} holds {share:.0%} of {profile.name}'s bytes (median {count(median)} elements, documents of "
            f"{size(profile.avg_bytes)} on average), while {count(partial)} of {count(reads)} reads show at most "
            f"the {which} {count(kept)}."
        ),
        evidence={
            "reads": reads,
            "reads_showing_part": partial,
            "shown": kept,
            "median_length": median,
            "longest": profile.longest_length(path),
            "array_share_of_bytes": round(share, 3),
            "avg_bytes": round(profile.avg_bytes),
        },
        change=Change(
            f"Copy every element of {path} into {target} ({{{parent}, ...}}, indexed), keep only the {which} "
            f"{keep} in {profile.name} ($push with $each and $slice from now on), and read the rest from {target} "
            "when asked for.",
            [
                call(
                    profile.name,
                    "aggregate",
                    [
                        {"$project": {path: 1}},
                        {"$unwind": f"${path}"},
                        {"$replaceWith": {"$mergeObjects": [f"${path}", {parent: "$_id"}]}},
                        {"$merge": {"into": target, "whenMatched": "fail"}},
                    ],
                ),
                call(target, "createIndex", {parent: 1}),
                call(
                    profile.name, "updateMany", {path: {"$type": "array"}}, [{"$set": {path: {"$slice": slice_expr}}}]
                ),
                call(
                    profile.name,
                    "updateOne",
                    {"_id": "<id>"},
                    {"$push": {path: {"$each": ["<new>"], "$slice": -keep if newest else keep}}},
                ),
            ],
            {"_id": "<id>", path: [f"... the {which} {keep} ..."]},
        ),
        effect=(
            f"Documents shrink to about {size(profile.avg_bytes * (1 - share * (1 - keep / max(median, 1))))}; "
            "the working set holds what the reads show."
        ),
    )
