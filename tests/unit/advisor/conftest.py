"""The advisor's fixture sets, built once per run and shared by the test
modules (the first set: systems.py, the texts' systems; the second:
systems2.py, the pattern catalogue's, embedded and over the wire), and the
precision and recall printed at the end of the run (test_unseen.py
computes them over both sets)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pymongo
import pytest

import foliodb
from foliodb.advisor import Report, advise
from foliodb.server import Server

from . import systems, systems2

SCORE: pytest.StashKey[list[str]] = pytest.StashKey()
FIRST = [(name, good) for name in systems.SYSTEMS for good in (False, True) if not (name == "healthy" and good)]
MODES = ("embedded", "wire")
SECOND = [(name, good, mode) for name in systems2.SYSTEMS2 for good in (False, True) for mode in MODES]


@dataclass
class Built:
    database: Any  # the advised database, as its client sees it
    report: Report


@pytest.fixture(scope="session")
def first_set() -> Iterator[tuple[Any, dict[tuple[str, bool], Built]]]:
    client = foliodb.MongoClient(":memory:")
    built = {}
    for name, good in FIRST:
        db = systems.build(client, name, good)
        built[(name, good)] = Built(db, advise(db))
    yield client, built
    client.close()


@pytest.fixture(scope="session")
def second_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, bool, str], Built]]:
    embedded = foliodb.MongoClient(":memory:")
    server = Server(str(tmp_path_factory.mktemp("served") / "data"), "127.0.0.1", 0)
    host, port = server.start()
    uri = f"mongodb://{host}:{port}/"
    wire = pymongo.MongoClient(uri)
    workers: list[Any] = []
    built = {}
    try:
        for name, good, mode in SECOND:
            label = f"{name}_{'good' if good else 'bad'}"
            if mode == "embedded":
                db = embedded[label]
                hands = [db] * systems2.WORKERS
            else:
                db = wire[label]
                # One connection per worker, as application workers have: the profile tells their requests apart.
                clients = [pymongo.MongoClient(uri, maxPoolSize=1) for _ in range(systems2.WORKERS)]
                workers += clients
                hands = [c[label] for c in clients]
            systems2.build(db, name, good, hands)
            built[(name, good, mode)] = Built(db, advise(db))
        yield built
    finally:
        for client in workers:
            client.close()
        wire.close()
        embedded.close()
        server.shutdown()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    for line in config.stash.get(SCORE, []):
        terminalreporter.write_line(line)


def score(config: pytest.Config, line: str) -> None:
    """Print ``line`` at the end of the run."""
    config.stash.setdefault(SCORE, []).append(line)
