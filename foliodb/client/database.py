"""pymongo's Database over FolioDB's commands."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import pymongo.collection
import pymongo.database
from bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from bson.dbref import DBRef
from pymongo import common
from pymongo.errors import CollectionInvalid, InvalidName, InvalidOperation
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply
from foliodb.client.arguments import command_doc
from foliodb.client.codec import DocumentCodec
from foliodb.client.collection import Collection
from foliodb.client.command_cursor import CommandCursor
from foliodb.client.handle import Handle

if TYPE_CHECKING:
    from foliodb.client.mongo_client import MongoClient

_Decoded = TypeVar("_Decoded", bound=Mapping[str, Any])  # a reply decoded with the caller's codec options


class Database(Handle, pymongo.database.Database[Any]):
    """pymongo's ``Database`` (an instance of ``pymongo.database.Database``) over the embedded engine.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/database.html"""

    def __init__(
        self,
        client: MongoClient,
        name: str,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        if not name:
            raise InvalidName("database name cannot be the empty string")
        for ch in (" ", ".", "$", "/", "\\", "\x00", '"'):
            if ch in name:
                raise InvalidName(f"database names cannot contain the character {ch!r}")
        super().__init__(client, name, codec_options, read_preference, write_concern, read_concern)
        # (cmd, session, **how): MongoClient._execute on this database, bound once.
        self._run_command: Callable[..., dict[str, Any]] = functools.partial(client._execute, name)

    @property
    def client(self) -> MongoClient:
        """The MongoClient this database belongs to.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/database.html"""
        return self._parent

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(
                f"Database has no attribute {name!r}. To access the {name} collection, use database[{name!r}]."
            )
        return self[name]

    def __getitem__(self, name: str) -> Collection:
        return Collection(self, name)

    def get_collection(
        self,
        name: str,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Collection:
        """The named Collection with these options; unset ones are the database's.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/database.html"""
        return Collection(self, name, codec_options, read_preference, write_concern, read_concern)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"'Database' object is not callable. If you meant to call the '{self._name}' method on a "
            "'MongoClient' object it is failing because no such method exists."
        )

    # -- commands ----------------------------------------------------------------------

    @overload
    def command(
        self,
        command: str | MutableMapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: Any = None,
        codec_options: None = None,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]: ...

    @overload
    def command(
        self,
        command: str | MutableMapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: Any = None,
        codec_options: CodecOptions[_Decoded] = ...,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> _Decoded: ...

    def command(
        self,
        command: str | MutableMapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: Any = None,
        codec_options: CodecOptions[Any] | None = None,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Run a database command and return its reply, raising OperationFailure on an
        error reply unless ``check`` is false or the error is allowed (pymongo's
        ``Database.command``; https://www.mongodb.com/docs/manual/reference/command/)."""
        cmd: dict[str, Any] = {command: value} if isinstance(command, str) else dict(command)
        cmd.update(kwargs)
        if comment is not None:
            cmd["comment"] = comment
        reply = self._run_command(cmd, session, read_preference=read_preference, kind="runCommand")
        if check and not reply.get("ok"):
            code = reply.get("code")
            if not allowable_errors or (code not in allowable_errors and reply.get("errmsg") not in allowable_errors):
                _reply.check(reply)
        return reply if codec_options is None else DocumentCodec(codec_options).decode([reply])[0]

    def cursor_command(
        self,
        command: str | MutableMapping[str, Any],
        value: Any = 1,
        read_preference: Any = None,
        codec_options: CodecOptions[Any] | None = None,
        session: Any = None,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """Run a command that opens a cursor (``find``, ``aggregate``, ``listCollections``...) and
        iterate its results, getMore by getMore (pymongo 4.5+'s ``Database.cursor_command``).

        ``comment`` and ``max_await_time_ms`` go on each getMore, as pymongo sends them; the
        documents decode with ``codec_options`` (pymongo's default ones when None). A reply
        without a cursor raises InvalidOperation."""
        cmd: dict[str, Any] = {command: value} if isinstance(command, str) else dict(command)
        cmd.update(kwargs)
        reply, session = self.client._open_cursor(
            self._name, cmd, session, read_preference=read_preference, kind="otherRead"
        )
        if not reply.get("cursor"):
            raise InvalidOperation("Command does not return a cursor.")
        collection = self.get_collection("$cmd", codec_options=codec_options or DEFAULT_CODEC_OPTIONS)
        return CommandCursor(collection, reply, comment=comment, max_await_time_ms=max_await_time_ms, session=session)

    def create_collection(
        self,
        name: str,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        session: Any = None,
        check_exists: bool | None = True,
        **kwargs: Any,
    ) -> Collection:
        """Create a collection with options (capped, validator, collation, view...); CollectionInvalid if it exists.

        https://www.mongodb.com/docs/manual/reference/command/create/"""
        collection = Collection(self, name, codec_options, read_preference, write_concern, read_concern)
        bound = session or self.client._get_bound_session()
        in_transaction = bound is not None and bound.in_transaction
        # As pymongo: no existence check inside a transaction, where listCollections cannot run.
        if check_exists and not in_transaction and name in self.list_collection_names(session, {"name": name}):
            raise CollectionInvalid(f"collection {name} already exists")
        cmd = command_doc({"create": name}, kwargs)
        concern = self._write_concern_doc(cmd, session)
        _reply.check(self._run_command(cmd, session, write_concern=concern))
        return collection

    def list_collections(
        self, session: Any = None, filter: Mapping[str, Any] | None = None, comment: Any = None, **kwargs: Any
    ) -> CommandCursor:
        """A cursor over the ``listCollections`` entries (name, type, options, info).

        https://www.mongodb.com/docs/manual/reference/command/listCollections/"""
        cmd = command_doc(
            {"listCollections": 1, "cursor": {}},
            kwargs,
            filter=None if filter is None else dict(filter),
            comment=comment,
        )
        reply, held = self.client._open_cursor(self._name, cmd, session, read_preference=None, kind="read")
        return CommandCursor(self["$cmd"], reply, ns_collection="$cmd.listCollections", session=held)

    def list_collection_names(
        self, session: Any = None, filter: Mapping[str, Any] | None = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """The names of the collections and views, optionally filtered.

        https://www.mongodb.com/docs/manual/reference/command/listCollections/"""
        if filter is None:
            kwargs["nameOnly"] = True
        else:
            common.validate_is_mapping("filter", filter)
            if not filter or (len(filter) == 1 and "name" in filter):
                kwargs["nameOnly"] = True
        return [info["name"] for info in self.list_collections(session, filter, comment, **kwargs)]

    def drop_collection(
        self,
        name_or_collection: str | pymongo.collection.Collection[Any],
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Any = None,
    ) -> dict[str, Any]:
        """Drop a collection and its indexes (the ``drop`` command).

        https://www.mongodb.com/docs/manual/reference/command/drop/"""
        cmd = command_doc({"drop": _collection_name(name_or_collection)}, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        return dict(_reply.check(self._run_command(cmd, session, write_concern=concern)))

    def validate_collection(
        self,
        name_or_collection: str | pymongo.collection.Collection[Any],
        scandata: bool = False,
        full: bool = False,
        session: Any = None,
        background: bool | None = None,
        comment: Any = None,
    ) -> dict[str, Any]:
        """Check a collection's documents and indexes (``validate``); CollectionInvalid if not valid.

        https://www.mongodb.com/docs/manual/reference/command/validate/"""
        name = _collection_name(name_or_collection)
        cmd = command_doc({"validate": name, "scandata": scandata, "full": full}, comment=comment)
        result = dict(_reply.check(self._run_command(cmd, session, kind="runCommand")))  # pymongo's command()
        if not result.get("valid", False):
            raise CollectionInvalid(f"{name} invalid: {result!r}")
        return result

    def aggregate(self, pipeline: Sequence[Mapping[str, Any]], session: Any = None, **kwargs: Any) -> CommandCursor:
        """Run a database-level aggregation (``$currentOp``, ``$documents``...) and return its cursor.

        https://www.mongodb.com/docs/manual/reference/command/aggregate/"""
        common.validate_list("pipeline", pipeline)
        cmd: dict[str, Any] = {"aggregate": 1, "pipeline": list(pipeline), "cursor": {}}
        batch_size = kwargs.pop("batchSize", None)
        if batch_size is not None:
            cmd["cursor"] = {"batchSize": batch_size}
        cmd.update(kwargs)
        read_concern = None if "readConcern" in cmd else self._read_concern
        first = pipeline[0] if pipeline else None
        if session is None and isinstance(first, Mapping) and "$listLocalSessions" in first:
            # The one command where pymongo's implicit session, which this client leaves out, is seen:
            # mongod lists the session the aggregate itself runs in.
            session = self.client._get_bound_session() or self.client._start_session(True, causal_consistency=False)
        writes = any(isinstance(stage, Mapping) and ("$out" in stage or "$merge" in stage) for stage in pipeline)
        reply, held = self.client._open_cursor(
            self._name,
            cmd,
            session,
            read_concern=read_concern,
            read_preference=None,
            kind="runCommand" if writes else "read",  # pymongo's: $out and $merge are no retryable read
        )
        return CommandCursor(
            self["$cmd.aggregate"], reply, batch_size or 0, ns_collection="$cmd.aggregate", session=held
        )

    def dereference(self, dbref: DBRef, session: Any = None, comment: Any = None, **kwargs: Any) -> Any:
        """The document a DBRef points to, or None.

        https://www.mongodb.com/docs/manual/reference/database-references/"""
        if not isinstance(dbref, DBRef):
            raise TypeError(f"cannot dereference a {type(dbref)}")
        if dbref.database is not None and dbref.database != self._name:
            raise ValueError(
                f"trying to dereference a DBRef that points to another database ({dbref.database!r} not {self._name!r})"
            )
        return self[dbref.collection].find_one({"_id": dbref.id}, session=session, comment=comment, **kwargs)

    def watch(self, pipeline: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A change stream of this database's changes (pymongo's ``watch`` arguments).

        https://www.mongodb.com/docs/manual/changeStreams/"""
        from foliodb.client import change_stream  # it imports the cursor module, which imports this one

        return change_stream.watch(change_stream.DatabaseChangeStream, self, pipeline, *args, **kwargs)


def _collection_name(name_or_collection: str | pymongo.collection.Collection[Any]) -> str:
    if isinstance(name_or_collection, pymongo.collection.Collection):
        return name_or_collection.name
    if not isinstance(name_or_collection, str):
        raise TypeError("name_or_collection must be an instance of str or Collection")
    return name_or_collection
