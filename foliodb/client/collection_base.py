"""The state every part of :class:`~foliodb.client.collection.Collection` works with.

:class:`CollectionBase` checks the name (pymongo's rules, messages and all) and
binds, once per object, the paths an operation runs through: the client's
``_execute`` on this database (every command), its point path (a command with no
session and default concerns, when the client allows it), the document codec,
and whether the concerns are the server's defaults. It is only ever a base of
``Collection``: the families of methods (collection_writes, collection_reads,
collection_indexes) derive from it, and Collection from all of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pymongo.collection
from bson.codec_options import CodecOptions
from pymongo.errors import InvalidName
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from foliodb.client.codec import DocumentCodec
from foliodb.client.handle import Handle

if TYPE_CHECKING:
    from foliodb.client.database import Database


class CollectionBase(Handle, pymongo.collection.Collection[Any]):
    """A collection's name, settings and bound command paths (see the module docstring)."""

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
        # (cmd, handler, kind[, general]): the point path of a command with no session and default concerns
        # (MongoClient._point), when the client allows it (MongoClient._pointable).
        self._point: Callable[..., dict[str, Any]] = functools.partial(database.client._point, database.name)
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
