"""Embedded clients shared by a module's property tests (each example drops what it made)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import foliodb


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One embedded client on a file of its own."""
    client = foliodb.MongoClient(str(tmp_path_factory.mktemp("property") / "db"))
    yield client
    client.close()


@pytest.fixture(scope="module")
def cached_and_uncached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """Two embedded clients, the second with its document cache off."""
    path = tmp_path_factory.mktemp("cache-pair")
    cached = foliodb.MongoClient(str(path / "cached"))
    uncached = foliodb.MongoClient(str(path / "uncached"))
    uncached.admin.command("setParameter", 1, documentCacheSizeMB=0)
    yield cached, uncached
    cached.close()
    uncached.close()
