"""What the write commands share (insert, update, delete, findAndModify, bulkWrite).

The commands themselves live in one module each (``insert``, ``update``, ``delete``,
``find_and_modify``, ``bulk_write``); this module holds their targets, validation, write
concern and the point paths' shared checks.

Each command runs as one storage transaction; inside it each document write
is its own unit, so an ordered batch keeps the writes before its first error
and an unordered one keeps every write that succeeded, as MongoDB reports them
in ``writeErrors``. The reply is acknowledged only after the commit (and an
fsync of the WAL for ``j: true``).

Schema validation (https://www.mongodb.com/docs/manual/core/schema-validation/):
a collection's ``validator`` option is compiled once per command and
collection, with the command's clock (``$$NOW`` is the command's time).
Inserts, upserts and the results of updates are checked unless the command
says ``bypassDocumentValidation: true``; ``validationLevel: "moderate"``
leaves updates of documents that already failed unchecked; the action
``"warn"`` logs (as mongod's log message 20294) and writes anyway. An update
that changes nothing writes nothing and is not checked.

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-crud/
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from bson import ObjectId, Timestamp

from foliodb.commands import collation, params
from foliodb.commands.executor import Request
from foliodb.commands.matching import matching
from foliodb.engine.buckets import BucketSpec
from foliodb.engine.engine import Engine
from foliodb.engine.planner import id_hack_keys
from foliodb.engine.records import CollectionStore
from foliodb.engine.timeseries import TimeSeriesWriter, check_measurement
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import bsontypes
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.collation import Collator
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails
from foliodb.query.update import CompiledUpdate, seed_from_filter
from foliodb.query.validation import Validator, compile_validator

log = logging.getLogger("foliodb")


def collection_name(cmd: Mapping[str, Any], command: str) -> str:
    name = cmd[command]
    if not is_string(name):
        raise CommandError(
            ErrorCode.InvalidNamespace,
            f"collection name has invalid type {bsontypes.type_name(name)}",
        )
    return name


# Databases every mongod has (system.version, system.sessions, startup_log live there):
# listed, and reserved, even when FolioDB keeps nothing in them.
INSERT_CHUNK = 1000  # documents an insert stores between interruption checks (a few ms of work)
SYSTEM_DATABASES = ("admin", "config", "local")


def check_new_database(engine: Engine, db: str) -> None:
    """Refuse to create database ``db`` when one differing only in case
    exists (DatabaseDifferCase, 13297): mongod keeps database names unique
    case-insensitively, since they become directory names on some systems.

    Manual: https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-Restriction-on-Case-Sensitivity"""
    databases = [*engine.databases(), *SYSTEM_DATABASES]
    if db in databases:
        return
    folded = db.casefold()
    existing = next((name for name in databases if name.casefold() == folded), None)
    if existing is not None:
        raise CommandError(
            ErrorCode.DatabaseDifferCase,
            f"db already exists with different case already have: [{existing}] trying to create [{db}]",
        )


def prepare_insert(doc: Any) -> dict[str, Any]:
    """The document as stored: ``_id`` first (generated when missing) and valid."""
    if type(doc) is not dict and not isinstance(doc, Mapping):  # the exact type first: an ABC check is slow
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'insert.documents' is the wrong type, expected object")
    out: dict[str, Any]
    if "_id" not in doc:
        out = {"_id": ObjectId()}
        out.update(doc)
    else:
        check_id(doc["_id"])
        if next(iter(doc)) != "_id":
            out = {"_id": doc["_id"]}
            out.update((k, v) for k, v in doc.items() if k != "_id")
        else:
            out = doc if type(doc) is dict else dict(doc)
    for name, value in out.items():
        # An empty timestamp in a top-level field (not _id) becomes the
        # server's current time, as mongod does.
        if value.__class__ is Timestamp and value.time == 0 and value.inc == 0 and name != "_id":
            out = dict(out)
            for key, item in out.items():
                if item.__class__ is Timestamp and item.time == 0 and item.inc == 0 and key != "_id":
                    out[key] = next_timestamp()
            break
    return out


_last_timestamp = Timestamp(0, 0)
SCALAR_IDS = frozenset({ObjectId, str, int})  # _id types check_id lets pass at once


def next_timestamp() -> Timestamp:
    """A fresh timestamp: this second, with an increment that keeps them unique."""
    global _last_timestamp
    now = int(time.time())
    inc = _last_timestamp.inc + 1 if _last_timestamp.time == now else 1
    _last_timestamp = Timestamp(now, inc)
    return _last_timestamp


def check_id(value: Any) -> None:
    if type(value) in SCALAR_IDS:  # the usual _id types, none refused: no bracket to work out
        return
    b = cmp.bracket(value)
    if b == cmp.ARRAY:
        raise CommandError(ErrorCode.InvalidIdField, "The '_id' value cannot be of type array")
    if b == cmp.REGEX:
        raise CommandError(ErrorCode.InvalidIdField, "The '_id' value cannot be of type regex")
    if b == cmp.OBJECT:
        for name in cmp.object_items(value):
            if name[0].startswith("$"):
                raise CommandError(
                    ErrorCode.DollarPrefixedFieldName,
                    f"_id fields may not contain '$'-prefixed fields: {name[0]} is not valid for storage.",
                )


def finish(request: Request, cmd: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    concern = cmd.get("writeConcern")
    if concern is not None and isinstance(concern, Mapping):
        if concern.get("j") or concern.get("fsync"):
            request.engine.storage.sync()
        if concern.get("w") == 0:
            return {"ok": 1.0}
    return reply


def ordered_flag(cmd: Mapping[str, Any], command: str) -> bool:
    return bool(params.field(cmd, "ordered", "bool", command, default=True))


# -- point writes: one document by _id, as drivers send insert_one/update_one/delete_one --------

# What a driver's write command carries besides its own fields (session, cluster time, Stable
# API, write concern); any other field (let, comment, bypassDocumentValidation...) goes the
# general way.
_POINT_WRITE_FIELDS = frozenset(
    {
        "ordered", "writeConcern", "lsid", "txnNumber", "$db", "$clusterTime", "$readPreference",
        "apiVersion", "apiStrict", "apiDeprecationErrors",
    }
)  # fmt: skip


def point_statement(cmd: Mapping[str, Any], command: str, batch: str) -> Any:
    """The one statement (or document) of a write command the point path may run,
    judged by the command's shape alone; None for the general path."""
    statements = cmd.get(batch)
    if type(statements) is not list or len(statements) != 1 or type(cmd[command]) is not str:
        return None
    if type(cmd.get("ordered", True)) is not bool:
        return None
    # {command, batch, ordered}: the embedded client's shape, nothing else to look at.
    if (len(cmd) != 3 or "ordered" not in cmd) and not cmd.keys() - {command, batch} <= _POINT_WRITE_FIELDS:
        return None
    statement = statements[0]
    return statement if type(statement) is dict else None


def point_store(request: Request, name: str) -> CollectionStore | None:
    """The collection a point write may write, read from the newest catalog
    without opening a snapshot: a plain collection (no view, time series,
    validator or default collation), no transaction, no profiling. Looked up
    again inside the write (:func:`same_store`): the catalog may change meanwhile."""
    engine = request.engine
    storage = engine.storage
    if storage.transaction_view() is not None or request.db == "local":
        return None
    profiling = engine.profiling.get(request.db) if engine.profiling else None
    if profiling is not None and profiling.level:
        return None
    info = storage.published.get(request.db, name)
    if info is None or info.is_view or "collation" in info.options or info.options.get("validator") is not None:
        return None
    return engine.store_of(info)


def same_store(request: Request, store: CollectionStore) -> bool:
    """Inside the write (under the writer lock, before any catalog change): is ``store``
    still the collection's newest version?"""
    info = store.info
    return request.engine.storage.published.collections.get((info.db, info.name)) is info


def point_target(
    request: Request, name: str, statement: dict[str, Any], allowed: frozenset[str]
) -> tuple[CollectionStore, bytes] | None:
    """The collection (:func:`point_store`) and ``_id`` index key of a statement of
    ``allowed`` fields whose filter is ``{_id: value}``; None for the general path."""
    filter_spec = statement.get("q")
    if not statement.keys() <= allowed or type(filter_spec) is not dict:
        return None
    store = point_store(request, name)
    if store is None:
        return None
    keys = id_hack_keys(store, filter_spec, None)  # no collation: the collection has no default
    return None if keys is None else (store, keys[0])


# -- one command's writes: targets and validation ------------------------------------


class Target:
    """One collection a write command writes, with its validator (None when
    it has none, or the command bypasses validation)."""

    def __init__(self, request: Request, db: str, name: str, bypass: bool) -> None:
        self.engine = request.engine
        self.db = db
        self.name = name
        info = self.engine.catalog.get(db, name)
        options = info.options if info is not None else {}
        # A time-series collection: its measurements are written as buckets.
        self.buckets = BucketSpec.of(options["timeseries"]) if info is not None and info.is_timeseries else None
        self.request = request
        self.validator: Validator | None = None
        if not bypass and options.get("validator") is not None:
            # mongod matches the validator under the collection's default
            # collation (never the write's own); $jsonSchema's enum stays binary.
            self.validator = compile_validator(
                options["validator"],
                request.context(collator=collation.default_of(request, name, db)),
                level=options.get("validationLevel", "strict"),
                action=options.get("validationAction", "error"),
            )

    @property
    def store(self) -> CollectionStore | None:
        return self.engine.store(self.db, self.name)

    def ensure_store(self) -> CollectionStore:
        """The collection, created implicitly (as a first insert does) if missing."""
        store = self.store
        if store is not None:
            return store
        check_new_database(self.engine, self.db)
        return self.engine.ensure_collection(self.db, self.name)

    def validate(self, doc: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        """Check a new document (``old`` None) or an update's result."""
        validator = self.validator
        if validator is None or validator.level == "off":
            return
        if old is not None and not validator.applies_to_update(old):
            return
        if validator.action != "error":
            info = validator.error_info(doc)
            if info is not None:
                log.warning(
                    "Document would fail validation (id 20294): namespace %s.%s, document _id %r, errInfo %r",
                    self.db,
                    self.name,
                    doc.get("_id"),
                    info,
                )
        validator.check(doc)

    def timeseries(self) -> TimeSeriesWriter:
        assert self.buckets is not None
        if self.engine.storage.transaction() is not None:
            # The manual's "Time Series Collection Limitations": no writes in transactions.
            raise CommandError(
                ErrorCode.OperationNotSupportedInTransaction,
                "Cannot write to a time-series collection in a multi-document transaction.",
            )
        store = self.engine.store(self.db, f"system.buckets.{self.name}")
        assert store is not None
        return TimeSeriesWriter(store, self.buckets, self.request.context())

    def insert(self, doc: Any, store: CollectionStore | None = None) -> dict[str, Any]:
        if self.buckets is not None:
            measurement = check_measurement(self.buckets, doc)
            self.timeseries().insert([measurement])
            return measurement
        new = prepare_insert(doc)
        self.validate(new)
        (store or self.ensure_store()).insert(new)
        return new

    def update(
        self,
        store: CollectionStore,
        update: CompiledUpdate,
        rid: int,
        data: bytes,
        doc: dict[str, Any],
        details: MatchDetails,
    ) -> tuple[bool, dict[str, Any]]:
        """Apply an update to one matched document; (was it modified, new doc)."""
        new = update.apply(doc, details.array_index)
        if "_id" in new:
            check_id(new["_id"])
        new_data = store.encode(new, after_update=True)
        if new_data == data:
            return False, doc
        self.validate(new, doc)
        store.update(rid, doc, new, new_data, data, update.is_replacement)
        return True, new

    def upsert(self, update: CompiledUpdate, filter_spec: Mapping[str, Any] | None) -> dict[str, Any]:
        seed = seed_from_filter(filter_spec or {})
        return self.insert(update.apply(seed, None, inserting=True))


def would_modify(store: CollectionStore, update: CompiledUpdate, doc: dict[str, Any], details: MatchDetails) -> bool:
    """Would ``update`` change ``doc`` (explain's nWouldModify)? Worked out as
    :meth:`Target.update` does, writing nothing."""
    before = store.encode(doc)
    new = update.apply(doc, details.array_index)
    if "_id" in new:
        check_id(new["_id"])
    return store.encode(new, after_update=True) != before


class Writes:
    """What one write command's statements share: the request, its ``let``
    variables (evaluated once) and bypass flag, and a :class:`Target` per
    collection, built (and its validator compiled) on first use."""

    def __init__(self, request: Request, cmd: Mapping[str, Any], command: str) -> None:
        self.request = request
        self.ctx = request.context(params.field(cmd, "let", "object", command))
        self.bypass = bool(params.field(cmd, "bypassDocumentValidation", "bool", command, default=False))
        self._targets: dict[tuple[str, str], Target] = {}

    def target(self, db: str, name: str) -> Target:
        target = self._targets.get((db, name))
        if target is None:
            target = self._targets[db, name] = Target(self.request, db, name, self.bypass)
        return target

    def context(self, constants: Mapping[str, Any] | None = None, collator: Collator | None = None) -> Context:
        """The command's context, plus an update statement's constants (``c``)
        and collation."""
        if not constants and collator is None:
            return self.ctx
        return Context({**self.ctx.variables, **(constants or {})}, self.ctx.now, collator)

    def collator(self, target: Target, value: Any, where: str) -> Collator | None:
        """A statement's collator: its own ``collation``, else its collection's default."""
        return collation.resolve(self.request, target.name, value, where, target.db)


def apply_replacement(
    target: Target, store: CollectionStore, filter_spec: Mapping[str, Any], replacement: dict[str, Any], ctx: Context
) -> bool:
    """Replace the first document matching ``filter_spec`` (keeping its ``_id``), checked by
    ``target``'s validator."""
    for rid, data, doc, _details in matching(store, filter_spec, ctx, one=True):
        new = dict(replacement)
        new["_id"] = doc["_id"]
        new = prepare_insert(new)
        target.validate(new, doc)
        store.update(rid, doc, new, old_data=data, replace=True)
        return True
    return False
