"""What pymongo's Database and Collection have in common.

:class:`Handle`: a named database or collection under a parent (the client,
or the database), whose unset options are its parent's; it compares equal to
a handle of the same kind, parent and name. Truth testing and iteration are
refused by the pymongo class's own ``__bool__`` and ``__next__``.

A Handle is mixed in before a pymongo class (``pymongo.database.Database``,
``pymongo.collection.Collection``) whose ``__init__`` never runs: the four
settings (codec options, read preference, write concern, read concern) are
set through ``pymongo.common.BaseObject``, whose accessors both share.
"""

from __future__ import annotations

from typing import Any, Self

from bson.codec_options import CodecOptions
from pymongo import common
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern


class Handle(common.BaseObject):
    # pymongo's timeoutMS for operations through this handle (its _csot.apply reads it); the
    # embedded client takes no timeoutMS: maxTimeMS bounds an operation.
    _timeout: float | None = None

    def __init__(
        self,
        parent: Any,
        name: str,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> None:
        # BaseObject directly: the pymongo class next in the MRO must not initialise (it would
        # reach for a real client's options).
        common.BaseObject.__init__(
            self,
            codec_options or parent.codec_options,
            read_preference or parent.read_preference,
            write_concern or parent.write_concern,
            read_concern or parent.read_concern,
        )
        self._parent = parent
        self._name = name

    def _write_concern_doc(self, cmd: dict[str, Any], session: Any) -> WriteConcern:
        """Add the write concern to ``cmd`` unless it is the server's default, or inside a
        transaction (only its commit carries one); the concern, for ``MongoClient._execute``."""
        concern = self._write_concern_for(session)
        if concern.document:
            cmd["writeConcern"] = concern.document
        return concern

    @property
    def name(self) -> str:
        """The name of this database or collection."""
        return self._name

    def with_options(
        self,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Self:
        """A copy with some of the four settings replaced (codec options, read preference, write and read concern).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/database.html"""
        return type(self)(
            self._parent,
            self._name,
            codec_options or self._codec_options,
            read_preference or self._read_preference,
            write_concern or self._write_concern,
            read_concern or self._read_concern,
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return self._parent == other._parent and self._name == other._name
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._parent, self._name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._parent!r}, {self._name!r})"
