"""The plan cache commands: ``planCacheClear``, and the index filters'
``planCacheSetFilter``, ``planCacheListFilters`` and ``planCacheClearFilters``
(``$planCacheStats`` lists the cache: :func:`cache_stats`).

Each names a query shape by ``query`` (required, except to clear everything),
``sort``, ``projection`` and ``collation``, as mongod's
plan_cache_commands.cpp canonicalizes them: the same checks and BadValue
messages, and the collection's default collation when none is given. A
collection that does not exist has nothing to clear or list; setting a filter
on one is BadValue. Setting or clearing a filter also drops the cached plans
it concerns.

Manual: https://www.mongodb.com/docs/manual/reference/command/planCacheClear/ ,
https://www.mongodb.com/docs/manual/reference/command/planCacheSetFilter/ ,
https://www.mongodb.com/docs/manual/reference/command/planCacheListFilters/ ,
https://www.mongodb.com/docs/manual/reference/command/planCacheClearFilters/
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

import bson
from bson import Int64

from foliodb.commands import collation
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import collection_name
from foliodb.engine.catalog import CODEC
from foliodb.engine.plan_cache import IndexFilter, Shape, plan_cache_key, query_hash, shape_of
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.sort import compile_sort

_SHAPE_FIELDS = ("sort", "projection", "collation")


def _shape(request: Request, name: str, cmd: Mapping[str, Any]) -> Shape:
    """The query shape ``cmd`` describes (it has a ``query``)."""
    query = cmd["query"]
    if not isinstance(query, Mapping):
        raise CommandError(ErrorCode.BadValue, "required field query must be an object")
    for field in _SHAPE_FIELDS:
        if field in cmd and not isinstance(cmd[field], Mapping):
            raise CommandError(ErrorCode.BadValue, f"optional field {field} must be an object")
    sort = compile_sort(cmd["sort"]).fields if cmd.get("sort") else None
    collator = collation.resolve(request, name, cmd.get("collation"), _command(cmd))
    return shape_of(query, sort, cmd.get("projection"), collator)


def _command(cmd: Mapping[str, Any]) -> str:
    return next(iter(cmd))


def _no_shape_without_query(cmd: Mapping[str, Any]) -> None:
    """Clearing everything: refuse a shape's parts without its query (a forgotten query must not clear all)."""
    if any(field in cmd for field in _SHAPE_FIELDS):
        raise CommandError(ErrorCode.BadValue, "sort, projection, or collation provided without query")


def _store(request: Request, cmd: Mapping[str, Any]) -> tuple[str, CollectionStore | None]:
    name = collection_name(cmd, _command(cmd))
    return name, request.engine.store(request.db, name)


@COMMANDS.register("planCacheClear")
def cmd_planCacheClear(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name, store = _store(request, cmd)
    if store is None:
        return {"ok": 1.0}  # clearing a collection that does not exist always succeeds
    if "query" in cmd:
        store.plan_cache.remove(_shape(request, name, cmd))
    else:
        _no_shape_without_query(cmd)
        store.plan_cache.clear()
    return {"ok": 1.0}


def _allowed_indexes(cmd: Mapping[str, Any]) -> list[Any]:
    if "indexes" not in cmd:
        raise CommandError(ErrorCode.BadValue, "required field indexes missing")
    indexes = cmd["indexes"]
    if not isinstance(indexes, list):
        raise CommandError(ErrorCode.BadValue, "required field indexes must be an array")
    if not indexes:
        raise CommandError(ErrorCode.BadValue, "required field indexes must contain at least one index")
    for index in indexes:
        if isinstance(index, Mapping):
            if not index:
                raise CommandError(ErrorCode.BadValue, "index specification cannot be empty")
        elif not isinstance(index, str):
            raise CommandError(ErrorCode.BadValue, "each item in indexes must be an object or string")
    return [dict(index) if isinstance(index, Mapping) else index for index in indexes]


@COMMANDS.register("planCacheSetFilter")
def cmd_planCacheSetFilter(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name, store = _store(request, cmd)
    if store is None:
        raise CommandError(ErrorCode.BadValue, "no such collection")
    indexes = _allowed_indexes(cmd)
    if "query" not in cmd:
        raise CommandError(ErrorCode.BadValue, "required field query missing")
    shape = _shape(request, name, cmd)
    store.index_filters[shape] = IndexFilter(
        query=dict(cmd["query"]),
        sort=dict(cmd.get("sort") or {}),
        projection=dict(cmd.get("projection") or {}),
        collation=dict(cmd["collation"]) if "collation" in cmd else None,
        indexes=indexes,
    )
    store.plan_cache.remove(shape)
    return {"ok": 1.0}


@COMMANDS.register("planCacheListFilters")
def cmd_planCacheListFilters(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    _name, store = _store(request, cmd)
    filters = [] if store is None else [entry.listed() for entry in store.index_filters.values()]
    return {"filters": filters, "ok": 1.0}


@COMMANDS.register("planCacheClearFilters")
def cmd_planCacheClearFilters(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name, store = _store(request, cmd)
    if store is None:
        return {"ok": 1.0}
    if "query" in cmd:
        shape = _shape(request, name, cmd)
        store.index_filters.pop(shape, None)
        store.plan_cache.remove(shape)
        return {"ok": 1.0}
    _no_shape_without_query(cmd)
    for shape in list(store.index_filters):
        store.plan_cache.remove(shape)  # plans made under a filter: planned afresh without it
    store.index_filters.clear()
    return {"ok": 1.0}


def cache_stats(request: Request, name: str) -> list[dict[str, Any]]:
    """The ``$planCacheStats`` documents of collection ``name``: one per cached plan, in
    the classic engine's shape (``version: "1"``)."""
    store = request.engine.store(request.db, name)
    if store is None:
        return []
    indexes = list(store.info.indexes)
    host = socket.gethostname()
    out = []
    for shape, entry in list(store.plan_cache.entries.items()):
        doc: dict[str, Any] = {
            "version": "1",
            "createdFromQuery": entry.created_from,
            "queryHash": query_hash(shape),
            "planCacheKey": plan_cache_key(shape, indexes),
            "isActive": True,
            "works": Int64(entry.works),
            "cachedPlan": entry.cached_plan,
            "timeOfCreation": entry.created,
            "creationExecStats": entry.exec_stats,
            "candidatePlanScores": entry.scores,
            "indexFilterSet": entry.index_filter_set,
        }
        doc["estimatedSizeBytes"] = Int64(len(bson.encode(doc, codec_options=CODEC)))
        doc["host"] = host
        out.append(doc)
    return out
