"""Each recipe runs on the embedded client and on pymongo over ``foliodb serve``:
the recipes are written for any pymongo-compatible database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

import foliodb
from foliodb.server import Server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pymongo.MongoClient[dict[str, Any]]]:
    server = Server(str(tmp_path_factory.mktemp("patterns") / "data"), "127.0.0.1", 0)
    host, port = server.start()
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000)
    yield client
    client.close()
    server.shutdown()


@pytest.fixture(params=["embedded", "wire"])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "wire":
        yield request.getfixturevalue("served")
        return
    embedded = foliodb.MongoClient(str(tmp_path / "data"))
    yield embedded
    embedded.close()


@pytest.fixture
def db(client: Any) -> Any:
    # A database of its own per test, so the module's one server needs no cleanup.
    return client[f"patterns_{uuid.uuid4().hex[:12]}"]
