"""What the advisor says about one database, as data: the findings (each
with the proof of its change), the costliest query shapes of the workload,
and the statistics the reports draw (collection sizes, array lengths,
relations, the schema each collection has).

:meth:`Report.as_json` is the published JSON; :data:`REPORT_SCHEMA` is its
JSON Schema (docs/advisor.md shows the same schema, and a test keeps them
equal). Values from the database (ids, dates) are written as MongoDB
Extended JSON (relaxed), so an ObjectId reads ``{"$oid": "..."}``; the
runnable form of a command (``change.run``) is canonical Extended JSON, so
every BSON type survives.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

from bson import json_util

from foliodb.advisor.codes import PROBLEMS, RECOMMENDATIONS, SEVERITIES, severity_rank
from foliodb.advisor.shell import Command


@dataclass
class Affected:
    """Answers a change alters on purpose: in ``collection``, the documents the queries return
    differ at ``fields`` (``gains``: the queries may also return documents they missed before,
    never fewer), and why; ``rewrite`` shows how a query reads after the change, when it must."""

    collection: str
    fields: list[str]
    why: str
    gains: bool = False
    rewrite: Any = None


@dataclass
class Change:
    """The concrete change: what to do, the commands that do it (:class:`Command`; templates of what
    the application writes are commands too), an example document or index, and the query shapes
    it alters on purpose."""

    description: str
    steps: list[Command] = field(default_factory=list)
    example: Any = None
    affects: list[Affected] = field(default_factory=list)

    @property
    def commands(self) -> list[str]:
        return [step.shell() for step in self.steps]


@dataclass
class Proof:
    """How a change was tried before it was proposed (:mod:`foliodb.advisor.proof`): its commands run
    on a scratch copy of a sample, the profiled queries of the collections it changes replayed
    before and after. ``status``: ``proven`` (every command ran, every replayed query answered as
    before or as the finding's :class:`Affected` says), ``refused`` (a command failed or an answer
    changed: the finding became a question), ``nothing-to-run`` (only templates of what the
    application writes)."""

    status: str
    documents: int = 0  # copied into the scratch database
    commands_run: int = 0
    queries_replayed: int = 0
    unchanged: int = 0
    altered: int = 0  # answers changed as the finding says they will
    reason: str | None = None
    refused: list[str] = field(default_factory=list)  # the commands of a refused change

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "documents": self.documents,
            "commands_run": self.commands_run,
            "queries_replayed": self.queries_replayed,
            "unchanged": self.unchanged,
            "altered": self.altered,
            "reason": self.reason,
            "refused": list(self.refused),
        }


@dataclass
class Finding:
    collection: str
    path: str | None
    problem: str
    recommendation: str
    severity: str
    summary: str
    evidence: dict[str, Any]
    change: Change
    effect: str
    proof: Proof | None = None
    question: str | None = None  # set when the change was refused: what the user must decide, and why

    def __post_init__(self) -> None:
        # A rule that used an unpublished code is a bug: fail where it is made.
        assert self.problem in PROBLEMS, self.problem
        assert self.recommendation in RECOMMENDATIONS, self.recommendation
        assert self.severity in SEVERITIES, self.severity

    @property
    def key(self) -> tuple[str, str | None, str, str]:
        return (self.collection, self.path, self.problem, self.recommendation)

    def as_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "path": self.path,
            "problem": self.problem,
            "recommendation": self.recommendation,
            "severity": self.severity,
            "summary": self.summary,
            "question": self.question,
            "evidence": _plain(self.evidence),
            "change": {
                "description": self.change.description,
                "commands": self.change.commands,
                "run": [step.as_json() for step in self.change.steps if not step.template],
                "example": _plain(self.change.example),
                "affects": [
                    {
                        "collection": a.collection,
                        "fields": list(a.fields),
                        "why": a.why,
                        "gains": a.gains,
                        "rewrite": _plain(a.rewrite),
                    }
                    for a in self.change.affects
                ],
            },
            "effect": self.effect,
            "proof": self.proof.as_json() if self.proof else None,
        }


@dataclass
class Bin:
    low: int  # inclusive
    high: int  # inclusive
    count: int


def log2_bins(values: list[int]) -> list[Bin]:
    """Counts per power-of-two range (0, 1, 2-3, 4-7, ...): sizes and lengths span orders of magnitude."""
    counts: dict[int, int] = {}
    for value in values:
        bucket = value.bit_length()
        counts[bucket] = counts.get(bucket, 0) + 1
    if not counts:
        return []
    return [
        Bin(0 if b == 0 else 1 << (b - 1), 0 if b == 0 else (1 << b) - 1, counts.get(b, 0))
        for b in range(min(counts), max(counts) + 1)
    ]


@dataclass
class ArraySummary:
    path: str
    sampled: int
    median: float
    longest: int  # the longest found, sample and exact checks together
    lengths: list[Bin]


@dataclass
class Stricter:
    """A rule a stricter validator could add, and the documents that break it today."""

    rule: str
    failing: int  # in the sample, or exactly when ``exact``
    exact: bool
    examples: list[Any]


@dataclass
class SchemaSummary:
    """The ``$jsonSchema`` every current document passes (inferred from the sample, checked on the
    collection), the optional paths, the versions or kinds, and what a stricter one would reject."""

    validator: dict[str, Any]
    checked: str  # "collection" (every document passes, counted) or "sample"
    optional: list[str]
    versions: dict[str, dict[str, int]]  # version or kind field -> value -> documents in the sample
    stricter: list[Stricter]


@dataclass
class CollectionSummary:
    name: str
    documents: int
    avg_bytes: int
    max_bytes: int
    sampled: int
    sizes: list[Bin]
    arrays: list[ArraySummary]
    indexes: int
    schema: SchemaSummary | None = None


@dataclass
class RelationSummary:
    source: str
    path: str
    target: str
    many: bool  # the path holds several references per document


@dataclass
class ShapeCost:
    """One query shape of the workload and what it cost over the profile window."""

    collection: str
    kind: str  # find, count, distinct, aggregate, update, delete, findAndModify
    shape: str  # the filter (values as ?), sort, or the pipeline's stages
    runs: int
    millis: int  # total
    median_millis: float
    docs_examined: int
    keys_examined: int
    returned: int
    plans: list[str]

    @property
    def examined_per_returned(self) -> float:
        return round(self.docs_examined / max(self.returned, 1), 1)


@dataclass
class Report:
    database: str
    findings: list[Finding]
    collections: list[CollectionSummary]
    relations: list[RelationSummary]
    operations: int  # profile entries read
    window: tuple[datetime.datetime, datetime.datetime] | None  # first and last profiled operation
    costliest: list[ShapeCost] = field(default_factory=list)  # the workload's query shapes, costliest first
    seconds: float = 0.0  # how long the advice took

    def at_least(self, level: str) -> Report:
        """The same report with only the findings of ``level`` or worse."""
        floor = severity_rank(level)
        kept = [f for f in self.findings if severity_rank(f.severity) >= floor]
        return Report(
            self.database,
            kept,
            self.collections,
            self.relations,
            self.operations,
            self.window,
            self.costliest,
            self.seconds,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "findings": [f.as_json() for f in self.findings],
            "collections": [_collection(c) for c in self.collections],
            "relations": [
                {"source": r.source, "path": r.path, "target": r.target, "many": r.many} for r in self.relations
            ],
            "workload": {
                "operations": self.operations,
                "first": self.window[0].isoformat() if self.window else None,
                "last": self.window[1].isoformat() if self.window else None,
                "costliest": [
                    {
                        "collection": s.collection,
                        "kind": s.kind,
                        "shape": s.shape,
                        "runs": s.runs,
                        "total_millis": s.millis,
                        "median_millis": s.median_millis,
                        "docs_examined": s.docs_examined,
                        "keys_examined": s.keys_examined,
                        "returned": s.returned,
                        "examined_per_returned": s.examined_per_returned,
                        "plans": list(s.plans),
                    }
                    for s in self.costliest
                ],
            },
            "seconds": round(self.seconds, 3),
        }


def _collection(c: CollectionSummary) -> dict[str, Any]:
    schema = c.schema
    return {
        "name": c.name,
        "documents": c.documents,
        "avg_bytes": c.avg_bytes,
        "max_bytes": c.max_bytes,
        "sampled": c.sampled,
        "indexes": c.indexes,
        "size_histogram": [_bin(b) for b in c.sizes],
        "arrays": [
            {
                "path": a.path,
                "sampled": a.sampled,
                "median": a.median,
                "longest": a.longest,
                "length_histogram": [_bin(b) for b in a.lengths],
            }
            for a in c.arrays
        ],
        "schema": None
        if schema is None
        else {
            "validator": _plain(schema.validator),
            "checked": schema.checked,
            "optional": list(schema.optional),
            "versions": schema.versions,
            "stricter": [
                {"rule": s.rule, "failing": s.failing, "exact": s.exact, "examples": _plain(s.examples)}
                for s in schema.stricter
            ],
        },
    }


def _bin(b: Bin) -> dict[str, int]:
    return {"from": b.low, "to": b.high, "count": b.count}


def _plain(value: Any) -> Any:
    """JSON-ready: BSON values (ObjectId, datetime, Decimal128) as relaxed Extended JSON."""
    return json.loads(json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS))
