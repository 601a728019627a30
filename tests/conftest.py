"""Shared fixtures: a fresh embedded client per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def client() -> Iterator[Any]:
    import foliodb

    c = foliodb.MongoClient(":memory:")
    yield c
    c.close()


@pytest.fixture
def db(client: Any) -> Any:
    return client.test


@pytest.fixture
def disk_client(tmp_path: Any) -> Iterator[Any]:
    import foliodb

    c = foliodb.MongoClient(str(tmp_path / "data"))
    yield c
    c.close()
