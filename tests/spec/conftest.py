"""Prints a summary line per CRUD spec run (embedded, and over the wire), e.g.
``CRUD spec (embedded): 380 passed, 3 failed, 54 skipped of 437``."""

from __future__ import annotations

from typing import Any

RUNS = {
    "embedded": "tests/spec/test_crud_spec.py::test_crud[",
    "over the wire": "tests/spec/test_crud_spec.py::test_crud_over_wire[",
}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for run, prefix in RUNS.items():
        counts = {}
        for outcome in ("passed", "failed", "skipped", "error"):
            reports = terminalreporter.stats.get(outcome, [])
            counts[outcome] = len({r.nodeid for r in reports if getattr(r, "nodeid", "").startswith(prefix)})
        total = sum(counts.values())
        if total:
            errors = f", {counts['error']} errors" if counts["error"] else ""
            terminalreporter.write_line(
                f"CRUD spec ({run}): {counts['passed']} passed, {counts['failed']} failed, "
                f"{counts['skipped']} skipped{errors} of {total}"
            )
