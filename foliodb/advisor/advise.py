"""Run every rule over one database and render the result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from foliodb.advisor import rules
from foliodb.advisor.rules import Recommendation
from foliodb.advisor.sampling import CollectionSample, sample_collection
from foliodb.advisor.workload import Shape, index_advice, query_shape, shapes_from_profile

DEFAULT_SAMPLE = 1000
# Most pressing first: limits break writes, the rest cost performance.
_ORDER = {"limit": 0, "reference": 1, "bucket": 2, "index": 3, "embed": 4, "denormalize": 5, "drop-index": 6}


def advise(
    database: Any,
    sample_size: int = DEFAULT_SAMPLE,
    queries: Iterable[tuple[str, dict[str, Any], dict[str, Any] | None]] = (),
) -> list[Recommendation]:
    """Recommendations for ``database`` (a pymongo-style Database).

    ``queries`` adds workload the profiler did not record, as
    ``(collection, filter, sort)``; each counts as one run that examined
    the whole collection (the advisor cannot know which index it would use).
    """
    names = [
        info["name"]
        for info in database.list_collections()
        if info.get("type", "collection") == "collection" and not info["name"].startswith("system.")
    ]
    samples: dict[str, CollectionSample] = {name: sample_collection(database, name, sample_size) for name in names}
    references = rules.find_references(database, samples)
    found: list[Recommendation] = []
    for sample in samples.values():
        found += rules.document_size(sample)
        found += rules.growing_arrays(sample, references)
        found += rules.child_references(database, sample, references)
        found += rules.denormalized_copies(database, sample, references, samples)
        found += rules.time_series(database, sample)
        found += rules.redundant_indexes(sample)
    shapes = shapes_from_profile(database) + _given_shapes(samples, queries)
    index_keys = {(r.collection, r.action) for r in found if r.kind == "index"}
    found += [r for r in index_advice(database, shapes) if (r.collection, r.action) not in index_keys]
    return sorted(found, key=lambda r: (_ORDER.get(r.kind, 9), r.collection))


def _given_shapes(
    samples: dict[str, CollectionSample], queries: Iterable[tuple[str, dict[str, Any], dict[str, Any] | None]]
) -> list[Shape]:
    shapes = []
    for collection, filter_spec, sort in queries:
        shape = query_shape(collection, filter_spec, sort)
        shape.runs = 1
        shape.examined = samples[collection].count if collection in samples else 0
        shape.example = {"filter": filter_spec, "sort": sort or {}}
        shapes.append(shape)
    return shapes


def render(database_name: str, recommendations: list[Recommendation]) -> str:
    if not recommendations:
        return f"{database_name}: nothing to recommend."
    count = len(recommendations)
    lines = [f"{database_name}: {count} recommendation{'' if count == 1 else 's'}"]
    for n, rec in enumerate(recommendations, 1):
        lines.append(f"\n{n}. [{rec.kind}] {rec.collection}: {rec.message}")
        if rec.action:
            lines.append(f"   do: {rec.action}")
        evidence = ", ".join(f"{key}={value}" for key, value in rec.evidence.items())
        lines.append(f"   evidence: {evidence}")
    return "\n".join(lines)
