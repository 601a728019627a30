"""Prints the advisor's precision and recall over the fixture systems at the
end of the run (test_advisor.py computes them)."""

from __future__ import annotations

from typing import Any

import pytest

SCORE: pytest.StashKey[str] = pytest.StashKey()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if SCORE in config.stash:
        terminalreporter.write_line(config.stash[SCORE])
