"""Advise one database: profile its collections, find the relations between
them, read the workload, run every rule, prove each change on a scratch copy
(:mod:`foliodb.advisor.proof`), and order what they found (worst first).
Reads only; needs only a pymongo-compatible ``Database``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from foliodb.advisor.codes import severity_rank
from foliodb.advisor.context import Context
from foliodb.advisor.costs import costliest
from foliodb.advisor.joins import find_joins
from foliodb.advisor.proof import Scratch, prove
from foliodb.advisor.relations import find_relations
from foliodb.advisor.report import ArraySummary, CollectionSummary, Finding, RelationSummary, Report, log2_bins
from foliodb.advisor.rules import RULES
from foliodb.advisor.sampling import CollectionProfile, add_extreme_values, measure_extremes, sample_collection
from foliodb.advisor.schema import infer_schema
from foliodb.advisor.workload import read_workload, shapes

DEFAULT_SAMPLE = 1000


def advise(database: Any, sample: int = DEFAULT_SAMPLE, progress: Callable[[str], None] | None = None) -> Report:
    """The findings for ``database`` (a pymongo-style Database); ``progress`` hears each collection's name."""
    started = time.perf_counter()
    names = sorted(
        info["name"]
        for info in database.list_collections()
        if info.get("type", "collection") in ("collection", "timeseries") and not info["name"].startswith("system.")
    )
    profiles: dict[str, CollectionProfile] = {}
    for name in names:
        if progress is not None:
            progress(name)
        profiles[name] = sample_collection(database, name, sample)
    relations = find_relations(database, profiles)
    for profile in profiles.values():
        candidates = [ref for r in relations if r.target == profile.name for ref, _ in r.hot]
        measure_extremes(database, profile, candidates)
    if any([add_extreme_values(database, p) for p in profiles.values()]):
        relations = find_relations(database, profiles)  # again: the longest arrays' values are in now
    workload = read_workload(database, names)
    ctx = Context(database, profiles, relations, workload, shapes(workload), find_joins(database, workload, relations))
    findings: dict[tuple[str, str | None, str], Finding] = {}
    for rule in RULES.values():
        for finding in rule(ctx):
            # One finding per problem at a path: the first rule to see it says it.
            findings.setdefault((finding.collection, finding.path, finding.problem), finding)
    scratch = Scratch()
    try:
        for finding in findings.values():
            prove(ctx, finding, scratch)
    finally:
        scratch.close()
    ordered = sorted(findings.values(), key=lambda f: (-severity_rank(f.severity), f.collection, f.path or ""))
    return Report(
        database=database.name,
        findings=ordered,
        collections=[_summary(database, p) for p in profiles.values()],
        relations=[RelationSummary(r.source, r.path, r.target, r.many) for r in relations],
        operations=len(workload.operations),
        window=workload.window,
        costliest=costliest(workload),
        seconds=time.perf_counter() - started,
    )


def _summary(database: Any, profile: CollectionProfile) -> CollectionSummary:
    return CollectionSummary(
        name=profile.name,
        documents=profile.count,
        avg_bytes=round(profile.avg_bytes),
        max_bytes=profile.max_bytes(),
        sampled=len(profile.documents),
        sizes=log2_bins(profile.sizes),
        arrays=[
            ArraySummary(
                s.path,
                len(s.array_lengths),
                float(statistics.median(s.array_lengths)),
                profile.longest_length(s.path),
                log2_bins(s.array_lengths),
            )
            for s in profile.array_paths()
        ],
        indexes=len(profile.indexes),
        schema=infer_schema(database, profile) if profile.documents else None,
    )
