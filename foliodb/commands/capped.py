"""Making capped collections from others: cloneCollectionAsCapped and convertToCapped.

Manual: https://www.mongodb.com/docs/manual/reference/command/cloneCollectionAsCapped/ ,
https://www.mongodb.com/docs/manual/reference/command/convertToCapped/

Both copy a collection's documents in natural (insertion) order into a new capped
collection of ``size`` bytes, which keeps the newest ones that fit, as a capped
collection evicts its oldest. The copy keeps the source's options (validator,
collation...) but none of its indexes beyond ``_id``, as mongod's
cloneCollectionAsCapped; convertToCapped then puts the copy in the source's place
(its other indexes are dropped, as the manual warns). Each runs in one storage
transaction: a failure leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson

from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import collection_name
from foliodb.engine.catalog import CODEC
from foliodb.errors import CommandError, ErrorCode

# Options a capped copy does not take from its source.
_NOT_COPIED = frozenset({"capped", "size", "max", "autoIndexId", "clusteredIndex", "expireAfterSeconds"})


def _size(cmd: Mapping[str, Any], command: str) -> int:
    """The ``size`` in bytes, rounded as ``create`` rounds a capped size."""
    value = params.required(cmd, "size", "number", command)
    size = params.as_int(int(value) if isinstance(value, float) else value, f"{command}.size")
    if size <= 0:
        raise CommandError(ErrorCode.InvalidOptions, "Capped collection size must be greater than zero")
    return 4096 if size <= 4096 else (size + 255) // 256 * 256


def _copy_capped(request: Request, source: str, target: str, size: int, command: str) -> int:
    """Create ``target`` as a capped copy of ``source``; the number of documents copied."""
    engine = request.engine
    info = engine.catalog.get(request.db, source)
    if info is None:
        raise CommandError(ErrorCode.NamespaceNotFound, f"source collection {request.db}.{source} does not exist")
    if info.is_view:
        raise CommandError(
            ErrorCode.CommandNotSupportedOnView, f"{command} not supported on a view: {request.db}.{source}"
        )
    if info.is_timeseries:
        raise CommandError(
            ErrorCode.CommandNotSupportedOnView, f"{command} is not supported for time-series collections"
        )
    if engine.catalog.get(request.db, target) is not None:
        raise CommandError(ErrorCode.NamespaceExists, f"Collection {request.db}.{target} already exists.")
    options = {k: v for k, v in info.options.items() if k not in _NOT_COPIED}
    store = engine.store(request.db, source)
    assert store is not None
    copy = engine.create_collection(request.db, target, {**options, "capped": True, "size": size})
    n = 0
    for _rid, data in store.scan():
        copy.insert(bson.decode(data, CODEC), data)
        n += 1
    return n


@COMMANDS.register("cloneCollectionAsCapped")
def cmd_cloneCollectionAsCapped(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    source = collection_name(cmd, "cloneCollectionAsCapped")
    target = params.required(cmd, "toCollection", "string", "cloneCollectionAsCapped")
    size = _size(cmd, "cloneCollectionAsCapped")
    with request.engine.storage.write():
        _copy_capped(request, source, target, size, "cloneCollectionAsCapped")
    return {"ok": 1.0}


@COMMANDS.register("convertToCapped")
def cmd_convertToCapped(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "convertToCapped")
    size = _size(cmd, "convertToCapped")
    engine = request.engine
    with engine.storage.write():
        # As mongod: a capped copy under a temporary name, renamed over the source.
        temp = f"tmp.convertToCapped.{name}"
        _copy_capped(request, name, temp, size, "convertToCapped")
        engine.rename_collection(request.db, temp, request.db, name, drop_target=True)
    return {"ok": 1.0}
