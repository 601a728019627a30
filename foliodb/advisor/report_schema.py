"""The JSON Schema of ``foliodb advise --json`` (:meth:`foliodb.advisor.report.Report.as_json`,
one element per database). docs/advisor.md shows the same schema; a test keeps them equal."""

from __future__ import annotations

from typing import Any

from foliodb.advisor.codes import PROBLEMS, RECOMMENDATIONS, SEVERITIES


def _object(required: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(required),
        "additionalProperties": False,
        "properties": required,
        **extra,
    }


_INT = {"type": "integer"}
_NUMBER = {"type": "number"}
_STRING = {"type": "string"}
_OPTIONAL_STRING = {"type": ["string", "null"]}
_STRINGS = {"type": "array", "items": _STRING}
_BINS = {"type": "array", "items": _object({"from": _INT, "to": _INT, "count": _INT})}

_COMMAND = _object({"collection": _STRING, "method": _STRING, "args": {"type": "array"}})

_PROOF = _object(
    {
        "status": {"enum": ["proven", "refused", "nothing-to-run"]},
        "documents": _INT,
        "commands_run": _INT,
        "queries_replayed": _INT,
        "unchanged": _INT,
        "altered": _INT,
        "reason": _OPTIONAL_STRING,
        "refused": _STRINGS,
    }
)

_FINDING = _object(
    {
        "collection": _STRING,
        "path": _OPTIONAL_STRING,
        "problem": {"enum": sorted(PROBLEMS)},
        "recommendation": {"enum": sorted(RECOMMENDATIONS)},
        "severity": {"enum": list(SEVERITIES)},
        "summary": _STRING,
        "question": _OPTIONAL_STRING,
        "evidence": {"type": "object"},
        "change": _object(
            {
                "description": _STRING,
                "commands": _STRINGS,
                "run": {"type": "array", "items": _COMMAND},
                "example": {},
                "affects": {
                    "type": "array",
                    "items": _object(
                        {
                            "collection": _STRING,
                            "fields": _STRINGS,
                            "why": _STRING,
                            "gains": {"type": "boolean"},
                            "rewrite": {},
                        }
                    ),
                },
            }
        ),
        "effect": _STRING,
        "proof": {"oneOf": [{"type": "null"}, _PROOF]},
    }
)

_SCHEMA = _object(
    {
        "validator": {"type": "object"},
        "checked": {"enum": ["collection", "sample"]},
        "optional": _STRINGS,
        "versions": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _INT}},
        "stricter": {
            "type": "array",
            "items": _object({"rule": _STRING, "failing": _INT, "exact": {"type": "boolean"}, "examples": {}}),
        },
    }
)

_COLLECTION = _object(
    {
        "name": _STRING,
        "documents": _INT,
        "avg_bytes": _INT,
        "max_bytes": _INT,
        "sampled": _INT,
        "indexes": _INT,
        "size_histogram": _BINS,
        "arrays": {
            "type": "array",
            "items": _object(
                {"path": _STRING, "sampled": _INT, "median": _NUMBER, "longest": _INT, "length_histogram": _BINS}
            ),
        },
        "schema": {"oneOf": [{"type": "null"}, _SCHEMA]},
    }
)

_SHAPE = _object(
    {
        "collection": _STRING,
        "kind": _STRING,
        "shape": _STRING,
        "runs": _INT,
        "total_millis": _INT,
        "median_millis": _NUMBER,
        "docs_examined": _INT,
        "keys_examined": _INT,
        "returned": _INT,
        "examined_per_returned": _NUMBER,
        "plans": _STRINGS,
    }
)

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "foliodb advise --json",
    "description": "One object per database advised.",
    "type": "array",
    "items": _object(
        {
            "database": _STRING,
            "findings": {"type": "array", "items": _FINDING},
            "collections": {"type": "array", "items": _COLLECTION},
            "relations": {
                "type": "array",
                "items": _object({"source": _STRING, "path": _STRING, "target": _STRING, "many": {"type": "boolean"}}),
            },
            "workload": _object(
                {
                    "operations": _INT,
                    "first": _OPTIONAL_STRING,
                    "last": _OPTIONAL_STRING,
                    "costliest": {"type": "array", "items": _SHAPE},
                }
            ),
            "seconds": _NUMBER,
        }
    ),
}
