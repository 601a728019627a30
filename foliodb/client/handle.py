"""What pymongo's MongoClient, Database and Collection have in common.

:class:`Options`: the four settings each carries (codec options, read
preference, write concern, read concern). :class:`Handle`: a named database or
collection under a parent (the client, or the database), whose unset options
are its parent's; it compares equal to a handle of the same kind, parent and
name, and refuses truth testing and iteration with pymongo's messages (a
handle would otherwise look true and iterable through ``__getattr__``).
"""

from __future__ import annotations

from typing import Any, Self

from bson.codec_options import CodecOptions
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern


class Options:
    def __init__(
        self,
        codec_options: CodecOptions[Any],
        read_preference: Any,
        write_concern: WriteConcern,
        read_concern: ReadConcern,
    ) -> None:
        self._codec_options = codec_options
        self._read_preference = read_preference
        self._write_concern = write_concern
        self._read_concern = read_concern

    @property
    def codec_options(self) -> CodecOptions[Any]:
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


class Handle(Options):
    def __init__(
        self,
        parent: Any,
        name: str,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> None:
        super().__init__(
            codec_options or parent.codec_options,
            read_preference or parent.read_preference,
            write_concern or parent.write_concern,
            read_concern or parent.read_concern,
        )
        self._parent = parent
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def with_options(
        self,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Self:
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

    def __bool__(self) -> bool:
        kind = type(self).__name__
        raise NotImplementedError(
            f"{kind} objects do not implement truth value testing or bool(). Please compare with None "
            f"instead: {kind.lower()} is not None"
        )

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> None:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

    next = __next__
