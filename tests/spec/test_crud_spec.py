"""MongoDB's CRUD spec tests (unified format) against the embedded client.

The tests are the vendored JSON under ``crud/`` (see ``crud/SOURCE.md``);
``runner.py`` runs them. Each test gets a fresh dbpath: the internal client
that loads ``initialData`` and reads ``outcome`` and the test's client
entities open the same path, so they share one engine.

Run: ``pytest tests/spec/test_crud_spec.py -rs`` (skips print their reasons).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import foliodb
from tests.spec.runner import Run, Skip, SpecTest, load_tests

CRUD = load_tests(Path(__file__).parent / "crud")


class EmbeddedTarget:
    """Clients of one fresh embedded dbpath."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def open_client(self, uri_options: Mapping[str, Any]) -> Any:
        return foliodb.MongoClient(self.path, **uri_options)


@pytest.mark.parametrize("spec", CRUD, ids=[spec.id for spec in CRUD])
def test_crud(spec: SpecTest, tmp_path: Path) -> None:
    try:
        Run(spec, EmbeddedTarget(tmp_path / "db")).execute()
    except Skip as reason:
        pytest.skip(str(reason))
