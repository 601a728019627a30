"""Fixtures that run a test twice: through the embedded client and through
pymongo over the wire against ``foliodb serve`` (one server per module).
A test module (or conftest) imports ``server``, ``client`` and ``db``."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

import foliodb
from foliodb.server import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    running = Server(str(Path(tmp_path_factory.mktemp("server")) / "data"), "127.0.0.1", 0)
    host, port = running.start()
    yield host, port
    running.shutdown()


@pytest.fixture(params=["embedded", "wire"])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "embedded":
        opened: Any = foliodb.MongoClient(":memory:")
    else:
        host, port = request.getfixturevalue("server")
        opened = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000)
    yield opened
    opened.close()


@pytest.fixture
def db(client: Any, request: pytest.FixtureRequest) -> Any:
    """A fresh database per test (the wire server is shared by the module)."""
    name = f"t{zlib.crc32(request.node.nodeid.encode())}"
    client.drop_database(name)
    return client[name]
