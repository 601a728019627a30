"""kill -9 in the middle of writes (with readers beside them) and of index
builds loses nothing acknowledged and leaves every index consistent
(DESIGN.md, "Storage"). More trials: scripts/crash_soak.py."""

from __future__ import annotations

import pytest

from tests.crash.harness import run_build_trial, run_transaction_trial, run_trial

pytestmark = pytest.mark.crash


def test_kill9_trials(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "data")
    totals = {"inserts": 0, "updates": 0, "batches": 0}
    for seed in range(15):  # scripts/crash_soak.py runs 200
        counts = run_trial(path, seed)
        for key in totals:
            totals[key] += counts[key]
    assert totals["inserts"] > 0 and totals["updates"] > 0


def test_kill9_during_index_builds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "data")
    outcomes = [run_build_trial(path, seed) for seed in range(8)]
    assert len(outcomes) == 8


def test_kill9_during_transactions_and_retryable_writes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "data")
    totals = {"transactions": 0, "retryable": 0}
    for seed in range(15):  # scripts/crash_soak.py runs 200
        counts = run_transaction_trial(path, seed)
        for key in totals:
            totals[key] += counts[key]
    assert totals["transactions"] > 0 and totals["retryable"] > 0
