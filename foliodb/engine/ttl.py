"""The TTL monitor: a background thread that deletes expired documents.

Every ``ttlMonitorSleepSecs`` seconds (60 by default, as in MongoDB; a
client option and a ``setParameter``) it visits each index with
``expireAfterSeconds`` and deletes the documents whose indexed date - the
earliest one when the field is an array of dates - is older than that many
seconds. Documents whose field is missing or holds no date never expire.

It finds candidates through the index's date range and re-checks each
document before deleting it, in write transactions of at most
:data:`SWEEP_CHUNK` documents, so a large expiry never holds the writer long.

Collections with an ``expireAfterSeconds`` option expire too: a clustered
collection by its ``_id`` dates (through the ``_id`` index that orders it), a
time-series collection's buckets collection a whole bucket at a time, once
the newest measurement of the bucket (``control.max.<timeField>``) is older
than the cutoff, as the manual's "Automatic Removal for Time Series
Collections" describes.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any

import bson

from foliodb import threads
from foliodb.engine.catalog import CODEC, CollectionInfo, IndexInfo
from foliodb.engine.query import FindExecution, FindSpec
from foliodb.engine.records import CollectionStore
from foliodb.query import compare as cmp
from foliodb.query import keystring
from foliodb.query.context import Context
from foliodb.query.paths import leaf_values

if TYPE_CHECKING:
    from foliodb.engine.engine import Engine

log = logging.getLogger("foliodb.ttl")

_DATE_START = bytes([cmp.DATE + 16])
TICK_SECONDS = 0.2
SWEEP_CHUNK = 1000


def expired_before(doc: dict[str, Any], index: IndexInfo, cutoff_ms: int) -> bool:
    """Does the document's indexed date (earliest of an array) precede the cutoff?"""
    parts, _ = index.fields[0]
    dates = [cmp.date_millis(v) for v in leaf_values(doc, parts) if cmp.bracket(v) == cmp.DATE]
    return bool(dates) and min(dates) < cutoff_ms


def sweep_index(store: CollectionStore, index: IndexInfo, now: datetime.datetime) -> tuple[int, bool]:
    """Inside a write: delete up to SWEEP_CHUNK of the documents ``index``
    says have expired; (how many, whether candidates remain)."""
    seconds = index.spec.get("expireAfterSeconds")
    if not cmp.is_number(seconds):
        return 0, False
    cutoff = now - datetime.timedelta(seconds=float(cmp.number_value(seconds)))
    cutoff_ms = cmp.date_millis(cutoff)
    _, descending = index.fields[0]
    low, high = _DATE_START, keystring.encode(cutoff)
    if descending:
        # Complemented keys: the dates before the cutoff sort after its key,
        # up to the end of the (complemented) date bracket.
        low, high = keystring.complement(high), bytes([keystring.complement(_DATE_START)[0] + 1])
    rids = store.index_rids(index, low, high)
    deleted = 0
    for rid in rids[:SWEEP_CHUNK]:
        data = store.get_raw(rid)
        if data is None:
            continue
        doc = bson.decode(data, CODEC)
        if expired_before(doc, index, cutoff_ms):
            store.delete(rid, doc, data)
            deleted += 1
    return deleted, len(rids) > SWEEP_CHUNK


def sweep_buckets(store: CollectionStore, now: datetime.datetime) -> tuple[int, bool]:
    """Inside a write: delete up to SWEEP_CHUNK buckets whose newest measurement has expired."""
    options = store.info.options
    cutoff = now - datetime.timedelta(seconds=float(cmp.number_value(options["expireAfterSeconds"])))
    path = f"control.max.{options['timeseries']['timeField']}"
    spec = FindSpec(filter={path: {"$lt": cutoff}}, limit=SWEEP_CHUNK + 1, show_record_id=True)
    found = list(FindExecution(store, spec, Context()))
    for doc in found[:SWEEP_CHUNK]:
        rid = doc.pop("$recordId")
        store.delete(rid, doc)
    return min(len(found), SWEEP_CHUNK), len(found) > SWEEP_CHUNK


def ttl_targets(info: CollectionInfo) -> list[str]:
    """The names of a collection's TTL indexes; "" for the collection's own
    ``expireAfterSeconds`` (a clustered or time-series buckets collection)."""
    names = [index.name for index in info.indexes.values() if "expireAfterSeconds" in index.spec]
    if "expireAfterSeconds" in info.options and not info.is_view:
        names.append("")
    return names


def sweep_target(store: CollectionStore, index_name: str, now: datetime.datetime) -> tuple[int, bool] | None:
    """One chunk of one target (see :func:`ttl_targets`); None when it is gone."""
    info = store.info
    if index_name:
        index = info.indexes.get(index_name)
        return None if index is None else sweep_index(store, index, now)
    if "expireAfterSeconds" not in info.options:
        return None
    if "timeseries" in info.options:
        return sweep_buckets(store, now)
    # A clustered collection: its _id index read as a TTL index.
    by_id = dataclasses.replace(
        info.id_index, spec={**info.id_index.spec, "expireAfterSeconds": info.options["expireAfterSeconds"]}
    )
    return sweep_index(store, by_id, now)


class TTLMonitor(threading.Thread):
    """The engine's background thread: TTL passes, and every tick the engine's
    housekeeping (expired sessions, stale transactions, the oplog's bound)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(name="foliodb-ttl", daemon=True)
        self.engine = engine
        self._stop_event = threading.Event()
        self.passes = 0  # completed passes, for tests and serverStatus

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            threads.join(self, timeout=5)

    def run(self) -> None:
        last = time.monotonic()
        while not self._stop_event.wait(TICK_SECONDS):
            try:
                self.engine.housekeeping()
            except sqlite3.OperationalError as exc:
                # Out of file descriptors or a busy file: transient; the next tick retries.
                log.warning("housekeeping deferred: %s", exc)
            except Exception:  # the monitor must outlive a bad pass
                log.exception("housekeeping failed")
            interval = float(self.engine.parameters.get("ttlMonitorSleepSecs", 60))
            if time.monotonic() - last < interval:
                continue
            last = time.monotonic()
            if not self.engine.parameters.get("ttlMonitorEnabled", True):
                continue
            try:
                self.sweep()
            except Exception:  # the monitor must outlive a bad pass
                log.exception("TTL pass failed")

    def sweep(self) -> int:
        """One pass over every TTL index; returns the documents deleted."""
        engine = self.engine
        deleted = 0
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        storage = engine.storage
        if engine.closed:
            return 0
        storage.begin_operation()
        try:
            targets = [
                (info.db, info.name, index_name)
                for info in engine.catalog.collections.values()
                for index_name in ttl_targets(info)
            ]
            storage.end_view()
            for db, name, index_name in targets:
                more = True
                while more:
                    with storage.write():
                        store = engine.store(db, name)
                        swept = sweep_target(store, index_name, now) if store is not None else None
                        if swept is None:
                            break
                        count, more = swept
                        deleted += count
                        more = more and count > 0
        finally:
            storage.end_operation()
        self.passes += 1
        return deleted
