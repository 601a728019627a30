"""pymongo's read methods of a Collection: find, counts, distinct, aggregation.

``find`` returns a lazy Cursor; ``find_one`` without options sends one find of
one document (by the point path when the client allows it). An aggregation
ending in ``$out`` or ``$merge`` is sent as a write (with the write concern,
not retried as a read), as pymongo does. ``self`` is always a
:class:`~foliodb.client.collection.Collection` (this class is only its base),
hence the casts where a cursor is given it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pymongo import common
from pymongo.errors import ConfigurationError

from foliodb.client import _reply
from foliodb.client.arguments import command_doc, index_spec
from foliodb.client.collection_base import CollectionBase
from foliodb.client.command_cursor import CommandCursor, RawBatchCommandCursor
from foliodb.client.cursor import Cursor, RawBatchCursor
from foliodb.commands import find

if TYPE_CHECKING:
    from foliodb.client.collection import Collection

_C = TypeVar("_C", bound=CommandCursor)


class CollectionReads(CollectionBase):
    """Collection's read methods (see the module docstring)."""

    # -- reads -------------------------------------------------------------------------

    def find(self, *args: Any, **kwargs: Any) -> Cursor:
        """A lazy Cursor over the matching documents; nothing runs until it is iterated.

        https://www.mongodb.com/docs/manual/reference/command/find/"""
        return Cursor(cast("Collection", self), *args, **kwargs)

    def find_raw_batches(self, *args: Any, **kwargs: Any) -> RawBatchCursor:
        """Like find, but each item is a batch of raw BSON bytes (``bson.decode_all``).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return RawBatchCursor(cast("Collection", self), *args, **kwargs)

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
        return cursor_class(cast("Collection", self), reply, batch_size or 0, comment=comment, session=held)


def _writes(pipeline: Sequence[Mapping[str, Any]]) -> bool:
    return bool(pipeline) and any(key in ("$out", "$merge") for key in pipeline[-1])
