"""Database and collection commands: create, drop, dropDatabase,
listCollections, listDatabases, renameCollection, collMod.

Manual: https://www.mongodb.com/docs/manual/reference/command/nav-administration/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson.binary import Binary, UuidRepresentation

from foliodb.auth.caller import authorized_collections, authorized_databases
from foliodb.commands import collation, oplog_rs, params, timeseries
from foliodb.commands.cursors import cursor_reply
from foliodb.commands.executor import Request
from foliodb.commands.indexes import modify_index
from foliodb.commands.registry import COMMANDS
from foliodb.commands.stats import database_size
from foliodb.commands.views import check_view_options
from foliodb.commands.write import SYSTEM_DATABASES, check_new_database, collection_name
from foliodb.engine.catalog import CollectionInfo
from foliodb.errors import CommandError, ErrorCode, location
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
    "autoIndexId",
}


@COMMANDS.register("create")
def cmd_create(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "create")
    collator = collation.given(cmd, "create")
    if "expireAfterSeconds" in cmd and "timeseries" not in cmd and "clusteredIndex" not in cmd:
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
    reply: dict[str, Any] = {"ok": 1.0}
    if "autoIndexId" in options:
        options["autoIndexId"] = bool(params.field(options, "autoIndexId", "bool", "create"))
        if not options["autoIndexId"] and request.db != "local":
            # mongod's DatabaseImpl::createCollection: every collection outside local is replicated.
            raise CommandError(
                50001,
                f"autoIndexId:false is not allowed for collection {request.db}.{name} because it can be replicated",
            )
        reply = {"note": "the autoIndexId option is deprecated and will be removed in a future release", **reply}
    if "timeseries" in options:
        options["timeseries"] = timeseries.check_options(options["timeseries"])
    if "clusteredIndex" in options:
        options["clusteredIndex"] = check_clustered(options)
    if "expireAfterSeconds" in options:
        options["expireAfterSeconds"] = check_expire_after(options["expireAfterSeconds"])
    with request.engine.storage.write():
        existing = request.engine.catalog.get(request.db, name)
        if existing is not None:
            if existing.options == options and request.engine.storage.transaction() is None:
                return reply  # MongoDB 7+: creating the same collection again is a no-op (not in a transaction)
            raise CommandError(ErrorCode.NamespaceExists, f"Collection {request.db}.{name} already exists.")
        check_new_database(request.engine, request.db)
        if "timeseries" in options:
            timeseries.create(request, name, options)
        else:
            request.engine.create_collection(request.db, name, options)
    return reply


def check_clustered(options: Mapping[str, Any]) -> dict[str, Any]:
    """create's ``clusteredIndex``, as listCollections shows it.

    Storage: a clustered collection keeps FolioDB's usual layout, records by
    record id plus the ``_id`` index (a SQLite WITHOUT ROWID B-tree keyed by
    the ``_id`` key string), which already orders the collection by ``_id``.
    A table clustered on ``_id`` itself would need every other index to point
    at ``_id`` keys instead of record ids, changing each index path, for the
    one saving of a lookup; so the ``_id`` index is the clustered index, hidden
    as a separate index and shown as ``clustered: true``."""
    spec = options["clusteredIndex"]
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch, "BSON field 'create.clusteredIndex' is the wrong type, expected type 'object'"
        )
    for key in spec:
        if key not in ("key", "unique", "name", "v"):
            raise location(40415, f"BSON field 'create.clusteredIndex.{key}' is an unknown field.")
    for key in ("key", "unique"):
        if key not in spec:
            raise location(40414, f"BSON field 'create.clusteredIndex.{key}' is missing but a required field")
    if spec["unique"] is not True:
        raise location(5979700, "The clusteredIndex option requires unique: true to be specified")
    key = spec["key"]
    if not isinstance(key, Mapping) or list(key) != ["_id"] or key["_id"] != 1 or isinstance(key["_id"], bool):
        raise CommandError(
            ErrorCode.InvalidIndexSpecificationOption, "The clusteredIndex option is only supported for key: {_id: 1}"
        )
    if options.get("capped"):
        raise CommandError(ErrorCode.InvalidOptions, "Cannot create a capped clustered collection")
    name = spec.get("name", "_id_")
    if not is_string(name):
        raise CommandError(
            ErrorCode.TypeMismatch, "BSON field 'create.clusteredIndex.name' is the wrong type, expected type 'string'"
        )
    return {"v": 2, "key": {"_id": 1}, "name": name, "unique": True}


def check_expire_after(value: Any) -> int:
    """create's ``expireAfterSeconds``: a non-negative whole number of seconds."""
    seconds = params.as_int(value, "create.expireAfterSeconds")
    if seconds < 0:
        raise CommandError(ErrorCode.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
    return seconds


@COMMANDS.register("drop")
def cmd_drop(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "drop")
    with request.engine.storage.write():
        info = request.engine.catalog.get(request.db, name)
        if info is None:
            # MongoDB 7+ answers ok for a missing collection.
            return {"ok": 1.0}
        n_indexes = len(info.indexes)
        if info.is_timeseries and request.engine.catalog.get(request.db, timeseries.buckets_name(name)) is not None:
            request.engine.drop_collection(request.db, timeseries.buckets_name(name))
        request.engine.drop_collection(request.db, name)
    return {"nIndexesWas": n_indexes, "ns": f"{request.db}.{name}", "ok": 1.0}


@COMMANDS.register("dropDatabase")
def cmd_dropDatabase(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    # mongod names the database in "dropped" only when there was one (a missing one: NamespaceNotFound, ok).
    existed = any(True for _ in request.engine.collections(request.db))
    request.engine.drop_database(request.db)
    return {"dropped": request.db, "ok": 1.0} if existed else {"ok": 1.0}


def collection_entry(info: CollectionInfo) -> dict[str, Any]:
    if info.is_timeseries:
        return timeseries.collection_entry(info)
    if info.is_view:
        return {"name": info.name, "type": "view", "options": dict(info.options), "info": {"readOnly": True}}
    return {
        "name": info.name,
        "type": "collection",
        "options": dict(info.options),
        "info": {"readOnly": False, "uuid": Binary.from_uuid(info.uuid, UuidRepresentation.STANDARD)},
        # A clustered collection has no separate _id index to describe.
        **({} if "clusteredIndex" in info.options else {"idIndex": dict(info.id_index.spec)}),
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
    info = request.engine.catalog.get(db, name)
    if (info is not None and info.is_timeseries) or name.startswith("system.buckets."):
        raise CommandError(ErrorCode.IllegalOperation, "Renaming a timeseries collection is not allowed")
    if to_name.startswith("system.buckets."):
        raise CommandError(ErrorCode.IllegalOperation, "Renaming to a bucket namespace is not allowed")
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
            if key in ("validator", "validationLevel", "validationAction"):
                options[key] = value
            elif key == PRE_AND_POST_IMAGES:
                enabled = pre_and_post_images(value, "collMod")
                images[key] = {"enabled": enabled}
                if enabled:
                    options[key] = images[key]
                else:
                    options.pop(key, None)
            elif key == "expireAfterSeconds" and ("timeseries" in options or "clusteredIndex" in options):
                # "off" turns expiry off, as mongod's collMod.
                if value == "off":
                    options.pop(key, None)
                else:
                    options[key] = check_expire_after(value)
            elif key == "expireAfterSeconds":
                raise CommandError(
                    ErrorCode.InvalidOptions,
                    "'expireAfterSeconds' is only supported on time-series or clustered collections",
                )
            elif key == "timeseries" and info.is_timeseries:
                options[key] = timeseries.coll_mod(options[key], value)
            elif key == "index":
                return modify_index(request, request.db, name, value)
            else:
                raise CommandError(ErrorCode.InvalidOptions, f"BSON field 'collMod.{key}' is an unknown field.")
        check_validation(options, "collMod")
        engine.draft().set_options(info, options)
        buckets = engine.catalog.get(request.db, timeseries.buckets_name(name)) if info.is_timeseries else None
        if buckets is not None:
            # The buckets collection keeps the same timeseries and expiry options.
            bucket_options = {**buckets.options, "timeseries": options["timeseries"]}
            bucket_options.pop("expireAfterSeconds", None)
            if "expireAfterSeconds" in options:
                bucket_options["expireAfterSeconds"] = options["expireAfterSeconds"]
            engine.draft().set_options(buckets, bucket_options)
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
