"""``dump --oplog`` and ``restore --oplogReplay``: a dump that is a point in time.

As mongodump and mongorestore do it (mongo-tools' ``mongodump/oplog_dump.go``,
``mongorestore/oplog.go``):

- Dump: before the collections are read, the newest entry of
  ``local.oplog.rs`` gives the window's start; after them, the newest again
  its end. The entries ``start <= ts <= end`` are written as ``oplog.bson``
  at the top of the dump directory (``oplog.bson.gz`` with gzip), or to an
  archive as the namespace ``.oplog`` (database "", collection ``oplog``,
  listed in the prelude without metadata). The oldest entry is checked
  before and after they are read: if it is newer than the start, entries were
  trimmed meanwhile and the dump fails ("oplog overflow"). A rename in the
  window fails the dump too, as mongodump's validator refuses it.
- FolioDB's entries are written as mongod's, so mongorestore replays them: an
  entry creating several indexes (``{createIndexes, indexes: [...]}``,
  FolioDB's one entry per command) is written as mongod's
  ``commitIndexBuild``, whose ``indexes`` list mongorestore reads; an update
  is already a replacement (``o`` the whole document, ``o2`` its ``_id``),
  which any applier applies.
- Replay (after the collections, views and users, before the dump's indexes,
  so a unique index sees the final documents): each entry in order, as
  mongorestore's ``applyOps`` of it does, through any pymongo-compatible
  client: an insert is an upsert, a replacement replaces (upsert), a
  ``$v: 2`` diff (MongoDB's updates) or an update operator document updates,
  a delete deletes what is there; a transaction's ``applyOps`` entry applies
  its operations; commands (create, drop, renameCollection, dropDatabase,
  createIndexes, commitIndexBuild, dropIndexes, collMod) are run, and one that
  finds its work done (the namespace exists, is gone, the index is gone) is
  no error. No-ops, index-build bookkeeping, and the ``config`` database's
  entries are skipped, as mongorestore skips them. ``limit`` (``--oplogLimit``)
  stops before the first entry at or after it.

Manual: https://www.mongodb.com/docs/database-tools/mongodump/#std-option-mongodump.--oplog and
https://www.mongodb.com/docs/database-tools/mongorestore/#std-option-mongorestore.--oplogReplay
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import bson
from bson import Timestamp
from bson.binary import Binary, UuidRepresentation
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument
from bson.son import SON
from pymongo import DeleteOne, ReplaceOne, UpdateOne
from pymongo.errors import BulkWriteError, OperationFailure

from foliodb.tools.indexes import index_model

OPLOG_DB, OPLOG_COLLECTION = "", "oplog"  # the archive's namespace of the oplog, as mongodump names it
OPLOG_NAMESPACE = f"{OPLOG_DB}.{OPLOG_COLLECTION}"
OPLOG_FILE = "oplog.bson"
_RAW = CodecOptions(document_class=RawBSONDocument)
_DECODE = CodecOptions(document_class=SON, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
_NEWEST, _OLDEST = [("$natural", -1)], [("$natural", 1)]
_NAMESPACE_NOT_FOUND, _INDEX_NOT_FOUND, _NAMESPACE_EXISTS = 26, 27, 48
_INDEX_DONE = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict: an index of that name is there
_SKIPPED_OPS = frozenset({"n", "cd", "ci", "cu", "km"})  # mongorestore's ignoredOps
_SKIPPED_COMMANDS = frozenset({"startIndexBuild", "abortIndexBuild", "setMultikeyMetadata", "dropIdent", "dbCheck"})
_LIMIT = re.compile(r"^(\d+)(?::(\d+))?$")


class OplogError(ValueError):
    """The oplog cannot be dumped or replayed (overflow, a rename, an entry no applier knows)."""


# -- dump ---------------------------------------------------------------------------------------------


def _oplog(client: Any) -> Any:
    return client.local.get_collection("oplog.rs", codec_options=_RAW)


def _edge(client: Any, order: list[tuple[str, int]]) -> Timestamp | None:
    entry = _oplog(client).find_one({}, projection={"ts": 1}, sort=order)
    return None if entry is None else entry["ts"]


def window_start(client: Any) -> Timestamp:
    """The newest entry's time, before anything is dumped (mongodump's getCurrentOplogTime)."""
    start = _edge(client, _NEWEST)
    if start is None:
        raise OplogError("--oplog needs the oplog's newest entry to start from, and the oplog is empty")
    return start


def window(client: Any, start: Timestamp) -> Iterator[bytes]:
    """The entries from ``start`` to the newest, as mongod writes them (raw BSON), once the
    collections are dumped; OplogError when some were trimmed meanwhile or one cannot be dumped."""
    end = _edge(client, _NEWEST)
    assert end is not None  # the start's entry, at least, was there
    _check_overflow(client, start)
    for entry in _oplog(client).find({"ts": {"$gte": start, "$lte": end}}, sort=_OLDEST):
        yield _as_mongod(entry)
    _check_overflow(client, start)  # again: trimmed while being read


def _check_overflow(client: Any, start: Timestamp) -> None:
    oldest = _edge(client, _OLDEST)
    if oldest is None or oldest > start:
        raise OplogError("oplog overflow: the dump could not capture all new oplog entries during its run")


def _as_mongod(entry: RawBSONDocument) -> bytes:
    """An entry's bytes as mongod would write them (see the module's docstring)."""
    if entry.get("op") != "c":
        return bytes(entry.raw)
    decoded: SON[str, Any] = bson.decode(entry.raw, _DECODE)
    o = decoded["o"]
    if entry.get("ns") == "admin.system.version":
        raise OplogError("cannot dump with oplog if admin.system.version is modified")
    if "renameCollection" in o:
        raise OplogError("cannot dump with oplog while renames occur")
    if "applyOps" in o:
        o["applyOps"] = [bson.decode(_as_mongod(_raw(op)), _DECODE) for op in o["applyOps"]]
    elif "createIndexes" in o and isinstance(o.get("indexes"), list):
        build = Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)
        decoded["o"] = SON(
            [("commitIndexBuild", o["createIndexes"]), ("indexBuildUUID", build), ("indexes", o["indexes"])]
        )
    return bson.encode(decoded)


def _raw(document: Mapping[str, Any]) -> RawBSONDocument:
    return RawBSONDocument(bson.encode(document))


# -- replay -------------------------------------------------------------------------------------------


def parse_limit(text: str) -> Timestamp:
    """``--oplogLimit <seconds>[:ordinal]``."""
    match = _LIMIT.match(text)
    if match is None:
        raise ValueError(f"error parsing timestamp argument to --oplogLimit: {text!r} is not <seconds>[:ordinal]")
    return Timestamp(int(match.group(1)), int(match.group(2) or 0))


class Replayer:
    """Applies oplog entries in order to a pymongo-compatible client; :meth:`close` flushes."""

    def __init__(self, client: Any, limit: Timestamp | None = None) -> None:
        self.client = client
        self.limit = limit
        self.applied = 0
        self.ended = False  # the limit was reached: the rest is not applied
        self._namespace = ""
        self._writes: list[Any] = []

    def entries(self, data: bytes) -> None:
        """Entries, their BSON concatenated."""
        for entry in bson.decode_all(data, _DECODE):
            self.entry(entry)

    def entry(self, entry: Mapping[str, Any]) -> None:
        if self.ended:
            return
        if self.limit is not None and entry.get("ts") is not None and entry["ts"] >= self.limit:
            self.ended = True
            return
        self._apply(entry)

    def _apply(self, entry: Mapping[str, Any]) -> None:
        op, ns = entry.get("op"), str(entry.get("ns", ""))
        if op in _SKIPPED_OPS or ns.startswith(("config.", "__mdb_internal")):
            return
        if op == "c":
            self.flush()
            self._command(ns.partition(".")[0], entry.get("o") or {})
            return
        if op not in ("i", "u", "d"):
            raise OplogError(f"unknown oplog operation {op!r} in {dict(entry)}")
        if ns != self._namespace:
            self.flush()
            self._namespace = ns
        self._writes.append(_write(op, entry))
        self.applied += 1

    def flush(self) -> None:
        writes, self._writes = self._writes, []
        if not writes:
            return
        db, _, name = self._namespace.partition(".")
        try:
            self.client[db][name].bulk_write(writes, ordered=True, bypass_document_validation=True)
        except BulkWriteError as exc:
            error = (exc.details.get("writeErrors") or [{}])[0]
            raise OplogError(f"error applying oplog to {self._namespace}: {error.get('errmsg', exc)}") from None

    def _command(self, db: str, o: Mapping[str, Any]) -> None:
        name = next(iter(o), "")
        if name in _SKIPPED_COMMANDS:
            return
        if name == "applyOps":  # a transaction: its operations, in order
            for op in o["applyOps"]:
                self._apply(op)
            self.flush()
            return
        run = COMMANDS.get(name)
        if run is None:
            raise OplogError(f"unknown oplog command name {name}: {dict(o)}")
        self.applied += 1
        try:
            run(self.client, db, o)
        except OperationFailure as exc:
            if exc.code not in (_NAMESPACE_NOT_FOUND, _INDEX_NOT_FOUND, _NAMESPACE_EXISTS, *_INDEX_DONE):
                raise OplogError(f"error applying oplog command {name} on {db}: {exc.details or exc}") from None


def _write(op: str, entry: Mapping[str, Any]) -> Any:
    o = entry["o"]
    if op == "i":
        return ReplaceOne({"_id": o["_id"]}, o, upsert=True)  # applyOps' alwaysUpsert
    if op == "d":
        return DeleteOne(o)
    key = entry["o2"]
    if o.get("$v") == 2:
        return UpdateOne(key, [{"$replaceWith": _diff(o["diff"], "$$ROOT")}])
    if any(field.startswith("$") for field in o):  # an update's operators (oplog format 1)
        return UpdateOne(key, {k: v for k, v in o.items() if k != "$v"})
    return ReplaceOne(key, o, upsert=True)


def _diff(diff: Mapping[str, Any], base: Any) -> Any:
    """An expression giving the document ``base`` after mongod's ``$v: 2`` diff
    (``doc_diff.h``: ``d`` fields deleted, ``u`` updated, ``i`` inserted, ``s<field>`` a
    sub-diff of a document or, with ``a: true``, of an array)."""
    if diff.get("a") is True:
        return _array_diff(diff, base)
    removed = list(diff.get("d") or {})
    document: Any = {"$unsetField": {"field": removed[0], "input": base}} if removed else base
    for field in removed[1:]:
        document = {"$unsetField": {"field": field, "input": document}}
    changes: dict[str, Any] = {}
    for section in ("u", "i"):
        for field, value in (diff.get(section) or {}).items():
            changes[field] = {"$literal": value}
    for key, sub in diff.items():
        if key.startswith("s") and isinstance(sub, Mapping):
            field = key[1:]
            changes[field] = _diff(sub, {"$getField": {"field": field, "input": base}})
    for field, value in changes.items():
        document = {"$setField": {"field": field, "input": document, "value": value}}
    return document


def _array_diff(diff: Mapping[str, Any], base: Any) -> Any:
    """An array sub-diff: ``l`` the new length (truncation), ``u<i>`` a new element ``i``,
    ``s<i>`` a sub-diff of element ``i``."""
    array: Any = base
    if "l" in diff:
        array = {"$slice": [array, int(diff["l"])]}
    elements: dict[int, Any] = {}
    for key, value in diff.items():
        if key[:1] in ("u", "s") and key[1:].isdigit():
            index = int(key[1:])
            element = {"$arrayElemAt": [base, index]}
            elements[index] = {"$literal": value} if key[0] == "u" else _diff(value, element)
    if not elements:
        return array
    top = max(elements)
    # Each position: the new element, else the old one; positions past the end are appended.
    return {
        "$let": {
            "vars": {"old": array},
            "in": {
                "$map": {
                    "input": {"$range": [0, {"$max": [{"$size": "$$old"}, top + 1]}]},
                    "as": "i",
                    "in": {
                        "$switch": {
                            "branches": [
                                {"case": {"$eq": ["$$i", index]}, "then": value} for index, value in elements.items()
                            ],
                            "default": {"$arrayElemAt": ["$$old", "$$i"]},
                        }
                    },
                }
            },
        }
    }


# -- commands: one function each, as mongorestore applies them ----------------------------------------------


def oplog_create(client: Any, db: str, o: Mapping[str, Any]) -> None:
    client[db].command(SON((k, v) for k, v in o.items() if k != "idIndex"))


def oplog_drop(client: Any, db: str, o: Mapping[str, Any]) -> None:
    client[db].drop_collection(o["drop"])


def oplog_dropDatabase(client: Any, db: str, o: Mapping[str, Any]) -> None:
    client.drop_database(db)


def oplog_renameCollection(client: Any, db: str, o: Mapping[str, Any]) -> None:
    client.admin.command(
        SON([("renameCollection", o["renameCollection"]), ("to", o["to"]), ("dropTarget", bool(o.get("dropTarget")))])
    )


def oplog_createIndexes(client: Any, db: str, o: Mapping[str, Any]) -> None:
    """mongod's one index per entry (``{createIndexes: c, key, name, ...}``), or a list of them
    (``indexes``: FolioDB's entry, and ``commitIndexBuild``'s)."""
    name = next(iter(o.values()))
    specs = o["indexes"] if "indexes" in o else [{k: v for k, v in o.items() if k != "createIndexes"}]
    models = [index_model(spec) for spec in specs if spec.get("name") != "_id_"]
    if models:
        client[db][name].create_indexes(models)


def oplog_dropIndexes(client: Any, db: str, o: Mapping[str, Any]) -> None:
    name = next(iter(o.values()))
    index = o.get("index")
    client[db][name].drop_index(index if isinstance(index, str) else "*")


def oplog_collMod(client: Any, db: str, o: Mapping[str, Any]) -> None:
    client[db].command(SON((k, v) for k, v in o.items() if k not in ("noPadding", "usePowerOf2Sizes")))


COMMANDS = {
    "create": oplog_create,
    "drop": oplog_drop,
    "dropDatabase": oplog_dropDatabase,
    "renameCollection": oplog_renameCollection,
    "createIndexes": oplog_createIndexes,
    "commitIndexBuild": oplog_createIndexes,
    "dropIndexes": oplog_dropIndexes,
    "deleteIndexes": oplog_dropIndexes,
    "dropIndex": oplog_dropIndexes,
    "deleteIndex": oplog_dropIndexes,
    "collMod": oplog_collMod,
}
