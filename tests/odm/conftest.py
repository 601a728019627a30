"""ODMs (mongoengine, beanie, odmantic) unchanged against FolioDB: a
``foliodb serve`` per test on a free port over a fresh dbpath, and, for the
ODMs that take a pymongo client class or instance, the embedded client.

Where an ODM scenario fails because of a known server-side bug, its test is
marked ``xfail(strict=True)`` naming the bug, so the fix turns it red until
the mark goes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foliodb.server import Server


@pytest.fixture
def server_uri(tmp_path: Path) -> Iterator[str]:
    server = Server(str(tmp_path / "served"), "127.0.0.1", 0)
    host, port = server.start()
    yield f"mongodb://{host}:{port}/"
    server.shutdown()
