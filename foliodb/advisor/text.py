"""The terminal report: per database, each finding worst first with its
severity, codes, evidence, the change (its commands) and the effect."""

from __future__ import annotations

import json
from typing import Any

from foliodb.advisor.report import Report
from foliodb.advisor.shell import count


def render_text(report: Report) -> str:
    data = report.as_json()
    collections = len(report.collections)
    head = f"{report.database}: {count(collections)} collection{'s' if collections != 1 else ''}, "
    head += f"{count(report.operations)} profiled operation{'s' if report.operations != 1 else ''}"
    if not report.findings:
        return head + ": nothing to change."
    lines = [head + f": {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''}"]
    for n, finding in enumerate(data["findings"], 1):
        where = finding["collection"] + (f".{finding['path']}" if finding["path"] else "")
        lines.append("")
        lines.append(
            f"{n}. [{finding['severity'].upper()}] {where}: {finding['problem']} -> {finding['recommendation']}"
        )
        lines.append(f"   {finding['summary']}")
        lines.append(f"   evidence: {_evidence(finding['evidence'])}")
        lines.append(f"   change: {finding['change']['description']}")
        lines.extend(f"     {command}" for command in finding["change"]["commands"])
        lines.append(f"   effect: {finding['effect']}")
    return "\n".join(lines)


def _evidence(evidence: dict[str, Any]) -> str:
    parts = []
    for key, value in evidence.items():
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        parts.append(f"{key}={text if len(text) <= 80 else text[:77] + '...'}")
    return ", ".join(parts)
