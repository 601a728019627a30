"""MongoDB's change streams spec tests (unified format) against the embedded
client and against ``foliodb serve`` through pymongo, both the primary of a
one-member replica set.

The tests are the vendored JSON under ``change_streams/`` (see ``SOURCE.md``);
``runner.py`` runs them. Their ``runOnRequirements`` are judged as a mongod 8.0
replica set would meet them, so the sharded-only and 8.1 tests skip saying so.

Run: ``pytest tests/spec/test_change_stream_specs.py -rs`` (skips print their reasons).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.runner import SpecTest, load_tests
from tests.spec.suites import run_embedded, run_over_wire

CHANGE_STREAMS = load_tests(Path(__file__).parent / "change_streams")
IDS = [spec.id for spec in CHANGE_STREAMS]


@pytest.mark.parametrize("spec", CHANGE_STREAMS, ids=IDS)
def test_change_streams(spec: SpecTest, tmp_path: Path) -> None:
    run_embedded(spec, tmp_path)


@pytest.mark.clients
@pytest.mark.parametrize("spec", CHANGE_STREAMS, ids=IDS)
def test_change_streams_over_wire(spec: SpecTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_over_wire(spec, tmp_path, monkeypatch)
