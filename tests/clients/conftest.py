"""A FolioDB server per test, on a free port over a fresh dbpath, and
pymongo clients of it. Real drivers connect to ``server.uri``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest

from foliodb.server import Server

NODE_DIR = Path(__file__).parent / "node"


def _install_node_clients() -> None:
    """``npm ci`` the pinned Node.js clients (mongodb driver, mongosh) once per
    checkout, so the README's one test command runs them too. Their tests skip,
    saying why, when npm is absent or the install fails (no registry)."""
    npm = shutil.which("npm")
    if npm is None or (NODE_DIR / "node_modules").is_dir():
        return
    try:
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NODE_DIR,
            check=True,
            timeout=600,
            capture_output=True,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"tests/clients: npm ci failed, the Node.js client tests will skip: {exc}")
        shutil.rmtree(NODE_DIR / "node_modules", ignore_errors=True)


# Before the test modules in this directory are collected (their skip marks look for node_modules).
_install_node_clients()

NODE = shutil.which("node")
needs_node_clients = pytest.mark.skipif(
    NODE is None or not (NODE_DIR / "node_modules").is_dir(),
    reason="the Node.js clients are missing: no `node` on PATH, or npm absent or `npm ci` failed (see the output)",
)


class RunningServer:
    """``foliodb serve`` on ``dbpath``, on ``port`` (0: one the system picks)."""

    def __init__(self, dbpath: Path, port: int = 0) -> None:
        self.dbpath = str(dbpath)
        self.server = Server(self.dbpath, "127.0.0.1", port)
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
