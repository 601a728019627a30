"""The lab's results as one self-contained HTML page: no scripts, no external
files; a bar chart (inline SVG) of the median time per call of each design for
each question, and the same tables as the text report."""

from __future__ import annotations

import html
from collections.abc import Sequence

from foliodb.lab.measure import ScenarioResult
from foliodb.lab.report import COLUMNS, claim_ratios, figures, size_of, time_of

BAR_HEIGHT, BAR_GAP, LABEL_WIDTH, CHART_WIDTH = 18, 6, 140, 420
COLOURS = ("#3b6ea5", "#d9822b", "#4e9a5b", "#b04a5a", "#7b5ea7")

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 980px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { padding: 2px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.claim { color: #555; font-style: italic; } .differ { color: #a33; }
"""


def _chart(rows: Sequence[tuple[str, float]]) -> str:
    """Horizontal bars, one per design, length proportional to the median time."""
    longest = max((value for _, value in rows), default=0.0) or 1.0
    height = len(rows) * (BAR_HEIGHT + BAR_GAP)
    total = LABEL_WIDTH + CHART_WIDTH + 90
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" role="img">']
    for n, (label, value) in enumerate(rows):
        y = n * (BAR_HEIGHT + BAR_GAP)
        width = max(1.0, CHART_WIDTH * value / longest)
        colour = COLOURS[n % len(COLOURS)]
        parts.append(f'<text x="0" y="{y + 13}" font-size="12">{html.escape(label)}</text>')
        parts.append(
            f'<rect class="bar" x="{LABEL_WIDTH}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT}" fill="{colour}"/>'
        )
        parts.append(f'<text x="{LABEL_WIDTH + width + 6:.1f}" y="{y + 13}" font-size="12">{time_of(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _row(tag: str, values: Sequence[str]) -> str:
    return "<tr>" + "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values) + "</tr>"


def _claims(results: Sequence[ScenarioResult]) -> list[str]:
    found = claim_ratios(results)
    if not found:
        return []
    items = [
        f"<li>{html.escape(name)}, {html.escape(question)}: <b>{html.escape(faster)}</b>"
        f" is {times:.1f} times faster than {html.escape(slower)}</li>"
        for name, question, slower, faster, times in found
    ]
    return ["<h2>The texts' claims, measured</h2><ul>", *items, "</ul>"]


def _scenario(result: ScenarioResult) -> list[str]:
    scenario = result.scenario
    out = [
        f'<section class="scenario" id="{html.escape(scenario.name)}">',
        f"<h2>{html.escape(scenario.title)} (size {result.size})</h2>",
        f'<p class="claim">Claim: {html.escape(scenario.claim)}</p><ul>',
    ]
    for d in result.designs:
        note = "" if d.available else " (not available on this database)"
        out.append(f"<li><b>{html.escape(d.design)}</b>: {html.escape(d.summary + note)}</li>")
    out.append("</ul>")
    measured = [d for d in result.designs if d.available]
    for question in scenario.questions:
        kind = f"({question.kind}, weight {question.weight})"
        out.append(f"<h3>{html.escape(question.name)} <small>{html.escape(kind)}</small></h3>")
        rows = [(d.design, m) for d in measured if (m := d.measurement(question.name)) is not None]
        out.append(_chart([(name, m.median_us) for name, m in rows]))
        table = [_row("th", COLUMNS)] + [_row("td", [name, *figures(m)]) for name, m in rows]
        out.append("<table>" + "".join(table) + "</table>")
        if question.name in result.mismatches:
            why = f": {question.note}" if question.note else ""
            differing = ", ".join(result.mismatches[question.name])
            out.append(f'<p class="differ">Answers differ in {html.escape(differing + why)}</p>')
    storage = [_row("th", ["design", "data", "indexes"])]
    storage += [_row("td", [d.design, size_of(d.data_bytes), size_of(d.index_bytes)]) for d in measured]
    out.append("<h3>Storage</h3><table>" + "".join(storage) + "</table></section>")
    return out


def render_html(results: Sequence[ScenarioResult]) -> str:
    body = ["<h1>FolioDB lab: schema designs measured</h1>", *_claims(results)]
    for result in results:
        body += _scenario(result)
    head = f'<head><meta charset="utf-8"><title>FolioDB lab</title><style>{STYLE}</style></head>'
    return f'<!DOCTYPE html><html lang="en">{head}<body>{"".join(body)}</body></html>\n'
