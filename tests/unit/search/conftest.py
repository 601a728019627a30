"""Search tests run twice: through the embedded client and over the wire."""

from __future__ import annotations

import time
from typing import Any

from tests.both_targets import client, db, server  # noqa: F401

# How long a test waits for a background build of a few hundred documents: far more than it
# takes (milliseconds), so a loaded machine cannot fail it.
READY_SECONDS = 60.0


def wait_ready(coll: Any, name: str) -> dict[str, Any]:
    """Poll $listSearchIndexes until the index is READY (as langchain-mongodb's helpers do)."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        listed = list(coll.list_search_indexes(name))
        if listed and listed[0]["status"] == "READY":
            return listed[0]
        assert time.monotonic() < deadline, f"index {name} not READY: {listed}"
        time.sleep(0.02)


def vector_index(
    path: str = "v", dims: int = 3, similarity: str = "euclidean", filters: tuple[str, ...] = ()
) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [{"type": "vector", "path": path, "numDimensions": dims, "similarity": similarity}]
    fields += [{"type": "filter", "path": f} for f in filters]
    return {"fields": fields}
