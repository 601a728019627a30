"""Prints a summary line per spec suite and target, e.g.
``spec transactions (over the wire): 240 passed, 0 failed, 18 skipped of 258``."""

from __future__ import annotations

from typing import Any

from tests.spec.test_session_specs import SUITES

RUNS = {
    ("crud", "embedded"): "tests/spec/test_crud_spec.py::test_crud[",
    ("crud", "over the wire"): "tests/spec/test_crud_spec.py::test_crud_over_wire[",
    ("change_streams", "embedded"): "tests/spec/test_change_stream_specs.py::test_change_streams[",
    ("change_streams", "over the wire"): "tests/spec/test_change_stream_specs.py::test_change_streams_over_wire[",
    **{(suite, "embedded"): f"tests/spec/test_session_specs.py::test_spec[{suite}/" for suite in SUITES},
    **{(suite, "over the wire"): f"tests/spec/test_session_specs.py::test_spec_over_wire[{suite}/" for suite in SUITES},
}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for (suite, run), prefix in RUNS.items():
        counts = {}
        for outcome in ("passed", "failed", "skipped", "error"):
            reports = terminalreporter.stats.get(outcome, [])
            counts[outcome] = len({r.nodeid for r in reports if getattr(r, "nodeid", "").startswith(prefix)})
        total = sum(counts.values())
        if total:
            errors = f", {counts['error']} errors" if counts["error"] else ""
            terminalreporter.write_line(
                f"spec {suite} ({run}): {counts['passed']} passed, {counts['failed']} failed, "
                f"{counts['skipped']} skipped{errors} of {total}"
            )
