"""pymongo's Collection over FolioDB's commands.

Every method builds the command a pymongo driver would send and checks the
reply as pymongo does; argument validation uses pymongo's own validators, so
mistakes raise the same TypeError/ValueError messages.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pymongo.collection
from bson.codec_options import CodecOptions
from pymongo import common
from pymongo.collection import ReturnDocument
from pymongo.errors import ConfigurationError, InvalidName, OperationFailure
from pymongo.operations import IndexModel
from pymongo.read_concern import ReadConcern
from pymongo.results import DeleteResult, InsertManyResult, InsertOneResult, UpdateResult
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply
from foliodb.client.arguments import command_doc, index_spec, projection_doc, sort_spec, statement, validate_boolean
from foliodb.client.bulk import Bulk
from foliodb.client.codec import DocumentCodec, with_id
from foliodb.client.cursor import CommandCursor, Cursor, RawBatchCommandCursor, RawBatchCursor
from foliodb.client.handle import Handle
from foliodb.client.retry import Kind
from foliodb.commands import find
from foliodb.commands.delete import point_delete
from foliodb.commands.executor import PointHandler
from foliodb.commands.insert import point_insert
from foliodb.commands.update import point_update

if TYPE_CHECKING:
    from foliodb.client.database import Database

_C = TypeVar("_C", bound=CommandCursor)


class Collection(Handle, pymongo.collection.Collection[Any]):
    """pymongo's ``Collection`` (an instance of ``pymongo.collection.Collection``) over the embedded engine.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""

    def __init__(
        self,
        database: Database,
        name: str,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        if (
            not name
            or ".." in name
            or name.startswith(".")
            or name.endswith(".")
            # Internal namespaces ($cmd, $cmd.listCollections...) are fine, as in pymongo.
            or ("$" in name and not name.startswith(("oplog.$main", "$cmd")))
        ):
            raise InvalidName(
                f"collection names must not be empty, contain '$' or '..', or start or end with '.': {name!r}"
            )
        if "\x00" in name:
            raise InvalidName("collection names must not contain the null character")
        super().__init__(database, name, codec_options, read_preference, write_concern, read_concern)
        # Documents cross into the engine as plain dicts (see codec.py).
        self._codec = DocumentCodec(self._codec_options)
        # (cmd, session, **how): MongoClient._execute on this database, bound once; every operation's path.
        self._run_command: Callable[..., dict[str, Any]] = functools.partial(database.client._execute, database.name)
        # (cmd, handler, kind): the point path of a command with no session and default concerns
        # (MongoClient._point), when the client allows it (MongoClient._pointable).
        self._point: Callable[[dict[str, Any], PointHandler, Kind], dict[str, Any]] = functools.partial(
            database.client._point, database.name
        )
        self._pointable: Callable[[], bool] = database.client._pointable
        # The server's default concerns (fixed for this object's life), which the point paths need.
        self._default_write = self._write_concern.is_server_default
        self._default_read = self._read_concern.level is None

    @property
    def full_name(self) -> str:
        """``<database>.<collection>``.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return f"{self.database.name}.{self._name}"

    @property
    def database(self) -> Database:
        """The Database this collection belongs to.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return self._parent

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(
                f"Collection has no attribute {name!r}. To access the {self._name}.{name} collection, "
                f"use database['{self._name}.{name}']."
            )
        return self[name]

    def __getitem__(self, name: str) -> Collection:
        return Collection(
            self.database,
            f"{self._name}.{name}",
            self._codec_options,
            self._read_preference,
            self._write_concern,
            self._read_concern,
        )

    # -- plumbing -------------------------------------------------------------------

    def _concern(self, cmd: dict[str, Any], session: Any) -> WriteConcern:
        """:meth:`_write_concern_doc`, without its calls when there is nothing to add."""
        if session is None and self._default_write:
            return self._write_concern
        return self._write_concern_doc(cmd, session)

    # -- inserts ----------------------------------------------------------------------

    def insert_one(
        self, document: Any, bypass_document_validation: bool | None = None, session: Any = None, comment: Any = None
    ) -> InsertOneResult:
        """Insert a document (given an ObjectId ``_id`` when it has none); an InsertOneResult.

        https://www.mongodb.com/docs/manual/reference/command/insert/"""
        cmd = {"insert": self._name, "ordered": True, "documents": [self._codec.encode(with_id(document))]}
        if bypass_document_validation is not None or comment is not None:
            command_doc(cmd, bypassDocumentValidation=bypass_document_validation, comment=comment)
        concern = self._concern(cmd, session)
        if session is None and len(cmd) == 3 and self._pointable():  # nothing but the document
            reply = self._point(cmd, point_insert, "write")
        else:
            reply = self._run_command(cmd, session, retryable_write=True, write_concern=concern)
        _reply.check_single_write(reply)
        return InsertOneResult(document.get("_id"), concern.acknowledged)

    def insert_many(
        self,
        documents: Iterable[Any],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
    ) -> InsertManyResult:
        """Insert documents, ordered or not; an InsertManyResult, or BulkWriteError.

        https://www.mongodb.com/docs/manual/reference/command/insert/"""
        if not isinstance(documents, Iterable) or isinstance(documents, Mapping) or not documents:
            raise TypeError("documents must be a non-empty list")
        bulk = Bulk(self, ordered, bypass_document_validation, comment, session=session)
        ids = []
        for document in documents:
            bulk.add_insert(document)
            ids.append(document["_id"])
        if not ids:
            raise TypeError("documents must be a non-empty list")
        result = bulk.execute()
        return InsertManyResult(ids, result.acknowledged)

    # -- updates -------------------------------------------------------------------

    def _run_update(
        self,
        filter: Any,
        update: Any,
        multi: bool,
        upsert: bool,
        array_filters: Any,
        hint: Any,
        collation: Any,
        let: Any,
        sort: Any,
        comment: Any,
        bypass_document_validation: bool | None,
        session: Any,
    ) -> UpdateResult:
        if type(filter) is not dict:  # a dict passes (pymongo's check is an ABC check, slow per call)
            common.validate_is_mapping("filter", filter)
        if type(upsert) is not bool:
            validate_boolean("upsert", upsert)
        fields = {"q": self._codec.encode(filter), "u": self._codec.encode_update(update), "multi": multi}
        if array_filters is not None:
            common.validate_list("array_filters", array_filters)
        if collation is None and hint is None and sort is None and array_filters is None:
            fields["upsert"] = upsert  # statement()'s answer without the call: upsert is a bool
            update_statement = fields
        else:
            update_statement = statement(fields, upsert, collation, hint, sort, array_filters)
        cmd = {"update": self._name, "ordered": True, "updates": [update_statement]}
        if let is not None or comment is not None or bypass_document_validation is not None:
            command_doc(cmd, let=let, comment=comment, bypassDocumentValidation=bypass_document_validation)
        concern = self._concern(cmd, session)
        if session is None and len(cmd) == 3 and self._pointable():  # one statement, nothing else
            reply = _reply.check_single_write(self._point(cmd, point_update, "write"))
        else:
            # As pymongo: a multi-document update is not a retryable write.
            reply = _reply.check_single_write(
                self._run_command(cmd, session, retryable_write=not multi, write_concern=concern)
            )
        acknowledged = concern.acknowledged
        if len(reply) == 3 and "nModified" in reply and "n" in reply:  # {n, nModified, ok}: what follows, built at once
            n = reply["n"]
            raw = {"n": n, "nModified": reply["nModified"], "updatedExisting": bool(n), "ok": 1.0}
            return UpdateResult(raw if acknowledged else None, acknowledged)
        raw = dict(reply)
        raw.pop("ok", None)
        raw.setdefault("nModified", 0)
        if "upserted" in raw:
            raw["upserted"] = raw["upserted"][0]["_id"]
        raw["updatedExisting"] = bool(reply.get("n", 0)) and "upserted" not in reply
        raw["ok"] = 1.0
        return UpdateResult(raw if acknowledged else None, acknowledged)

    def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Replace the first matching document (or upsert); an UpdateResult.

        https://www.mongodb.com/docs/manual/reference/command/update/"""
        common.validate_ok_for_replace(replacement)
        return self._run_update(
            filter,
            replacement,
            False,
            upsert,
            None,
            hint,
            collation,
            let,
            sort,
            comment,
            bypass_document_validation,
            session,
        )

    def update_one(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Any = None,
        array_filters: Sequence[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Apply update operators or a pipeline to the first matching document; an UpdateResult.

        https://www.mongodb.com/docs/manual/reference/command/update/"""
        common.validate_ok_for_update(update)
        return self._run_update(
            filter,
            update,
            False,
            upsert,
            array_filters,
            hint,
            collation,
            let,
            sort,
            comment,
            bypass_document_validation,
            session,
        )

    def update_many(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        array_filters: Sequence[Mapping[str, Any]] | None = None,
        bypass_document_validation: bool | None = None,
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Apply update operators or a pipeline to every matching document; an UpdateResult.

        https://www.mongodb.com/docs/manual/reference/command/update/"""
        common.validate_ok_for_update(update)
        return self._run_update(
            filter,
            update,
            True,
            upsert,
            array_filters,
            hint,
            collation,
            let,
            None,
            comment,
            bypass_document_validation,
            session,
        )

    # -- deletes ------------------------------------------------------------------

    def _run_delete(
        self, filter: Any, limit: int, collation: Any, hint: Any, let: Any, comment: Any, session: Any
    ) -> DeleteResult:
        if type(filter) is not dict:  # as in _run_update
            common.validate_is_mapping("filter", filter)
        delete_statement = {"q": self._codec.encode(filter), "limit": limit}
        if collation is not None or hint is not None:
            statement(delete_statement, None, collation, hint)
        cmd = {"delete": self._name, "ordered": True, "deletes": [delete_statement]}
        if let is not None or comment is not None:
            command_doc(cmd, let=let, comment=comment)
        concern = self._concern(cmd, session)
        if session is None and len(cmd) == 3 and self._pointable():  # one statement, nothing else
            reply = _reply.check_single_write(self._point(cmd, point_delete, "write"))
        else:
            # As pymongo: delete_many (limit 0) is not a retryable write.
            reply = _reply.check_single_write(
                self._run_command(cmd, session, retryable_write=limit == 1, write_concern=concern)
            )
        acknowledged = concern.acknowledged
        return DeleteResult({"n": reply.get("n", 0), "ok": 1.0} if acknowledged else {}, acknowledged)

    def delete_one(
        self,
        filter: Mapping[str, Any],
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
    ) -> DeleteResult:
        """Delete the first matching document; a DeleteResult.

        https://www.mongodb.com/docs/manual/reference/command/delete/"""
        return self._run_delete(filter, 1, collation, hint, let, comment, session)

    def delete_many(
        self,
        filter: Mapping[str, Any],
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
    ) -> DeleteResult:
        """Delete every matching document; a DeleteResult.

        https://www.mongodb.com/docs/manual/reference/command/delete/"""
        return self._run_delete(filter, 0, collation, hint, let, comment, session)

    # -- bulk -------------------------------------------------------------------------

    def bulk_write(
        self,
        requests: Sequence[Any],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
    ) -> Any:
        """Run InsertOne/UpdateOne/.../DeleteMany requests in order or not; a BulkWriteResult.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        common.validate_list("requests", requests)
        bulk = Bulk(self, ordered, bypass_document_validation, comment, let, session)
        for request in requests:
            try:
                request._add_to_bulk(bulk)
            except AttributeError:
                raise TypeError(f"{request!r} is not a valid request") from None
        return bulk.execute()

    # -- reads -------------------------------------------------------------------------

    def find(self, *args: Any, **kwargs: Any) -> Cursor:
        """A lazy Cursor over the matching documents; nothing runs until it is iterated.

        https://www.mongodb.com/docs/manual/reference/command/find/"""
        return Cursor(self, *args, **kwargs)

    def find_raw_batches(self, *args: Any, **kwargs: Any) -> RawBatchCursor:
        """Like find, but each item is a batch of raw BSON bytes (``bson.decode_all``).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return RawBatchCursor(self, *args, **kwargs)

    def find_one(self, filter: Any = None, *args: Any, **kwargs: Any) -> Any:
        """The first matching document, or None; a non-mapping filter matches ``_id``.

        https://www.mongodb.com/docs/manual/reference/command/find/"""
        if filter is not None and type(filter) is not dict and not isinstance(filter, Mapping):
            filter = {"_id": filter}
        if not args and not kwargs:
            # The common case, without a Cursor: one find of one document.
            cmd = {
                "find": self._name,
                "filter": self._codec.encode(filter) if filter else {},
                "limit": 1,
                "singleBatch": True,
            }
            if self._default_read and self._pointable():
                reply = self._point(cmd, find.point_find, "read")
            else:
                reply = self._run_command(cmd, read_concern=self._read_concern, read_preference=None, kind="read")
            batch = _reply.check(reply)["cursor"]["firstBatch"]
            return self._codec.decode(batch)[0] if batch else None
        cursor = self.find(filter, *args, **kwargs)
        for doc in cursor.limit(-1):
            return doc
        return None

    def count_documents(
        self, filter: Mapping[str, Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> int:
        """The number of matching documents, counted with an aggregation as pymongo does.

        https://www.mongodb.com/docs/manual/reference/method/db.collection.countDocuments/"""
        common.validate_is_mapping("filter", filter)
        pipeline: list[dict[str, Any]] = [{"$match": self._codec.encode(filter)}]
        if "skip" in kwargs:
            pipeline.append({"$skip": kwargs.pop("skip")})
        if "limit" in kwargs:
            pipeline.append({"$limit": kwargs.pop("limit")})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        cmd: dict[str, Any] = {"aggregate": self._name, "pipeline": pipeline, "cursor": {}}
        if "hint" in kwargs:
            cmd["hint"] = index_spec(kwargs.pop("hint"))
        if "maxTimeMS" in kwargs:
            cmd["maxTimeMS"] = kwargs.pop("maxTimeMS")
        reply = self._run_command(
            command_doc(cmd, kwargs, comment=comment),
            session,
            read_concern=self._read_concern,
            read_preference=None,
            kind="read",
        )
        batch = _reply.check(reply)["cursor"]["firstBatch"]
        return int(batch[0]["n"]) if batch else 0

    def estimated_document_count(self, comment: Any = None, **kwargs: Any) -> int:
        """The collection's document count from its metadata (the ``count`` command).

        https://www.mongodb.com/docs/manual/reference/command/count/"""
        if "session" in kwargs:
            raise ConfigurationError("estimated_document_count does not support sessions")
        cmd = command_doc({"count": self._name}, kwargs, comment=comment)
        reply = self._run_command(cmd, read_concern=self._read_concern, read_preference=None, kind="read")
        return int(_reply.check(reply)["n"])

    def distinct(
        self,
        key: str,
        filter: Mapping[str, Any] | None = None,
        session: Any = None,
        comment: Any = None,
        hint: Any = None,
        **kwargs: Any,
    ) -> list[Any]:
        """The distinct values of a field among the matching documents.

        https://www.mongodb.com/docs/manual/reference/command/distinct/"""
        if not isinstance(key, str):
            raise TypeError(f"key must be an instance of str, not {type(key)}")
        cmd = command_doc(
            {"distinct": self._name, "key": key},
            kwargs,
            query=None if filter is None else self._codec.encode(dict(filter)),
            hint=index_spec(hint),
            comment=comment,
        )
        reply = self._run_command(cmd, session, read_concern=self._read_concern, read_preference=None, kind="read")
        values = _reply.check(reply)["values"]
        return self._codec.decode([{"v": values}])[0]["v"]

    def aggregate(
        self,
        pipeline: Sequence[Mapping[str, Any]],
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """Run an aggregation pipeline and return its CommandCursor.

        https://www.mongodb.com/docs/manual/reference/command/aggregate/"""
        return self._run_aggregate(CommandCursor, pipeline, let, comment, kwargs, session)

    # pymongo annotates a RawBatchCursor here, but returns a RawBatchCommandCursor as this does.
    def aggregate_raw_batches(  # type: ignore[override]
        self, pipeline: Sequence[Mapping[str, Any]], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> RawBatchCommandCursor:
        """Like aggregate, but each item is a batch of raw BSON bytes.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return self._run_aggregate(RawBatchCommandCursor, pipeline, kwargs.pop("let", None), comment, kwargs, session)

    def _run_aggregate(
        self,
        cursor_class: type[_C],
        pipeline: Sequence[Mapping[str, Any]],
        let: Mapping[str, Any] | None,
        comment: Any,
        kwargs: dict[str, Any],
        session: Any,
    ) -> _C:
        common.validate_list("pipeline", pipeline)
        batch_size = kwargs.pop("batchSize", None)
        writes = _writes(pipeline)
        cmd = command_doc(
            {
                "aggregate": self._name,
                "pipeline": [self._codec.encode(dict(s)) for s in pipeline],
                # pymongo sends no batch size with $out/$merge: the first batch is empty anyway.
                "cursor": {"batchSize": batch_size} if batch_size is not None and not writes else {},
            },
            {key: index_spec(value) if key == "hint" else value for key, value in kwargs.items()},
            let=let,
            comment=comment,
        )
        # pymongo's: a readConcern given as an option replaces the collection's (and afterClusterTime).
        read_concern = None if "readConcern" in cmd else self._read_concern
        concern = self._write_concern_doc(cmd, session) if writes else None
        client = self.database.client
        reply, held = client._open_cursor(
            self.database.name,
            cmd,
            session,
            read_concern=read_concern,
            read_preference=None,
            write_concern=concern,
            kind="runCommand" if writes else "read",  # pymongo's: $out and $merge are no retryable read
        )
        # comment: on each getMore too
        return cursor_class(self, reply, batch_size or 0, comment=comment, session=held)

    # -- find and modify ------------------------------------------------------------------

    def _run_find_and_modify(
        self,
        filter: Any,
        projection: Any,
        sort: Any,
        upsert: Any,
        return_document: bool,
        array_filters: Any,
        hint: Any,
        let: Any,
        comment: Any,
        session: Any,
        **kwargs: Any,
    ) -> Any:
        common.validate_is_mapping("filter", filter)
        if not isinstance(return_document, bool):
            raise ValueError("return_document must be ReturnDocument.BEFORE or ReturnDocument.AFTER")
        query = self._codec.encode(filter)
        fields = projection_doc(projection)
        order = None if sort is None else sort_spec(sort)
        if upsert is not None:
            validate_boolean("upsert", upsert)
        if array_filters is not None:
            common.validate_list("array_filters", array_filters)
        cmd = command_doc(
            {"findAndModify": self._name, "query": query, "new": return_document},
            kwargs,
            fields=fields,
            sort=order,
            upsert=upsert,
            arrayFilters=array_filters,
            hint=index_spec(hint),
            let=let,
            comment=comment,
        )
        concern = self._write_concern_doc(cmd, session)
        reply = _reply.check(self._run_command(cmd, session, retryable_write=True, write_concern=concern))
        value = reply.get("value")
        return self._codec.decode([value])[0] if value is not None else None

    def find_one_and_delete(
        self,
        filter: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Delete the first matching document (by ``sort``) and return it.

        https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""
        kwargs["remove"] = True
        return self._run_find_and_modify(
            filter, projection, sort, None, False, None, hint, let, comment, session, **kwargs
        )

    def find_one_and_replace(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Replace the first matching document; return it as it was before, or after.

        https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""
        common.validate_ok_for_replace(replacement)
        kwargs["update"] = self._codec.encode(replacement)
        return self._run_find_and_modify(
            filter, projection, sort, upsert, return_document, None, hint, let, comment, session, **kwargs
        )

    def find_one_and_update(
        self,
        filter: Mapping[str, Any],
        update: Any,
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        array_filters: Sequence[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Update the first matching document; return it as it was before, or after.

        https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""
        common.validate_ok_for_update(update)
        common.validate_list_or_none("array_filters", array_filters)
        kwargs["update"] = self._codec.encode_update(update)
        return self._run_find_and_modify(
            filter, projection, sort, upsert, return_document, array_filters, hint, let, comment, session, **kwargs
        )

    # -- indexes ---------------------------------------------------------------------------

    def create_index(self, keys: Any, session: Any = None, comment: Any = None, **kwargs: Any) -> str:
        """Create one index from a key (``"a"``, ``[("a", 1), ("b", -1)]``) and options; its name.

        https://www.mongodb.com/docs/manual/reference/command/createIndexes/"""
        model = IndexModel(keys, **kwargs)
        return self.create_indexes([model], session, comment=comment)[0]

    def create_indexes(
        self, indexes: Sequence[IndexModel], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """Create indexes from IndexModels; their names.

        https://www.mongodb.com/docs/manual/reference/command/createIndexes/"""
        common.validate_list("indexes", indexes)
        docs = []
        for model in indexes:
            if not isinstance(model, IndexModel):
                raise TypeError(f"{model!r} is not an instance of pymongo.operations.IndexModel")
            docs.append(dict(model.document))
        cmd = command_doc({"createIndexes": self._name, "indexes": docs}, kwargs, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        _reply.check(self._run_command(cmd, session, write_concern=concern))
        return [doc["name"] for doc in docs]

    def drop_index(self, index_or_name: Any, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop an index by name or key.

        https://www.mongodb.com/docs/manual/reference/command/dropIndexes/"""
        name = index_or_name
        if isinstance(index_or_name, list):
            name = IndexModel(index_or_name).document["name"]
        if not isinstance(name, str):
            raise TypeError("index_or_name must be an instance of str or list")
        cmd = command_doc({"dropIndexes": self._name, "index": name}, kwargs, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        _reply.check(self._run_command(cmd, session, write_concern=concern))

    def drop_indexes(self, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop every index but ``_id``'s.

        https://www.mongodb.com/docs/manual/reference/command/dropIndexes/"""
        cmd = command_doc({"dropIndexes": self._name, "index": "*"}, kwargs, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        reply = self._run_command(cmd, session, write_concern=concern)
        if reply.get("code") != 26:  # dropping the indexes of a missing collection is fine
            _reply.check(reply)

    def list_indexes(self, session: Any = None, comment: Any = None) -> CommandCursor:
        """A cursor over the index specifications (nothing for a missing collection).

        https://www.mongodb.com/docs/manual/reference/command/listIndexes/"""
        cmd = command_doc({"listIndexes": self._name, "cursor": {}}, comment=comment)
        try:
            reply, held = self.database.client._open_cursor(
                self.database.name, cmd, session, read_preference=None, kind="read"
            )
        except OperationFailure as exc:
            if exc.code != 26:  # pymongo yields nothing for a missing collection
                raise
            reply, held = {"cursor": {"id": 0, "firstBatch": [], "ns": self.full_name}, "ok": 1.0}, None
        return CommandCursor(self, reply, session=held)

    def index_information(self, session: Any = None, comment: Any = None) -> dict[str, Any]:
        """The indexes as a dict of name to spec, keys as lists of (field, direction).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        info = {}
        for index in self.list_indexes(session, comment=comment):
            index = dict(index)
            index["key"] = list(index["key"].items())
            info[index.pop("name")] = index
        return info

    # MongoDB Search indexes (foliodb.commands.search_indexes).

    def create_search_index(self, model: Any, session: Any = None, comment: Any = None, **kwargs: Any) -> str:
        """Create one search index (a ``SearchIndexModel`` or its document); its name.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return self.create_search_indexes([model], session=session, comment=comment, **kwargs)[0]

    def create_search_indexes(
        self, models: Sequence[Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """Create search indexes (``createSearchIndexes``); their names, in order.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        indexes = [getattr(model, "document", model) for model in models]
        cmd = command_doc({"createSearchIndexes": self._name, "indexes": indexes}, kwargs, comment=comment)
        return [index["name"] for index in _reply.check(self._run_command(cmd, session))["indexesCreated"]]

    def drop_search_index(self, name: str, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop a search index (``dropSearchIndex``); a missing collection is no error, as in pymongo.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        cmd = command_doc({"dropSearchIndex": self._name, "name": name}, kwargs, comment=comment)
        self._check_unless_missing(self._run_command(cmd, session))

    def update_search_index(
        self, name: str, definition: Mapping[str, Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Replace a search index's definition (``updateSearchIndex``); a missing collection is no error.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        cmd = {"updateSearchIndex": self._name, "name": name, "definition": definition}
        self._check_unless_missing(self._run_command(command_doc(cmd, kwargs, comment=comment), session))

    @staticmethod
    def _check_unless_missing(reply: Mapping[str, Any]) -> None:
        """pymongo's ``allowable_errors=["ns not found", 26]``."""
        if reply.get("code") != 26 and reply.get("errmsg") != "ns not found":
            _reply.check(reply)

    def list_search_indexes(
        self, name: str | None = None, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> CommandCursor:
        """The ``$listSearchIndexes`` stage's cursor.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        stage = {"$listSearchIndexes": {"name": name} if name is not None else {}}
        return self.aggregate([stage], session, comment=comment, **kwargs)

    # -- collection ---------------------------------------------------------------------------

    def drop(self, session: Any = None, comment: Any = None, encrypted_fields: Any = None) -> None:
        """Drop this collection and its indexes.

        https://www.mongodb.com/docs/manual/reference/command/drop/"""
        self.database.drop_collection(self._name, session, comment=comment)

    def rename(self, new_name: str, session: Any = None, comment: Any = None, **kwargs: Any) -> dict[str, Any]:
        """Rename this collection within its database (``renameCollection``).

        https://www.mongodb.com/docs/manual/reference/command/renameCollection/"""
        if not isinstance(new_name, str):
            raise TypeError("new_name must be an instance of str")
        if not new_name or ".." in new_name:
            raise InvalidName("collection names cannot be empty")
        if new_name[0] == "." or new_name[-1] == ".":
            raise InvalidName("collection names must not start or end with '.'")
        if "$" in new_name and not new_name.startswith("oplog.$main"):
            raise InvalidName("collection names must not contain '$'")
        cmd = command_doc(
            {"renameCollection": self.full_name, "to": f"{self.database.name}.{new_name}"}, kwargs, comment=comment
        )
        concern = self._write_concern_doc(cmd, session)
        return dict(_reply.check(self.database.client.admin._run_command(cmd, session, write_concern=concern)))

    def options(self, session: Any = None, comment: Any = None) -> dict[str, Any]:
        """The options the collection was created with ({} for none, or a missing collection).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        for info in self.database.list_collections(session, filter={"name": self._name}, comment=comment):
            options = dict(info.get("options", {}))
            return options
        return {}

    def watch(self, pipeline: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A change stream of this collection's changes (pymongo's ``watch`` arguments).

        https://www.mongodb.com/docs/manual/changeStreams/"""
        from foliodb.client import change_stream  # it imports the cursor module, which imports this one

        return change_stream.watch(change_stream.CollectionChangeStream, self, pipeline, *args, **kwargs)


def _writes(pipeline: Sequence[Mapping[str, Any]]) -> bool:
    return bool(pipeline) and any(key in ("$out", "$merge") for key in pipeline[-1])
