"""Change streams of the embedded client: pymongo's ChangeStream classes over the executor.

pymongo's own code does the work (options, the resume token it caches from
each event and each batch's ``postBatchResumeToken``, one resume after a
resumable error, custom type decoding); these subclasses replace only the
two places that reach pymongo's topology: running the ``aggregate`` that
opens the stream, and the cursor it returns.

Manual: https://www.mongodb.com/docs/manual/changeStreams/; driver spec:
https://github.com/mongodb/specifications/blob/master/source/change-streams/change-streams.md
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pymongo.change_stream
from pymongo.collation import validate_collation_or_none

from foliodb.client.command_cursor import CommandCursor

if TYPE_CHECKING:
    from foliodb.client.collection import Collection


class ChangeStreamCursor(CommandCursor):
    """A change stream's server cursor, as pymongo's ChangeStream drives it."""

    def __init__(self, collection: Collection, reply: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(collection, reply, **kwargs)
        # pymongo's CommandCursor._post_batch_resume_token reads this: the newest batch's token.
        self._postbatchresumetoken: Mapping[str, Any] | None = reply["cursor"].get("postBatchResumeToken")

    def _took_batch(self, cursor: Mapping[str, Any]) -> None:
        self._postbatchresumetoken = cursor.get("postBatchResumeToken", self._postbatchresumetoken)

    def _try_next(self, get_more_allowed: bool) -> Any:
        """The next event: buffered, else from at most one ``getMore``; None when none came."""
        if not self._buffer and self._cursor_id and not self._killed and get_more_allowed:
            self._get_more()
        if self._buffer:
            self._retrieved += 1
            return self._buffer.popleft()
        if not self._cursor_id:
            self._killed = True
        return None

    def _has_next(self) -> bool:
        return bool(self._buffer)


class _Embedded:
    """What the three change stream kinds share: opening the stream through the executor."""

    _target: Any
    _session: Any
    _comment: Any
    _collation: Any
    _max_await_time_ms: int | None
    _batch_size: int | None

    def _create_cursor(self) -> ChangeStreamCursor:
        target = self._target
        collection, db, coll = _where(target)
        cmd: dict[str, Any] = {
            "aggregate": coll if coll is not None else 1,
            "pipeline": self._aggregation_pipeline(),  # type: ignore[attr-defined]
            "cursor": {"batchSize": self._batch_size} if self._batch_size is not None else {},
        }
        collation = validate_collation_or_none(self._collation)
        if collation is not None:
            cmd["collation"] = collation
        if self._comment is not None:
            cmd["comment"] = self._comment
        client = collection.database.client
        reply, held = client._open_cursor(
            db, cmd, self._session, read_concern=target._read_concern, read_preference=None, kind="read"
        )
        self._process_result(reply)  # type: ignore[attr-defined]
        return ChangeStreamCursor(
            collection,
            reply,
            batch_size=self._batch_size or 0,
            ns_collection=coll if coll is not None else "$cmd.aggregate",
            comment=self._comment,
            max_await_time_ms=self._max_await_time_ms,
            session=held,
        )


def _where(target: Any) -> tuple[Collection, str, str | None]:
    """The collection a stream's cursor commands run through, its database, and the collection watched."""
    from foliodb.client.collection import Collection
    from foliodb.client.database import Database

    if isinstance(target, Collection):
        return target, target.database.name, target.name
    database = target if isinstance(target, Database) else target.admin
    return database["$cmd.aggregate"], database.name, None


class CollectionChangeStream(_Embedded, pymongo.change_stream.CollectionChangeStream[Any]):
    """Changes to one collection: :meth:`Collection.watch`."""


class DatabaseChangeStream(_Embedded, pymongo.change_stream.DatabaseChangeStream[Any]):
    """Changes to every collection of a database: :meth:`Database.watch`."""


class ClusterChangeStream(_Embedded, pymongo.change_stream.ClusterChangeStream[Any]):
    """Changes to every database: :meth:`MongoClient.watch`."""


def watch(
    kind: type[_Embedded],
    target: Any,
    pipeline: Any = None,
    full_document: str | None = None,
    resume_after: Mapping[str, Any] | None = None,
    max_await_time_ms: int | None = None,
    batch_size: int | None = None,
    collation: Any = None,
    start_at_operation_time: Any = None,
    session: Any = None,
    start_after: Mapping[str, Any] | None = None,
    comment: Any = None,
    full_document_before_change: str | None = None,
    show_expanded_events: bool | None = None,
) -> Any:
    """A change stream of ``kind`` on ``target``, opened (pymongo's ``watch`` arguments, in its order)."""
    stream: Any = kind(  # type: ignore[call-arg]
        target,
        pipeline,
        full_document,
        resume_after,
        max_await_time_ms,
        batch_size,
        collation,
        start_at_operation_time,
        session,
        start_after,
        comment,
        full_document_before_change,
        show_expanded_events,
    )
    stream._initialize_cursor()
    return stream
