"""The HTML report: one self-contained page (inline CSS and SVG, no script,
nothing fetched) with, per database, the relationship graph between its
collections (and the same relations as a list), each finding with its
evidence, change, proof or question, the workload's costliest query shapes
(always: "nothing to change" never hides a slow query), and per collection
the histograms of document sizes and array lengths and the schema it has.

Readable from 420 px wide: text wraps, tables and the graph scroll inside
their own boxes. The graph's labels never overlap: each edge label is
placed at the first spot along its edge (or beside it) whose box meets no
node and no label already placed.

The charts carry classes the tests look for: ``svg.relations`` (one
``g.node`` per collection, one ``g.edge`` per relation) and
``svg.histogram`` (``rect.bar`` per bin); the workload is ``table.workload``.
"""

from __future__ import annotations

import json
import math
from html import escape

from foliodb.advisor.report import Bin, CollectionSummary, Report
from foliodb.advisor.shell import count, millis, size

_COLORS = {"critical": "#9b1c1c", "high": "#c2410c", "medium": "#a16207", "low": "#3f6212"}

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1f2933; background: #f5f7fa;
  overflow-wrap: anywhere; }
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
.question { background: #fff8e1; border-radius: 4px; padding: 6px 10px; }
.codes { font-family: ui-monospace, monospace; font-size: 13px; color: #486581; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
td, th { border-top: 1px solid #e4e7eb; padding: 2px 10px 2px 0; vertical-align: top; text-align: left; }
table.evidence td:first-child { color: #627d98; white-space: nowrap; }
table.workload td.n { text-align: right; white-space: nowrap; }
pre { background: #f0f4f8; padding: 8px; overflow-x: auto; font-size: 12px; white-space: pre-wrap; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; }
.chart { background: #fff; padding: 8px 12px; border-radius: 4px; box-shadow: 0 1px 2px rgba(0,0,0,.08);
  max-width: 100%; box-sizing: border-box; }
.chart svg { max-width: 100%; height: auto; }
.chart h5 { margin: 0 0 4px; font-size: 13px; }
svg text { font: 11px system-ui, sans-serif; fill: #334e68; }
.none { color: #3f6212; font-weight: 600; }
ul.relations { font-size: 13px; padding-left: 20px; }
@media (max-width: 600px) {
  header { padding: 12px 14px; }
  header h1 { font-size: 18px; }
  main { padding: 4px 10px 24px; }
  .finding { padding: 8px 10px; }
}
"""


def render_html(reports: list[Report]) -> str:
    body = "".join(_database(report) for report in reports)
    title = "FolioDB schema advice: " + ", ".join(r.database for r in reports)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
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
        f'<div class="scroll">{_graph(report)}</div>',
        _relation_list(report),
        "<h3>Findings</h3>",
    ]
    if not report.findings:
        parts.append('<p class="none">Nothing to change: the design follows the rules of thumb.</p>')
    parts += [_finding(f) for f in report.as_json()["findings"]]
    parts.append("<h3>Workload: the costliest query shapes</h3>")
    parts.append(_workload(report))
    parts.append("<h3>Collections</h3>")
    parts += [_collection(c) for c in report.collections]
    parts.append("</section>")
    return "".join(parts)


def _relation_list(report: Report) -> str:
    if not report.relations:
        return "<p>No references between collections were found.</p>"
    items = "".join(
        f"<li>{escape(r.source)}.{escape(r.path)} &rarr; {escape(r.target)}"
        f"{' (several per document)' if r.many else ''}</li>"
        for r in report.relations
    )
    return f'<ul class="relations">{items}</ul>'


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
    question = finding.get("question")
    body = (
        f'<p class="question"><b>Question:</b> {escape(str(question))}</p>'
        if question
        else f"<p><b>Change:</b> {escape(str(change['description']))}</p>"
        + (f"<pre>{escape(commands)}</pre>" if commands else "")
        + example
    )
    proof = finding.get("proof")
    proven = f"<p><b>Proof:</b> {escape(_proof(proof))}</p>" if isinstance(proof, dict) else ""
    return (
        f'<div class="finding" style="border-color:{_COLORS[severity]}">'
        f'<span class="badge" style="background:{_COLORS[severity]}">{severity}</span>'
        f'<span class="codes">{escape(str(finding["problem"]))} &rarr; {escape(str(finding["recommendation"]))}</span>'
        f"<h4>{escape(where)}</h4><p>{escape(str(finding['summary']))}</p>"
        f'<div class="scroll"><table class="evidence">{rows}</table></div>'
        + body
        + proven
        + f"<p><b>Effect:</b> {escape(str(finding['effect']))}</p></div>"
    )


def _proof(proof: dict[str, object]) -> str:
    if proof["status"] == "nothing-to-run":
        return "nothing to run: the commands are what the application writes from now on."
    if proof["status"] == "refused":
        return f"refused: {proof['reason']}"
    return (
        f"{proof['commands_run']} command(s) run on a copy of {proof['documents']} documents; "
        f"{proof['queries_replayed']} profiled queries replayed: {proof['unchanged']} answer as before, "
        f"{proof['altered']} as the change says."
    )


def _workload(report: Report) -> str:
    if not report.costliest:
        return (
            '<table class="workload"><tr><td>No operation was profiled: turn the profiler on '
            "(db.setProfilingLevel(2)) for a representative period, then advise again.</td></tr></table>"
        )
    rows = "".join(
        f"<tr><td>{escape(c.collection)}</td><td><code>{escape(c.shape)}</code></td>"
        f'<td class="n">{count(c.runs)}</td><td class="n">{millis(c.millis)}</td>'
        f'<td class="n">{millis(c.median_millis)}</td><td class="n">{count(c.examined_per_returned)}</td>'
        f"<td>{escape(', '.join(c.plans))}</td></tr>"
        for c in report.costliest
    )
    head = (
        "<tr><th>collection</th><th>shape</th><th>runs</th><th>total</th><th>median</th>"
        "<th>examined / returned</th><th>plans</th></tr>"
    )
    return f'<div class="scroll"><table class="workload">{head}{rows}</table></div>'


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
    schema = ""
    if summary.schema is not None:
        stricter = "".join(
            f"<li>{escape(s.rule)}: {count(s.failing)} documents{'' if s.exact else ' in the sample'} would fail</li>"
            for s in summary.schema.stricter
        )
        schema = (
            f"<details><summary>Schema ($jsonSchema every document passes, checked on the "
            f"{escape(summary.schema.checked)})</summary>"
            f"<pre>{escape(json.dumps(summary.schema.validator, indent=1))}</pre>"
            + (f"<p>Optional: {escape(', '.join(summary.schema.optional))}</p>" if summary.schema.optional else "")
            + (f"<ul>{stricter}</ul>" if stricter else "")
            + "</details>"
        )
    return (
        f"<h4>{escape(summary.name)}</h4><p>{count(summary.documents)} documents, "
        f"{size(summary.avg_bytes)} on average, "
        f"largest {size(summary.max_bytes)}, {summary.indexes} indexes.</p>"
        f'<div class="charts">{"".join(charts)}</div>{schema}'
    )


def _histogram(title: str, bins: list[Bin], kind: str, largest: str) -> str:
    width, height, pad = 360, 150, 26
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
        if b.count and len(bins) <= 12:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - pad - h - 3:.1f}" text-anchor="middle">{b.count}</text>'
            )
        if len(bins) <= 10 or i % 2 == 0:
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


# -- the relations graph -----------------------------------------------------------------------

_CHAR = 6.6  # px per character of an 11 px label, generous: boxes must not be smaller than the text
_BOLD = 7.2
_LINE = 14
_Box = tuple[float, float, float, float]  # left, top, right, bottom


def _graph(report: Report) -> str:
    names = [c.name for c in report.collections]
    docs = {c.name: f"{count(c.documents)} docs" for c in report.collections}
    radii = {n: max(46.0, max(len(n) * _BOLD, len(docs[n]) * _CHAR) / 2 + 14) for n in names}
    ry = 22.0
    ring = max(130.0, sum(2 * r + 60 for r in radii.values()) / (2 * math.pi)) if len(names) > 1 else 0.0
    widest = max(radii.values(), default=46.0)
    width = max(760.0, 2 * ring + 2 * widest + 80)
    height = 2 * ring + 2 * ry + 200
    cx, cy = width / 2, height / 2 + 30
    at = {
        name: (
            cx + ring * math.cos(2 * math.pi * i / max(len(names), 1) - math.pi / 2),
            cy + ring * math.sin(2 * math.pi * i / max(len(names), 1) - math.pi / 2),
        )
        for i, name in enumerate(names)
    }
    taken: list[_Box] = [(x - radii[n], y - ry, x + radii[n], y + ry) for n, (x, y) in at.items()]
    flagged = {f.collection for f in report.findings}
    parts = [
        f'<svg class="relations" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        'role="img"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#627d98"/></marker></defs>'
    ]
    pairs: dict[tuple[str, str], int] = {}
    loops: dict[str, int] = {}
    for relation in report.relations:
        label = relation.path + (" [ ]" if relation.many else "")
        (x1, y1), (x2, y2) = at[relation.source], at[relation.target]
        if relation.source == relation.target:
            # A loop above the node: a collection that references itself (a tree, followers).
            k = loops[relation.source] = loops.get(relation.source, 0) + 1
            lift = 70 + 16 * (k - 1)
            path = (
                f"M{x1 - 20:.0f},{y1 - ry + 4:.0f} C{x1 - 70:.0f},{y1 - lift - 20:.0f} "
                f"{x1 + 70:.0f},{y1 - lift - 20:.0f} {x1 + 20:.0f},{y1 - ry + 4:.0f}"
            )
            spots = [(x1, y1 - lift - 4 - 16 * step) for step in range(8)]
        else:
            key = (min(relation.source, relation.target), max(relation.source, relation.target))
            nth = pairs[key] = pairs.get(key, 0) + 1
            dx, dy = x2 - x1, y2 - y1
            d = math.hypot(dx, dy) or 1
            nx, ny = -dy / d, dx / d  # the edge's left side: parallel edges move apart along it
            shift = 7 * nth
            sx, sy = _boundary(x1, y1, dx, dy, radii[relation.source], ry)
            ex, ey = _boundary(x2, y2, -dx, -dy, radii[relation.target], ry)
            sx, sy, ex, ey = sx + nx * shift, sy + ny * shift, ex + nx * shift, ey + ny * shift
            path = f"M{sx:.0f},{sy:.0f} L{ex:.0f},{ey:.0f}"
            spots = [
                (sx + (ex - sx) * t + nx * off, sy + (ey - sy) * t + ny * off)
                for off in (10, -10, 24, -24, 38, -38)
                for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78)
            ]
        lx, ly = _place(label, spots, taken)
        parts.append(
            f'<g class="edge"><path d="{path}" fill="none" stroke="#627d98" stroke-width="1.5" '
            'marker-end="url(#arrow)"/>'
            f'<text x="{lx:.0f}" y="{ly + 4:.0f}" text-anchor="middle">{escape(label)}</text></g>'
        )
    for summary in report.collections:
        x, y = at[summary.name]
        fill = "#fde8e8" if summary.name in flagged else "#e3f8ff"
        parts.append(
            f'<g class="node"><ellipse cx="{x:.0f}" cy="{y:.0f}" rx="{radii[summary.name]:.0f}" ry="{ry:.0f}" '
            f'fill="{fill}" stroke="#334e68"/>'
            f'<text x="{x:.0f}" y="{y - 2:.0f}" text-anchor="middle" font-weight="600">{escape(summary.name)}</text>'
            f'<text x="{x:.0f}" y="{y + 12:.0f}" text-anchor="middle">{docs[summary.name]}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _boundary(x: float, y: float, dx: float, dy: float, rx: float, ry: float) -> tuple[float, float]:
    """Where the ray from an ellipse's centre (x, y) in direction (dx, dy) leaves it."""
    scale = 1 / math.sqrt((dx / rx) ** 2 + (dy / ry) ** 2) if (dx or dy) else 0.0
    return x + dx * scale, y + dy * scale


def _place(label: str, spots: list[tuple[float, float]], taken: list[_Box]) -> tuple[float, float]:
    """The first spot (a label's centre) whose box meets nothing placed; else the least crowded one."""
    half, best = len(label) * _CHAR / 2 + 3, None
    for x, y in spots:
        box = (x - half, y - _LINE / 2, x + half, y + _LINE / 2)
        overlaps = sum(1 for other in taken if _meets(box, other))
        if best is None or overlaps < best[0]:
            best = (overlaps, x, y, box)
        if overlaps == 0:
            break
    assert best is not None
    taken.append(best[3])
    return best[1], best[2]


def _meets(a: _Box, b: _Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
