"""MongoDB's CRUD spec tests (unified format) against the embedded client,
and against ``foliodb serve`` through pymongo itself.

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

import pymongo
import pytest

import foliodb
from foliodb.server import Server
from tests.spec.runner import Run, Skip, SpecTest, load_tests

CRUD = load_tests(Path(__file__).parent / "crud")


class EmbeddedTarget:
    """Clients of one fresh embedded dbpath; they publish pymongo's command events."""

    monitors_commands = True

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def open_client(self, uri_options: Mapping[str, Any], listener: Any = None) -> Any:
        listeners = [listener] if listener is not None else []
        return foliodb.MongoClient(self.path, event_listeners=listeners, **uri_options)


class ServerTarget:
    """pymongo clients of one FolioDB server over a fresh dbpath; they emit command events."""

    monitors_commands = True

    def __init__(self, path: Path) -> None:
        self.server = Server(str(path), "127.0.0.1", 0)
        host, port = self.server.start()
        self.uri = f"mongodb://{host}:{port}/"

    def open_client(self, uri_options: Mapping[str, Any], listener: Any = None) -> Any:
        listeners = [listener] if listener is not None else []
        return pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=5000, event_listeners=listeners, **uri_options)


@pytest.mark.parametrize("spec", CRUD, ids=[spec.id for spec in CRUD])
def test_crud(spec: SpecTest, tmp_path: Path) -> None:
    try:
        Run(spec, EmbeddedTarget(tmp_path / "db")).execute()
    except Skip as reason:
        pytest.skip(str(reason))


# Tests whose outcome pymongo decides from a reply that is already MongoDB's.
DRIVER_DECIDES = {
    "client-bulkWrite-partialResults: partialResult is unset when first operation fails during an ordered bulk"
    " write (verbose)",
    "client-bulkWrite-partialResults: partialResult is unset when first operation fails during an ordered bulk"
    " write (summary)",
}
DRIVER_REASON = (
    "pymongo 4.20 sets partialResult whenever nErrors < the operations sent (client_bulk.py), so an ordered"
    " failure at index 0 still has one; the Node driver skips these too (NODE-6384)"
)


@pytest.mark.clients
@pytest.mark.parametrize("spec", CRUD, ids=[spec.id for spec in CRUD])
def test_crud_over_wire(spec: SpecTest, tmp_path: Path) -> None:
    if spec.id in DRIVER_DECIDES:
        pytest.skip(DRIVER_REASON)
    target = ServerTarget(tmp_path / "db")
    try:
        Run(spec, target).execute()
    except Skip as reason:
        pytest.skip(str(reason))
    finally:
        target.server.shutdown()
