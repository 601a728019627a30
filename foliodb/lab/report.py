"""The lab's results as text: per scenario, a table of every question against
every design (median and p95 time per call, documents and index keys examined,
documents written), the storage of each design, and the ratios behind the
texts' claims."""

from __future__ import annotations

from collections.abc import Sequence

from foliodb.lab.measure import Measurement, ScenarioResult


def time_of(us: float) -> str:
    """Microseconds, shown in µs or ms."""
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def size_of(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def ratio(result: ScenarioResult, question: str, slower: str, faster: str) -> float | None:
    """How many times ``faster``'s median beats ``slower``'s on ``question``."""
    by_name = {d.design: d for d in result.designs if d.available}
    if slower not in by_name or faster not in by_name:
        return None
    a, b = by_name[slower].measurement(question), by_name[faster].measurement(question)
    if a is None or b is None or b.median_us == 0:
        return None
    return a.median_us / b.median_us


COLUMNS = ("design", "median", "p95", "ops/call", "docs examined", "keys examined", "docs written")


def figures(m: Measurement) -> list[str]:
    """A measurement's cells after the design's name, in the tables' column order."""
    return [
        time_of(m.median_us),
        time_of(m.p95_us),
        f"{m.operations:.1f}",
        f"{m.docs_examined:.1f}",
        f"{m.keys_examined:.1f}",
        f"{m.docs_written:.1f}",
    ]


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  "
            + "  ".join(
                cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return lines


def render_text(results: Sequence[ScenarioResult]) -> str:
    out: list[str] = []
    header = COLUMNS
    for result in results:
        scenario = result.scenario
        out += [f"== {scenario.title} (size {result.size})", f"   claim: {scenario.claim}", ""]
        for design in result.designs:
            state = "" if design.available else "  (not available on this database)"
            out.append(f"  {design.design}: {design.summary}{state}")
        out.append("")
        for question in scenario.questions:
            rows = [list(header)] + [
                [d.design, *figures(m)]
                for d in result.designs
                if d.available and (m := d.measurement(question.name)) is not None
            ]
            out.append(f"  {question.name} ({question.kind}, weight {question.weight})")
            out += _table(rows)
            if question.name in result.mismatches:
                differing = ", ".join(result.mismatches[question.name])
                why = f": {question.note}" if question.note else ""
                label = "answers differ (expected)" if not question.same_answer else "ANSWERS DIFFER"
                out.append(f"  {label} from {result.designs[0].design} in {differing}{why}")
            out.append("")
        storage = [["design", "data", "indexes"]] + [
            [d.design, size_of(d.data_bytes), size_of(d.index_bytes)] for d in result.designs if d.available
        ]
        out.append("  storage")
        out += _table(storage)
        out.append("")
    return "\n".join(out)


# The texts' claims the lab checks: (scenario, question, the design said to be
# slower, the design said to be faster).
CLAIMS = (
    ("blog", "show a post page", "A", "B"),
    ("iot", "hourly averages over a week", "reading", "hourly"),
    ("iot", "last hour of a device", "reading", "hourly"),
    ("timelines", "read a timeline", "on read", "on write"),
)


def claim_ratios(results: Sequence[ScenarioResult]) -> list[tuple[str, str, str, str, float]]:
    """``(scenario, question, slower, faster, times faster)`` for each claim the run covers."""
    found = []
    by_name = {r.scenario.name: r for r in results}
    for scenario, question, slower, faster in CLAIMS:
        result = by_name.get(scenario)
        if result is None:
            continue
        times = ratio(result, question, slower, faster)
        if times is not None:
            found.append((scenario, question, slower, faster, times))
    return found


def render_claims(results: Sequence[ScenarioResult]) -> str:
    lines = ["== the texts' claims, measured"]
    for scenario, question, slower, faster, times in claim_ratios(results):
        lines.append(f"  {scenario}: {question}: {faster} is {times:.1f}x faster than {slower}")
    return "\n".join(lines)
