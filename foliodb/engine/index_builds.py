"""Index builds: the :class:`~foliodb.engine.engine.Engine` methods that add, fill and drop indexes.

Index builds do not hold the writer for their whole run (MongoDB's hybrid
builds, made simpler by a serialized writer): the index is first committed as
*building* - every later write maintains its entries, but no query sees it -
then the existing documents are indexed in chunks, each chunk one short write
transaction reading the chunk's documents as they are now, and finally the
index is committed as ready. Because a chunk reads the current documents and
writes maintain the index for every change after the first commit, the index
ends exactly right. A unique-key clash seen by a concurrent write is recorded
and fails the build at its end (as mongod's build fails on a constraint
violation), and a failed, killed or aborted build removes its index.
Collections small enough to index in one chunk are built in one transaction.

A build in progress is an :class:`IndexBuild`; its indexes are in the
catalog's ``building`` map until they are ready, and a second createIndexes
of the same index waits for the first (:func:`wait_for_build`). Each public
function here is a method of :class:`~foliodb.engine.engine.Engine`.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import bson

from foliodb import interrupt, lane
from foliodb.engine.catalog import CODEC, CollectionInfo, IndexInfo
from foliodb.engine.records import CollectionStore
from foliodb.engine.transactions import Transaction
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.engine.engine import Engine

# Documents indexed per write transaction of an index build: a few milliseconds of the writer.
BUILD_CHUNK = 1000


@dataclass
class IndexBuild:
    """A build in progress: its collection and the indexes it fills."""

    collection_id: int
    names: list[str]
    index_ids: list[int]
    total: int  # documents when it began (the progress figure's total)


def begin_index_build(engine: Engine, store: CollectionStore, specs: list[dict[str, Any]]) -> IndexBuild | None:
    """Inside a write: add the indexes. A collection that fits one chunk is
    indexed here, in this transaction (None is returned); a larger one gets
    its indexes as *building*, to be filled by :func:`run_index_build`
    after this transaction commits."""
    txn = engine.storage.transaction()
    if txn is not None:
        _index_in_transaction(engine, txn, store, specs)
        return None
    draft = engine.draft()
    info = store.info
    total = store.count()
    building = total > BUILD_CHUNK
    indexes = [draft.add_index(info, spec, building=building) for spec in specs]
    if not building:
        engine.record(info.db, info, {"createIndexes": info.name, "indexes": [dict(i.spec) for i in indexes]})
    if building:
        return IndexBuild(info.id, [i.name for i in indexes], [i.id for i in indexes], total)
    if total:
        filled = engine.store_of(draft.catalog.by_id[info.id])
        ids = {index.id for index in indexes}
        writers = [w for w in filled.writers if w.info.id in ids]
        for rid, data in filled.scan():
            doc = bson.decode(data, CODEC)
            for writer in writers:
                filled.add_entries(writer, doc, rid)
    return None


def _index_in_transaction(
    engine: Engine, txn: Transaction, store: CollectionStore, specs: list[dict[str, Any]]
) -> None:
    """Indexes on a collection the transaction created (mongod allows no other inside one)."""
    info = store.info
    if info.id >= 0:
        raise CommandError(
            ErrorCode.OperationNotSupportedInTransaction,
            f"Cannot create new indexes on existing collection {info.ns} in a multi-document transaction.",
        )
    for spec in specs:
        info.indexes[spec["name"]] = IndexInfo(txn.next_pending_id, spec["name"], spec)
        txn.next_pending_id -= 1
    info.store = None  # a new store maintains the new indexes
    overlay = txn.overlay_of(info.id)
    if overlay is not None:
        fresh = engine.store_of(info)
        for writer in fresh.writers:
            if writer.unique and writer.info.name in {spec["name"] for spec in specs}:
                entries = overlay.entries(writer.info, writer.keys, True)
                for (key, _), (next_key, _) in itertools.pairwise(entries):
                    if key == next_key:
                        raise CommandError(ErrorCode.DuplicateKey, f"E11000 duplicate key error collection: {info.ns}")


def run_index_build(engine: Engine, build: IndexBuild) -> None:
    """Fill a building index chunk by chunk, then make it ready; on any
    failure (a duplicate key, killOp, maxTimeMS, the collection or index
    dropped meanwhile) remove what the build added, and raise."""
    op = interrupt.current()
    done = 0
    last = 0
    try:
        while True:
            interrupt.check()
            with engine.storage.write():
                store, _ = _building(engine, build)
                writers = [w for w in store.writers if w.info.id in build.index_ids]
                rows = store.rows_from(last + 1, BUILD_CHUNK)
                for rid, data in rows:
                    doc = bson.decode(data, CODEC)
                    for writer in writers:
                        store.add_build_entries(writer, doc, rid)
            done += len(rows)
            if op is not None:
                op.progress = (done, max(build.total, done))
            if len(rows) < BUILD_CHUNK:
                break
            last = rows[-1][0]
        with engine.storage.write():
            store, indexes = _building(engine, build)
            for index in indexes:
                if index.build_error is not None:
                    raise index.build_error
            draft = engine.draft()
            for index in indexes:
                draft.index_ready(store.info, index)
            engine.record(
                store.info.db,
                store.info,
                {"createIndexes": store.info.name, "indexes": [dict(i.spec) for i in indexes]},
            )
    except BaseException:
        _abandon_build(engine, build)
        raise


def _building(engine: Engine, build: IndexBuild) -> tuple[CollectionStore, list[IndexInfo]]:
    """The current store and indexes of a build; IndexBuildAborted when they went away."""
    info = engine.catalog.by_id.get(build.collection_id)
    if info is None:
        raise CommandError(ErrorCode.IndexBuildAborted, "Index build aborted: the collection was dropped")
    indexes = []
    for name, index_id in zip(build.names, build.index_ids, strict=True):
        index = info.building.get(name)
        if index is None or index.id != index_id:
            raise CommandError(ErrorCode.IndexBuildAborted, f"Index build aborted: index '{name}' was dropped")
        indexes.append(index)
    return engine.store_of(info), indexes


def _abandon_build(engine: Engine, build: IndexBuild) -> None:
    with engine.storage.write():
        info = engine.catalog.by_id.get(build.collection_id)
        if info is None:
            return
        for name, index_id in zip(build.names, build.index_ids, strict=True):
            index = info.building.get(name)
            if index is not None and index.id == index_id:
                engine.draft().remove_index(info, index)


def wait_for_build(engine: Engine, db: str, name: str, index_name: str) -> None:
    """Until no index named ``index_name`` is being built on the collection
    (a second createIndexes of it waits for the first, as mongod's does)."""
    while True:
        engine.storage.end_view()
        info = engine.catalog.get(db, name)
        if info is None or index_name not in info.building:
            return
        interrupt.check()
        lane.leave()
        time.sleep(0.02)


def drop_index(engine: Engine, info: CollectionInfo, index: IndexInfo) -> None:
    """Inside a write: drop a ready index, or abort a build in progress."""
    ready = index.name in engine.catalog.by_id[info.id].indexes
    engine.draft().remove_index(info, index)
    if ready:
        engine.record(info.db, info, {"dropIndexes": info.name, "index": index.name, "spec": dict(index.spec)})
