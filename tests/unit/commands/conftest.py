"""``wire``: a pymongo client of one ``foliodb serve`` per test module, for
the few command tests that also run over the wire protocol; ``executor``: an
executor of a fresh dbpath with test commands (fail points) enabled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

from foliodb.commands import Executor
from foliodb.commands.failpoints import enable_test_commands
from foliodb.commands.replication import ReplicaSet
from foliodb.server import Server


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    running = Server(str(Path(tmp_path_factory.mktemp("wire")) / "data"), "127.0.0.1", 0)
    host, port = running.start()
    client: Any = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000)
    yield client
    client.close()
    running.shutdown()


@pytest.fixture
def executor(tmp_path: Path) -> Iterator[Executor]:
    ex = Executor.open(str(tmp_path / "db"), ReplicaSet())
    enable_test_commands(ex)
    yield ex
    ex.close()
