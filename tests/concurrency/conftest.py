"""Deployments for the concurrency suite: an embedded dbpath shared by several
clients of one process, or ``foliodb serve`` in its own process (so the
server's threads and the test's client threads do not share one GIL, as in
a real deployment)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

import foliodb

ROOT = Path(__file__).resolve().parents[2]


class Deployment:
    """Where the clients of a test connect: ``connect()`` gives a new client."""

    def __init__(self, kind: str, dbpath: str, *serve_options: str) -> None:
        self.kind = kind
        self.dbpath = dbpath
        self.process: subprocess.Popen[str] | None = None
        self._clients: list[Any] = []
        if kind == "server":
            env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
            self.process = subprocess.Popen(
                [sys.executable, "-m", "foliodb", "serve", "--dbpath", dbpath, "--port", "0", *serve_options],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=ROOT,
                env=env,
            )
            assert self.process.stdout is not None
            first = self.process.stdout.readline()  # "... waiting for connections on HOST:PORT (dbpath ...)"
            assert "waiting for connections" in first, first
            self.port = int(first.split(" on ", 1)[1].split(" ", 1)[0].rsplit(":", 1)[1])

    def connect(self) -> Any:
        client: Any
        if self.kind == "server":
            client = pymongo.MongoClient("127.0.0.1", self.port, serverSelectionTimeoutMS=5000)
        else:
            client = foliodb.MongoClient(self.dbpath)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture(params=["embedded", "server"])
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    running = Deployment(request.param, str(tmp_path / "data"))
    yield running
    running.close()
