"""applyOps: apply oplog entries, as a MongoDB 8 replica set's primary does.

Manual: https://www.mongodb.com/docs/manual/reference/command/applyOps/ (an internal command; the
manual names its privileges only). The behaviour is mongod 8's source: apply_ops_cmd.cpp
(validateApplyOpsCommand), oplog_application_checks.cpp (checkOperation), apply_ops.cpp (_applyOps) and
oplog.cpp (applyOperation_inlock, applyCommand_inlock):

- ``{applyOps: [op, ...], alwaysUpsert: bool (default true), bypassDocumentValidation}``. Each op is
  ``{op, ns, o, o2, b, ui}``: ``i`` inserts ``o`` (its ``_id`` required; an existing ``_id`` is
  replaced, as an upsert), ``u`` updates the document whose ``_id`` is ``o2._id`` with ``o`` (a
  replacement holding ``_id``, or a ``$v: 2`` diff), upserting when ``alwaysUpsert`` or ``b``; ``d``
  deletes the document with ``o._id`` (none there, or no collection: still applied); ``c`` runs the
  command ``o`` on the database of ``ns`` (create, drop, renameCollection, createIndexes, dropIndexes,
  collMod, convertToCapped, dropDatabase alone, applyOps nested up to 10 deep); ``n`` is skipped.
- Not atomic: ops apply one at a time, each committed. An op that fails with an error mongod returns
  (an update or insert that cannot apply, a ``ui`` naming another collection) counts as ``false`` in
  ``results`` and the others still apply, the command then failing with UnknownError (8); an op that
  throws (a missing collection, a bad command) stops the command there, which fails with its error. The
  reply carries ``applied`` (ops tried, the failed one included) and ``results``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from bson.binary import Binary

from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.engine.query import FindExecution, FindSpec
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.context import Context
from foliodb.query.oplog_diff import apply_diff, parse_update
from foliodb.query.render import render_document

MAX_DEPTH = 10  # nested applyOps (apply_ops_cmd.cpp's maxApplyOpsDepth)
_OP_TYPES = ("i", "u", "d", "c", "n")
# The commands an oplog 'c' entry may hold, to the command FolioDB runs for it.
_COMMANDS = (
    "create",
    "drop",
    "renameCollection",
    "createIndexes",
    "dropIndexes",
    "deleteIndexes",
    "collMod",
    "convertToCapped",
    "dropDatabase",
    "applyOps",
)
# Index-build entries a secondary applies; applyOps refuses them (oplog.cpp, kApplyOpsCmd mode).
_INDEX_BUILDS = ("startIndexBuild", "commitIndexBuild", "abortIndexBuild")


class _ReturnedError(CommandError):
    """An op failed with an error mongod returns rather than throws: the others still apply."""


@COMMANDS.register("applyOps")
def cmd_applyOps(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    ops = _validate(cmd, 0)
    always_upsert = _bool_option(cmd, "alwaysUpsert", True)
    bypass = _bool_option(cmd, "bypassDocumentValidation", False)
    if cmd.get("prepare") is not None:
        raise CommandError(ErrorCode.BadValue, "applyOps command can't have 'prepare' field")
    if cmd.get("partialTxn") is not None:
        raise CommandError(31056, "applyOps command can't have 'partialTxn' field.")
    if cmd.get("count") is not None:
        raise CommandError(31240, "applyOps command can't have 'count' field.")
    if len(ops) > 1 and any(_command_name(op) == "dropDatabase" for op in ops):
        raise CommandError(6275900, "dropDatabase in an applyOps must be the only entry")
    results: list[bool] = []
    errors = 0
    for op in ops:
        kind = op["op"]
        if kind == "n":
            continue
        if kind != "c" and not _valid_ns(op["ns"]):
            raise CommandError(ErrorCode.InvalidNamespace, f"invalid ns: {op['ns']}")
        try:
            _apply(request, op, always_upsert, bypass)
            results.append(True)
        except _ReturnedError:
            results.append(False)
            errors += 1
        except CommandError as exc:
            results.append(False)
            exc.extra.update({"applied": len(results), "results": results})
            raise
    if errors:
        raise CommandError(
            ErrorCode.UnknownError,
            "applyOps had one or more errors applying ops",
            applied=len(results),
            results=results,
        )
    return {"applied": len(results), "results": results, "ok": 1.0}


def _validate(cmd: Mapping[str, Any], depth: int) -> list[Mapping[str, Any]]:
    """The ops, checked as apply_ops_cmd.cpp and oplog_application_checks.cpp check them."""
    ops = _typed(cmd, "applyOps", "array", list)
    for n, op in enumerate(ops):
        if not isinstance(op, Mapping):
            raise _wrong_type(str(n), op, "object")
        kind = _typed(op, "op", "string", str)
        name = _command_name(op) if kind == "c" else None
        if name == "dropDatabase" and depth > 0:
            raise CommandError(9585500, "dropDatabase is not allowed inside nested applyOps")
        if name == "applyOps":
            if depth >= MAX_DEPTH:
                raise CommandError(ErrorCode.FailedToParse, "Too many nested applyOps")
            _validate(op["o"], depth + 1)
    for n, op in enumerate(ops):
        _check_operation(op, str(n))
    return ops


def _check_operation(op: Mapping[str, Any], where: str) -> None:
    kind = op["op"]
    if not kind:
        raise CommandError(ErrorCode.IllegalOperation, f'"op" field value cannot be empty: {where}')
    if "ns" not in op:
        raise CommandError(ErrorCode.IllegalOperation, f'op does not contain required "ns" field: {where}')
    ns = op["ns"]
    if not is_string(ns):
        raise CommandError(ErrorCode.IllegalOperation, f'"ns" field is not a string: {where}')
    if "\x00" in ns:
        raise CommandError(ErrorCode.IllegalOperation, "namespaces cannot have embedded null characters")
    if kind != "n" and not ns:
        raise CommandError(
            ErrorCode.IllegalOperation, f"\"ns\" field value cannot be empty when op type is not 'n': {where}"
        )


def _typed(doc: Mapping[str, Any], name: str, wanted: str, kind: type) -> Any:
    value = doc.get(name)
    if not isinstance(value, kind):
        raise _wrong_type(name, value, wanted)
    return value


def _wrong_type(name: str, value: Any, wanted: str) -> CommandError:
    # bson_check.h's checkBSONType.
    found = "missing" if value is None else type_name(value)
    return CommandError(ErrorCode.TypeMismatch, f"wrong type for field ({name}) {found} != {wanted}")


def _bool_option(cmd: Mapping[str, Any], name: str, default: bool) -> bool:
    value = cmd.get(name, default)
    if not isinstance(value, bool):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field 'applyOps.{name}' is the wrong type '{type_name(value)}', expected type 'bool'",
        )
    return value


def _command_name(op: Mapping[str, Any]) -> str | None:
    o = op.get("o")
    if op.get("op") != "c" or not isinstance(o, Mapping):
        return None
    return next(iter(o), None)


def _valid_ns(ns: str) -> bool:
    db, dot, coll = ns.partition(".")
    return bool(dot and db and coll) and not any(c in db for c in ' /\\."$')


# -- one op ----------------------------------------------------------------------------------------


def _apply(request: Request, op: Mapping[str, Any], always_upsert: bool, bypass: bool) -> None:
    """Apply one op; raise _ReturnedError for the errors mongod returns, CommandError for those it throws."""
    kind = op["op"]
    if kind not in _OP_TYPES:
        raise CommandError(ErrorCode.BadValue, f"Enumeration value '{kind}' for field 'op' is not a valid value.")
    o = op.get("o")
    if not isinstance(o, Mapping):
        raise _wrong_type("o", o, "object")
    if kind == "c":
        _apply_command(request, op["ns"].partition(".")[0], o)
        return
    db, _, coll = op["ns"].partition(".")
    info = request.engine.catalog.get(db, coll)
    if "ui" in op and (info is None or _uuid(op["ui"]) != info.uuid):
        raise _ReturnedError(
            3318200, f"Namespace '{op['ns']}' and UUID '{_uuid(op['ui'])}' point to different collections"
        )
    if info is None:
        if kind == "d":
            return  # idempotent: nothing to delete
        raise CommandError(
            ErrorCode.NamespaceNotFound,
            f"cannot apply insert or update operation on a non-existent namespace {op['ns']}: {_shown(op)}",
        )
    if info.is_view:
        raise CommandError(ErrorCode.CommandNotSupportedOnView, f"applyOps not supported on view: {op['ns']}")
    sub = _Sub(request, db, coll, bypass)
    if kind == "i":
        if "_id" not in o:
            raise CommandError(ErrorCode.NoSuchKey, f"Failed to apply insert due to missing _id: {_shown(op)}")
        sub.insert(o)
    elif kind == "u":
        _apply_update(sub, op, always_upsert)
    else:
        if "_id" not in o:
            raise CommandError(ErrorCode.NoSuchKey, f"Failed to apply delete due to missing _id: {_shown(op)}")
        sub.run("delete", {"deletes": [{"q": {"_id": o["_id"]}, "limit": 1}]})


def _apply_update(sub: _Sub, op: Mapping[str, Any], always_upsert: bool) -> None:
    o2 = op.get("o2")
    if not isinstance(o2, Mapping) or "_id" not in o2:
        raise CommandError(ErrorCode.NoSuchKey, f"Failed to apply update due to missing _id: {_shown(op)}")
    upsert_flag = op.get("b", False)
    if not isinstance(upsert_flag, bool):
        raise _wrong_type("b", upsert_flag, "bool")
    upsert = always_upsert or upsert_flag
    key = {"_id": o2["_id"]}
    diff = parse_update(op["o"])
    if diff is None:
        reply = sub.run("update", {"updates": [{"q": key, "u": dict(op["o"]), "upsert": upsert}]})
        if not reply.get("n"):
            raise _ReturnedError(ErrorCode.UpdateOperationFailed, f"Update of non-mod failed: {_shown(op)}")
        return
    current = sub.find(key)
    if current is None and not upsert:
        raise _ReturnedError(ErrorCode.UpdateOperationFailed, f"Failed to apply update: {_shown(op)}")
    changed = apply_diff(current if current is not None else key, diff)
    sub.run("update", {"updates": [{"q": key, "u": changed, "upsert": True}]})


def _apply_command(request: Request, db: str, o: Mapping[str, Any]) -> None:
    name = next(iter(o), "")
    if name in _INDEX_BUILDS:
        raise CommandError(ErrorCode.CommandNotSupported, f"The {name} operation is not supported in applyOps mode")
    if name not in _COMMANDS:
        raise CommandError(ErrorCode.BadValue, f"Invalid key '{name}' found in field 'o' of a command oplog entry")
    cmd = dict(o)
    if name == "createIndexes" and "indexes" not in cmd:
        # The oplog's form: one index's spec beside the collection name.
        spec = {k: v for k, v in cmd.items() if k != "createIndexes"}
        cmd = {"createIndexes": o["createIndexes"], "indexes": [spec]}
    if name == "renameCollection":
        # The oplog may give dropTarget as the dropped collection's UUID.
        cmd["dropTarget"] = bool(cmd.get("dropTarget", False))
        db = "admin"
    _call(request, db, name, cmd)


class _Sub:
    """The CRUD commands one op runs on its collection."""

    def __init__(self, request: Request, db: str, coll: str, bypass: bool) -> None:
        self.request = request
        self.db = db
        self.coll = coll
        self.bypass = bypass

    def run(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        cmd = {name: self.coll, **body, "bypassDocumentValidation": self.bypass}
        reply = _call(self.request, self.db, name, cmd)
        errors = reply.get("writeErrors")
        if errors:
            raise CommandError(errors[0]["code"], errors[0]["errmsg"])
        return reply

    def find(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        store = self.request.engine.store(self.db, self.coll)
        return next(iter(FindExecution(store, FindSpec(filter=key, limit=1), Context())), None)

    def insert(self, doc: Mapping[str, Any]) -> None:
        """Insert, or replace the document of that ``_id`` (oplog.cpp: a DuplicateKey turns the
        insert into an upsert); another failure is one mongod returns."""
        cmd = {"insert": self.coll, "documents": [dict(doc)], "bypassDocumentValidation": self.bypass}
        errors = _call(self.request, self.db, "insert", cmd).get("writeErrors")
        if not errors:
            return
        error = errors[0]
        if error["code"] == ErrorCode.DuplicateKey and error.get("keyPattern") == {"_id": 1}:
            self.run("update", {"updates": [{"q": {"_id": doc["_id"]}, "u": dict(doc), "upsert": True}]})
            return
        raise _ReturnedError(error["code"], error["errmsg"])


def _call(request: Request, db: str, name: str, cmd: dict[str, Any]) -> dict[str, Any]:
    """Run a command as part of this one (its operation, its caller)."""
    reply = COMMANDS.get(name)(Request(request.executor, db, name, extra=request.extra), cmd)
    if not reply.get("ok", 1):
        raise CommandError(reply["code"], reply["errmsg"])
    return reply


def _uuid(value: Any) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, Binary) and value.subtype == 4 and len(value) == 16:
        return uuid.UUID(bytes=bytes(value))
    return None


def _shown(op: Mapping[str, Any]) -> str:
    return render_document(dict(op))
