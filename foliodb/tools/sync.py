"""``foliodb sync``: keep a MongoDB deployment (a replica set, a sharded cluster, or
another FolioDB) equal to a FolioDB source while the application keeps writing,
so that moving the application costs only the seconds of switching its URI.

Order of work, and why it is correct:

1. A client-wide change stream is opened on the source *first* and its resume
   token kept: every write committed after that point reaches the target as an
   event, whatever the copy sees.
2. Every selected namespace is copied (:class:`foliodb.tools.restore.Loader`,
   so with its options, views and indexes as ``restore`` makes them), documents
   bypassing validation (the source holds them, so the target must). The copy
   is fuzzy: a document may be read before or after a change the stream also
   carries.
3. The stream is replayed from the token, continuously (or, with ``once``,
   until the events up to the cluster time at which replaying began are
   applied, and none after it). Each event sets state rather than transforming it, so replaying
   an event the copy (or an earlier run) already reflects changes nothing:

   - insert, replace: the event's full document replaces the target's
     (upsert); delete: deleting a missing document is fine;
   - update: the document as it is now (``fullDocument: "updateLookup"``)
     replaces the target's. The update description alone would be wrong
     under concurrent writes: it is a diff against the document before the
     update, and the target's copy of the document may be older or newer
     than that (the fuzzy copy, a re-applied batch), so applying it could
     put fields in the wrong state or order for good. A looked-up document is
     never older than the event, and the document's last event decides its
     final state, so the target converges. Only when the lookup finds
     nothing (the document was deleted since, or its collection renamed) is
     the description applied to the target's document, which is then no
     older than the update's base (a later delete or rename corrects the rest);
   - DDL (create, drop, rename, dropDatabase, createIndexes, dropIndexes,
     modify, from ``showExpandedEvents``) is applied as it happened; one that
     finds its work done (NamespaceExists, NamespaceNotFound, IndexNotFound)
     is skipped;
   - a unique index that refuses a write (a looked-up document newer than the
     target's others) makes way: the target's conflicting document is deleted,
     and its own later event puts it back (:func:`_evict`).

Resumable: after each applied batch the stream's resume token is stored in the
target, database ``foliodb_sync``, collection ``state``, one document per source
``{_id: <source>, phase: "copy" | "apply", token, include, exclude, started,
updated}``. Document events are batched, but the token is stored just before
and just after each DDL event, so a restart re-applies at most one DDL event,
on the state it left (re-applying a rename after the documents that followed
it were applied could replace them). A restart in the "apply" phase resumes
from the token without copying; one in the "copy" phase, or with ``resync``,
drops what sync copies on the target and starts over. A token the source's
oplog no longer holds is ChangeStreamHistoryLost (286): the user is told to
run with ``--resync``.

Not synced: the ``admin``, ``config`` and ``local`` databases (change streams
do not report them, so they could not be kept equal), ``system.*``
collections, users and roles, and ``foliodb_sync`` itself.

Manual: https://www.mongodb.com/docs/manual/changeStreams/ ,
https://www.mongodb.com/docs/manual/reference/change-events/
"""

from __future__ import annotations

import datetime
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import bson
from bson import Timestamp
from bson.raw_bson import RawBSONDocument
from pymongo import DeleteOne, ReplaceOne, UpdateOne
from pymongo.errors import BulkWriteError, OperationFailure

from foliodb.tools.dump import metadata
from foliodb.tools.indexes import index_model
from foliodb.tools.namespaces import Matcher
from foliodb.tools.progress import SILENT, Reporter, Task
from foliodb.tools.restore import BATCH_BYTES, BATCH_DOCUMENTS, Loader, Options
from foliodb.tools.target import ToolError, describe

STATE_DB, STATE_COLLECTION = "foliodb_sync", "state"
NOT_SYNCED = frozenset({"admin", "config", "local", STATE_DB})
APPLY_BATCH = 1000  # document events applied (and one token stored) at a time
AWAIT_MS = 500  # an idle getMore's wait: how soon a stop request is noticed
_NAMESPACE_NOT_FOUND, _INDEX_NOT_FOUND, _NAMESPACE_EXISTS, _HISTORY_LOST, _DUPLICATE_KEY = 26, 27, 48, 286, 11000
_INDEX_CONFLICTS = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict
_DOCUMENT_EVENTS = frozenset({"insert", "replace", "update", "delete"})
_RAW = bson.CodecOptions(document_class=RawBSONDocument)
HISTORY_LOST = (
    f"the resume point stored in the target ({STATE_DB}.{STATE_COLLECTION}) is no longer in the source's oplog "
    "(ChangeStreamHistoryLost): the changes made since cannot be replayed; run again with --resync "
    "to copy everything anew"
)


@dataclass
class SyncOptions:
    """What to sync (``include``/``exclude``: mongorestore's namespace patterns) and how."""

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    resync: bool = False  # drop what sync copies on the target and start over
    once: bool = False  # stop when caught up, instead of following the source


@dataclass
class SyncReport:
    copied: dict[str, int] = field(default_factory=dict)  # documents, per namespace (empty when resumed)
    views: list[str] = field(default_factory=list)
    events: int = 0  # change events applied
    resumed: bool = False  # from a stored token, without copying
    complete: bool = True  # False: stopped during the copy, which the next run does again


def source_name(source: str) -> str:
    """How the state document names a source: a URI without its credentials, or a dbpath's real path."""
    if source.startswith(("mongodb://", "mongodb+srv://")):
        return re.sub(r"^(mongodb(?:\+srv)?://)[^@/]*@", r"\1", source)
    return "dbpath:" + os.path.realpath(source)


class Sync:
    """One sync of ``source`` into ``target`` (pymongo-compatible clients); :meth:`run` does it."""

    def __init__(
        self,
        source: Any,
        target: Any,
        name: str,
        options: SyncOptions | None = None,
        reporter: Reporter = SILENT,
    ) -> None:
        self.source, self.target, self.name = source, target, name
        self.options = options or SyncOptions()
        self.reporter = reporter
        self.include = Matcher(self.options.include)
        self.exclude = Matcher(self.options.exclude)
        self.state = target[STATE_DB][STATE_COLLECTION]
        self.report = SyncReport()
        self._stopping = threading.Event()
        self._saved: Any = None

    def stop(self) -> None:
        """Ask :meth:`run` to store its position and return (from a signal handler or another thread)."""
        self._stopping.set()

    def selected(self, db: str, coll: str) -> bool:
        if db in NOT_SYNCED or coll.startswith("system."):
            return False
        namespace = f"{db}.{coll}"
        return (not self.include or self.include.matches(namespace)) and not self.exclude.matches(namespace)

    def run(self) -> SyncReport:
        state = self.state.find_one({"_id": self.name})
        if state is not None and state.get("phase") == "apply" and not self.options.resync:
            self._check_namespaces(state)
            self.report.resumed = True
            self.reporter.note(f"resuming from the position stored in {STATE_DB}.{STATE_COLLECTION}")
            token = state["token"]
        else:
            if state is None and not self.options.resync:
                self._refuse_occupied()
            elif state is not None and not self.options.resync:
                self.reporter.note("the previous run stopped during its copy: copying again")
            copied = self._copy()
            if copied is None:
                self.report.complete = False
                self.reporter.note("stopped during the copy: the next run copies again")
                return self.report
            token = copied
        try:
            self._follow(token)
        except OperationFailure as exc:
            if exc.code == _HISTORY_LOST:
                raise ToolError(HISTORY_LOST) from None
            raise
        return self.report

    # -- the copy ---------------------------------------------------------------------------------

    def _stream(self, **resume: Any) -> Any:
        return self.source.watch(
            full_document="updateLookup", show_expanded_events=True, max_await_time_ms=AWAIT_MS, **resume
        )

    def _copy(self) -> Any:
        """Copy every selected namespace; the token the stream starts from, or None when stopped."""
        with self._stream() as stream:
            token = stream.resume_token  # before the copy reads anything
        self._save(
            phase="copy",
            token=token,
            include=list(self.options.include),
            exclude=list(self.options.exclude),
            started=_now(),
        )
        self._clear_target()
        loader = Loader(self.target, Options(drop=True, bypass_document_validation=True), self.reporter, "copied")
        try:
            for db, info in self._source_namespaces():
                if self._stopping.is_set():
                    return None
                namespace = f"{db}.{info['name']}"
                loader.begin(namespace, dict(metadata(self.source[db], info)))
                if info.get("type") != "view":
                    self._copy_documents(loader, namespace, db, info["name"])
                loader.end(namespace)
            loader.finish()
        finally:
            loader.close()
        self.report.copied = dict(loader.report.documents)
        self.report.views = list(loader.report.views)
        self._save(phase="apply", token=token)
        return token

    def _copy_documents(self, loader: Loader, namespace: str, db: str, name: str) -> None:
        source = self.source[db].get_collection(name, codec_options=_RAW)
        with self.reporter.task(namespace, source.estimated_document_count()) as task:
            batch: list[bytes] = []
            size = 0
            for document in source.find():
                batch.append(document.raw)
                size += len(document.raw)
                if len(batch) == BATCH_DOCUMENTS or size >= BATCH_BYTES:
                    loader.documents(namespace, b"".join(batch), len(batch))
                    task.advance(len(batch))
                    batch, size = [], 0
            if batch:
                loader.documents(namespace, b"".join(batch), len(batch))
                task.advance(len(batch))

    def _source_namespaces(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for db in self.source.list_database_names():
            if db in NOT_SYNCED:
                continue
            for info in self.source[db].list_collections():
                if self.selected(db, info["name"]):
                    yield db, info

    def _target_namespaces(self) -> Iterator[tuple[str, str]]:
        for db in self.target.list_database_names():
            if db in NOT_SYNCED:
                continue
            for name in self.target[db].list_collection_names():
                if self.selected(db, name):
                    yield db, name

    def _refuse_occupied(self) -> None:
        """A first run copies into namespaces the target does not hold: a mistyped target is not overwritten."""
        wanted = {(db, info["name"]) for db, info in self._source_namespaces()}
        taken = sorted(f"{db}.{name}" for db, name in self._target_namespaces() if (db, name) in wanted)
        if taken:
            more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
            raise ToolError(f"the target already holds {taken[0]}{more}: run with --resync to replace what sync copies")

    def _clear_target(self) -> None:
        for db, name in list(self._target_namespaces()):
            self.target[db].drop_collection(name)
            self.reporter.note(f"dropped {db}.{name} on the target")

    def _check_namespaces(self, state: Mapping[str, Any]) -> None:
        stored = (list(state.get("include") or []), list(state.get("exclude") or []))
        if stored != (list(self.options.include), list(self.options.exclude)):
            raise ToolError(
                f"this sync began with other namespace options (include {stored[0]}, exclude {stored[1]}): "
                "give the same ones, or run with --resync"
            )

    # -- following the stream ---------------------------------------------------------------------

    def _follow(self, token: Any) -> None:
        """Apply events from ``token`` until stopped (or, with ``once``, caught up)."""
        cutoff = self._cluster_time() if self.options.once else None
        pending: list[Mapping[str, Any]] = []
        with self._stream(resume_after=token) as stream, self.reporter.task("events applied", None, "events") as task:
            while not self._stopping.is_set():
                before = stream.resume_token
                event = stream.try_next()
                if event is None:  # caught up with the source, for now
                    self._apply_documents(pending, task)
                    self._save(token=stream.resume_token)
                    task.describe("lag 0s")
                    if self.options.once:
                        self.reporter.note("caught up: stopping (--once)")
                        return
                    continue
                if cutoff is not None and event["clusterTime"] > cutoff:
                    # Past the cutoff: left for the next run, so no transaction is cut in two.
                    self._apply_documents(pending, task)
                    self._save(token=before)
                    self.reporter.note("caught up: stopping (--once)")
                    return
                kind = event["operationType"]
                task.describe(f"lag {max(0.0, time.time() - event['clusterTime'].time):.0f}s")
                if kind in _DOCUMENT_EVENTS:
                    if self.selected(event["ns"]["db"], event["ns"]["coll"]):
                        pending.append(event)
                    if len(pending) >= APPLY_BATCH:
                        self._apply_documents(pending, task)
                        self._save(token=stream.resume_token)
                else:
                    self._apply_documents(pending, task)
                    self._save(token=before)  # a restart re-applies this DDL event alone, see above
                    apply = DDL.get(kind)
                    if apply is None:
                        self.reporter.warn(f"left out a {kind} event: sync does not apply it")
                    elif apply(self, event):
                        task.advance(1)
                        self.report.events += 1
                    self._save(token=stream.resume_token)
            self._apply_documents(pending, task)
            self._save(token=stream.resume_token)
            self.reporter.note("stopped: the position is stored, the next run resumes there")

    def _cluster_time(self) -> Timestamp | None:
        """The source's newest write: ``once`` applies the events up to it."""
        hello = self.source.admin.command("hello")
        ts = ((hello.get("lastWrite") or {}).get("opTime") or {}).get("ts")
        return ts if isinstance(ts, Timestamp) else None

    def _apply_documents(self, events: list[Mapping[str, Any]], task: Task) -> None:
        """Apply document events, in order for each namespace (namespaces are independent)."""
        writes: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
        for event in events:
            ns = writes.setdefault((event["ns"]["db"], event["ns"]["coll"]), [])
            ns.extend((event["documentKey"], write) for write in document_writes(event))
        for (db, coll), keyed in writes.items():
            self._write(self.target[db][coll], keyed)
        task.advance(len(events))
        self.report.events += len(events)
        events.clear()

    def _write(self, collection: Any, keyed: list[tuple[Any, Any]]) -> None:
        while keyed:
            try:
                collection.bulk_write([w for _, w in keyed], ordered=True, bypass_document_validation=True)
                return
            except BulkWriteError as exc:
                error = (exc.details.get("writeErrors") or [{}])[0]
                done = error.get("index", 0)
                if error.get("code") != _DUPLICATE_KEY or not _evict(collection, keyed[done][0], error):
                    message = error.get("errmsg", describe(exc))
                    raise ToolError(f"cannot apply a change to {collection.full_name}: {message}") from None
                keyed = keyed[done:]

    def _save(self, **fields: Any) -> None:
        if set(fields) == {"token"} and fields["token"] == self._saved:
            return  # an idle stream: nothing new to store
        self.state.update_one({"_id": self.name}, {"$set": {**fields, "updated": _now()}}, upsert=True)
        self._saved = fields["token"]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


# -- document events ------------------------------------------------------------------------------


def _evict(collection: Any, key: Mapping[str, Any], error: Mapping[str, Any]) -> bool:
    """A unique index refused a document the source holds: the target's other document with
    that value is older than the source's (the source moved it to another value, by an event
    still to come, or the document written is a lookup newer than the event), so it is
    deleted, and its own later event writes it again. Whether one was deleted."""
    value, pattern = error.get("keyValue"), error.get("keyPattern")
    if not isinstance(value, Mapping) or "_id" in value:
        return False
    index = next((i for i in collection.list_indexes() if dict(i["key"]) == dict(pattern or {})), None)
    clauses = [dict(value), {"_id": {"$ne": key["_id"]}}]
    if index is not None and "partialFilterExpression" in index:
        clauses.append(index["partialFilterExpression"])  # only documents the index holds conflict
    return bool(collection.delete_many({"$and": clauses}).deleted_count)


def document_writes(event: Mapping[str, Any]) -> list[Any]:
    """The target's writes for an insert, replace, update or delete event (see the module's docstring)."""
    kind, key = event["operationType"], event["documentKey"]
    if kind == "delete":
        return [DeleteOne(key)]
    document = event.get("fullDocument")
    if document is not None:
        return [ReplaceOne(key, document, upsert=True)]
    if kind != "update":
        return []
    description = event.get("updateDescription") or {}
    writes: list[Any] = []
    truncated = {t["field"]: {"$each": [], "$slice": t["newSize"]} for t in description.get("truncatedArrays") or []}
    if truncated:  # before the sets: an updated field may lie inside a truncated array
        writes.append(UpdateOne(key, {"$push": truncated}))
    change: dict[str, Any] = {}
    if description.get("updatedFields"):
        change["$set"] = description["updatedFields"]
    if description.get("removedFields"):
        change["$unset"] = dict.fromkeys(description["removedFields"], "")
    if change:
        writes.append(UpdateOne(key, change))
    return writes


# -- DDL events: one function each; True when the event concerned what is synced ------------------


@contextmanager
def _unless_done(*codes: int) -> Iterator[None]:
    """An error saying the change is already there (``codes``) is no error."""
    try:
        yield
    except OperationFailure as exc:
        if exc.code not in codes:
            raise


def ddl_create(sync: Sync, event: Mapping[str, Any]) -> bool:
    db, coll = event["ns"]["db"], event["ns"]["coll"]
    if not sync.selected(db, coll):
        return False
    options = {k: v for k, v in (event.get("operationDescription") or {}).items() if k != "idIndex"}
    with _unless_done(_NAMESPACE_EXISTS):
        sync.target[db].command("create", coll, **options)
    return True


def ddl_drop(sync: Sync, event: Mapping[str, Any]) -> bool:
    db, coll = event["ns"]["db"], event["ns"]["coll"]
    if not sync.selected(db, coll):
        return False
    sync.target[db].drop_collection(coll)
    return True


def ddl_dropDatabase(sync: Sync, event: Mapping[str, Any]) -> bool:
    # Only what sync copies: the target's database may hold other collections.
    db = event["ns"]["db"]
    names = [name for name in sync.target[db].list_collection_names() if sync.selected(db, name)]
    for name in names:
        sync.target[db].drop_collection(name)
    return bool(names)


def ddl_rename(sync: Sync, event: Mapping[str, Any]) -> bool:
    db, coll = event["ns"]["db"], event["ns"]["coll"]
    to_db, to_coll = event["to"]["db"], event["to"]["coll"]
    source, target = sync.selected(db, coll), sync.selected(to_db, to_coll)
    if source and target:
        # dropTarget: the source's rename succeeded, so whatever the target holds there is stale.
        rename = {"renameCollection": f"{db}.{coll}", "to": f"{to_db}.{to_coll}", "dropTarget": True}
        with _unless_done(_NAMESPACE_NOT_FOUND):
            sync.target.admin.command(rename)
    elif source:
        sync.target[db].drop_collection(coll)  # moved out of what is synced
    elif target:
        sync.reporter.warn(
            f"{db}.{coll}, which sync leaves out, was renamed {to_db}.{to_coll}, which it copies: "
            "its documents are not on the target (run with --resync to copy them)"
        )
    return source or target


def ddl_createIndexes(sync: Sync, event: Mapping[str, Any]) -> bool:
    db, coll = event["ns"]["db"], event["ns"]["coll"]
    if not sync.selected(db, coll):
        return False
    for spec in (event.get("operationDescription") or {}).get("indexes") or []:
        if spec.get("name") != "_id_":
            # A conflicting index of that name is an older state: a later event drops it.
            with _unless_done(*_INDEX_CONFLICTS):
                sync.target[db][coll].create_indexes([index_model(spec)])
    return True


def ddl_dropIndexes(sync: Sync, event: Mapping[str, Any]) -> bool:
    db, coll = event["ns"]["db"], event["ns"]["coll"]
    if not sync.selected(db, coll):
        return False
    description = event.get("operationDescription") or {}
    # MongoDB describes the dropped indexes ({indexes: [spec]}); FolioDB names the one ({index, spec}).
    names = [spec["name"] for spec in description.get("indexes") or []]
    if isinstance(description.get("index"), str):
        names.append(description["index"])
    for name in names:
        with _unless_done(_INDEX_NOT_FOUND, _NAMESPACE_NOT_FOUND):
            sync.target[db][coll].drop_index(name)
    return True


def ddl_modify(sync: Sync, event: Mapping[str, Any]) -> bool:
    db, coll = event["ns"]["db"], event["ns"]["coll"]
    if not sync.selected(db, coll):
        return False
    changes = {k: v for k, v in (event.get("operationDescription") or {}).items() if k != "stateBeforeChange"}
    with _unless_done(_NAMESPACE_NOT_FOUND):
        sync.target[db].command("collMod", coll, **changes)
    return True


DDL: dict[str, Callable[[Sync, Mapping[str, Any]], bool]] = {
    "create": ddl_create,
    "createIndexes": ddl_createIndexes,
    "drop": ddl_drop,
    "dropDatabase": ddl_dropDatabase,
    "dropIndexes": ddl_dropIndexes,
    "modify": ddl_modify,
    "rename": ddl_rename,
}
