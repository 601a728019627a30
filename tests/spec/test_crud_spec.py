"""MongoDB's CRUD spec tests (unified format) against the embedded client,
and against ``foliodb serve`` through pymongo itself.

The tests are the vendored JSON under ``crud/`` (see ``SOURCE.md``);
``runner.py`` runs them, ``targets.py`` opens the targets. Each test gets a
fresh dbpath: the internal client that loads ``initialData`` and reads
``outcome`` and the test's client entities open the same path, so they
share one engine.

Run: ``pytest tests/spec/test_crud_spec.py -rs`` (skips print their reasons).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.runner import SpecTest, load_tests
from tests.spec.suites import run_embedded, run_over_wire

CRUD = load_tests(Path(__file__).parent / "crud")


@pytest.mark.parametrize("spec", CRUD, ids=[spec.id for spec in CRUD])
def test_crud(spec: SpecTest, tmp_path: Path) -> None:
    run_embedded(spec, tmp_path)


@pytest.mark.clients
@pytest.mark.parametrize("spec", CRUD, ids=[spec.id for spec in CRUD])
def test_crud_over_wire(spec: SpecTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_over_wire(spec, tmp_path, monkeypatch)
