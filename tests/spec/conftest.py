"""Prints one summary line for the CRUD spec run, e.g.
``CRUD spec: 380 passed, 3 failed, 54 skipped of 437``."""

from __future__ import annotations

from typing import Any

SPEC_MODULE = "tests/spec/test_crud_spec.py::"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    counts = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        reports = terminalreporter.stats.get(outcome, [])
        counts[outcome] = len({r.nodeid for r in reports if getattr(r, "nodeid", "").startswith(SPEC_MODULE)})
    total = sum(counts.values())
    if total:
        errors = f", {counts['error']} errors" if counts["error"] else ""
        terminalreporter.write_line(
            f"CRUD spec: {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['skipped']} skipped{errors} of {total}"
        )
