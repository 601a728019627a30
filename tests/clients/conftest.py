"""A FolioDB server per test, on a free port over a fresh dbpath, and
pymongo clients of it. Real drivers connect to ``server.uri``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

from foliodb.server import Server


class RunningServer:
    def __init__(self, dbpath: Path) -> None:
        self.dbpath = str(dbpath)
        self.server = Server(self.dbpath, "127.0.0.1", 0)
        self.host, self.port = self.server.start()

    @property
    def uri(self) -> str:
        return f"mongodb://{self.host}:{self.port}/"

    def client(self, **options: Any) -> pymongo.MongoClient[dict[str, Any]]:
        options.setdefault("serverSelectionTimeoutMS", 5000)
        return pymongo.MongoClient(self.uri, **options)

    def stop(self) -> None:
        self.server.shutdown()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path / "data")
    yield running
    running.stop()


@pytest.fixture
def wire_client(server: RunningServer) -> Iterator[pymongo.MongoClient[dict[str, Any]]]:
    client = server.client()
    yield client
    client.close()
