"""Multi-document transactions: the :class:`~foliodb.engine.engine.Engine` methods that begin, commit and abort them.

A transaction begins on a pinned snapshot (:meth:`Storage.pin_snapshot
<foliodb.engine.storage.Storage.pin_snapshot>`), its writes held in overlays
(:mod:`foliodb.engine.transactions`). Commit replays them in one write
transaction onto the newest state: collections the transaction created are
created (a WriteConflict when someone created one meanwhile), then each
overlay's rows are applied, and the oplog gets each write as it happened
(the overlays' own application is muted). Anything changed since the
snapshot, or deleted or dropped meanwhile, is a WriteConflict, and the
transaction is aborted: it applies whole or not at all. Abort only ends it
and unpins its snapshot. Each public function here is a method of
:class:`~foliodb.engine.engine.Engine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bson

from foliodb.engine.catalog import CODEC, CollectionInfo
from foliodb.engine.transactions import State, Transaction, WriteConflictError, write_conflict
from foliodb.errors import CommandError

if TYPE_CHECKING:
    from foliodb.engine.engine import Engine


def begin_transaction(engine: Engine, options: dict[str, Any]) -> Transaction:
    """A new transaction on a pinned snapshot."""
    table = engine.storage.transactions
    table.opening_snapshot()  # before the snapshot: every commit after it gets stamped
    txn = None
    try:
        view, _ = engine.storage.pin_snapshot()
        txn = Transaction(table, view, view.commits, options)
        view.overlay = txn
    finally:
        table.begin(txn)
    return txn


def commit_transaction(engine: Engine, txn: Transaction) -> None:
    """Apply a transaction's writes in one write transaction, or raise
    WriteConflictError (and abort it) when another write got there first."""
    storage = engine.storage
    bound = storage.transaction_view()
    storage.bind_transaction(None)
    try:
        if txn.collections or txn.pending:
            with storage.write():
                txn.state = State.COMMITTING
                storage.oplog.transaction(txn.lsid, txn.number)
                _replay(engine, txn)
    except (CommandError, WriteConflictError):
        txn.state = State.IN_PROGRESS
        engine.abort_transaction(txn)
        raise WriteConflictError(write_conflict()) from None
    except BaseException:
        txn.state = State.IN_PROGRESS
        engine.abort_transaction(txn)
        raise
    finally:
        storage.bind_transaction(bound)
    txn.end(State.COMMITTED)
    storage.unpin(txn.view)


def _replay(engine: Engine, txn: Transaction) -> None:
    created: dict[int, CollectionInfo] = {}
    for (db, name), pending in txn.pending.items():
        if engine.catalog.get(db, name) is not None:
            raise WriteConflictError(write_conflict())  # someone created it meanwhile
        draft = engine.draft()
        info = draft.add_collection(db, name, dict(pending.options))
        for index in pending.indexes.values():
            draft.add_index(info, dict(index.spec))
        created[pending.id] = info
        engine.record(db, info, {"create": name, **pending.options, "idIndex": dict(pending.id_index.spec)})
        built = [dict(index.spec) for index in pending.indexes.values() if index.name != "_id_"]
        if built:
            engine.record(db, info, {"createIndexes": name, "indexes": built})
    if txn.changed_since_snapshot():
        raise WriteConflictError(write_conflict())
    oplog = engine.storage.oplog
    oplog.muted = True  # the net effect is applied below; the oplog gets each write as it happened
    try:
        _apply_overlays(engine, txn, created)
    finally:
        oplog.muted = False
    for op, collection_id, doc_id, before, after, replace in txn.writes:
        target = created.get(collection_id) or engine.catalog.by_id[collection_id]
        if op == "i":
            assert after is not None
            oplog.insert(target.db, target.name, target.uuid, doc_id, after)
        elif op == "u":
            assert before is not None and after is not None
            oplog.update(target.db, target.name, target.uuid, doc_id, before, after, replace, target.keeps_images)
        else:
            assert before is not None
            oplog.delete(target.db, target.name, target.uuid, doc_id, before, target.keeps_images)


def _apply_overlays(engine: Engine, txn: Transaction, created: dict[int, CollectionInfo]) -> None:
    for collection_id, overlay in txn.collections.items():
        target = created.get(collection_id) or engine.catalog.by_id.get(collection_id)
        if target is None:
            raise WriteConflictError(write_conflict())  # dropped meanwhile
        store = engine.store_of(target)
        for rid, data in overlay.rows.items():
            if rid in overlay.inserted:
                if data is not None:
                    store.insert(overlay.docs[rid], data)
                continue
            raw = store.get_raw(rid)
            if raw is None:
                raise WriteConflictError(write_conflict())  # deleted meanwhile
            current = bson.decode(raw, CODEC)
            if data is None:
                store.delete(rid, current, raw)
            else:
                store.update(rid, current, overlay.docs[rid], data, raw, rid in overlay.replaced)


def abort_transaction(engine: Engine, txn: Transaction) -> None:
    if txn.state in (State.COMMITTED, State.ABORTED):
        return
    txn.end(State.ABORTED)
    engine.storage.unpin(txn.view)
