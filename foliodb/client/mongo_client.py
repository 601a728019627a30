"""``foliodb.MongoClient``: pymongo's MongoClient over an embedded engine.

``MongoClient("./data")`` opens (or creates) a dbpath directory in this
process; ``MongoClient(":memory:")`` an in-memory database that vanishes with
the client. Every operation becomes a MongoDB command run by the same
executor the wire server uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import pymongo
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from pymongo import common
from pymongo.errors import InvalidOperation
from pymongo.monitoring import CommandListener
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import ReadPreference
from pymongo.results import ClientBulkWriteResult
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply
from foliodb.client.arguments import command_doc
from foliodb.client.client_bulk import ClientBulk
from foliodb.client.cursor import CommandCursor
from foliodb.client.database import Database
from foliodb.client.handle import Options
from foliodb.client.monitoring import publish_command_events
from foliodb.client.session import ClientSession
from foliodb.commands import Executor
from foliodb.errors import CommandError

DEFAULT_PATH = "./foliodb-data"

_UUID_REPRESENTATIONS = {
    "unspecified": UuidRepresentation.UNSPECIFIED,
    "standard": UuidRepresentation.STANDARD,
    "pythonlegacy": UuidRepresentation.PYTHON_LEGACY,
    "javalegacy": UuidRepresentation.JAVA_LEGACY,
    "csharplegacy": UuidRepresentation.CSHARP_LEGACY,
}


class MongoClient(Options):
    HOST = DEFAULT_PATH
    PORT = 0

    def __init__(
        self,
        host: str | None = None,
        port: int | None = None,
        document_class: type = dict,
        tz_aware: bool | None = None,
        connect: bool | None = None,
        type_registry: Any = None,
        **kwargs: Any,
    ) -> None:
        path = host if host is not None else DEFAULT_PATH
        if not isinstance(path, str):
            raise TypeError("host must be a dbpath string (a directory, or ':memory:')")
        if path.startswith(("mongodb://", "mongodb+srv://")):
            raise ValueError(
                "foliodb.MongoClient opens a local dbpath; for a MongoDB server use foliodb.connect(uri), "
                "which returns a pymongo.MongoClient"
            )
        options = {k.lower(): v for k, v in kwargs.items()}
        uuid_rep = options.get("uuidrepresentation", "unspecified")
        if isinstance(uuid_rep, str):
            uuid_rep = _UUID_REPRESENTATIONS[uuid_rep.lower()]
        codec_kwargs: dict[str, Any] = {
            "document_class": document_class,
            "tz_aware": bool(tz_aware),
            "uuid_representation": uuid_rep,
        }
        if type_registry is not None:
            codec_kwargs["type_registry"] = type_registry
        if "tzinfo" in options:
            codec_kwargs["tzinfo"] = options["tzinfo"]
        if "unicode_decode_error_handler" in options:
            codec_kwargs["unicode_decode_error_handler"] = options["unicode_decode_error_handler"]
        concern: dict[str, Any] = {key: options[key] for key in ("w", "j", "wtimeoutms", "fsync") if key in options}
        if "wtimeoutms" in concern:
            concern["wtimeout"] = concern.pop("wtimeoutms")
        super().__init__(
            CodecOptions(**codec_kwargs),
            ReadPreference.PRIMARY,
            WriteConcern(**concern) if concern else WriteConcern(),
            ReadConcern(options.get("readconcernlevel")),
        )
        self._path = path
        try:
            self._executor = Executor.open(path)
        except CommandError as exc:
            _reply.check(exc.to_reply())
            raise
        self._closed = False
        # pymongo's command monitoring: listeners see every command this client runs.
        self._command_listeners = [
            listener for listener in options.get("event_listeners") or () if isinstance(listener, CommandListener)
        ]
        if "ttlmonitorsleepsecs" in options:
            seconds = options["ttlmonitorsleepsecs"]
            _reply.check(self._execute("admin", {"setParameter": 1, "ttlMonitorSleepSecs": seconds}))

    # -- plumbing ------------------------------------------------------------------------

    def _execute(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise InvalidOperation("Cannot use MongoClient after close")
        if self._command_listeners:
            return publish_command_events(self._command_listeners, self._executor, db, cmd)
        return self._executor.execute(db, cmd)

    # -- properties ------------------------------------------------------------------------

    @property
    def address(self) -> None:
        return None

    # Topology answers of a single embedded node, so code that inspects them keeps working.
    @property
    def nodes(self) -> frozenset[tuple[str, int]]:
        return frozenset()

    @property
    def primary(self) -> None:
        return None

    @property
    def secondaries(self) -> set[tuple[str, int]]:
        return set()

    @property
    def arbiters(self) -> set[tuple[str, int]]:
        return set()

    @property
    def is_primary(self) -> bool:
        return True

    @property
    def is_mongos(self) -> bool:
        return False

    @property
    def dbpath(self) -> str:
        return self._path

    @property
    def admin(self) -> Database:
        return Database(self, "admin")

    def __getattr__(self, name: str) -> Database:
        if name.startswith("_"):
            raise AttributeError(
                f"MongoClient has no attribute {name!r}. To access the {name} database, use client[{name!r}]."
            )
        return Database(self, name)

    def __getitem__(self, name: str) -> Database:
        return Database(self, name)

    def get_database(
        self,
        name: str | None = None,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Database:
        if name is None:
            return self.get_default_database()
        return Database(self, name, codec_options, read_preference, write_concern, read_concern)

    def get_default_database(self, default: str | None = None, **kwargs: Any) -> Database:
        return self.get_database(default or "test", **kwargs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MongoClient):
            return self._executor.engine is other._executor.engine
        return NotImplemented

    def __hash__(self) -> int:
        return hash(id(self._executor.engine))

    def __repr__(self) -> str:
        return f"MongoClient({self._path!r})"

    def __enter__(self) -> MongoClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- operations -----------------------------------------------------------------------

    def list_databases(self, session: Any = None, comment: Any = None, **kwargs: Any) -> CommandCursor:
        reply = _reply.check(self._execute("admin", command_doc({"listDatabases": 1}, kwargs, comment=comment)))
        cursor = {"cursor": {"id": 0, "firstBatch": reply["databases"], "ns": "admin.$cmd"}, "ok": 1.0}
        return CommandCursor(self.admin["$cmd"], cursor)

    def list_database_names(self, session: Any = None, comment: Any = None) -> list[str]:
        return [db["name"] for db in self.list_databases(nameOnly=True, comment=comment)]

    def drop_database(self, name_or_database: str | Database, session: Any = None, comment: Any = None) -> None:
        name = name_or_database.name if isinstance(name_or_database, Database) else name_or_database
        if not isinstance(name, str):
            raise TypeError("name_or_database must be an instance of str or a Database")
        _reply.check(self._execute(name, command_doc({"dropDatabase": 1}, comment=comment)))

    def bulk_write(
        self,
        models: Sequence[Any],
        session: Any = None,
        ordered: bool = True,
        verbose_results: bool = False,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        write_concern: WriteConcern | None = None,
    ) -> ClientBulkWriteResult:
        """Inserts, updates and deletes across collections in one command
        (pymongo 4.9+'s ``MongoClient.bulk_write``)."""
        concern = write_concern or self._write_concern
        if not concern.acknowledged and verbose_results:
            raise InvalidOperation("Cannot request unacknowledged write concern and verbose results")
        if not concern.acknowledged and ordered:
            raise InvalidOperation("Cannot request unacknowledged write concern and ordered writes")
        common.validate_list("models", models)
        bulk = ClientBulk(self, concern, ordered, bypass_document_validation, comment, let, verbose_results)
        for model in models:
            try:
                model._add_to_client_bulk(bulk)
            except AttributeError:
                raise TypeError(f"{model!r} is not a valid request") from None
        return bulk.execute()

    def start_session(
        self, causal_consistency: bool | None = None, default_transaction_options: Any = None, snapshot: bool = False
    ) -> ClientSession:
        if self._closed:
            raise InvalidOperation("Cannot use MongoClient after close")
        return ClientSession(self, causal_consistency)

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidOperation("change streams are not implemented in FolioDB yet")

    def server_info(self, session: Any = None) -> dict[str, Any]:
        return dict(_reply.check(self._execute("admin", {"buildinfo": 1})))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._executor.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            # At interpreter shutdown the storage may already be gone.
            with contextlib.suppress(Exception):
                self.close()


def connect(target: str = DEFAULT_PATH, **kwargs: Any) -> Any:
    """A client for ``target``: a ``mongodb://`` or ``mongodb+srv://`` URI
    gives a ``pymongo.MongoClient`` (a real server or cluster), anything else
    is a dbpath opened embedded. Code written against one runs on the other."""
    if target.startswith(("mongodb://", "mongodb+srv://")):
        return pymongo.MongoClient(target, **kwargs)
    return MongoClient(target, **kwargs)
