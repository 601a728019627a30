"""What an engine has been used for since it opened: index accesses (for
``$indexStats``) and operation latencies per namespace (for ``$collStats``'
``latencyStats`` and the ``top`` command), in memory, as mongod keeps them (they restart with the
process).

Two hooks feed it: :func:`plan_used` where a query or write has chosen its
access path (counting collection scans too, for ``queryExecStats``), and
:func:`command_finished` when a command has run.

* An index's counter starts when the engine opened (indexes that existed
  then) or when the index was created, and ends when it is dropped: each
  entry remembers the catalog id of its index and the uuid of its
  collection, and an entry whose index or collection is no longer the same
  starts afresh. Each command brings its own namespace up to date.
* Latencies are microseconds, totalled per class of command (mongod's
  ``ReadWriteType``: reads, writes, other commands; FolioDB has no
  transactions) with mongod's histogram buckets; dropping a collection (or
  its database) clears them.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/ and
https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/#latencystats-document
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import Int64

from foliodb.engine.catalog import Catalog, CollectionInfo
from foliodb.engine.planner.plans import AccessStage, CollScan, IdLookup, IndexScan, OrScan, TextScan
from foliodb.engine.records import CollectionStore
from foliodb.query.bsontypes import is_string

READS = frozenset({"find", "getMore", "aggregate", "count", "distinct"})
WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify"})
LATENCY_CLASSES = ("reads", "writes", "commands", "transactions")
# The ``top`` command's counters (mongod's Top): every operation in ``total``, in ``readLock`` or
# ``writeLock`` by the lock it takes, and in one of the others by its logical op; all of which
# follow from the command's name, so only a total per name is kept.
TOP_FIELDS = ("total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands")
_TOP_OPS = {"find": "queries", "getMore": "getmore", "insert": "insert", "update": "update", "delete": "remove"}
# Commands other than writes that change a collection, under a write lock in mongod.
_CATALOG_WRITES = frozenset(
    {"create", "createIndexes", "dropIndexes", "collMod", "renameCollection", "convertToCapped", "compact"}
)
_HISTOGRAM_BUCKETS = 51


def _now() -> datetime.datetime:
    # BSON dates hold milliseconds; the engine's documents are naive UTC.
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def histogram_bucket(micros: int) -> int:
    """mongod's OperationLatencyHistogram bucket of a latency: powers of two
    up to 2^10 µs, each power from 2^11 to 2^20 split in halves, then powers
    of two again, the last bucket open-ended."""
    if micros <= 0:
        return 0
    log2 = micros.bit_length() - 1
    if log2 < 11:
        return log2
    if log2 < 21:
        return 2 * log2 - 11 + (micros >= 3 << (log2 - 1))
    return min(log2 + 10, _HISTOGRAM_BUCKETS - 1)


def bucket_lower_bound(bucket: int) -> int:
    """The smallest latency (µs) in ``bucket``, as the histogram reports it."""
    if bucket == 0:
        return 0
    if bucket <= 10:
        return 1 << bucket
    if bucket <= 30:
        log2 = (bucket + 11) // 2
        return 1 << log2 if (bucket - 11) % 2 == 0 else 3 << (log2 - 1)
    return 1 << (bucket - 10)


@dataclass
class Latency:
    micros: int = 0
    ops: int = 0
    buckets: dict[int, int] = field(default_factory=dict)

    def add(self, micros: int) -> None:
        self.micros += micros
        self.ops += 1
        bucket = micros.bit_length() - 1 if 0 < micros < 2048 else histogram_bucket(micros)  # its first case inline
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1

    def document(self, histograms: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"latency": Int64(self.micros), "ops": Int64(self.ops)}
        if histograms:
            out["histogram"] = [
                {"micros": Int64(bucket_lower_bound(b)), "count": Int64(n)} for b, n in sorted(self.buckets.items())
            ]
        return out


@dataclass
class IndexUsage:
    index_id: int
    since: datetime.datetime
    ops: int = 0


@dataclass
class NamespaceUsage:
    collection: uuid.UUID | None = None  # the collection its index counters belong to
    indexes: dict[str, IndexUsage] = field(default_factory=dict)
    collection_scans: int = 0  # queries that read the whole collection ($collStats' queryExecStats)
    # The catalog entry ``indexes`` was last brought up to date with: catalog versions are
    # copy-on-write, so the same entry object means the same indexes (nothing to compare).
    synced: Any = None
    latency: dict[str, Latency] = field(default_factory=lambda: {name: Latency() for name in LATENCY_CLASSES})
    # Per command name: [microseconds, count], what the ``top`` command sums into its counters.
    by_command: dict[str, list[int]] = field(default_factory=dict)


class EngineUsage:
    """One engine's counters (the engine holds it from its opening)."""

    def __init__(self, catalog: Catalog) -> None:
        self.opened = _now()
        self.namespaces: dict[tuple[str, str], NamespaceUsage] = {}
        # Indexes already there count from now, the nearest FolioDB knows to the engine's opening.
        for info in list(catalog.collections.values()):
            self.indexes_of(info, self.opened)

    def namespace(self, db: str, coll: str) -> NamespaceUsage:
        entry = self.namespaces.get((db, coll))
        if entry is None:
            entry = self.namespaces[(db, coll)] = NamespaceUsage()
        return entry

    def indexes_of(self, info: CollectionInfo, since: datetime.datetime | None = None) -> dict[str, IndexUsage]:
        """The counters of a collection's indexes, brought up to date with
        the catalog: counters of dropped indexes go, new indexes start now."""
        entry = self.namespace(info.db, info.name)
        if entry.synced is info:
            return entry.indexes
        if entry.collection != info.uuid:
            entry.collection = info.uuid
            entry.indexes = {}
        counters = entry.indexes
        for name in [name for name in counters if name not in info.indexes]:
            del counters[name]
        for name, index in info.indexes.items():
            used = counters.get(name)
            if used is None or used.index_id != index.id:
                counters[name] = IndexUsage(index.id, since or _now())
        entry.synced = info
        return counters


def _indexes_read(access: AccessStage) -> list[str]:
    if isinstance(access, IdLookup):
        return ["_id_"]
    if isinstance(access, IndexScan | TextScan):
        return [access.index.name]
    if isinstance(access, OrScan):
        return [name for scan in access.scans for name in _indexes_read(scan)]
    return []


def plan_used(usage: EngineUsage, store: CollectionStore, access: AccessStage) -> None:
    """Count one use of each index ``access`` reads (the query planner's
    winner, for one operation), or one collection scan."""
    if isinstance(access, CollScan):
        usage.namespace(store.info.db, store.info.name).collection_scans += 1
        return
    counters = usage.indexes_of(store.info)
    for name in dict.fromkeys(_indexes_read(access)):
        used = counters.get(name)
        if used is not None:
            used.ops += 1


def id_lookup_used(usage: EngineUsage, store: CollectionStore) -> None:
    """:func:`plan_used` of an ``_id`` point lookup (IDHACK), for the point-read path."""
    info = store.info
    entry = usage.namespaces.get((info.db, info.name))
    # Synced with this catalog entry: its counters as they are (indexes_of's first answer, without the call).
    counters = entry.indexes if entry is not None and entry.synced is info else usage.indexes_of(info)
    used = counters.get("_id_")
    if used is not None:
        used.ops += 1


def command_finished(
    usage: EngineUsage, catalog: Catalog, db: str, name: str, command: Mapping[str, Any], seconds: float
) -> None:
    """Record a finished command's latency under its namespace, and bring
    that namespace's index counters up to date (or clear what it dropped)."""
    target = command.get("collection") if name == "getMore" else command.get(name)
    if name == "dropDatabase":
        for key in [key for key in usage.namespaces if key[0] == db]:
            del usage.namespaces[key]
        return
    if name == "renameCollection":
        for namespace in (target, command.get("to")):
            if is_string(namespace):
                source_db, _, coll = namespace.partition(".")
                usage.namespaces.pop((source_db, coll), None)
        return
    if not is_string(target):
        return
    if name == "drop":
        usage.namespaces.pop((db, target), None)
        return
    info = catalog.get(db, target)
    kind = "reads" if name in READS else "writes" if name in WRITES else "commands"
    # Reads and writes count on any namespace (a missing collection's too, as
    # in mongod); other commands only on a collection or view (not createUser's user).
    if kind != "commands" or info is not None:
        entry = usage.namespace(db, target)
        micros = int(seconds * 1_000_000)
        entry.latency[kind].add(micros)
        totals = entry.by_command.setdefault(name, [0, 0])
        totals[0] += micros
        totals[1] += 1
        if info is None or entry.synced is info:
            return  # nothing to bring up to date
    if info is not None and not info.is_view:
        usage.indexes_of(info)


def point_finished(usage: EngineUsage, catalog: Catalog, db: str, coll: str, name: str, micros: int) -> None:
    """:func:`command_finished` of a command a point path answered (find, insert, update or
    delete of collection ``coll``), which took ``micros``: the same counts, without the
    dispatch on the command's kind."""
    key = (db, coll)
    entry = usage.namespaces.get(key)
    if entry is None:
        entry = usage.namespace(db, coll)
    entry.latency["reads" if name == "find" else "writes"].add(micros)
    totals = entry.by_command.setdefault(name, [0, 0])
    totals[0] += micros
    totals[1] += 1
    info = catalog.collections.get(key)
    if info is not None and entry.synced is not info and not info.is_view:
        usage.indexes_of(info)


def top_totals(usage: EngineUsage) -> dict[str, Any]:
    """The ``top`` command's ``totals``: per namespace, each counter's time (µs) and count."""
    totals: dict[str, Any] = {"note": "all times in microseconds"}
    for (db, coll), entry in sorted(usage.namespaces.items()):
        if not entry.by_command:
            continue
        counts = {name: [0, 0] for name in TOP_FIELDS}
        for command, (micros, ops) in entry.by_command.items():
            lock = "writeLock" if command in WRITES or command in _CATALOG_WRITES else "readLock"
            for counter in ("total", lock, _TOP_OPS.get(command, "commands")):
                counts[counter][0] += micros
                counts[counter][1] += ops
        totals[f"{db}.{coll}"] = {
            name: {"time": Int64(micros), "count": Int64(ops)} for name, (micros, ops) in counts.items()
        }
    return totals


def latency_stats(usage: EngineUsage, db: str, coll: str, histograms: bool) -> dict[str, Any]:
    """``$collStats``' ``latencyStats`` of a namespace (a view's too)."""
    entry = usage.namespaces.get((db, coll)) or NamespaceUsage()
    return {name: entry.latency[name].document(histograms) for name in LATENCY_CLASSES}


def collection_scans(usage: EngineUsage, db: str, coll: str) -> int:
    """How many queries on ``db.coll`` scanned the whole collection."""
    entry = usage.namespaces.get((db, coll))
    return entry.collection_scans if entry is not None else 0
