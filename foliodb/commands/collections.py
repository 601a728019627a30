"""Database and collection commands: create, drop, dropDatabase,
listCollections, listDatabases, renameCollection, collMod.

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-administration/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson.binary import Binary, UuidRepresentation

from foliodb.auth.caller import authorized_collections, authorized_databases
from foliodb.commands import collation, oplog_rs, params
from foliodb.commands.cursors import cursor_reply
from foliodb.commands.executor import Request
from foliodb.commands.indexes import modify_index
from foliodb.commands.registry import COMMANDS
from foliodb.commands.stats import database_size
from foliodb.commands.views import check_view_options
from foliodb.commands.write import SYSTEM_DATABASES, check_new_database, collection_name
from foliodb.engine.catalog import CollectionInfo
from foliodb.engine.engine import ID_INDEX_SPEC
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.filter import compile_filter
from foliodb.query.validation import compile_validator

PRE_AND_POST_IMAGES = "changeStreamPreAndPostImages"
# create's options that FolioDB keeps in the catalog and honours.
_CREATE_OPTIONS = {
    "capped",
    "size",
    "max",
    "validator",
    "validationLevel",
    "validationAction",
    "collation",
    "expireAfterSeconds",
    "clusteredIndex",
    "storageEngine",
    "indexOptionDefaults",
    "timeseries",
    "changeStreamPreAndPostImages",
}


@COMMANDS.register("create")
def cmd_create(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "create")
    collator = collation.given(cmd, "create")
    for unbuilt in ("timeseries", "clusteredIndex"):
        if unbuilt in cmd:
            raise CommandError(ErrorCode.NotImplemented, f"{unbuilt} collections are not implemented in FolioDB yet")
    if "expireAfterSeconds" in cmd:
        raise CommandError(
            ErrorCode.InvalidOptions, "'expireAfterSeconds' is only supported on time-series or clustered collections"
        )
    if "viewOn" in cmd:
        options = check_view_options(request, cmd)
        with request.engine.storage.write():
            existing = request.engine.catalog.get(request.db, name)
            if existing is not None and existing.options == options:
                return {"ok": 1.0}
            check_new_database(request.engine, request.db)
            request.engine.create_view(request.db, name, options)
        return {"ok": 1.0}
    options = {}
    for key, value in cmd.items():
        if key == "create" or key in params.GENERIC_FIELDS:
            continue
        if key == "pipeline":
            raise CommandError(ErrorCode.InvalidOptions, "'pipeline' requires 'viewOn' to also be specified")
        if key not in _CREATE_OPTIONS:
            raise CommandError(ErrorCode.InvalidOptions, f"BSON field 'create.{key}' is an unknown field.")
        if key == PRE_AND_POST_IMAGES:
            if pre_and_post_images(value, "create"):
                options[key] = {"enabled": True}
            continue
        options[key] = value
    # Stored spelled out (listCollections shows every field); simple is no collation.
    options.pop("collation", None)
    if collator is not None:
        options["collation"] = dict(collator.spec)
    if options.get("capped"):
        if "size" not in options:
            raise CommandError(ErrorCode.InvalidOptions, "the 'size' field is required when 'capped' is true")
        size = params.as_int(options["size"], "create.size")
        if size < 0:
            raise CommandError(ErrorCode.BadValue, "size has to be >= 0")
        # MongoDB's rounding: at least 4096 bytes, else a multiple of 256.
        options["size"] = 4096 if size <= 4096 else (size + 255) // 256 * 256
    check_validation(options, "create")
    with request.engine.storage.write():
        existing = request.engine.catalog.get(request.db, name)
        if existing is not None:
            if existing.options == options:
                return {"ok": 1.0}  # MongoDB 7+: creating the same collection again is a no-op
            raise CommandError(ErrorCode.NamespaceExists, f"Collection {request.db}.{name} already exists.")
        check_new_database(request.engine, request.db)
        request.engine.create_collection(request.db, name, options)
    return {"ok": 1.0}


@COMMANDS.register("drop")
def cmd_drop(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "drop")
    with request.engine.storage.write():
        info = request.engine.catalog.get(request.db, name)
        if info is None:
            # MongoDB 7+ answers ok for a missing collection.
            return {"ok": 1.0}
        n_indexes = len(info.indexes)
        request.engine.drop_collection(request.db, name)
    return {"nIndexesWas": n_indexes, "ns": f"{request.db}.{name}", "ok": 1.0}


@COMMANDS.register("dropDatabase")
def cmd_dropDatabase(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    request.engine.drop_database(request.db)
    return {"dropped": request.db, "ok": 1.0}


def collection_entry(info: CollectionInfo) -> dict[str, Any]:
    if info.is_view:
        return {"name": info.name, "type": "view", "options": dict(info.options), "info": {"readOnly": True}}
    return {
        "name": info.name,
        "type": "collection",
        "options": dict(info.options),
        "info": {"readOnly": False, "uuid": Binary.from_uuid(info.uuid, UuidRepresentation.STANDARD)},
        "idIndex": dict(ID_INDEX_SPEC),
    }


@COMMANDS.register("listCollections")
def cmd_listCollections(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    filter_spec = params.field(cmd, "filter", "object", "listCollections")
    name_only = bool(params.field(cmd, "nameOnly", "bool", "listCollections", default=False))
    matcher = compile_filter(filter_spec)
    visible = authorized_collections(request.db, cmd)
    entries = [collection_entry(info) for info in request.engine.collections(request.db)]
    if request.db == "local" and request.executor.replica_set is not None:
        entries.insert(0, oplog_rs.collection_entry(request.engine))
    out = []
    for entry in entries:
        if not matcher(entry) or not visible(entry["name"]):
            continue
        out.append({"name": entry["name"], "type": entry["type"]} if name_only else entry)
    cursor = cmd.get("cursor") or {}
    batch_size = cursor.get("batchSize") if isinstance(cursor, Mapping) else None
    return cursor_reply(request, f"{request.db}.$cmd.listCollections", iter(out), batch_size)


@COMMANDS.register("listDatabases")
def cmd_listDatabases(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    filter_spec = params.field(cmd, "filter", "object", "listDatabases")
    name_only = bool(params.field(cmd, "nameOnly", "bool", "listDatabases", default=False))
    matcher = compile_filter(filter_spec)
    engine = request.engine
    visible = authorized_databases(cmd)
    databases = []
    total = 0
    for db in sorted({*engine.databases(), *SYSTEM_DATABASES}):
        if not visible(db):
            continue
        size = database_size(engine, db)
        entry: dict[str, Any] = {"name": db, "sizeOnDisk": size, "empty": not engine.collections(db)}
        if not matcher(entry):
            continue
        total += size
        databases.append({"name": db} if name_only else entry)
    if name_only:
        return {"databases": databases, "ok": 1.0}
    return {"databases": databases, "totalSize": total, "totalSizeMb": total // (1024 * 1024), "ok": 1.0}


@COMMANDS.register("renameCollection")
def cmd_renameCollection(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    if request.db != "admin":
        raise CommandError(ErrorCode.Unauthorized, "renameCollection may only be run against the admin database.")
    source = cmd["renameCollection"]
    target = params.field(cmd, "to", "string", "renameCollection")
    if not is_string(source) or "." not in source:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid source namespace: {source}")
    if target is None or "." not in target:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid target namespace: {target}")
    db, _, name = source.partition(".")
    to_db, _, to_name = target.partition(".")
    drop_target = bool(params.field(cmd, "dropTarget", "bool", "renameCollection", default=False))
    check_new_database(request.engine, to_db)
    request.engine.rename_collection(db, name, to_db, to_name, drop_target)
    return {"ok": 1.0}


@COMMANDS.register("collMod")
def cmd_collMod(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "collMod")
    engine = request.engine
    with engine.storage.write():
        info = engine.catalog.get(request.db, name)
        if info is None:
            raise CommandError(ErrorCode.NamespaceNotFound, f"ns does not exist: {request.db}.{name}")
        options = dict(info.options)
        images: dict[str, Any] = {}
        for key, value in cmd.items():
            if key == "collMod" or key in params.GENERIC_FIELDS:
                continue
            if key in ("validator", "validationLevel", "validationAction", "expireAfterSeconds"):
                options[key] = value
            elif key == PRE_AND_POST_IMAGES:
                enabled = pre_and_post_images(value, "collMod")
                images[key] = {"enabled": enabled}
                if enabled:
                    options[key] = images[key]
                else:
                    options.pop(key, None)
            elif key == "index":
                return modify_index(request, request.db, name, value)
            else:
                raise CommandError(ErrorCode.InvalidOptions, f"BSON field 'collMod.{key}' is an unknown field.")
        check_validation(options, "collMod")
        engine.draft().set_options(info, options)
        changed = {key: value for key, value in options.items() if info.options.get(key) != value}
        engine.record(
            request.db,
            info,
            {"collMod": name, **changed, **images},
            o2={"collectionOptions_old": engine.options_before(info)},
        )
    return {"ok": 1.0}


def pre_and_post_images(value: Any, command: str) -> bool:
    """Whether a ``changeStreamPreAndPostImages: {enabled: <bool>}`` option
    turns them on. Only an enabled one is kept in the collection's options,
    as mongod's catalog keeps it."""
    where = f"{command}.{PRE_AND_POST_IMAGES}"
    if not isinstance(value, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '{where}' is the wrong type '{type_name(value)}', expected type 'object'",
        )
    for key in value:
        if key != "enabled":
            raise CommandError(40415, f"BSON field '{where}.{key}' is an unknown field.")
    enabled = params.field(value, "enabled", "bool", where)
    if enabled is None:
        raise CommandError(40414, f"BSON field '{where}.enabled' is missing but a required field")
    return bool(enabled)


def check_validation(options: Mapping[str, Any], command: str) -> None:
    """Refuse a validator, validationLevel or validationAction that writes
    could not use, with MongoDB's errors naming ``<command>.<field>``."""
    if not any(key in options for key in ("validator", "validationLevel", "validationAction")):
        return
    compile_validator(
        options.get("validator", {}),
        level=options.get("validationLevel", "strict"),
        action=options.get("validationAction", "error"),
        command=command,
    )
