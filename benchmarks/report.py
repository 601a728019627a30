"""Ratios to the floor, the PASS/FAIL target lines and the Markdown table.

A result record is one of::

    {"rate", "unit", "ops", "target", "seconds", "partial", "errors", "ratio"?}
    {"error": message} | {"skipped": reason} | {"not_measured": reason}

Targets are checked for FolioDB on disk (``foliodb-disk``, the default) and
in memory (``foliodb-memory``): point operations as shares of the floor,
the unindexed scans ahead of the fastest in-memory Python peer; besides,
``foliodb-disk`` ahead of every on-disk peer. A peer result with wrong
answers (``errors`` > 0) is left out of comparisons.
"""

from __future__ import annotations

from typing import Any

from benchmarks.workloads import UNITS, WORKLOADS

FOLIODB = "foliodb-disk"
CHECKED = ("foliodb-disk", "foliodb-memory")
# Share of the floor's rate FolioDB must reach (on disk and in memory).
RATIO_TARGETS = {"insert_many": 0.80, "insert_one": 0.70, "find_one": 0.70, "update_one": 0.70, "delete_one": 0.70}
# Scans in which FolioDB (its document cache warm) must be at least as fast as the in-memory
# Python peers (documents kept as dicts).
AHEAD_OF_MEMORY = ("find_user", "sort_limit")
PYTHON_MEMORY_PEERS = ("tinydb-memory", "mongita-memory", "mongoeco-memory")


def add_ratios(per_size: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Set ``ratio`` (rate / the floor's rate) on every measured record of one size."""
    floor = per_size.get("floor", {})
    for records in per_size.values():
        for workload, record in records.items():
            base = floor.get(workload, {}).get("rate")
            if "rate" in record and base:
                record["ratio"] = record["rate"] / base


def _valid(record: dict[str, Any]) -> bool:
    return "rate" in record and not record.get("errors")


def targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The target checks of every size, each ``{size, passed, line}``."""
    checks: list[dict[str, Any]] = []
    storage = {name: info["storage"] for name, info in doc["contenders"].items()}
    peers = [name for name in storage if name != "floor" and not name.startswith("foliodb")]
    for size, per_size in doc["results"].items():

        def check(passed: bool, text: str, size: str = size) -> None:
            checks.append({"size": int(size), "passed": passed, "line": f"{'PASS' if passed else 'FAIL'}  {text}"})

        def ahead(ours: str, workload: str, rivals: list[str], kind: str) -> None:
            label = f"{int(size):>7} docs  {ours} {workload} ahead of every {kind} peer"
            record = per_size[ours].get(workload, {})
            if not _valid(record):
                check(False, f"{label}: no valid measurement ({_describe(record)})")
                return
            measured = [(per_size[n][workload]["rate"], n) for n in rivals if _valid(per_size[n].get(workload, {}))]
            left_out = [n for n in rivals if not _valid(per_size[n].get(workload, {}))]
            tail = f"; not compared: {', '.join(left_out)}" if left_out else ""
            if not measured:
                check(True, f"{label}: no peer measured{tail}")
                return
            best, best_name = max(measured)
            rate = record["rate"]
            check(
                rate >= best, f"{label}: {fmt_rate(rate)} vs best {best_name} {fmt_rate(best)} {UNITS[workload]}{tail}"
            )

        for ours in CHECKED:
            records = per_size.get(ours)
            if records is None or not any("rate" in r for r in records.values()):
                continue
            for workload, share in RATIO_TARGETS.items():
                record = records.get(workload, {})
                label = f"{int(size):>7} docs  {ours} {workload}"
                if not _valid(record):
                    check(False, f"{label}: no valid measurement ({_describe(record)})")
                    continue
                ratio = record["ratio"]
                check(ratio >= share, f"{label}: {ratio:.3f} of the floor (target >= {share:.2f})")
            python_peers = [name for name in PYTHON_MEMORY_PEERS if name in per_size]
            if python_peers:
                for workload in AHEAD_OF_MEMORY:
                    ahead(ours, workload, python_peers, "in-memory Python")
        if FOLIODB in per_size:
            rivals = [name for name in peers if storage[name] == "disk" and name in per_size]
            if rivals:
                for workload in WORKLOADS:
                    ahead(FOLIODB, workload, rivals, "disk")
    return checks


def _describe(record: dict[str, Any]) -> str:
    if record.get("errors"):
        return f"{record['errors']} wrong answers"
    return str(record.get("error") or record.get("skipped") or record.get("not_measured") or "no rate")


def fmt_rate(rate: float) -> str:
    """Three significant digits: 64.6k, 953, 9.5, 0.21."""
    if rate >= 1e6:
        return f"{rate / 1e6:.3g}M"
    if rate >= 1e3:
        return f"{rate / 1e3:.3g}k"
    return f"{rate:.3g}"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def cell(record: dict[str, Any]) -> str:
    if "not_measured" in record:
        return "not yet measured" if record["not_measured"].startswith("not yet") else "n/a"
    if "error" in record:
        return "error"
    if "skipped" in record:
        return "—"
    text = fmt_rate(record["rate"])
    if record.get("partial"):
        text += "\\*"
    if record.get("errors"):
        text += " !"
    if "ratio" in record:
        text += f" ({fmt_ratio(record['ratio'])})"
    return text


def markdown(doc: dict[str, Any]) -> str:
    """The results as Markdown: a table per size, footnotes, then the target lines."""
    out: list[str] = []
    header = ["contender", "storage", *(f"{w} {UNITS[w]}" for w in WORKLOADS)]
    for size, per_size in doc["results"].items():
        out.append(f"### {int(size):,} documents\n")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * 2 + "--:|" * len(WORKLOADS))
        for name, records in per_size.items():
            row = [name, doc["contenders"][name]["storage"], *(cell(records[w]) for w in WORKLOADS)]
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    out.append(
        "Each cell: rate (ratio to the floor); the floor and FolioDB show the best of "
        f"{doc['repeat']} interleaved runs, the peers one run. \\* partial: stopped at the "
        f"{doc['plan']['budget']:g} s budget, rate from the operations that completed. "
        "! wrong answers. — not run (see the JSON). error: the store raised (see the JSON)."
    )
    problems = [
        f"- {size} {name} {w}: {_describe(r)}"
        for size, per_size in doc["results"].items()
        for name, records in per_size.items()
        for w, r in records.items()
        if ("error" in r or r.get("errors") or "skipped" in r)
    ]
    if problems:
        out.append("\nNot measured or wrong:\n")
        out.extend(problems)
    out.append("\nContenders:\n")
    for name, info in doc["contenders"].items():
        note = f": {info['note']}" if info["note"] else ""
        out.append(f"- {name} ({info['package']} {info['version'] or 'version not recorded'}, {info['storage']}){note}")
    out.extend(targets_block(doc, "Targets", f"not checked: {FOLIODB} was not measured."))
    return "\n".join(out)


def targets_block(doc: dict[str, Any], title: str, if_none: str) -> list[str]:
    """The report's closing lines: the PASS/FAIL lines in a code block."""
    out = [f"\n{title}:\n"]
    if doc["targets"]:
        out.append("```")
        out.extend(check["line"] for check in doc["targets"])
        out.append("```")
    else:
        out.append(if_none)
    return out
