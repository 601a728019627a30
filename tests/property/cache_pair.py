"""Loading the same documents into the ``cached_and_uncached`` clients (conftest.py)."""

from __future__ import annotations

from typing import Any


def load_both(pair: tuple[Any, Any], docs: list[dict[str, Any]]) -> None:
    """``docs`` (with ``_id`` their position) as ``db.c`` of both clients, the first one's
    collection cached: two scans with no write between build its cache entry."""
    for each in pair:
        each.db.drop_collection("c")
        each.db.c.insert_many([{"_id": i, **doc} for i, doc in enumerate(docs)])
    pair[0].db.c.count_documents({"n": {"$lt": 0}})
    pair[0].db.c.count_documents({"n": {"$lt": 0}})
