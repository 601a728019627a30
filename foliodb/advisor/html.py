"""The HTML report: one self-contained page (inline CSS and SVG, no script,
nothing fetched) with, per database, the relationship graph between its
collections, each finding with its evidence and change, and per collection
the histograms of document sizes and array lengths.

The charts carry classes the tests look for: ``svg.relations`` (one
``g.node`` per collection, one ``g.edge`` per relation) and
``svg.histogram`` (``rect.bar`` per bin).
"""

from __future__ import annotations

import json
import math
from html import escape

from foliodb.advisor.report import Bin, CollectionSummary, Report
from foliodb.advisor.shell import count, size

_COLORS = {"critical": "#9b1c1c", "high": "#c2410c", "medium": "#a16207", "low": "#3f6212"}

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1f2933; background: #f5f7fa; }
header { background: #102a43; color: #fff; padding: 18px 32px; }
header h1 { margin: 0; font-size: 22px; }
main { padding: 8px 32px 40px; max-width: 1180px; }
section.database { margin-top: 24px; }
h2 { border-bottom: 2px solid #bcccdc; padding-bottom: 4px; }
.badge { display: inline-block; color: #fff; border-radius: 10px; padding: 1px 9px; font-size: 12px;
  margin-right: 6px; }
.finding { background: #fff; border-left: 6px solid; border-radius: 4px; padding: 10px 16px; margin: 12px 0;
  box-shadow: 0 1px 2px rgba(0,0,0,.08); }
.finding h4 { margin: 2px 0 6px; }
.codes { font-family: ui-monospace, monospace; font-size: 13px; color: #486581; }
table.evidence { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
table.evidence td { border-top: 1px solid #e4e7eb; padding: 2px 10px 2px 0; vertical-align: top; }
table.evidence td:first-child { color: #627d98; white-space: nowrap; }
pre { background: #f0f4f8; padding: 8px; overflow-x: auto; font-size: 12px; white-space: pre-wrap; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; }
.chart { background: #fff; padding: 8px 12px; border-radius: 4px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
.chart h5 { margin: 0 0 4px; font-size: 13px; }
svg text { font: 11px system-ui, sans-serif; fill: #334e68; }
.none { color: #3f6212; font-weight: 600; }
"""


def render_html(reports: list[Report]) -> str:
    body = "".join(_database(report) for report in reports)
    title = "FolioDB schema advice: " + ", ".join(r.database for r in reports)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><header><h1>{escape(title)}</h1></header><main>{body}</main></body></html>\n"
    )


def _database(report: Report) -> str:
    severities: dict[str, int] = {}
    for finding in report.findings:
        severities[finding.severity] = severities.get(finding.severity, 0) + 1
    badges = "".join(
        f'<span class="badge" style="background:{_COLORS[s]}">{n} {s}</span>' for s, n in severities.items()
    )
    window = (
        f", profiled {report.window[0]:%Y-%m-%d %H:%M} to {report.window[1]:%Y-%m-%d %H:%M}" if report.window else ""
    )
    parts = [
        f'<section class="database"><h2>{escape(report.database)}</h2>',
        f"<p>{len(report.collections)} collections, {count(report.operations)} profiled operations{window}. "
        f"{badges}</p>",
        "<h3>Relations</h3>",
        _graph(report),
        "<h3>Findings</h3>",
    ]
    if not report.findings:
        parts.append('<p class="none">Nothing to change: the design follows the rules of thumb.</p>')
    parts += [_finding(f) for f in report.as_json()["findings"]]
    parts.append("<h3>Collections</h3>")
    parts += [_collection(c) for c in report.collections]
    parts.append("</section>")
    return "".join(parts)


def _finding(finding: dict[str, object]) -> str:
    severity = str(finding["severity"])
    where = str(finding["collection"]) + (f".{finding['path']}" if finding["path"] else "")
    evidence = finding["evidence"]
    assert isinstance(evidence, dict)
    rows = "".join(
        f"<tr><td>{escape(str(k))}</td><td>{escape(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
        for k, v in evidence.items()
    )
    change = finding["change"]
    assert isinstance(change, dict)
    commands = "\n".join(change["commands"])
    example = "" if change["example"] is None else f"<pre>{escape(json.dumps(change['example'], indent=1))}</pre>"
    return (
        f'<div class="finding" style="border-color:{_COLORS[severity]}">'
        f'<span class="badge" style="background:{_COLORS[severity]}">{severity}</span>'
        f'<span class="codes">{escape(str(finding["problem"]))} &rarr; {escape(str(finding["recommendation"]))}</span>'
        f"<h4>{escape(where)}</h4><p>{escape(str(finding['summary']))}</p>"
        f'<table class="evidence">{rows}</table>'
        f"<p><b>Change:</b> {escape(str(change['description']))}</p>"
        + (f"<pre>{escape(commands)}</pre>" if commands else "")
        + example
        + f"<p><b>Effect:</b> {escape(str(finding['effect']))}</p></div>"
    )


def _collection(summary: CollectionSummary) -> str:
    charts = [
        _histogram(
            f"document sizes (bytes), {summary.sampled} sampled", summary.sizes, "sizes", size(summary.max_bytes)
        )
    ]
    for array in summary.arrays:
        charts.append(
            _histogram(
                f"{array.path}: array lengths, {array.sampled} sampled", array.lengths, "lengths", count(array.longest)
            )
        )
    return (
        f"<h4>{escape(summary.name)}</h4><p>{count(summary.documents)} documents, "
        f"{size(summary.avg_bytes)} on average, "
        f"largest {size(summary.max_bytes)}, {summary.indexes} indexes.</p>"
        f'<div class="charts">{"".join(charts)}</div>'
    )


def _histogram(title: str, bins: list[Bin], kind: str, largest: str) -> str:
    width, height, pad = 380, 150, 26
    top = max((b.count for b in bins), default=1) or 1
    bar = (width - 2 * pad) / max(len(bins), 1)
    parts = [
        f'<div class="chart"><h5>{escape(title)}; largest {escape(largest)}</h5>'
        f'<svg class="histogram {kind}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#829ab1"/>',
    ]
    for i, b in enumerate(bins):
        h = 0 if b.count == 0 else max(2.0, (height - 2 * pad) * math.log1p(b.count) / math.log1p(top))
        x = pad + i * bar
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{height - pad - h:.1f}" width="{max(bar - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="#2680c2"><title>{_range(b)}: {b.count}</title></rect>'
        )
        if b.count:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - pad - h - 3:.1f}" text-anchor="middle">{b.count}</text>'
            )
        if len(bins) <= 12 or i % 2 == 0:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{height - 8}" text-anchor="middle">{_short(b.low)}</text>')
    parts.append("</svg></div>")
    return "".join(parts)


def _range(b: Bin) -> str:
    return str(b.low) if b.low == b.high else f"{b.low}-{b.high}"


def _short(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n // scale}{unit}"
    return str(n)


def _graph(report: Report) -> str:
    names = [c.name for c in report.collections]
    width, height = 760, max(260, 90 * math.ceil(len(names) / 2))
    cx, cy = width / 2, height / 2 + 20
    radius = 0 if len(names) == 1 else min(width, height) / 2 - 60
    at = {
        name: (
            cx + radius * math.cos(2 * math.pi * i / max(len(names), 1) - math.pi / 2),
            cy + radius * math.sin(2 * math.pi * i / max(len(names), 1) - math.pi / 2),
        )
        for i, name in enumerate(names)
    }
    flagged = {f.collection for f in report.findings}
    parts = [
        f'<svg class="relations" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#627d98"/></marker></defs>'
    ]
    for relation in report.relations:
        (x1, y1), (x2, y2) = at[relation.source], at[relation.target]
        label = escape(relation.path + (" [ ]" if relation.many else ""))
        if relation.source == relation.target:
            # A loop above the node: a collection that references itself (a tree, followers).
            path = (
                f"M{x1 - 20:.0f},{y1 - 18:.0f} C{x1 - 70:.0f},{y1 - 90:.0f} "
                f"{x1 + 70:.0f},{y1 - 90:.0f} {x1 + 20:.0f},{y1 - 18:.0f}"
            )
            lx, ly = x1, y1 - 72
        else:
            dx, dy = x2 - x1, y2 - y1
            d = math.hypot(dx, dy) or 1
            sx, sy, ex, ey = x1 + dx / d * 46, y1 + dy / d * 22, x2 - dx / d * 46, y2 - dy / d * 22
            path = f"M{sx:.0f},{sy:.0f} L{ex:.0f},{ey:.0f}"
            lx, ly = (sx + ex) / 2, (sy + ey) / 2 - 4
        parts.append(
            f'<g class="edge"><path d="{path}" fill="none" stroke="#627d98" stroke-width="1.5" '
            'marker-end="url(#arrow)"/>'
            f'<text x="{lx:.0f}" y="{ly:.0f}" text-anchor="middle">{label}</text></g>'
        )
    for summary in report.collections:
        x, y = at[summary.name]
        fill = "#fde8e8" if summary.name in flagged else "#e3f8ff"
        parts.append(
            f'<g class="node"><ellipse cx="{x:.0f}" cy="{y:.0f}" rx="46" ry="22" fill="{fill}" stroke="#334e68"/>'
            f'<text x="{x:.0f}" y="{y - 2:.0f}" text-anchor="middle" font-weight="600">{escape(summary.name)}</text>'
            f'<text x="{x:.0f}" y="{y + 12:.0f}" text-anchor="middle">{count(summary.documents)} docs</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
