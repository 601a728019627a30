"""Storage and usage statistics: dbStats, collStats, and the documents of
the ``$collStats`` and ``$indexStats`` stages.

Sizes are real: ``size``/``dataSize`` the documents' BSON, ``storageSize``
and ``indexSizes`` the SQLite pages holding records and index entries (the
engine measures them through ``dbstat``). Usage (index accesses, latencies)
comes from :mod:`foliodb.engine.usage`. Fields of WiredTiger's own
(``wiredTiger``, ``indexDetails``, ``freeStorageSize``) have no counterpart
and are left out.

Manual: https://www.mongodb.com/docs/manual/reference/command/dbStats/,
https://www.mongodb.com/docs/manual/reference/command/collStats/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from bson import Int64

from foliodb.commands import oplog_rs, params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import collection_name
from foliodb.engine import usage
from foliodb.engine.engine import Engine
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp


def _scale(spec: Mapping[str, Any], where: str) -> int:
    """The ``scale`` option: its integer part, at least 1."""
    value = params.field(spec, "scale", "number", where)
    if value is None:
        return 1
    scale = int(cmp.number_value(value))
    if scale < 1:
        raise CommandError(ErrorCode.BadValue, "scale has to be >= 1")
    return scale


def storage_stats(store: CollectionStore, scale: int) -> dict[str, Any]:
    """A collection's storage statistics, as collStats and ``$collStats``'
    ``storageStats`` show them (sizes divided by ``scale``)."""
    count = store.count()
    size = store.data_size()
    storage = store.storage_size()
    index_sizes = store.index_sizes()
    index_total = sum(index_sizes.values())
    out: dict[str, Any] = {"size": size // scale, "count": count}
    if count:
        out["avgObjSize"] = size // count
    out["numOrphanDocs"] = 0  # no sharding, so no orphans
    out["storageSize"] = storage // scale
    options = store.info.options
    out["capped"] = bool(options.get("capped", False))
    if out["capped"]:
        out["max"] = int(options.get("max") or 0)
        out["maxSize"] = int(options["size"]) // scale
    out.update(
        nindexes=len(store.info.indexes),
        indexBuilds=[],  # FolioDB builds an index within its createIndexes: none is ever in progress
        totalIndexSize=index_total // scale,
        totalSize=(storage + index_total) // scale,
        indexSizes={name: n // scale for name, n in index_sizes.items()},
        scaleFactor=scale,
    )
    return out


def database_size(engine: Engine, db: str) -> int:
    """Bytes of the pages holding a database's records and indexes."""
    total = 0
    for info in engine.collections(db):
        store = engine.store(db, info.name)
        if store is not None:  # a view has no store
            total += store.storage_size() + sum(store.index_sizes().values())
    return total


@COMMANDS.register("dbStats", "dbstats")  # mongod's aliases (dbcommands.cpp)
def cmd_dbStats(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    scale = _scale(cmd, "dbStats")
    engine = request.engine
    collections = views = objects = size = storage = index_size = indexes = 0
    for info in engine.collections(request.db):
        store = engine.store(request.db, info.name)
        if store is None:
            views += 1
            continue
        collections += 1
        objects += store.count()
        size += store.data_size()
        storage += store.storage_size()
        index_size += sum(store.index_sizes().values())
        indexes += len(info.indexes)
    if request.db == "local":  # the oplog is one of local's collections
        entries, entry_bytes, pages = oplog_rs.data_stats(engine)
        collections, objects, size, storage = collections + 1, objects + entries, size + entry_bytes, storage + pages
    reply: dict[str, Any] = {
        "db": request.db,
        "collections": collections,
        "views": views,
        "objects": objects,
        "avgObjSize": size / objects if objects else 0,
        "dataSize": size // scale,
        "storageSize": storage // scale,
        "indexes": indexes,
        "indexSize": index_size // scale,
        "totalSize": (storage + index_size) // scale,
        "scaleFactor": scale,
    }
    if not engine.storage.memory:
        disk = shutil.disk_usage(engine.path)
        reply.update(fsUsedSize=disk.used // scale, fsTotalSize=disk.total // scale)
    reply["ok"] = 1.0
    return reply


@COMMANDS.register("collStats", "collstats")
def cmd_collStats(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, next(iter(cmd)))
    scale = _scale(cmd, "collStats")
    if oplog_rs.is_oplog(request.db, name):
        return {"ns": f"local.{name}", **oplog_rs.storage_stats(request.engine, scale), "ok": 1.0}
    info = request.engine.catalog.get(request.db, name)
    if info is not None and info.is_view and not info.is_timeseries:  # as $collStats' storageStats: no storage
        raise CommandError(
            ErrorCode.CommandNotSupportedOnView, f"Namespace {request.db}.{name} is a view, not a collection"
        )
    store = request.engine.store(request.db, name)
    if store is None:
        raise CommandError(ErrorCode.NamespaceNotFound, f"Collection [{request.db}.{name}] not found.")
    return {"ns": store.info.ns, **storage_stats(store, scale), "ok": 1.0}


def coll_stats(engine: Engine, db: str, coll: str, spec: Mapping[str, Any], now: Any) -> dict[str, Any]:
    """The ``$collStats`` document of namespace ``db.coll`` for ``spec``."""
    out: dict[str, Any] = {"ns": f"{db}.{coll}", "host": "foliodb", "localTime": now}
    info = engine.catalog.get(db, coll)
    if "latencyStats" in spec:
        histograms = bool(params.field(spec["latencyStats"], "histograms", "bool", "$collStats.latencyStats"))
        out["latencyStats"] = usage.latency_stats(engine.usage, db, coll, histograms)
    for part in ("storageStats", "count"):
        if part not in spec:
            continue
        if oplog_rs.is_oplog(db, coll):
            stats = oplog_rs.storage_stats(
                engine, _scale(spec[part], "$collStats.storageStats") if part == "storageStats" else 1
            )
            out[part] = stats if part == "storageStats" else stats["count"]
            continue
        if info is not None and info.is_view:
            # A view's latency is its own, but it has no storage.
            raise CommandError(
                ErrorCode.CommandNotSupportedOnView, f"Namespace {db}.{coll} is a view, not a collection"
            )
        store = engine.store(db, coll)
        if store is None:
            raise CommandError(
                ErrorCode.NamespaceNotFound,
                f"Unable to retrieve {part} in $collStats stage :: caused by :: Collection [{db}.{coll}] not found.",
            )
        if part == "storageStats":
            out["storageStats"] = storage_stats(store, _scale(spec["storageStats"], "$collStats.storageStats"))
        else:
            out["count"] = store.count()
    if "queryExecStats" in spec:
        scans = usage.collection_scans(engine.usage, db, coll)
        out["queryExecStats"] = {"collectionScans": {"total": Int64(scans), "nonTailable": Int64(scans)}}
    return out


def index_stats(engine: Engine, db: str, coll: str) -> list[dict[str, Any]]:
    """One ``$indexStats`` document per index: its accesses (operations whose
    plan read it) since the engine opened or the index was created."""
    info = engine.catalog.get(db, coll)
    if info is None or info.is_view:
        return []
    accesses = engine.usage.indexes_of(info)
    return [
        {
            "name": name,
            "key": dict(index.key),
            "host": "foliodb",
            "accesses": {"ops": Int64(accesses[name].ops), "since": accesses[name].since},
            "spec": dict(index.spec),
        }
        for name, index in info.indexes.items()
    ]
