"""The terminal report: per database, each finding worst first with its
severity, codes, evidence, the change (its commands), how it was proven (or
the question it became) and the effect; then the workload's costliest
query shapes, always, so "nothing to change" never hides a slow query."""

from __future__ import annotations

import json
from typing import Any

from foliodb.advisor.report import Report, ShapeCost
from foliodb.advisor.shell import count, millis


def render_text(report: Report) -> str:
    data = report.as_json()
    collections = len(report.collections)
    head = f"{report.database}: {count(collections)} collection{'s' if collections != 1 else ''}, "
    head += f"{count(report.operations)} profiled operation{'s' if report.operations != 1 else ''}"
    if not report.findings:
        lines = [head + ": nothing to change."]
    else:
        lines = [head + f": {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''}"]
    for n, finding in enumerate(data["findings"], 1):
        where = finding["collection"] + (f".{finding['path']}" if finding["path"] else "")
        lines.append("")
        lines.append(
            f"{n}. [{finding['severity'].upper()}] {where}: {finding['problem']} -> {finding['recommendation']}"
        )
        lines.append(f"   {finding['summary']}")
        lines.append(f"   evidence: {_evidence(finding['evidence'])}")
        if finding["question"]:
            lines.append(f"   question: {finding['question']}")
        else:
            lines.append(f"   change: {finding['change']['description']}")
            lines.extend(f"     {command}" for command in finding["change"]["commands"])
        if finding["proof"]:
            lines.append(f"   proof: {_proof(finding['proof'])}")
        lines.append(f"   effect: {finding['effect']}")
    lines += _workload(report.costliest)
    lines += _schemas(report)
    return "\n".join(lines)


def _evidence(evidence: dict[str, Any]) -> str:
    parts = []
    for key, value in evidence.items():
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        parts.append(f"{key}={text if len(text) <= 80 else text[:77] + '...'}")
    return ", ".join(parts)


def _proof(proof: dict[str, Any]) -> str:
    if proof["status"] == "nothing-to-run":
        return "nothing to run (the commands are what the application writes from now on)"
    tried = (
        f"{proof['commands_run']} command(s) run on a copy of {count(proof['documents'])} documents, "
        f"{proof['queries_replayed']} profiled queries replayed"
    )
    if proof["status"] == "refused":
        return f"refused: {proof['reason']}"
    return f"{tried}: {proof['unchanged']} answer as before, {proof['altered']} as the change says"


def _workload(costs: list[ShapeCost]) -> list[str]:
    if not costs:
        return ["", "costliest query shapes: none recorded (turn the profiler on: db.setProfilingLevel(2))"]
    lines = [
        "",
        "costliest query shapes:",
        f"  {'total':>8} {'runs':>7} {'median':>8} {'examined/returned':>18}  shape",
    ]
    for cost in costs:
        lines.append(
            f"  {millis(cost.millis):>8} {count(cost.runs):>7} {millis(cost.median_millis):>8} "
            f"{count(cost.examined_per_returned):>18}  {cost.collection}: {cost.shape}"
            + (f"  [{', '.join(cost.plans)}]" if cost.plans else "")
        )
    return lines


def _schemas(report: Report) -> list[str]:
    lines = ["", "schemas ($jsonSchema every document passes; --json has the validators):"]
    for summary in report.collections:
        schema = summary.schema
        if schema is None:
            continue
        parts = [f"checked on the {schema.checked}"]
        if schema.optional:
            shown = ", ".join(schema.optional[:6]) + (", ..." if len(schema.optional) > 6 else "")
            parts.append(f"optional: {shown}")
        for name, values in schema.versions.items():
            parts.append(f"{name}: " + ", ".join(f"{v} ({count(n)})" for v, n in values.items()))
        for rule in schema.stricter:
            parts.append(f"'{rule.rule}' would reject {count(rule.failing)}" + ("" if rule.exact else " sampled"))
        lines.append(f"  {summary.name}: " + "; ".join(parts))
    return lines
