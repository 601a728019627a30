"""Write commands: insert, update, delete, findAndModify.

Each command runs as one storage transaction; inside it each document write
is its own unit, so an ordered batch keeps the writes before its first error
and an unordered one keeps every write that succeeded, as MongoDB reports them
in ``writeErrors``. The reply is acknowledged only after the commit (and an
fsync of the WAL for ``j: true``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import bson
from bson import ObjectId

from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.engine.catalog import CODEC
from foliodb.engine.planner import plan_access
from foliodb.engine.planner.plans import IdLookup
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import bsontypes
from foliodb.query import compare as cmp
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.projection import compile_projection
from foliodb.query.sort import compile_sort
from foliodb.query.update import CompiledUpdate, compile_update, seed_from_filter


def collection_name(cmd: Mapping[str, Any], command: str) -> str:
    name = cmd[command]
    if not isinstance(name, str):
        raise CommandError(
            ErrorCode.InvalidNamespace,
            f"collection name has invalid type {bsontypes.type_name(name)}",
        )
    return name


def prepare_insert(doc: Any) -> dict[str, Any]:
    """The document as stored: ``_id`` first (generated when missing) and valid."""
    if not isinstance(doc, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'insert.documents' is the wrong type, expected object")
    if "_id" not in doc:
        out = {"_id": ObjectId()}
        out.update(doc)
        return out
    check_id(doc["_id"])
    if next(iter(doc)) != "_id":
        out = {"_id": doc["_id"]}
        out.update((k, v) for k, v in doc.items() if k != "_id")
        return out
    return doc if type(doc) is dict else dict(doc)


def check_id(value: Any) -> None:
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


def _finish(request: Request, cmd: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    concern = cmd.get("writeConcern")
    if isinstance(concern, Mapping):
        if concern.get("j") or concern.get("fsync"):
            request.engine.storage.sync()
        if concern.get("w") == 0:
            return {"ok": 1.0}
    return reply


def _ordered(cmd: Mapping[str, Any], command: str) -> bool:
    return bool(params.field(cmd, "ordered", "bool", command, default=True))


# -- insert ----------------------------------------------------------------------


@COMMANDS.register("insert")
def cmd_insert(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "insert")
    docs = params.field(cmd, "documents", "array", "insert")
    if docs is None:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'insert.documents' is missing but a required field")
    ordered = _ordered(cmd, "insert")
    engine = request.engine
    n = 0
    errors: list[dict[str, Any]] = []
    with engine.storage.write():
        store = engine.ensure_collection(request.db, name)
        insert = store.insert
        for i, doc in enumerate(docs):
            try:
                insert(prepare_insert(doc))
                n += 1
            except CommandError as exc:
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
    reply: dict[str, Any] = {"n": n, "ok": 1.0}
    if errors:
        reply["writeErrors"] = errors
    return _finish(request, cmd, reply)


# -- matching documents for update/delete/findAndModify ---------------------------


def matching(
    store: CollectionStore | None,
    filter_spec: Mapping[str, Any] | None,
    ctx: Context,
    *,
    hint: Any = None,
    sort: Mapping[str, Any] | None = None,
    one: bool = False,
) -> Iterator[tuple[int, bytes, dict[str, Any], MatchDetails]]:
    """(rid, BSON, document, match details) of the documents a write
    targets, each at most once; with ``one``, only the first (by ``sort``)."""
    matcher = compile_filter(filter_spec, ctx)
    sort_key = compile_sort(sort) if sort else None
    if store is None:
        return
    access = plan_access(store, filter_spec, matcher, hint)
    exact = isinstance(access, IdLookup)
    if sort_key is not None and one:
        best: tuple[bytes, int, bytes, dict[str, Any], MatchDetails] | None = None
        for rid, data in access.rows():
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
    for rid, data in access.rows():
        if rid in seen:
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


def check_update_result(new: dict[str, Any]) -> None:
    if "_id" in new:
        check_id(new["_id"])


def apply_update(
    store: CollectionStore, update: CompiledUpdate, rid: int, data: bytes, doc: dict[str, Any], details: MatchDetails
) -> tuple[bool, dict[str, Any]]:
    """Apply an update to one matched document; (was it modified, new doc)."""
    new = update.apply(doc, details.array_index)
    check_update_result(new)
    new_data = store.encode(new, after_update=True)
    if new_data == data:
        return False, doc
    store.update(rid, doc, new, new_data)
    return True, new


def upsert(store: CollectionStore, update: CompiledUpdate, filter_spec: Mapping[str, Any] | None) -> dict[str, Any]:
    seed = seed_from_filter(filter_spec or {})
    new = update.apply(seed, None, inserting=True)
    doc = prepare_insert(new)
    store.insert(doc)
    return doc


def apply_replacement(
    store: CollectionStore, filter_spec: Mapping[str, Any], replacement: dict[str, Any], ctx: Context
) -> bool:
    """Replace the first document matching ``filter_spec`` (keeping its ``_id``)."""
    for rid, _data, doc, _details in matching(store, filter_spec, ctx, one=True):
        new = dict(replacement)
        new["_id"] = doc["_id"]
        store.update(rid, doc, prepare_insert(new))
        return True
    return False


# -- update -------------------------------------------------------------------------


@COMMANDS.register("update")
def cmd_update(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "update")
    statements = params.field(cmd, "updates", "array", "update")
    if statements is None:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'update.updates' is missing but a required field")
    ordered = _ordered(cmd, "update")
    let = params.field(cmd, "let", "object", "update")
    engine = request.engine
    n = modified = 0
    upserted: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    with engine.storage.write():
        for i, statement in enumerate(statements):
            try:
                n_i, modified_i, upserted_id = _update_one_statement(request, name, statement, let)
            except CommandError as exc:
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
                continue
            n += n_i
            modified += modified_i
            if upserted_id is not _NOTHING:
                upserted.append({"index": i, "_id": upserted_id})
    reply: dict[str, Any] = {"n": n, "nModified": modified}
    if upserted:
        reply["upserted"] = upserted
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return _finish(request, cmd, reply)


_NOTHING = object()


def _update_one_statement(
    request: Request, name: str, statement: Any, let: Mapping[str, Any] | None
) -> tuple[int, int, Any]:
    if not isinstance(statement, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'update.updates' is the wrong type, expected object")
    for required in ("q", "u"):
        if required not in statement:
            raise CommandError(
                ErrorCode.FailedToParse, f"BSON field 'update.updates.{required}' is missing but a required field"
            )
    filter_spec = params.field(statement, "q", "object", "update.updates")
    spec = params.field(statement, "u", "objectOrArray", "update.updates")
    multi = bool(params.field(statement, "multi", "bool", "update.updates", default=False))
    do_upsert = bool(params.field(statement, "upsert", "bool", "update.updates", default=False))
    array_filters = params.field(statement, "arrayFilters", "array", "update.updates")
    sort = params.field(statement, "sort", "object", "update.updates")
    hint = statement.get("hint")
    ctx = request.context(let)
    if "c" in statement:
        ctx.variables.update(statement["c"])
    update = compile_update(spec, ctx, array_filters)
    if multi and update.is_replacement:
        raise CommandError(ErrorCode.FailedToParse, "multi update is not supported for replacement-style update")
    if multi and sort:
        raise CommandError(ErrorCode.FailedToParse, "The sort option is only supported for updateOne")
    engine = request.engine
    store = engine.store(request.db, name)
    n = modified = 0
    if store is not None:
        for rid, data, doc, details in matching(store, filter_spec, ctx, hint=hint, sort=sort, one=not multi):
            n += 1
            changed, _ = apply_update(store, update, rid, data, doc, details)
            modified += changed
    if n == 0 and do_upsert:
        store = engine.ensure_collection(request.db, name)
        doc = upsert(store, update, filter_spec)
        return 1, 0, doc["_id"]
    return n, modified, _NOTHING


# -- delete -------------------------------------------------------------------------


@COMMANDS.register("delete")
def cmd_delete(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "delete")
    statements = params.field(cmd, "deletes", "array", "delete")
    if statements is None:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'delete.deletes' is missing but a required field")
    ordered = _ordered(cmd, "delete")
    let = params.field(cmd, "let", "object", "delete")
    engine = request.engine
    store = engine.store(request.db, name)
    n = 0
    errors: list[dict[str, Any]] = []
    with engine.storage.write():
        for i, statement in enumerate(statements):
            try:
                n += _delete_statement(request, store, statement, let)
            except CommandError as exc:
                errors.append(exc.to_write_error(i))
                if ordered:
                    break
    reply: dict[str, Any] = {"n": n, "ok": 1.0}
    if errors:
        reply["writeErrors"] = errors
    return _finish(request, cmd, reply)


def _delete_statement(
    request: Request, store: CollectionStore | None, statement: Any, let: Mapping[str, Any] | None
) -> int:
    if not isinstance(statement, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'delete.deletes' is the wrong type, expected object")
    for required in ("q", "limit"):
        if required not in statement:
            raise CommandError(
                ErrorCode.FailedToParse, f"BSON field 'delete.deletes.{required}' is missing but a required field"
            )
    filter_spec = params.field(statement, "q", "object", "delete.deletes")
    limit = params.field(statement, "limit", "integer", "delete.deletes")
    if limit not in (0, 1):
        raise CommandError(ErrorCode.FailedToParse, f"The limit field in delete objects must be 0 or 1. Got {limit}")
    ctx = request.context(let)
    n = 0
    for rid, _data, doc, _details in matching(store, filter_spec, ctx, hint=statement.get("hint"), one=limit == 1):
        assert store is not None
        store.delete(rid, doc)
        n += 1
    return n


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
    let = params.field(cmd, "let", "object", command)
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
    ctx = request.context(let)
    projection = compile_projection(fields, ctx, find=True) if fields else None
    update = compile_update(spec, ctx, array_filters) if spec is not None else None
    engine = request.engine
    last_error: dict[str, Any] = {"n": 0}
    value: dict[str, Any] | None = None
    with engine.storage.write():
        store = engine.store(request.db, name)
        found = next(matching(store, filter_spec, ctx, hint=cmd.get("hint"), sort=sort, one=True), None)
        if found is not None:
            assert store is not None
            rid, data, doc, details = found
            if remove:
                store.delete(rid, doc)
                last_error = {"n": 1}
                value = doc
            else:
                assert update is not None
                _, new = apply_update(store, update, rid, data, doc, details)
                last_error = {"n": 1, "updatedExisting": True}
                value = new if return_new else doc
        elif do_upsert:
            assert update is not None
            store = engine.ensure_collection(request.db, name)
            new = upsert(store, update, filter_spec)
            last_error = {"n": 1, "updatedExisting": False, "upserted": new["_id"]}
            value = new if return_new else None
        elif update is not None:
            last_error = {"n": 0, "updatedExisting": False}
    if value is not None and projection is not None:
        details = MatchDetails()
        if projection.uses_positional:
            compile_filter(filter_spec, ctx)(value, details)
        value = projection.apply(value, details)
    return _finish(request, cmd, {"lastErrorObject": last_error, "value": value, "ok": 1.0})
