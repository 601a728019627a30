"""The aggregation benchmark's pipelines, and how each contender runs them.

Three collections (database ``bench``)::

    orders         the revenue pipeline's input (100k orders)
    lookup_orders  the $lookup's input (the first 10k of the same orders)
    users          the 5,000 customers they refer to (``_id`` = ``user_ref`` = the orders' ``user_id``)

and the $group memory test's ``orders`` (1M, in a dbpath of its own). The
pymongo-style stores run the pipelines below through ``aggregate``; the floor
runs the same computations as plain Python over documents decoded from its
SQLite tables (:mod:`benchmarks.floor`), with dicts as accumulators; its
unindexed $lookup lets SQLite keep only the users whose BSON contains the
ObjectId's 12 bytes (``instr``), as FolioDB's scans do, then decodes and
checks those.

Invariants:

* every contender answers every workload with plain documents (lists of
  dicts), so the parent can compare answers across contenders;
* ``lookup(foreign_field, limit)`` joins the first ``limit`` orders in load
  order (all of them when ``limit`` is None); a store without ``aggregate``
  raises NotImplementedError from its own code, which the harness reports as
  "not supported".
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import bson
from bson import ObjectId

from benchmarks.floor import Floor, IndexedFloor
from benchmarks.peers import FolioDBDisk, FolioDBMemory, Mongomock, MontyDBMemory, PymongoStyle

REVENUE: list[dict[str, Any]] = [
    {"$match": {"status": "shipped"}},
    {"$unwind": "$items"},
    {
        "$group": {
            "_id": "$items.sku",
            "revenue": {"$sum": {"$multiply": ["$items.price", "$items.quantity"]}},
            "count": {"$sum": "$items.quantity"},
        }
    },
    {"$sort": {"revenue": -1}},
    {"$limit": 10},
]
GROUP_FIELD = "shipping_address.zip"  # 800 distinct values (8 cities x 100 zip suffixes)
GROUP: list[dict[str, Any]] = [
    {
        "$group": {
            "_id": "$" + GROUP_FIELD,
            "orders": {"$sum": 1},
            "revenue": {"$sum": "$total"},
            "average": {"$avg": "$total"},
        }
    }
]
AS = "user"


def lookup_pipeline(foreign_field: str, limit: int | None) -> list[dict[str, Any]]:
    lookup = {"$lookup": {"from": "users", "localField": "user_id", "foreignField": foreign_field, "as": AS}}
    return [lookup] if limit is None else [{"$limit": limit}, lookup]


class Pipelines(Protocol):
    """What a contender of the aggregation benchmark offers."""

    name: str
    storage: str
    package: str

    def open(self, workdir: str) -> None: ...
    def close(self) -> None: ...
    def load(self, collection: str, docs: list[dict[str, Any]]) -> None: ...
    def create_index(self, collection: str, field: str) -> None: ...
    def revenue(self) -> list[dict[str, Any]]: ...
    def lookup(self, foreign_field: str, limit: int | None) -> list[dict[str, Any]]: ...
    def group(self) -> list[dict[str, Any]]: ...


class PymongoPipelines(PymongoStyle):
    """The pipelines through pymongo's ``aggregate``."""

    def load(self, collection: str, docs: list[dict[str, Any]]) -> None:
        self.client["bench"][collection].insert_many(docs)

    def create_index(self, collection: str, field: str) -> None:
        self.client["bench"][collection].create_index(field)

    def revenue(self) -> list[dict[str, Any]]:
        return list(self.client["bench"]["orders"].aggregate(REVENUE))

    def lookup(self, foreign_field: str, limit: int | None) -> list[dict[str, Any]]:
        return list(self.client["bench"]["lookup_orders"].aggregate(lookup_pipeline(foreign_field, limit)))

    def group(self) -> list[dict[str, Any]]:
        return list(self.client["bench"]["orders"].aggregate(GROUP))


class FolioDBDiskPipelines(PymongoPipelines, FolioDBDisk):
    pass


class FolioDBMemoryPipelines(PymongoPipelines, FolioDBMemory):
    pass


class MongomockPipelines(PymongoPipelines, Mongomock):
    pass


class MontyDBMemoryPipelines(PymongoPipelines, MontyDBMemory):
    pass


class FloorPipelines:
    """The floor: a :class:`Floor` file per collection, the pipelines as Python loops."""

    name = "floor"
    storage = "disk"
    package = "sqlite3+bson"

    def open(self, workdir: str) -> None:
        self.users = IndexedFloor()
        self.stores: dict[str, Floor] = {"orders": Floor(), "lookup_orders": Floor(), "users": self.users}
        for collection, store in self.stores.items():
            directory = os.path.join(workdir, collection)
            os.makedirs(directory, exist_ok=True)
            store.open(directory)

    def close(self) -> None:
        for store in self.stores.values():
            store.close()

    def load(self, collection: str, docs: list[dict[str, Any]]) -> None:
        self.stores[collection].insert_many(docs)

    def create_index(self, collection: str, field: str) -> None:
        if collection != "users":
            raise ValueError(f"the floor indexes only users, not {collection}")
        self.users.create_index(field)

    def _docs(self, collection: str, limit: int | None = None) -> Any:
        decode = bson.decode
        conn = self.stores[collection].conn
        rows = conn.execute("SELECT doc FROM docs ORDER BY rid LIMIT ?", (-1 if limit is None else limit,))
        return (decode(blob) for (blob,) in rows)

    def revenue(self) -> list[dict[str, Any]]:
        totals: dict[str, list[Any]] = {}
        for doc in self._docs("orders"):
            if doc.get("status") != "shipped":
                continue
            for item in doc["items"]:
                entry = totals.get(item["sku"])
                if entry is None:
                    entry = totals[item["sku"]] = [0.0, 0]
                entry[0] += item["price"] * item["quantity"]
                entry[1] += item["quantity"]
        top = sorted(totals.items(), key=lambda kv: kv[1][0], reverse=True)[:10]
        return [{"_id": sku, "revenue": revenue, "count": count} for sku, (revenue, count) in top]

    def lookup(self, foreign_field: str, limit: int | None) -> list[dict[str, Any]]:
        users = self.users
        out = []
        for doc in self._docs("lookup_orders", limit):
            if foreign_field == "_id":
                found = users.find_one_by_id(doc["user_id"])
                doc[AS] = [] if found is None else [found]
            elif foreign_field in users.indexed:
                doc[AS] = users.find_equal(foreign_field, doc["user_id"])
            else:
                doc[AS] = self._scan_users(foreign_field, doc["user_id"])
            out.append(doc)
        return out

    def _scan_users(self, field: str, value: ObjectId) -> list[dict[str, Any]]:
        """An unindexed equality: SQLite keeps the rows whose BSON holds the value's 12 bytes, Python decodes and checks."""
        decode = bson.decode
        rows = self.users.conn.execute("SELECT doc FROM docs WHERE instr(doc, ?) > 0", (value.binary,))
        return [doc for doc in (decode(blob) for (blob,) in rows) if doc.get(field) == value]

    def group(self) -> list[dict[str, Any]]:
        groups: dict[str, list[Any]] = {}
        for doc in self._docs("orders"):
            key = doc["shipping_address"]["zip"]
            entry = groups.get(key)
            if entry is None:
                entry = groups[key] = [0, 0.0]
            entry[0] += 1
            entry[1] += doc["total"]
        return [{"_id": k, "orders": n, "revenue": s, "average": s / n} for k, (n, s) in groups.items()]
