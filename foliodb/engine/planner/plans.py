"""Access stages: how candidate records come out of storage.

An access stage yields ``(rid, bson_bytes)`` candidates; the query layer
decodes, filters (always: an access path only narrows, it never decides a
match), sorts and projects them. Each stage counts what it examined, for
``explain``'s executionStats.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from foliodb.engine.records import CollectionStore


class AccessStage:
    stage = ""
    keys_examined = 0
    docs_examined = 0

    def rows(self) -> Iterator[tuple[int, bytes]]:
        raise NotImplementedError

    def explain(self) -> dict[str, Any]:
        raise NotImplementedError


class CollScan(AccessStage):
    """Every record, in record-id (insertion) order or its reverse."""

    stage = "COLLSCAN"

    def __init__(self, store: CollectionStore, direction: int = 1) -> None:
        self.store = store
        self.direction = direction

    def rows(self) -> Iterator[tuple[int, bytes]]:
        for row in self.store.scan(reverse=self.direction < 0):
            self.docs_examined += 1
            yield row

    def explain(self) -> dict[str, Any]:
        return {"stage": "COLLSCAN", "direction": "forward" if self.direction > 0 else "backward"}


class IdLookup(AccessStage):
    """Point lookups of ``_id`` values in the ``_id`` index (MongoDB's IDHACK
    for one value, an IXSCAN of point bounds for several)."""

    def __init__(self, store: CollectionStore, keys: list[bytes]) -> None:
        self.store = store
        self.keys = keys
        self.stage = "IDHACK" if len(keys) == 1 else "IXSCAN"

    def rows(self) -> Iterator[tuple[int, bytes]]:
        for key in self.keys:
            self.keys_examined += 1
            row = self.store.row_by_id_key(key)
            if row is not None:
                self.docs_examined += 1
                yield row

    def explain(self) -> dict[str, Any]:
        if self.stage == "IDHACK":
            return {"stage": "IDHACK"}
        return {
            "stage": "IXSCAN",
            "keyPattern": {"_id": 1},
            "indexName": "_id_",
            "isMultiKey": False,
            "direction": "forward",
        }
