"""pymongo's Database over FolioDB's commands."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bson.codec_options import CodecOptions
from bson.dbref import DBRef
from pymongo import common
from pymongo.errors import CollectionInvalid, InvalidName, InvalidOperation
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply
from foliodb.client.collection import Collection
from foliodb.client.cursor import CommandCursor

if TYPE_CHECKING:
    from foliodb.client.mongo_client import MongoClient


class Database:
    def __init__(
        self,
        client: MongoClient,
        name: str,
        codec_options: CodecOptions | None = None,
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
        self._client = client
        self._name = name
        self._codec_options = codec_options or client.codec_options
        self._read_preference = read_preference or client.read_preference
        self._write_concern = write_concern or client.write_concern
        self._read_concern = read_concern or client.read_concern

    @property
    def name(self) -> str:
        return self._name

    @property
    def client(self) -> MongoClient:
        return self._client

    @property
    def codec_options(self) -> CodecOptions:
        return self._codec_options

    @property
    def read_preference(self) -> Any:
        return self._read_preference

    @property
    def write_concern(self) -> WriteConcern:
        return self._write_concern

    @property
    def read_concern(self) -> ReadConcern:
        return self._read_concern

    def _command(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        return self._client._execute(self._name, cmd)

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
        codec_options: CodecOptions | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Collection:
        return Collection(self, name, codec_options, read_preference, write_concern, read_concern)

    def with_options(
        self,
        codec_options: CodecOptions | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Database:
        return Database(
            self._client,
            self._name,
            codec_options or self._codec_options,
            read_preference or self._read_preference,
            write_concern or self._write_concern,
            read_concern or self._read_concern,
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Database):
            return self._client == other._client and self._name == other._name
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"Database({self._client!r}, {self._name!r})"

    def __bool__(self) -> bool:
        raise NotImplementedError(
            "Database objects do not implement truth value testing or bool(). Please compare with None "
            "instead: database is not None"
        )

    def __iter__(self) -> Database:
        return self

    def __next__(self) -> None:
        raise TypeError("'Database' object is not iterable")

    next = __next__

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"'Database' object is not callable. If you meant to call the '{self._name}' method on a "
            "'MongoClient' object it is failing because no such method exists."
        )

    # -- commands ----------------------------------------------------------------------

    def command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: Any = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if isinstance(command, str):
            cmd: dict[str, Any] = {command: value}
        else:
            cmd = dict(command)
        cmd.update(kwargs)
        if comment is not None:
            cmd["comment"] = comment
        reply = self._command(cmd)
        if check and not reply.get("ok"):
            code = reply.get("code")
            if not allowable_errors or (code not in allowable_errors and reply.get("errmsg") not in allowable_errors):
                _reply.check(reply)
        return reply

    def create_collection(
        self,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        session: Any = None,
        check_exists: bool | None = True,
        **kwargs: Any,
    ) -> Collection:
        collection = Collection(self, name, codec_options, read_preference, write_concern, read_concern)
        if check_exists and name in self.list_collection_names(filter={"name": name}):
            raise CollectionInvalid(f"collection {name} already exists")
        cmd: dict[str, Any] = {"create": name}
        cmd.update(kwargs)
        _reply.check(self._command(cmd))
        return collection

    def list_collections(
        self, session: Any = None, filter: Mapping[str, Any] | None = None, comment: Any = None, **kwargs: Any
    ) -> CommandCursor:
        cmd: dict[str, Any] = {"listCollections": 1, "cursor": {}}
        if filter is not None:
            cmd["filter"] = dict(filter)
        if comment is not None:
            cmd["comment"] = comment
        cmd.update(kwargs)
        reply = _reply.check(self._command(cmd))
        return CommandCursor(self["$cmd"], reply, ns_collection="$cmd.listCollections")

    def list_collection_names(
        self, session: Any = None, filter: Mapping[str, Any] | None = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        if filter is None:
            kwargs["nameOnly"] = True
        else:
            common.validate_is_mapping("filter", filter)
            if not filter or (len(filter) == 1 and "name" in filter):
                kwargs["nameOnly"] = True
        return [info["name"] for info in self.list_collections(filter=filter, comment=comment, **kwargs)]

    def drop_collection(
        self,
        name_or_collection: str | Collection,
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Any = None,
    ) -> dict[str, Any]:
        name = name_or_collection.name if isinstance(name_or_collection, Collection) else name_or_collection
        if not isinstance(name, str):
            raise TypeError("name_or_collection must be an instance of str or Collection")
        cmd: dict[str, Any] = {"drop": name}
        if comment is not None:
            cmd["comment"] = comment
        reply = self._command(cmd)
        return dict(_reply.check(reply))

    def validate_collection(
        self,
        name_or_collection: str | Collection,
        scandata: bool = False,
        full: bool = False,
        session: Any = None,
        background: bool | None = None,
        comment: Any = None,
    ) -> dict[str, Any]:
        name = name_or_collection.name if isinstance(name_or_collection, Collection) else name_or_collection
        if not isinstance(name, str):
            raise TypeError("name_or_collection must be an instance of str or Collection")
        cmd: dict[str, Any] = {"validate": name, "scandata": scandata, "full": full}
        if comment is not None:
            cmd["comment"] = comment
        result = dict(_reply.check(self._command(cmd)))
        if not result.get("valid", False):
            raise CollectionInvalid(f"{name} invalid: {result!r}")
        return result

    def aggregate(self, pipeline: Sequence[Mapping[str, Any]], session: Any = None, **kwargs: Any) -> CommandCursor:
        common.validate_list("pipeline", pipeline)
        cmd: dict[str, Any] = {"aggregate": 1, "pipeline": list(pipeline), "cursor": {}}
        batch_size = kwargs.pop("batchSize", None)
        if batch_size is not None:
            cmd["cursor"] = {"batchSize": batch_size}
        cmd.update(kwargs)
        reply = _reply.check(self._command(cmd))
        return CommandCursor(self["$cmd.aggregate"], reply, batch_size or 0, ns_collection="$cmd.aggregate")

    def dereference(self, dbref: DBRef, session: Any = None, comment: Any = None, **kwargs: Any) -> Any:
        if not isinstance(dbref, DBRef):
            raise TypeError(f"cannot dereference a {type(dbref)}")
        if dbref.database is not None and dbref.database != self._name:
            raise ValueError(
                f"trying to dereference a DBRef that points to another database ({dbref.database!r} not {self._name!r})"
            )
        return self[dbref.collection].find_one({"_id": dbref.id}, comment=comment, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidOperation("change streams are not implemented in FolioDB yet")
