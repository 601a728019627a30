"""Change streams: ``aggregate`` with ``$changeStream`` first, read from the oplog.

A change stream is a tailable cursor over the oplog (:mod:`foliodb.engine.oplog`)
after a start point, turned into MongoDB 8's change events, filtered to the
watched collection, database (``aggregate: 1``) or cluster
(``allChangesForCluster`` on ``admin``), then through the pipeline's other
stages (those MongoDB allows after ``$changeStream``, applied event by
event). A ``getMore`` with nothing new waits - up to its ``maxTimeMS``, the
driver's ``maxAwaitTimeMS``, one second by default - on the storage's commit
notification, holding no snapshot meanwhile, and answers as soon as a commit
records something. Every batch carries ``postBatchResumeToken``.

Resume tokens (:mod:`foliodb.commands.resume_tokens`) are ordered as events are. ``resumeAfter`` continues after a
token (not after an invalidate), ``startAfter`` also after an invalidate,
``startAtOperationTime`` from a cluster time; a point the oplog no longer
holds is ChangeStreamHistoryLost (286).

Events: insert, update (``updateDescription`` from the documents before and
after), replace, delete, drop, rename, dropDatabase, invalidate (a collection
stream's collection dropped or renamed, a database stream's database dropped),
and with ``showExpandedEvents`` create, createIndexes, dropIndexes, modify
(with ``stateBeforeChange``), ``collectionUUID`` (none for a view, which has
no UUID) and ``updateDescription.disambiguatedPaths``.
``fullDocument``: ``updateLookup`` reads the current document,
``whenAvailable``/``required`` the post-image, and ``fullDocumentBeforeChange``
the pre-image, of writes made while their collection had
``changeStreamPreAndPostImages`` enabled. An event BSON cannot hold (over
16 MB and 16 KB) fails the stream with BSONObjectTooLarge (10334), as mongod's,
unless the pipeline ends with ``$changeStreamSplitLargeEvent``, which sends it
in fragments (:mod:`foliodb.commands.change_stream_split`).
Errors carry mongod's change stream labels (``ResumableChangeStreamError``,
``NonResumableChangeStreamError``: :func:`failpoints.change_stream_label`).
Events of a transaction come after its commit, in order, with ``lsid`` and
``txnNumber``.

Manual: https://www.mongodb.com/docs/manual/changeStreams/ ,
https://www.mongodb.com/docs/manual/reference/change-events/
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import bson
from bson import Int64, Timestamp

from foliodb import interrupt
from foliodb.aggregation.pipeline import STAGES, Pipeline, compile_pipeline
from foliodb.commands import change_stream_split, failpoints, params
from foliodb.commands.cursors import DEFAULT_FIRST_BATCH, Lookahead, over_the_wire, take_batch
from foliodb.commands.resume_tokens import EVENT, HIGH_WATER, INVALIDATE, delivered_at, fragment_of, parse_token, token
from foliodb.engine.catalog import CODEC
from foliodb.engine.oplog import Oplog, pack, transaction_ops, unpack, update_description
from foliodb.errors import CommandError, ErrorCode, location

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

# Stages MongoDB allows after $changeStream (all work one event at a time).
ALLOWED = frozenset({"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact"})
DEFAULT_AWAIT_SECONDS = 1.0
MAX_EVENT_BYTES = 16 * 1024 * 1024 + 16 * 1024  # mongod's BSONObjMaxInternalSize: a user document and some metadata
READ_BATCH = 256
# Stages after $changeStream that never make an event bigger.
_SHRINKING = frozenset({"$match", "$unset", "$redact"})
_EXCLUDED_DBS = frozenset({"admin", "config", "local"})
# A modify event's stateBeforeChange fields, from its collMod entry's o2 (as mongod's).
_STATE_BEFORE = {"collectionOptions": "collectionOptions_old", "indexOptions": "indexOptions_old"}
_OPTIONS = {
    "fullDocument": "string",
    "fullDocumentBeforeChange": "string",
    "resumeAfter": "object",
    "startAfter": "object",
    "startAtOperationTime": "timestamp",
    "allChangesForCluster": "bool",
    "showExpandedEvents": "bool",
    "showSystemEvents": "bool",
    "showMigrationEvents": "bool",
    "allowToRunOnConfigDB": "bool",
    "allowToRunOnSystemNS": "bool",
}


# -- the stream -------------------------------------------------------------------------------


class ChangeStream(Iterator[dict[str, Any]]):
    """The events after a position, again and again (a tailable source)."""

    tailable = True

    def __init__(
        self,
        request: Request,
        db: str | None,
        coll: str | None,
        spec: Mapping[str, Any],
        after: tuple[int, int],
        pipeline: Pipeline | None,
        stage_names: tuple[str, ...],
        split: bool = False,
        resume_fragment: int | None = None,
    ) -> None:
        self.engine = request.engine
        self.db, self.coll = db, coll  # None: every database / every collection
        self.full_document = spec.get("fullDocument", "default")
        self.before_change = spec.get("fullDocumentBeforeChange", "off")
        self.expanded = bool(spec.get("showExpandedEvents", False))
        self.position = after  # (packed ts, op index) of the last oplog op examined
        # Whether the position's entry has no op after it left to examine: unknown after a
        # transaction's event (its later ops share its cluster time), so the next read looks.
        self._entry_examined = after[1] == 0xFFFFFFFF
        # ... and of the last one whose event was delivered (or filtered out): events read ahead
        # into _pending lie between the two, so a batch that ends early resumes from here.
        self.delivered: tuple[int, int, int | None] = (*after, None)
        # The delivered position before the newest one.
        self._delivered_before: tuple[int, int, int | None] = self.delivered
        # $changeStreamSplitLargeEvent: the fragments of a large event not yet delivered, and, when
        # resuming inside a split event (positioned just before it), how many of its fragments to skip.
        self.split = split
        self._fragments: list[dict[str, Any]] = []
        self._skip = 0 if resume_fragment is None else resume_fragment + 1
        self.pipeline = pipeline
        # The cluster time the last read's snapshot held every commit up to, once that read
        # went through the snapshot's entries (0: it did not): the most a batch may claim.
        self.seen = 0
        self._invalidated = False  # the cursor ends after the invalidate event
        # Events read ahead, each with whether it may be too big for BSON (see _check_size).
        self._pending: list[tuple[dict[str, Any], bool]] = []
        self._held: dict[str, Any] | None = None  # an event taken for a reply it did not fit (give_back)
        self._invalidate_next: dict[str, Any] | None = None  # the invalidate event the next read delivers
        # An event holds at most its oplog entry's documents twice over (the update description, the
        # document, its pre-image), so only a large entry makes a large event; unless a looked-up
        # document or a stage that adds fields joins in, and then every event is measured.
        self._measure_all = self.full_document == "updateLookup" or (
            pipeline is not None and any(name not in _SHRINKING for name in stage_names)
        )

    # -- reading ------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Invalidated, and the invalidate event delivered: the cursor ends."""
        return self._invalidated and not self._pending and self._held is None and not self._fragments

    def __next__(self) -> dict[str, Any]:
        if self._held is not None:
            event, self._held = self._held, None
            self._delivered_before, self.delivered = self.delivered, delivered_at(event)
            return event
        if self._fragments:
            event = self._fragments.pop(0)
            self._delivered_before, self.delivered = self.delivered, delivered_at(event)
            return event
        while True:
            if not self._pending:
                if self._invalidated:
                    raise StopIteration
                if not self._read():
                    raise StopIteration  # nothing new yet: the cursor stays open
                continue
            event, measure = self._pending.pop(0)
            self._delivered_before, self.delivered = self.delivered, delivered_at(event)
            if self.pipeline is not None and event["operationType"] != "invalidate":
                shaped = list(self.pipeline.run(iter([event])))
                if not shaped:
                    continue
                event = shaped[0]
                if "_id" not in event:
                    raise location(
                        280, "Encountered an event whose _id field, which contains the resume token, was modified"
                    )
            if self.split:
                fragments = self._split(event)
                if not fragments:
                    continue  # every fragment was delivered before the stream resumed
                event, self._fragments = fragments[0], fragments[1:]
                self.delivered = delivered_at(event)
            elif measure or self._measure_all:
                _check_size(event)
            return event

    def _split(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The event whole, or its fragments (those after the resumed one, when resuming)."""
        skip, self._skip = self._skip, 0
        if change_stream_split.size_of(event) <= change_stream_split.MAX_FRAGMENT_EVENT:
            change_stream_split.not_split(skip)
            return [event]
        ts, index, _ = parse_token(event["_id"])
        tokens = [token(ts, index, EVENT, n) for n in range(len(event))]
        return change_stream_split.split(event, tokens, skip)

    def give_back(self, event: dict[str, Any]) -> None:
        """The event last taken did not fit its reply: the next batch starts with it, and the
        resume token of this one stays before it (a client resuming from it must not miss it)."""
        self._held = event
        self.delivered = self._delivered_before

    def _read(self) -> bool:
        """Turn the next oplog entries into pending events; whether any entry was read."""
        if self._invalidate_next is not None:
            self._pending.append((self._invalidate_next, False))
            self._invalidate_next = None
            self._invalidated = True
            return True
        interrupt.check()
        storage = self.engine.storage
        # Read before the snapshot opens, so the snapshot holds every commit up to it; the
        # storage's cluster time read later may count a commit this read never saw.
        seen = pack(storage.cluster_time)
        if seen <= self.position[0] and self._entry_examined:
            return False  # no commit has recorded anything since: an idle getMore reads nothing
        storage.end_view()
        conn = storage.reader()
        # From the position's own entry: a transaction's later ops share its time (the ops up
        # to the position are skipped below).
        rows = Oplog.entries_after(conn, self.position[0] - 1, READ_BATCH)
        self.seen = seen if len(rows) < READ_BATCH else 0
        read = False
        for packed, data in rows:
            entry = bson.decode(data, CODEC)
            large = 2 * len(data) > MAX_EVENT_BYTES - 1024
            for index, op in transaction_ops(entry):
                if (packed, index) <= self.position:
                    continue
                read = True
                self.position = (packed, index)
                self._pending.extend((event, large) for event in self._events(packed, index, entry, op))
                if self._invalidate_next is not None:
                    return True
        self._entry_examined = True  # every entry read was examined to its last op
        return read

    def post_batch_token(self) -> dict[str, str]:
        """The resume token of the position reached: the last event delivered
        while events read ahead wait for the next batch; else the last op
        examined, or the cluster time the last read's snapshot was read
        through to (a high-water mark): never past a commit not yet read."""
        fragment = None
        if self._pending or self._held is not None or self._fragments:
            ts, index, fragment = self.delivered
        else:
            if self._invalidated:
                return token(self.position[0], self.position[1], INVALIDATE)
            if self.seen > self.position[0]:
                return token(self.seen, 0, HIGH_WATER)
            ts, index = self.position
        if index < 0:  # resuming inside a split event, its entry not yet read: past what came before it
            return token(ts - 1, 0, HIGH_WATER)
        return token(ts, 0, HIGH_WATER) if index == 0xFFFFFFFF else token(ts, index, EVENT, fragment)

    @staticmethod
    def label(error: CommandError) -> None:
        """Give a change stream's error (its aggregate's or a getMore's) the label mongod gives it."""
        label = failpoints.change_stream_label(error.code, True)
        if label is not None:
            error.labels.append(label)

    def wait(self, seconds: float) -> None:
        """Until a commit records something after the position, or ``seconds``."""
        storage = self.engine.storage
        storage.end_view()  # no snapshot pinned while waiting
        storage.wait_for_entries(unpack(max(self.position[0], pack(storage.cluster_time))), seconds)

    # -- events -----------------------------------------------------------------------------------

    def _watched(self, ns: str) -> bool:
        db, _, coll = ns.partition(".")
        if self.db is None:
            if db in _EXCLUDED_DBS:
                return False
        elif db != self.db:
            return False
        if coll.startswith("system."):
            return False
        return self.coll is None or coll == self.coll

    def _base(
        self, packed: int, index: int, kind: str, entry: Mapping[str, Any], op: Mapping[str, Any]
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "_id": token(packed, index, EVENT),
            "operationType": kind,
            "clusterTime": unpack(packed),
            "wallTime": entry.get("wall"),
        }
        if self.expanded and "ui" in op:
            event["collectionUUID"] = op["ui"]
        return event

    def _events(self, packed: int, index: int, entry: Mapping[str, Any], op: Mapping[str, Any]) -> list[dict[str, Any]]:
        kind = op.get("op")
        ns = op.get("ns", "")
        txn = {"lsid": entry["lsid"], "txnNumber": entry["txnNumber"]} if "txnNumber" in entry else {}
        if kind in ("i", "u", "d"):
            if not self._watched(ns):
                return []
            db, _, coll = ns.partition(".")
            return [self._document_event(packed, index, entry, op, db, coll, txn)]
        if kind == "c":
            return self._command_events(packed, index, entry, op)
        return []

    def _document_event(
        self,
        packed: int,
        index: int,
        entry: Mapping[str, Any],
        op: Mapping[str, Any],
        db: str,
        coll: str,
        txn: dict[str, Any],
    ) -> dict[str, Any]:
        kind = op["op"]
        images = bool(op.get("img"))  # as mongod: pre- and post-images only of writes made while they were on
        if kind == "i":
            event = self._base(packed, index, "insert", entry, op)
            event["fullDocument"] = op["o"]
            event["ns"] = {"db": db, "coll": coll}
            event["documentKey"] = {"_id": op["o"]["_id"]}
        elif kind == "u" and op.get("r"):
            event = self._base(packed, index, "replace", entry, op)
            event["fullDocument"] = op["o"]
            event["ns"] = {"db": db, "coll": coll}
            event["documentKey"] = dict(op["o2"])
        elif kind == "u":
            event = self._base(packed, index, "update", entry, op)
            event["ns"] = {"db": db, "coll": coll}
            event["documentKey"] = dict(op["o2"])
            description = update_description(op["pre"], op["o"])
            # mongod gives disambiguatedPaths (empty when no path is ambiguous) to showExpandedEvents streams only.
            if self.expanded:
                description.setdefault("disambiguatedPaths", {})
            else:
                description.pop("disambiguatedPaths", None)
            event["updateDescription"] = description
            if self.full_document == "updateLookup":
                event["fullDocument"] = self._lookup(db, coll, op["o2"])
            elif self.full_document in ("whenAvailable", "required"):
                if images:
                    event["fullDocument"] = op["o"]
                elif self.full_document == "required":
                    raise _no_image("post-image", db, coll)
                else:
                    event["fullDocument"] = None
        else:
            event = self._base(packed, index, "delete", entry, op)
            event["ns"] = {"db": db, "coll": coll}
            event["documentKey"] = dict(op["o"])
        if kind in ("u", "d") and self.before_change in ("whenAvailable", "required"):
            if images:
                event["fullDocumentBeforeChange"] = op["pre"]
            elif self.before_change == "required":
                raise _no_image("pre-image", db, coll)
            else:
                event["fullDocumentBeforeChange"] = None
        event.update(txn)
        return event

    def _command_events(
        self, packed: int, index: int, entry: Mapping[str, Any], op: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        o = op.get("o") or {}
        db = op.get("ns", "").partition(".")[0]
        name = next(iter(o), None)
        if name == "dropDatabase":
            if self.db is not None and db == self.db and self.coll is None:
                event = self._base(packed, index, "dropDatabase", entry, op)
                event["ns"] = {"db": db}
                self._invalidate_next = self._invalidate(packed, index, entry)
                return [event]
            if self.db is None and db not in _EXCLUDED_DBS:
                event = self._base(packed, index, "dropDatabase", entry, op)
                event["ns"] = {"db": db}
                return [event]
            return []
        if name == "renameCollection":
            source_db, _, source = str(o["renameCollection"]).partition(".")
            to_db, _, to = str(o["to"]).partition(".")
            if not (self._watched(f"{source_db}.{source}") or (self.coll is None and self._watched(f"{to_db}.{to}"))):
                return []
            event = self._base(packed, index, "rename", entry, op)
            event["ns"] = {"db": source_db, "coll": source}
            event["to"] = {"db": to_db, "coll": to}
            if self.expanded:
                described: dict[str, Any] = {"to": {"db": to_db, "coll": to}}
                if "dropTarget" in o:  # the UUID of the collection the rename replaced
                    described["dropTarget"] = o["dropTarget"]
                event["operationDescription"] = described
            if self.coll is not None:
                self._invalidate_next = self._invalidate(packed, index, entry)
            return [event]
        target = o.get(name) if name is not None else None
        if not isinstance(target, str) or not self._watched(f"{db}.{target}"):
            return []
        ns = {"db": db, "coll": target}
        if name == "drop":
            event = self._base(packed, index, "drop", entry, op)
            event["ns"] = ns
            if self.coll is not None:
                self._invalidate_next = self._invalidate(packed, index, entry)
            return [event]
        if not self.expanded:
            return []
        described = {key: value for key, value in o.items() if key != name}
        if name == "dropIndexes":  # the spec of the index dropped, in a list as createIndexes' (mongod's shape)
            described = {"indexes": [o["spec"]]}
        kind = {"create": "create", "createIndexes": "createIndexes", "dropIndexes": "dropIndexes", "collMod": "modify"}
        if name not in kind:
            return []
        event = self._base(packed, index, kind[name], entry, op)
        event["ns"] = ns
        event["operationDescription"] = described
        if name == "collMod":
            before = op.get("o2") or {}
            event["stateBeforeChange"] = {key: before[old] for key, old in _STATE_BEFORE.items() if old in before}
        return [event]

    def _invalidate(self, packed: int, index: int, entry: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "_id": token(packed, index, INVALIDATE),
            "operationType": "invalidate",
            "clusterTime": unpack(packed),
            "wallTime": entry.get("wall"),
        }

    def _lookup(self, db: str, coll: str, key: Mapping[str, Any]) -> Any:
        store = self.engine.store(db, coll)
        if store is None:
            return None
        row = store.row_by_id_key(store.id_key(key["_id"]))
        return None if row is None else bson.decode(row[1], CODEC)


def _check_size(event: Mapping[str, Any]) -> None:
    """Refuse an event BSON cannot hold, as mongod does (a document and its
    pre-image, say): BSONObjectTooLarge, which ``$changeStreamSplitLargeEvent`` avoids."""
    size = len(bson.encode(event, codec_options=CODEC))
    if size > MAX_EVENT_BYTES:
        raise CommandError(
            ErrorCode.BSONObjectTooLarge,
            f"BSONObj size: {size} (0x{size:X}) is invalid. Size must be between 0 and {MAX_EVENT_BYTES}(16MB)"
            f" First element: _id: {event['_id']}",
        )


def _no_image(what: str, db: str, coll: str) -> CommandError:
    return CommandError(
        ErrorCode.NoMatchingDocument,
        f"Change stream was configured to require a {what} for all update, delete and replace events, but the "
        f"{what} was not found for an event on {db}.{coll} (changeStreamPreAndPostImages is not enabled)",
    )


# -- the aggregate command's side -----------------------------------------------------------------


def open_stream(request: Request, cmd: Mapping[str, Any], stages: list[Any], batch_size: int | None) -> dict[str, Any]:
    """Reply to an ``aggregate`` whose first stage is ``$changeStream``."""
    try:
        return _open(request, cmd, stages, batch_size)
    except CommandError as error:
        ChangeStream.label(error)
        raise


def _open(request: Request, cmd: Mapping[str, Any], stages: list[Any], batch_size: int | None) -> dict[str, Any]:
    if request.executor.replica_set is None:
        raise location(40573, "The $changeStream stage is only supported on replica sets")
    spec = stages[0]["$changeStream"]
    if not isinstance(spec, Mapping):
        raise location(50808, "$changeStream stage expects a document as argument")
    for key, value in spec.items():
        kind = _OPTIONS.get(key)
        if kind is None:
            raise location(40415, f"BSON field '$changeStream.{key}' is an unknown field.")
        if kind == "timestamp" and not isinstance(value, Timestamp):
            raise CommandError(ErrorCode.TypeMismatch, f"BSON field '$changeStream.{key}' is the wrong type")
        if kind != "timestamp":
            params.field(spec, key, kind, "$changeStream")
    if spec.get("fullDocument", "default") not in ("default", "updateLookup", "whenAvailable", "required"):
        raise CommandError(ErrorCode.BadValue, f"'{spec['fullDocument']}' is not a valid fullDocument option")
    if spec.get("fullDocumentBeforeChange", "off") not in ("off", "whenAvailable", "required"):
        raise CommandError(ErrorCode.BadValue, f"'{spec['fullDocumentBeforeChange']}' is not valid")
    if sum(key in spec for key in ("resumeAfter", "startAfter", "startAtOperationTime")) > 1:
        raise location(40674, "Only one type of resume option is allowed, but multiple were found.")
    target = cmd["aggregate"]
    db: str | None = request.db
    coll: str | None = target if isinstance(target, str) else None
    if target == 1:
        if spec.get("allChangesForCluster"):
            if request.db != "admin":
                raise CommandError(
                    ErrorCode.InvalidOptions, "$changeStream may only be run on admin when allChangesForCluster is true"
                )
            db = None
        elif request.db == "admin":
            raise CommandError(
                ErrorCode.InvalidNamespace, "$changeStream may not be opened on the internal admin database"
            )
    elif not isinstance(target, str):
        raise CommandError(ErrorCode.InvalidNamespace, "aggregate requires a collection name or 1")
    later = list(stages[1:])
    split = change_stream_split.take_stage(later)
    for stage in later:
        name = next(iter(stage), "") if isinstance(stage, Mapping) else ""
        if name == "$changeStream":
            raise location(40602, "$changeStream is only valid as the first stage in a pipeline")
        if name not in STAGES:
            STAGES.get(name)  # an unknown stage is 40324, an unbuilt one NotImplemented (238), as anywhere else
        if name not in ALLOWED:
            raise CommandError(ErrorCode.IllegalOperation, f"Stage {name} is not permitted in a $changeStream pipeline")
    from foliodb.commands.aggregate import EngineEnv  # aggregate.py opens streams: imported here, not at the top

    env = EngineEnv(request, request.context(cmd.get("let")), True)
    pipeline = compile_pipeline(later, env) if later else None
    resumed = spec.get("resumeAfter", spec.get("startAfter"))
    fragment = fragment_of(resumed) if resumed is not None else None
    change_stream_split.needs_stage(fragment, split)
    after = _start(request, spec)
    names = tuple(next(iter(stage)) for stage in later)
    stream = ChangeStream(request, db, coll, spec, after, pipeline, names, split, fragment)
    ns = f"{request.db}.{target}" if coll is not None else f"{request.db}.$cmd.aggregate"
    lookahead = Lookahead(stream)
    size = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
    batch, _ = take_batch(lookahead, size, measure=over_the_wire(request))
    cursor_id = 0
    if not stream.finished:
        cursor = request.cursors.open(ns, lookahead, len(batch), await_data=True)
        cursor.stream = stream
        cursor_id = cursor.id
    return {
        "cursor": {
            "firstBatch": batch,
            "postBatchResumeToken": stream.post_batch_token(),
            "id": Int64(cursor_id),
            "ns": ns,
        },
        "ok": 1.0,
    }


def _start(request: Request, spec: Mapping[str, Any]) -> tuple[int, int]:
    """The oplog position a stream starts after."""
    storage = request.engine.storage
    if "startAtOperationTime" in spec:
        at = pack(spec["startAtOperationTime"])
        position = (at - 1, 0xFFFFFFFF)  # past everything before ``at``
    elif "resumeAfter" in spec or "startAfter" in spec:
        name = "resumeAfter" if "resumeAfter" in spec else "startAfter"
        ts, index, kind = parse_token(spec[name])
        if kind == INVALIDATE and name == "resumeAfter":
            raise location(
                40619,
                "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate "
                "notification.",
            )
        position = (ts, 0xFFFFFFFF if kind == HIGH_WATER else index)
        if fragment_of(spec[name]) is not None:
            position = (ts, index - 1)  # just before the split event: it is split again
        if kind == INVALIDATE:
            position = (ts, 0xFFFFFFFF)  # startAfter an invalidate: a new stream after it
    else:
        return (pack(storage.cluster_time), 0xFFFFFFFF)
    trimmed = storage.oplog.trimmed_through
    if position[0] < trimmed:
        raise CommandError(
            ErrorCode.ChangeStreamHistoryLost,
            "Resume of change stream was not possible, as the resume point may no longer be in the oplog.",
        )
    return position
