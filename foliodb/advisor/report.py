"""What the advisor says about one database, as data: the findings, and the
statistics the reports draw (collection sizes, array lengths, relations).

:meth:`Report.as_json` is the published JSON; :data:`REPORT_SCHEMA` is its
JSON Schema (docs/advisor.md shows the same schema, and a test keeps them
equal). Values from the database (ids, dates) are written as MongoDB
Extended JSON (relaxed), so an ObjectId reads ``{"$oid": "..."}``.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

from bson import json_util

from foliodb.advisor.codes import PROBLEMS, RECOMMENDATIONS, SEVERITIES, severity_rank


@dataclass
class Change:
    """The concrete change: what to do, the commands that do it, an example document or index."""

    description: str
    commands: list[str] = field(default_factory=list)
    example: Any = None


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
            "evidence": _plain(self.evidence),
            "change": {
                "description": self.change.description,
                "commands": list(self.change.commands),
                "example": _plain(self.change.example),
            },
            "effect": self.effect,
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
class CollectionSummary:
    name: str
    documents: int
    avg_bytes: int
    max_bytes: int
    sampled: int
    sizes: list[Bin]
    arrays: list[ArraySummary]
    indexes: int


@dataclass
class RelationSummary:
    source: str
    path: str
    target: str
    many: bool  # the path holds several references per document


@dataclass
class Report:
    database: str
    findings: list[Finding]
    collections: list[CollectionSummary]
    relations: list[RelationSummary]
    operations: int  # profile entries read
    window: tuple[datetime.datetime, datetime.datetime] | None  # first and last profiled operation

    def at_least(self, level: str) -> Report:
        """The same report with only the findings of ``level`` or worse."""
        floor = severity_rank(level)
        kept = [f for f in self.findings if severity_rank(f.severity) >= floor]
        return Report(self.database, kept, self.collections, self.relations, self.operations, self.window)

    def as_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "findings": [f.as_json() for f in self.findings],
            "collections": [
                {
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
                }
                for c in self.collections
            ],
            "relations": [
                {"source": r.source, "path": r.path, "target": r.target, "many": r.many} for r in self.relations
            ],
            "workload": {
                "operations": self.operations,
                "first": self.window[0].isoformat() if self.window else None,
                "last": self.window[1].isoformat() if self.window else None,
            },
        }


def _bin(b: Bin) -> dict[str, int]:
    return {"from": b.low, "to": b.high, "count": b.count}


def _plain(value: Any) -> Any:
    """JSON-ready: BSON values (ObjectId, datetime, Decimal128) as relaxed Extended JSON."""
    return json.loads(json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS))


_BINS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["from", "to", "count"],
        "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}, "count": {"type": "integer"}},
        "additionalProperties": False,
    },
}

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "foliodb advise --json",
    "description": "One object per database advised.",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["database", "findings", "collections", "relations", "workload"],
        "additionalProperties": False,
        "properties": {
            "database": {"type": "string"},
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": [
                        "collection",
                        "path",
                        "problem",
                        "recommendation",
                        "severity",
                        "summary",
                        "evidence",
                        "change",
                        "effect",
                    ],
                    "additionalProperties": False,
                    "properties": {
                        "collection": {"type": "string"},
                        "path": {"type": ["string", "null"]},
                        "problem": {"enum": sorted(PROBLEMS)},
                        "recommendation": {"enum": sorted(RECOMMENDATIONS)},
                        "severity": {"enum": list(SEVERITIES)},
                        "summary": {"type": "string"},
                        "evidence": {"type": "object"},
                        "change": {
                            "type": "object",
                            "required": ["description", "commands", "example"],
                            "additionalProperties": False,
                            "properties": {
                                "description": {"type": "string"},
                                "commands": {"type": "array", "items": {"type": "string"}},
                                "example": {},
                            },
                        },
                        "effect": {"type": "string"},
                    },
                },
            },
            "collections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": [
                        "name",
                        "documents",
                        "avg_bytes",
                        "max_bytes",
                        "sampled",
                        "indexes",
                        "size_histogram",
                        "arrays",
                    ],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string"},
                        "documents": {"type": "integer"},
                        "avg_bytes": {"type": "integer"},
                        "max_bytes": {"type": "integer"},
                        "sampled": {"type": "integer"},
                        "indexes": {"type": "integer"},
                        "size_histogram": _BINS,
                        "arrays": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["path", "sampled", "median", "longest", "length_histogram"],
                                "additionalProperties": False,
                                "properties": {
                                    "path": {"type": "string"},
                                    "sampled": {"type": "integer"},
                                    "median": {"type": "number"},
                                    "longest": {"type": "integer"},
                                    "length_histogram": _BINS,
                                },
                            },
                        },
                    },
                },
            },
            "relations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["source", "path", "target", "many"],
                    "additionalProperties": False,
                    "properties": {
                        "source": {"type": "string"},
                        "path": {"type": "string"},
                        "target": {"type": "string"},
                        "many": {"type": "boolean"},
                    },
                },
            },
            "workload": {
                "type": "object",
                "required": ["operations", "first", "last"],
                "additionalProperties": False,
                "properties": {
                    "operations": {"type": "integer"},
                    "first": {"type": ["string", "null"]},
                    "last": {"type": ["string", "null"]},
                },
            },
        },
    },
}
