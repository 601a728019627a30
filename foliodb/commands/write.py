"""Write commands: insert, update, delete, findAndModify, bulkWrite.

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
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson import ObjectId, Timestamp

from foliodb import interrupt
from foliodb.aggregation.pipeline import STAGES
from foliodb.commands import collation, params, profiler
from foliodb.commands.accesses import count_plan
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.engine import usage
from foliodb.engine.buckets import BucketSpec
from foliodb.engine.catalog import CODEC
from foliodb.engine.engine import Engine
from foliodb.engine.planner import id_hack_keys, plan_access
from foliodb.engine.planner.plans import AccessStage, IdLookup
from foliodb.engine.query import FindExecution, FindSpec, raw_narrowing
from foliodb.engine.records import CollectionStore
from foliodb.engine.text import split_text
from foliodb.engine.timeseries import TimeSeriesWriter, check_measurement
from foliodb.errors import INTERRUPTIONS, CommandError, ErrorCode
from foliodb.query import bsontypes
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.collation import Collator
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.projection import compile_projection
from foliodb.query.sort import compile_sort
from foliodb.query.update import CompiledUpdate, compile_update, seed_from_filter
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
_SCALAR_IDS = frozenset({ObjectId, str, int})


def next_timestamp() -> Timestamp:
    """A fresh timestamp: this second, with an increment that keeps them unique."""
    global _last_timestamp
    now = int(time.time())
    inc = _last_timestamp.inc + 1 if _last_timestamp.time == now else 1
    _last_timestamp = Timestamp(now, inc)
    return _last_timestamp


def check_id(value: Any) -> None:
    if type(value) in _SCALAR_IDS:  # the usual _id types, none refused: no bracket to work out
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


def _point_statement(cmd: Mapping[str, Any], command: str, batch: str) -> Any:
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


def _point_store(request: Request, name: str) -> CollectionStore | None:
    """The collection a point write may write, read from the newest catalog
    without opening a snapshot: a plain collection (no view, time series,
    validator or default collation), no transaction, no profiling. Looked up
    again inside the write (:func:`_same_store`): the catalog may change meanwhile."""
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


def _same_store(request: Request, store: CollectionStore) -> bool:
    """Inside the write (under the writer lock, before any catalog change): is ``store``
    still the collection's newest version?"""
    info = store.info
    return request.engine.storage.published.collections.get((info.db, info.name)) is info


def _point_target(
    request: Request, name: str, statement: dict[str, Any], allowed: frozenset[str]
) -> tuple[CollectionStore, bytes] | None:
    """The collection (:func:`_point_store`) and ``_id`` index key of a statement of
    ``allowed`` fields whose filter is ``{_id: value}``; None for the general path."""
    filter_spec = statement.get("q")
    if not statement.keys() <= allowed or type(filter_spec) is not dict:
        return None
    store = _point_store(request, name)
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


# -- insert ----------------------------------------------------------------------


def point_insert(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to an insert of one document into an existing plain collection
    (see :func:`_point_store`), written without the general path's batch and
    target machinery; None when the general path must answer. Its reply and
    errors are the general path's: the same record store writes it."""
    doc = _point_statement(cmd, "insert", "documents")
    if doc is None:
        return None
    store = _point_store(request, cmd["insert"])
    if store is None:
        return None
    reply: dict[str, Any] = {"n": 1, "ok": 1.0}
    with request.engine.storage.write():
        if not _same_store(request, store):
            return None
        try:
            store.insert(prepare_insert(doc))
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


# -- matching documents for update/delete/findAndModify ---------------------------


def matching(
    store: CollectionStore | None,
    filter_spec: Mapping[str, Any] | None,
    ctx: Context,
    *,
    hint: Any = None,
    sort: Mapping[str, Any] | None = None,
    one: bool = False,
    plans: list[AccessStage] | None = None,
) -> Iterator[tuple[int, bytes, dict[str, Any], MatchDetails]]:
    """(rid, BSON, document, match details) of the documents a write
    targets, each at most once; with ``one``, only the first (by ``sort``).
    The access path it chooses is appended to ``plans`` (for index accesses
    and the profiler)."""
    if filter_spec and any(k in filter_spec for k in _TEXT_KEYS) and split_text(filter_spec)[0] is not None:
        yield from _text_matching(store, filter_spec, ctx, hint=hint, sort=sort, one=one, plans=plans)
        return
    sort_key = compile_sort(sort, collator=ctx.collator) if sort else None
    id_keys = id_hack_keys(store, filter_spec, ctx.collator) if hint is None and sort_key is None else None
    if id_keys is not None:
        # IDHACK: an exact _id point lookup; no filter to compile or check
        # (and no array on the filter's path, so no positional details).
        if store is not None:
            lookup = IdLookup(store, id_keys)
            if plans is not None:
                plans.append(lookup)
            for rid, data in lookup.rows():
                yield rid, data, bson.decode(data, CODEC), MatchDetails()
        return
    matcher = compile_filter(filter_spec, ctx)
    if store is None:
        return
    access = plan_access(store, filter_spec, matcher, hint, ctx.collator)
    if plans is not None:
        plans.append(access)
    exact = isinstance(access, IdLookup)
    if sort_key is not None and one:
        best: tuple[bytes, int, bytes, dict[str, Any], MatchDetails] | None = None
        for n, (rid, data) in enumerate(access.rows()):
            if not n & 63:
                interrupt.check()
            doc = bson.decode(data, CODEC)
            details = MatchDetails()
            if matcher(doc, details):
                key = sort_key.key(doc)
                if best is None or key < best[0]:
                    best = (key, rid, data, doc, details)
        if best is not None:
            yield best[1], best[2], best[3], best[4]
        return
    seen: set[int] = set()
    prefilter = raw_narrowing(access, filter_spec, ctx.collator)
    for n, (rid, data) in enumerate(access.rows()):
        if not n & 63:
            interrupt.check()
        if rid in seen or (prefilter is not None and not prefilter(data)):
            continue
        doc = bson.decode(data, CODEC)
        details = MatchDetails()
        if exact:
            # The _id key matched exactly; only positional details are missing.
            matcher(doc, details)
        elif not matcher(doc, details):
            continue
        yield rid, data, doc, details
        if one:
            return
        seen.add(rid)


_TEXT_KEYS = ("$text", "$and", "$or")  # where a $text may sit


def _text_matching(
    store: CollectionStore | None,
    filter_spec: Mapping[str, Any],
    ctx: Context,
    *,
    hint: Any,
    sort: Mapping[str, Any] | None,
    one: bool,
    plans: list[AccessStage] | None,
) -> Iterator[tuple[int, bytes, dict[str, Any], MatchDetails]]:
    """The targets of a write whose filter holds ``$text``: found as a find
    would (through the text index), then read back by record id."""
    spec = FindSpec(filter=filter_spec, sort=sort, limit=1 if one else None, hint=hint, show_record_id=True)
    run = FindExecution(store, spec, ctx)
    if plans is not None and run.plan is not None:
        plans.append(run.plan.access)
    rest = split_text(filter_spec)[1]
    matcher = compile_filter(rest, run.ctx) if rest else None  # run.ctx judges a $text inside $or
    for found in list(run):
        assert store is not None
        rid = found["$recordId"]
        data = store.get_raw(rid)
        if data is None:
            continue
        doc = bson.decode(data, CODEC)
        details = MatchDetails()
        if matcher is not None:
            matcher(doc, details)
        yield rid, data, doc, details


# -- update -------------------------------------------------------------------------


@dataclass
class UpdateStatement:
    """One update, from an ``update`` command's ``updates`` or a ``bulkWrite`` op."""

    filter: Mapping[str, Any] | None
    update: Any
    multi: bool
    upsert: bool
    array_filters: list[Any] | None
    sort: Mapping[str, Any] | None
    hint: Any
    constants: Mapping[str, Any] | None
    collation: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, statement: Any, where: str, names: tuple[str, str, str]) -> UpdateStatement:
        """``names``: the filter, update and constants fields (``q``, ``u``,
        ``c`` in ``update``; ``filter``, ``updateMods``, ``constants`` in
        ``bulkWrite``)."""
        if not isinstance(statement, Mapping):
            raise CommandError(ErrorCode.TypeMismatch, f"BSON field '{where}' is the wrong type, expected object")
        q, u, c = names
        for required in (q, u):
            if required not in statement:
                raise CommandError(
                    ErrorCode.FailedToParse, f"BSON field '{where}.{required}' is missing but a required field"
                )
        collation.given(statement, where)
        return cls(
            filter=params.field(statement, q, "object", where),
            update=params.field(statement, u, "objectOrArray", where),
            multi=bool(params.field(statement, "multi", "bool", where, default=False)),
            upsert=bool(params.field(statement, "upsert", "bool", where, default=False)),
            array_filters=params.field(statement, "arrayFilters", "array", where),
            sort=params.field(statement, "sort", "object", where),
            hint=statement.get("hint"),
            constants=params.field(statement, c, "object", where),
            collation=statement.get("collation"),
        )


NOT_UPSERTED = object()


def _check_pipeline_stages(statements: list[Any]) -> None:
    """An update pipeline naming an unknown stage fails the whole command (40324), as mongod's
    LiteParsedPipeline does while authorizing it, before any statement runs."""
    for statement in statements:
        pipeline = statement.get("u") if isinstance(statement, Mapping) else None
        if isinstance(pipeline, list):
            for stage in pipeline:
                if isinstance(stage, Mapping) and len(stage) == 1:
                    name = next(iter(stage))
                    if name not in STAGES and name not in STAGES.unbuilt:
                        STAGES.get(name)  # raises the registry's unknown-stage error


def run_update(
    writes: Writes,
    target: Target,
    statement: UpdateStatement,
    plans: list[AccessStage] | None = None,
    keys: profiler.KeyTally | None = None,
) -> tuple[int, int, Any]:
    """(matched, modified, upserted _id or NOT_UPSERTED) of one update
    statement; its access path is counted (and appended to ``plans``), the
    index entries it changes tallied in ``keys`` (when profiled)."""
    plans = [] if plans is None else plans
    ctx = writes.context(statement.constants, writes.collator(target, statement.collation, "update"))
    update = compile_update(statement.update, ctx, statement.array_filters)
    if statement.multi and update.is_replacement:
        raise CommandError(ErrorCode.FailedToParse, "multi update is not supported for replacement-style update")
    if statement.multi and statement.sort:
        raise CommandError(ErrorCode.FailedToParse, "The sort option is only supported for updateOne")
    if target.buckets is not None:
        return _update_measurements(target, statement, update)
    store = target.store
    n = modified = 0
    if store is not None:
        for rid, data, doc, details in matching(
            store,
            statement.filter,
            ctx,
            hint=statement.hint,
            sort=statement.sort,
            one=not statement.multi,
            plans=plans,
        ):
            n += 1
            changed, new = target.update(store, update, rid, data, doc, details)
            modified += changed
            if keys is not None:
                keys.change(store, doc, new)
        for access in plans:
            count_plan(writes.request, store, access)
    if n == 0 and statement.upsert:
        doc = target.upsert(update, statement.filter)
        if keys is not None and target.store is not None:
            keys.change(target.store, None, doc)
        return 1, 0, doc["_id"]
    return n, modified, NOT_UPSERTED


def _update_measurements(target: Target, statement: UpdateStatement, update: CompiledUpdate) -> tuple[int, int, Any]:
    """An update of a time-series collection: matched measurements leave their
    buckets and their updated versions are inserted again (as mongod 7+)."""
    assert target.buckets is not None
    writer = target.timeseries()
    results: list[dict[str, Any]] = []
    modified = 0

    def each(doc: dict[str, Any], details: MatchDetails) -> None:
        nonlocal modified
        new = update.apply(doc, details.array_index)
        if update.is_replacement and "_id" not in new:
            new = {**new, "_id": doc["_id"]}
        modified += bson.encode(new) != bson.encode(doc)
        results.append(new)

    # One unit: a result that is no measurement (no date) leaves every bucket as it was.
    with target.engine.storage.savepoint():
        n = writer.remove_matching(statement.filter, statement.multi, each)
        writer.insert([check_measurement(target.buckets, doc) for doc in results])
    if n == 0 and statement.upsert:
        doc = target.upsert(update, statement.filter)
        return 1, 0, doc["_id"]
    return n, modified, NOT_UPSERTED


_POINT_UPDATE = frozenset({"q", "u", "multi", "upsert"})
# Update operators whose compiled form depends on nothing but the spec (a point update's context
# has no variables and no collation): $currentDate reads the command's clock and $pull compiles a
# query, so neither is here.
_CACHEABLE_OPERATORS = frozenset(
    {
        "$set",
        "$unset",
        "$inc",
        "$mul",
        "$min",
        "$max",
        "$rename",
        "$push",
        "$addToSet",
        "$pop",
        "$pullAll",
        "$bit",
    }
)
_COMPILED_UPDATES: dict[bytes, CompiledUpdate] = {}  # by the spec's BSON: equal bytes, the same update
_COMPILED_UPDATES_MAX = 256


def _point_compiled_update(spec: Any) -> CompiledUpdate:
    """``compile_update(spec)`` in a plain context, compiled once per distinct operator spec: a
    driver's update_one sends the same few shapes and values over and over."""
    if type(spec) is not dict or not spec.keys() <= _CACHEABLE_OPERATORS:
        return compile_update(spec, Context(), None)
    try:
        key = bson.encode(spec, codec_options=CODEC)
    except (bson.errors.InvalidDocument, TypeError, OverflowError, ValueError):
        return compile_update(spec, Context(), None)  # what compiling reports, if anything
    update = _COMPILED_UPDATES.get(key)
    if update is None:
        update = compile_update(spec, Context(), None)
        if len(_COMPILED_UPDATES) >= _COMPILED_UPDATES_MAX:
            _COMPILED_UPDATES.clear()
        _COMPILED_UPDATES[key] = update
    return update


def point_update(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to an update of one document by ``_id`` (mongod's IDHACK) in a
    plain collection (see :func:`_point_store`), without an upsert; None when
    the general path must answer. It runs what :func:`run_update` runs for such
    a statement - the same compiled update, record store and ``_id`` access
    count - without its statement, target and plan objects."""
    statement = _point_statement(cmd, "update", "updates")
    if statement is None or statement.get("upsert", False) is not False or statement.get("multi", False) is not False:
        return None
    spec = statement.get("u")
    target = _point_target(request, cmd["update"], statement, _POINT_UPDATE) if type(spec) in (dict, list) else None
    if target is None:
        return None
    store, key = target
    with request.engine.storage.write():
        if not _same_store(request, store):
            return None
        try:
            update = _point_compiled_update(spec)
            modified = 0
            row = store.row_by_id_key(key)
            if row is not None:
                rid, data = row
                doc = bson.decode(data, CODEC)
                new = update.apply(doc, None)
                if "_id" in new:
                    check_id(new["_id"])
                new_data = store.encode(new, after_update=True)
                if new_data != data:
                    store.update(rid, doc, new, new_data, data, update.is_replacement)
                    modified = 1
            usage.id_lookup_used(request.engine.usage, store)  # as run_update: a failed statement counts none
            reply: dict[str, Any] = {"n": int(row is not None), "nModified": modified, "ok": 1.0}
        except CommandError as exc:
            reply = {"n": 0, "nModified": 0, "writeErrors": [exc.to_write_error(0)], "ok": 1.0}
    return finish(request, cmd, reply)


@COMMANDS.register("update")
def cmd_update(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    point = point_update(request, cmd)
    if point is not None:
        return point
    name = collection_name(cmd, "update")
    statements = params.write_batch(params.required(cmd, "updates", "array", "update"))
    _check_pipeline_stages(statements)
    ordered = ordered_flag(cmd, "update")
    writes = Writes(request, cmd, "update")
    n = modified = 0
    upserted: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    with request.engine.storage.write():
        for i, raw in enumerate(statements):
            statement_run = profiler.Statement(request, "update", name, raw)
            try:
                statement = UpdateStatement.parse(raw, "update.updates", ("q", "u", "c"))
                n_i, modified_i, upserted_id = run_update(
                    writes, writes.target(request.db, name), statement, statement_run.plans, statement_run.keys
                )
            except CommandError as exc:
                statement_run.finish(error=exc)
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
                continue
            upserts = int(upserted_id is not NOT_UPSERTED)
            statement_run.finish(nMatched=n_i - upserts, nModified=modified_i, nUpserted=upserts)
            n += n_i
            modified += modified_i
            if upserted_id is not NOT_UPSERTED:
                upserted.append({"index": i, "_id": upserted_id})
    reply: dict[str, Any] = {"n": n, "nModified": modified}
    if upserted:
        reply["upserted"] = upserted
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return finish(request, cmd, reply)


# -- delete -------------------------------------------------------------------------


def run_delete(
    writes: Writes,
    target: Target,
    filter_spec: Mapping[str, Any] | None,
    multi: bool,
    hint: Any,
    plans: list[AccessStage] | None = None,
    collation_spec: Mapping[str, Any] | None = None,
    keys: profiler.KeyTally | None = None,
) -> int:
    """The documents one delete statement removed; its access path is
    counted (and appended to ``plans``), its removed index entries tallied
    in ``keys`` (when profiled)."""
    plans = [] if plans is None else plans
    if target.buckets is not None:
        return target.timeseries().remove_matching(filter_spec, multi)
    store = target.store
    n = 0
    ctx = writes.context(None, writes.collator(target, collation_spec, "delete"))
    for rid, data, doc, _details in matching(store, filter_spec, ctx, hint=hint, one=not multi, plans=plans):
        assert store is not None
        if keys is not None:
            keys.change(store, doc, None)
        store.delete(rid, doc, data)
        n += 1
    if store is not None:
        for access in plans:
            count_plan(writes.request, store, access)
    return n


_POINT_DELETE = frozenset({"q", "limit"})


def point_delete(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to a delete of one document by ``_id`` (mongod's IDHACK) in a
    plain collection (see :func:`_point_store`); None when the general path
    must answer. It runs what :func:`run_delete` runs for such a statement."""
    statement = _point_statement(cmd, "delete", "deletes")
    if statement is None or statement.get("limit") not in (0, 1) or type(statement.get("limit")) is not int:
        return None
    target = _point_target(request, cmd["delete"], statement, _POINT_DELETE)
    if target is None:
        return None
    store, key = target
    with request.engine.storage.write():
        if not _same_store(request, store):
            return None
        usage.id_lookup_used(request.engine.usage, store)
        row = store.row_by_id_key(key)
        if row is not None:
            rid, data = row
            if store.only_id_index:
                store.delete_by_id_key(rid, key, data)
            else:
                store.delete(rid, bson.decode(data, CODEC), data)
    return finish(request, cmd, {"n": int(row is not None), "ok": 1.0})


@COMMANDS.register("delete")
def cmd_delete(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    point = point_delete(request, cmd)
    if point is not None:
        return point
    name = collection_name(cmd, "delete")
    statements = params.write_batch(params.required(cmd, "deletes", "array", "delete"))
    ordered = ordered_flag(cmd, "delete")
    writes = Writes(request, cmd, "delete")
    n = 0
    errors: list[dict[str, Any]] = []
    with request.engine.storage.write():
        for i, statement in enumerate(statements):
            statement_run = profiler.Statement(request, "delete", name, statement)
            try:
                filter_spec, limit = delete_statement(statement)
                deleted = run_delete(
                    writes,
                    writes.target(request.db, name),
                    filter_spec,
                    limit == 0,
                    statement.get("hint"),
                    statement_run.plans,
                    statement.get("collation"),
                    statement_run.keys,
                )
            except CommandError as exc:
                statement_run.finish(error=exc)
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
                continue
            statement_run.finish(ndeleted=deleted)
            n += deleted
    reply: dict[str, Any] = {"n": n, "ok": 1.0}
    if errors:
        reply["writeErrors"] = errors
    return finish(request, cmd, reply)


def delete_statement(statement: Any) -> tuple[Mapping[str, Any] | None, int]:
    if not isinstance(statement, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'delete.deletes' is the wrong type, expected object")
    for required in ("q", "limit"):
        if required not in statement:
            raise CommandError(
                ErrorCode.FailedToParse, f"BSON field 'delete.deletes.{required}' is missing but a required field"
            )
    collation.given(statement, "delete.deletes")
    filter_spec = params.field(statement, "q", "object", "delete.deletes")
    limit = params.field(statement, "limit", "integer", "delete.deletes")
    if limit not in (0, 1):
        raise CommandError(ErrorCode.FailedToParse, f"The limit field in delete objects must be 0 or 1. Got {limit}")
    return filter_spec, limit


# -- findAndModify -----------------------------------------------------------------


@COMMANDS.register("findAndModify", "findandmodify")
def cmd_findAndModify(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    command = next(iter(cmd))
    name = collection_name(cmd, command)
    filter_spec = params.field(cmd, "query", "object", command)
    sort = params.field(cmd, "sort", "object", command)
    remove = bool(params.field(cmd, "remove", "bool", command, default=False))
    spec = params.field(cmd, "update", "objectOrArray", command)
    return_new = bool(params.field(cmd, "new", "bool", command, default=False))
    fields = params.field(cmd, "fields", "object", command)
    do_upsert = bool(params.field(cmd, "upsert", "bool", command, default=False))
    array_filters = params.field(cmd, "arrayFilters", "array", command)
    collation.given(cmd, command)
    writes = Writes(request, cmd, command)
    if remove and spec is not None:
        raise CommandError(ErrorCode.FailedToParse, "Cannot specify both an update and remove=true")
    if not remove and spec is None:
        raise CommandError(ErrorCode.FailedToParse, "Either an update or remove=true must be specified")
    if remove and return_new:
        raise CommandError(
            ErrorCode.FailedToParse,
            "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
        )
    if remove and do_upsert:
        raise CommandError(ErrorCode.FailedToParse, "Cannot specify both upsert=true and remove=true ")
    if remove and array_filters is not None:
        raise CommandError(ErrorCode.FailedToParse, "Cannot specify arrayFilters and remove=true")
    ctx = writes.context(None, collation.resolve(request, name, cmd.get("collation"), command))
    projection = compile_projection(fields, ctx, find=True) if fields else None
    update = compile_update(spec, ctx, array_filters) if spec is not None else None
    last_error: dict[str, Any] = {"n": 0}
    value: dict[str, Any] | None = None
    with request.engine.storage.write():
        target = writes.target(request.db, name)
        if target.buckets is not None:
            raise CommandError(
                ErrorCode.CommandNotSupportedOnView, f"Namespace {request.db}.{name} is a view, not a collection"
            )
        store = target.store
        plans: list[AccessStage] = []
        found = next(matching(store, filter_spec, ctx, hint=cmd.get("hint"), sort=sort, one=True, plans=plans), None)
        if store is not None:
            for access in plans:
                count_plan(request, store, access)
        keys = profiler.key_tally(request)
        counts: dict[str, int] = {}  # the profile entry's, as mongod's findAndModify reports them
        if found is not None:
            assert store is not None
            rid, data, doc, details = found
            if remove:
                if keys is not None:
                    keys.change(store, doc, None)
                store.delete(rid, doc, data)
                last_error = {"n": 1}
                value = doc
                counts = {"ndeleted": 1}
            else:
                assert update is not None
                changed, new = target.update(store, update, rid, data, doc, details)
                if keys is not None:
                    keys.change(store, doc, new)
                last_error = {"n": 1, "updatedExisting": True}
                value = new if return_new else doc
                counts = {"nMatched": 1, "nModified": int(changed)}
        elif do_upsert:
            assert update is not None
            new = target.upsert(update, filter_spec)
            if keys is not None and target.store is not None:
                keys.change(target.store, None, new)
            last_error = {"n": 1, "updatedExisting": False, "upserted": new["_id"]}
            value = new if return_new else None
            counts = {"nMatched": 0, "nModified": 0, "nUpserted": 1}
        elif update is not None:
            last_error = {"n": 0, "updatedExisting": False}
            counts = {"nMatched": 0, "nModified": 0}
        if keys is not None:
            examined = {
                "keysExamined": sum(access.keys_examined for access in plans),
                "docsExamined": sum(access.docs_examined for access in plans),
            }
            profiler.note(request, {**examined, **counts, **keys.counts()})
    if value is not None and projection is not None:
        details = MatchDetails()
        if projection.uses_positional:
            compile_filter(filter_spec, ctx)(value, details)
        value = projection.apply(value, details)
    return finish(request, cmd, {"lastErrorObject": last_error, "value": value, "ok": 1.0})
