"""The ``insert`` command: a driver's insert_one by the point path, batches by the general one.

Manual: https://www.mongodb.com/docs/manual/reference/command/insert/"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from itertools import repeat
from typing import Any

from bson import Timestamp

from foliodb import interrupt
from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.commands.native import native_items
from foliodb.commands.params import MAX_WRITE_BATCH_SIZE
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import (
    INSERT_CHUNK,
    SCALAR_IDS,
    Target,
    Writes,
    collection_name,
    finish,
    ordered_flag,
    point_statement,
    point_store,
    prepare_insert,
    same_store,
)
from foliodb.engine.records import MAX_BSON_SIZE, CollectionStore, shallow
from foliodb.engine.timeseries import check_measurement
from foliodb.errors import INTERRUPTIONS, CommandError


def point_insert(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to an insert of one document into an existing plain collection
    (see :func:`point_store`), written without the general path's batch and
    target machinery; None when the general path must answer. Its reply and
    errors are the general path's: the same record store writes it."""
    doc = point_statement(cmd, "insert", "documents")
    if doc is None:
        return None
    store = point_store(request, cmd["insert"])
    if store is None:
        return None
    return _insert_into(request, cmd, store, doc, None)


def point_insert_encoded(data: bytes, request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`point_insert` of a caller's document that the embedded client encoded
    (``data``: pymongo's C codec, ``_id`` first as it puts it in a top-level document)
    instead of checking its types (``commands/native.py``). ``data`` is what is stored and
    recorded; the document itself is read only for index keys, so only the values those
    read must be of native types: its ``_id`` (of the usual types, which need no check)
    and, when the collection has other indexes, all of it. None (the general path, given
    the document checked) where more is needed: another ``_id`` type, an empty timestamp
    to fill in (:func:`prepare_insert`), a size or nesting the limits might refuse."""
    doc = point_statement(cmd, "insert", "documents")
    if doc is None or type(doc.get("_id")) not in SCALAR_IDS or len(data) > MAX_BSON_SIZE or not shallow(data):
        return None
    if _may_hold_empty_timestamp(data, doc):
        return None
    store = point_store(request, cmd["insert"])
    if store is None or (len(store.writers) > 1 and not native_items(doc.values())):
        return None
    return _insert_into(request, cmd, store, doc, data)


def point_insert_batch_encoded(rows: list[bytes], request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to an insert of documents the embedded client encoded (``rows``, as for
    :func:`point_insert_encoded`) into an existing plain collection: :func:`cmd_insert`'s
    batch path (an ``executemany`` a table for each thousand), storing ``rows`` as they are.
    None (the general path, given the documents checked) for what that path declines, and
    when a document fails: the general path then inserts one by one and reports each error."""
    docs = cmd.get("documents")
    name = cmd.get("insert")
    if (
        type(docs) is not list
        or type(name) is not str
        or len(cmd) != 3
        or type(cmd.get("ordered")) is not bool
        or len(docs) != len(rows)
        or len(docs) > MAX_WRITE_BATCH_SIZE
    ):
        return None
    # point_insert_encoded's checks of each document, in C loops (map) over the batch.
    if set(map(type, docs)) != {dict} or not set(map(type, map(dict.get, docs, repeat("_id")))) <= SCALAR_IDS:
        return None
    if max(map(len, rows)) > MAX_BSON_SIZE or not all(map(shallow, rows)):
        return None
    if any(map(bytes.count, rows, repeat(_EMPTY_TIMESTAMP))) and any(map(_may_hold_empty_timestamp, rows, docs)):
        return None
    store = point_store(request, name)
    if store is None or (len(store.writers) > 1 and not native_items(docs)):
        return None
    storage = request.engine.storage
    with storage.write():
        if not same_store(request, store):
            return None
        try:
            with storage.savepoint():
                for start in range(0, len(docs), INSERT_CHUNK):
                    interrupt.check()
                    store.insert_batch(docs[start : start + INSERT_CHUNK], rows[start : start + INSERT_CHUNK])
        except sqlite3.IntegrityError:
            return None  # rolled back
        except CommandError as exc:
            if exc.code in INTERRUPTIONS:
                raise  # the whole command fails, as the general path's
            return None
    return finish(request, cmd, {"n": len(docs), "ok": 1.0})


def _may_hold_empty_timestamp(data: bytes, doc: dict[str, Any]) -> bool:
    """Whether ``doc`` (``data`` its BSON) may hold a timestamp the server is to fill in
    (:func:`prepare_insert`): an empty one is type byte 0x11 and eight zero bytes, which
    most documents lack, so that few need a look at their values."""
    # count, not `in`: `bytes in bytes` first tries the operand as an int, and formats the error.
    return 0x11 in data and data.count(_EMPTY_TIMESTAMP) > 0 and any(isinstance(v, Timestamp) for v in doc.values())


_EMPTY_TIMESTAMP = bytes(8)


def _insert_into(
    request: Request, cmd: Mapping[str, Any], store: CollectionStore, doc: Any, data: bytes | None
) -> dict[str, Any] | None:
    """The point insert of ``doc`` (as :func:`prepare_insert` makes it, unless given ``data``, its
    BSON ready to store) into ``store``, still the collection's newest version; None if not."""
    reply: dict[str, Any] = {"n": 1, "ok": 1.0}
    with request.engine.storage.write():
        if not same_store(request, store):
            return None
        try:
            if data is None:
                store.insert(prepare_insert(doc))
            else:
                store.insert(doc, data)
        except CommandError as exc:
            reply = {"n": 0, "ok": 1.0, "writeErrors": [exc.to_write_error(0)]}  # the general path's order
    return finish(request, cmd, reply)


@COMMANDS.register("insert")
def cmd_insert(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    point = point_insert(request, cmd)
    if point is not None:
        return point
    name = collection_name(cmd, "insert")
    docs = params.write_batch(params.required(cmd, "documents", "array", "insert"))
    ordered = ordered_flag(cmd, "insert")
    writes = Writes(request, cmd, "insert")
    n = 0
    errors: list[dict[str, Any]] = []
    storage = request.engine.storage
    with storage.write():
        # Looked up inside the write: the collection's newest indexes and validator.
        target = writes.target(request.db, name)
        if target.buckets is not None:
            n, errors = _insert_measurements(target, docs, ordered)
            return finish(request, cmd, {"n": n, "ok": 1.0, **({"writeErrors": errors} if errors else {})})
        store = target.ensure_store()
        if len(docs) > 1 and target.validator is None:
            # The fast path: one executemany per table for each thousand documents (between them
            # the operation checks for interruption).
            try:
                with storage.savepoint():
                    for start in range(0, len(docs), INSERT_CHUNK):
                        interrupt.check()
                        store.insert_batch([prepare_insert(doc) for doc in docs[start : start + INSERT_CHUNK]])
                n = len(docs)
            except sqlite3.IntegrityError:
                n = 0  # rolled back: the path below finds and reports each error
            except CommandError as exc:
                if exc.code in INTERRUPTIONS:
                    raise  # the whole command fails and rolls back
                n = 0
        if not n:
            for i, doc in enumerate(docs):
                if i and not i & 255:
                    interrupt.check()
                try:
                    target.insert(doc, store)
                    n += 1
                except CommandError as exc:
                    errors.append(exc.to_write_error(i))
                    if ordered:
                        break
    reply: dict[str, Any] = {"n": n, "ok": 1.0}
    if errors:
        reply["writeErrors"] = errors
    return finish(request, cmd, reply)


def _insert_measurements(target: Target, docs: list[Any], ordered: bool) -> tuple[int, list[dict[str, Any]]]:
    """Insert into a time-series collection: the valid measurements, bucketed
    in one pass (an ordered insert stops at the first invalid one)."""
    assert target.buckets is not None
    errors: list[dict[str, Any]] = []
    good = []
    for i, doc in enumerate(docs):
        try:
            good.append(check_measurement(target.buckets, doc))
        except CommandError as exc:
            errors.append(exc.to_write_error(i))
            if ordered:
                break
    target.timeseries().insert(good)
    return len(good), errors
