"""MongoDB's spec tests (unified format) for sessions, transactions, the
convenient transaction API, retryable writes and causal consistency, against
the embedded client and against ``foliodb serve`` through pymongo itself
(the reference client: real pymongo runs transactions against the server).

Both answer as the primary of a one-member replica set. The tests are the
vendored JSON (see ``SOURCE.md``); ``runner.py`` runs them.

Run: ``pytest tests/spec/test_session_specs.py -rs`` (skips print their reasons).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.runner import SpecTest, load_tests
from tests.spec.suites import run_embedded, run_over_wire

SUITES = ("transactions", "transactions-convenient-api", "sessions", "retryable_writes", "causal_consistency")
TESTS = [(suite, spec) for suite in SUITES for spec in load_tests(Path(__file__).parent / suite)]
IDS = [f"{suite}/{spec.id}" for suite, spec in TESTS]


@pytest.mark.parametrize(("suite", "spec"), TESTS, ids=IDS)
def test_spec(suite: str, spec: SpecTest, tmp_path: Path) -> None:
    run_embedded(spec, tmp_path)


@pytest.mark.clients
@pytest.mark.parametrize(("suite", "spec"), TESTS, ids=IDS)
def test_spec_over_wire(suite: str, spec: SpecTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_over_wire(spec, tmp_path, monkeypatch)
