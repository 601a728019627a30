"""The unified test format's entity operations, as calls on pymongo's API,
and their results converted to the documents the tests expect.

Spec: https://github.com/mongodb/specifications/blob/master/source/unified-test-format/unified-test-format.md#entity-test-operations

Arguments arrive in the tests' camelCase; pymongo takes snake_case keywords
except where it passes options straight into the command (``maxTimeMS`` of
``count_documents``, ``batchSize`` of ``aggregate``...). Results become the
CRUD spec's documents: an unacknowledged result is ``{"acknowledged":
False}``, an iterable result a list.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from pymongo import operations
from pymongo.client_session import TransactionOptions
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import make_read_preference, read_pref_mode_from_name
from pymongo.results import BulkWriteResult, ClientBulkWriteResult
from pymongo.write_concern import WriteConcern


class Skip(Exception):
    """The test cannot run against this target; ``str(exc)`` says why."""


# The entity kind of an operation's saved result (saveResultAsEntity), when it is not a BSON value.
RESULT_ENTITIES = {"createChangeStream": "changeStream"}

# Operations whose result is an iterable of root-level documents.
CURSOR_OPERATIONS = {"find", "aggregate", "listIndexes", "listCollections", "listDatabases"}


def read_preference(spec: Mapping[str, Any]) -> Any:
    return make_read_preference(
        read_pref_mode_from_name(spec["mode"]), spec.get("tagSets"), spec.get("maxStalenessSeconds", -1)
    )


def collection_options(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """pymongo's keywords for a collection's, database's or transaction's options."""
    out: dict[str, Any] = {}
    for key, value in (spec or {}).items():
        if key == "readConcern":
            out["read_concern"] = ReadConcern(**value)
        elif key == "writeConcern":
            out["write_concern"] = write_concern(value)
        elif key == "readPreference":
            out["read_preference"] = read_preference(value)
        elif key == "maxCommitTimeMS":
            out["max_commit_time_ms"] = value
        else:
            raise AssertionError(f"unknown collection, database or transaction option {key!r}")
    return out


def session_options(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``start_session`` keywords for a session entity's ``sessionOptions``."""
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "causalConsistency":
            out["causal_consistency"] = value
        elif key == "snapshot":
            out["snapshot"] = value
        elif key == "defaultTransactionOptions":
            out["default_transaction_options"] = TransactionOptions(**collection_options(value))
        else:
            raise AssertionError(f"unknown session option {key!r}")
    return out


def has_method(obj: Any, name: str) -> bool:
    # Not hasattr: pymongo-style clients answer any attribute with a Database.
    return callable(getattr(type(obj), name, None))


def write_concern(spec: Mapping[str, Any]) -> WriteConcern:
    names = {"journal": "j", "wtimeoutMS": "wtimeout"}
    return WriteConcern(**{names.get(k, k): v for k, v in spec.items()})


_SNAKE = {
    "arrayFilters": "array_filters",
    "bypassDocumentValidation": "bypass_document_validation",
    "batchSize": "batch_size",
    "allowDiskUse": "allow_disk_use",
    "noCursorTimeout": "no_cursor_timeout",
    "maxTimeMS": "max_time_ms",
    "returnKey": "return_key",
    "showRecordId": "show_record_id",
    "verboseResults": "verbose_results",
    "returnDocument": "return_document",
    "writeConcern": "write_concern",
    "fullDocument": "full_document",
    "fullDocumentBeforeChange": "full_document_before_change",
    "showExpandedEvents": "show_expanded_events",
    "resumeAfter": "resume_after",
    "startAfter": "start_after",
    "startAtOperationTime": "start_at_operation_time",
    "maxAwaitTimeMS": "max_await_time_ms",
}


def snake(args: Mapping[str, Any], *camel: str) -> dict[str, Any]:
    """pymongo's keyword names, except those in ``camel``, which pymongo
    passes through to the command as they are."""
    return {key if key in camel else _SNAKE.get(key, key): value for key, value in args.items()}


def _models(specs: list[Mapping[str, Any]]) -> list[Any]:
    out = []
    for spec in specs:
        ((kind, args),) = spec.items()
        cls = getattr(operations, kind[0].upper() + kind[1:])
        out.append(cls(**snake(args)))
    return out


def _return_document(value: str) -> bool:
    wanted = value.lower()
    if wanted not in ("before", "after"):
        raise AssertionError(f"returnDocument {value!r}")
    return wanted == "after"


def _acknowledged(result: Any) -> bool:
    return bool(getattr(result, "acknowledged", True))


def update_result(result: Any) -> Any:
    if not _acknowledged(result):
        return {"acknowledged": False}
    # did_upsert, not upserted_id: an upserted _id may be null.
    out = {
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": int(result.did_upsert),
    }
    if result.did_upsert:
        out["upsertedId"] = result.upserted_id
    return out


def bulk_result(result: BulkWriteResult) -> Any:
    if not _acknowledged(result):
        return {"acknowledged": False}
    return {
        "deletedCount": result.deleted_count,
        "insertedCount": result.inserted_count,
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": result.upserted_count,
        "upsertedIds": {str(i): v for i, v in result.upserted_ids.items()},
    }


def _client_update_result(result: Any) -> dict[str, Any]:
    out = {"matchedCount": result.matched_count, "modifiedCount": result.modified_count}
    if result.did_upsert:
        out["upsertedId"] = result.upserted_id
    return out


def client_bulk_result(result: ClientBulkWriteResult) -> Any:
    if not _acknowledged(result):
        return {"acknowledged": False}
    out: dict[str, Any] = {
        "insertedCount": result.inserted_count,
        "upsertedCount": result.upserted_count,
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "deletedCount": result.deleted_count,
    }
    if result.has_verbose_results:
        out["insertResults"] = {str(i): {"insertedId": r.inserted_id} for i, r in result.insert_results.items()}
        out["updateResults"] = {str(i): _client_update_result(r) for i, r in result.update_results.items()}
        out["deleteResults"] = {str(i): {"deletedCount": r.deleted_count} for i, r in result.delete_results.items()}
    return out


# Collection operations ----------------------------------------------------------------------


def op_aggregate(target: Any, args: dict[str, Any]) -> Any:
    pipeline = args.pop("pipeline")
    camel = ("batchSize", "allowDiskUse", "bypassDocumentValidation", "maxTimeMS")
    return list(target.aggregate(pipeline, **snake(args, *camel)))


def op_bulkWrite(coll: Any, args: dict[str, Any]) -> Any:
    return bulk_result(coll.bulk_write(_models(args.pop("requests")), **snake(args)))


def op_countDocuments(coll: Any, args: dict[str, Any]) -> Any:
    return coll.count_documents(args.pop("filter"), **snake(args, "maxTimeMS"))


def op_estimatedDocumentCount(coll: Any, args: dict[str, Any]) -> Any:
    return coll.estimated_document_count(**snake(args, "maxTimeMS"))


def op_count(coll: Any, args: dict[str, Any]) -> Any:
    # The deprecated count helper (gone from pymongo 4) is the count command.
    cmd: dict[str, Any] = {"count": coll.name}
    if "filter" in args:
        cmd["query"] = args.pop("filter")
    session = args.pop("session", None)
    cmd.update(args)
    return coll.database.command(cmd, session=session)["n"]


def op_distinct(coll: Any, args: dict[str, Any]) -> Any:
    return coll.distinct(args.pop("fieldName"), args.pop("filter", None), **snake(args))


def op_find(coll: Any, args: dict[str, Any]) -> Any:
    return list(coll.find(args.pop("filter", {}), **snake(args)))


def op_findOne(coll: Any, args: dict[str, Any]) -> Any:
    return coll.find_one(args.pop("filter", {}), **snake(args))


def op_findOneAndDelete(coll: Any, args: dict[str, Any]) -> Any:
    return coll.find_one_and_delete(args.pop("filter"), **snake(args))


def op_findOneAndReplace(coll: Any, args: dict[str, Any]) -> Any:
    if "returnDocument" in args:
        args["returnDocument"] = _return_document(args["returnDocument"])
    return coll.find_one_and_replace(
        args.pop("filter"), args.pop("replacement"), **snake(args, "bypassDocumentValidation")
    )


def op_findOneAndUpdate(coll: Any, args: dict[str, Any]) -> Any:
    if "returnDocument" in args:
        args["returnDocument"] = _return_document(args["returnDocument"])
    return coll.find_one_and_update(args.pop("filter"), args.pop("update"), **snake(args, "bypassDocumentValidation"))


def op_insertOne(coll: Any, args: dict[str, Any]) -> Any:
    result = coll.insert_one(args.pop("document"), **snake(args))
    return {"insertedId": result.inserted_id} if _acknowledged(result) else {"acknowledged": False}


def op_insertMany(coll: Any, args: dict[str, Any]) -> Any:
    result = coll.insert_many(args.pop("documents"), **snake(args))
    if not _acknowledged(result):
        return {"acknowledged": False}
    return {"insertedIds": {str(i): v for i, v in enumerate(result.inserted_ids)}}


def op_updateOne(coll: Any, args: dict[str, Any]) -> Any:
    return update_result(coll.update_one(args.pop("filter"), args.pop("update"), **snake(args)))


def op_updateMany(coll: Any, args: dict[str, Any]) -> Any:
    return update_result(coll.update_many(args.pop("filter"), args.pop("update"), **snake(args)))


def op_replaceOne(coll: Any, args: dict[str, Any]) -> Any:
    return update_result(coll.replace_one(args.pop("filter"), args.pop("replacement"), **snake(args)))


def _delete_result(result: Any) -> Any:
    return {"deletedCount": result.deleted_count} if _acknowledged(result) else {"acknowledged": False}


def op_deleteOne(coll: Any, args: dict[str, Any]) -> Any:
    return _delete_result(coll.delete_one(args.pop("filter"), **snake(args)))


def op_deleteMany(coll: Any, args: dict[str, Any]) -> Any:
    return _delete_result(coll.delete_many(args.pop("filter"), **snake(args)))


def op_createIndex(coll: Any, args: dict[str, Any]) -> Any:
    return coll.create_index(list(args.pop("keys").items()), **args)


def op_dropIndex(coll: Any, args: dict[str, Any]) -> Any:
    return coll.drop_index(args.pop("name"), **args)


def op_dropIndexes(coll: Any, args: dict[str, Any]) -> Any:
    return coll.drop_indexes(**snake(args))


def op_listIndexes(coll: Any, args: dict[str, Any]) -> Any:
    return list(coll.list_indexes(**args))


def op_drop(coll: Any, args: dict[str, Any]) -> Any:
    return coll.drop(**args)


def op_rename(coll: Any, args: dict[str, Any]) -> Any:
    return coll.rename(args.pop("to"), **args)


# Database operations -------------------------------------------------------------------------


def op_createCollection(db: Any, args: dict[str, Any]) -> Any:
    # The spec's createCollection is the create command alone (no listCollections first).
    db.create_collection(args.pop("collection"), check_exists=False, **args)


def op_dropCollection(db: Any, args: dict[str, Any]) -> Any:
    db.drop_collection(args.pop("collection"), **args)


def op_listCollections(db: Any, args: dict[str, Any]) -> Any:
    return list(db.list_collections(**args))


def op_listCollectionNames(db: Any, args: dict[str, Any]) -> Any:
    return db.list_collection_names(**args)


def op_modifyCollection(db: Any, args: dict[str, Any]) -> Any:
    return db.command({"collMod": args.pop("collection"), **args})


def op_runCommand(db: Any, args: dict[str, Any]) -> Any:
    args.pop("commandName", None)
    if "readPreference" in args:
        args["read_preference"] = read_preference(args.pop("readPreference"))
    return db.command(args.pop("command"), **snake(args))


# Client operations ---------------------------------------------------------------------------


def op_clientBulkWrite(client: Any, args: dict[str, Any]) -> Any:
    if not has_method(client, "bulk_write"):
        raise Skip("needs MongoClient.bulk_write, which this client lacks")
    if "writeConcern" in args:
        args["writeConcern"] = write_concern(args["writeConcern"])
    return client_bulk_result(client.bulk_write(_models(args.pop("models")), **snake(args)))


def op_listDatabases(client: Any, args: dict[str, Any]) -> Any:
    return list(client.list_databases(**args))


def op_listDatabaseNames(client: Any, args: dict[str, Any]) -> Any:
    return client.list_database_names(**args)


def op_dropDatabase(client: Any, args: dict[str, Any]) -> Any:
    name = args.pop("databaseName") if "databaseName" in args else args.pop("database")
    return client.drop_database(name, **args)


# Change streams (collection, database and client ``watch``) ----------------------------------

# How long iterateUntilDocumentOrError waits for an event before the test fails (not hangs).
ITERATE_DEADLINE_SECONDS = 10.0


def op_createChangeStream(target: Any, args: dict[str, Any]) -> Any:
    return target.watch(args.pop("pipeline", None), **snake(args))


def op_iterateUntilDocumentOrError(stream: Any, args: dict[str, Any]) -> Any:
    # try_next, not next: pymongo's next waits forever, and a missing event must fail the test instead.
    deadline = time.monotonic() + ITERATE_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        event = stream.try_next()
        if event is not None:
            return event
        if not stream.alive:
            raise AssertionError("iterateUntilDocumentOrError: the change stream ended without a document")
    raise AssertionError(f"iterateUntilDocumentOrError: no document within {ITERATE_DEADLINE_SECONDS} s")


def op_iterateOnce(stream: Any, args: dict[str, Any]) -> Any:
    stream.try_next()


def op_close(stream: Any, args: dict[str, Any]) -> Any:
    stream.close()


# Session operations ---------------------------------------------------------------------------


def op_startTransaction(session: Any, args: dict[str, Any]) -> Any:
    session.start_transaction(**collection_options(args))


def op_commitTransaction(session: Any, args: dict[str, Any]) -> Any:
    session.commit_transaction()


def op_abortTransaction(session: Any, args: dict[str, Any]) -> Any:
    session.abort_transaction()


def op_endSession(session: Any, args: dict[str, Any]) -> Any:
    session.end_session()


Operation = Callable[[Any, dict[str, Any]], Any]

_COLLECTION_OPERATIONS: dict[str, Operation] = {
    "aggregate": op_aggregate,
    "bulkWrite": op_bulkWrite,
    "count": op_count,
    "countDocuments": op_countDocuments,
    "createIndex": op_createIndex,
    "deleteMany": op_deleteMany,
    "deleteOne": op_deleteOne,
    "distinct": op_distinct,
    "drop": op_drop,
    "dropIndex": op_dropIndex,
    "dropIndexes": op_dropIndexes,
    "estimatedDocumentCount": op_estimatedDocumentCount,
    "find": op_find,
    "findOne": op_findOne,
    "findOneAndDelete": op_findOneAndDelete,
    "findOneAndReplace": op_findOneAndReplace,
    "findOneAndUpdate": op_findOneAndUpdate,
    "insertMany": op_insertMany,
    "insertOne": op_insertOne,
    "listIndexes": op_listIndexes,
    "rename": op_rename,
    "replaceOne": op_replaceOne,
    "updateMany": op_updateMany,
    "updateOne": op_updateOne,
}

OPERATIONS: dict[tuple[str, str], Operation] = {
    **{("collection", name): fn for name, fn in _COLLECTION_OPERATIONS.items()},
    ("database", "aggregate"): op_aggregate,
    ("database", "createCollection"): op_createCollection,
    ("database", "dropCollection"): op_dropCollection,
    ("database", "listCollectionNames"): op_listCollectionNames,
    ("database", "listCollections"): op_listCollections,
    ("database", "modifyCollection"): op_modifyCollection,
    ("database", "runCommand"): op_runCommand,
    ("collection", "createChangeStream"): op_createChangeStream,
    ("database", "createChangeStream"): op_createChangeStream,
    ("client", "createChangeStream"): op_createChangeStream,
    ("changeStream", "iterateUntilDocumentOrError"): op_iterateUntilDocumentOrError,
    ("changeStream", "iterateOnce"): op_iterateOnce,
    ("changeStream", "close"): op_close,
    ("client", "clientBulkWrite"): op_clientBulkWrite,
    ("client", "dropDatabase"): op_dropDatabase,
    ("client", "listDatabaseNames"): op_listDatabaseNames,
    ("client", "listDatabases"): op_listDatabases,
    ("session", "abortTransaction"): op_abortTransaction,
    ("session", "commitTransaction"): op_commitTransaction,
    ("session", "endSession"): op_endSession,
    ("session", "startTransaction"): op_startTransaction,
}
