"""pymongo's CommandCursor: the cursor a command's reply opens (aggregate, listCollections, listIndexes...).

It starts from the reply's ``firstBatch`` and namespace and iterates as every
cursor does (:class:`~foliodb.client.batch_cursor.BatchCursor`);
:class:`RawBatchCommandCursor` is ``aggregate_raw_batches``' CommandCursor.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pymongo.command_cursor
from pymongo.errors import InvalidOperation

from foliodb.client.batch_cursor import BatchCursor

if TYPE_CHECKING:
    from foliodb.client.collection import Collection
    from foliodb.client.session import ClientSession


# pymongo declares _collection as its own Collection[T]; the facade's is a subclass of it.
class CommandCursor(BatchCursor, pymongo.command_cursor.CommandCursor[Any]):  # type: ignore[misc]
    """The cursor of aggregate, listCollections, listIndexes..."""

    def __init__(
        self,
        collection: Collection,
        reply: Mapping[str, Any],
        batch_size: int = 0,
        ns_collection: str | None = None,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        session: ClientSession | None = None,
    ) -> None:
        self._collection = collection
        self._comment = comment
        self._max_await_time_ms = max_await_time_ms
        self._session = session
        cursor = reply["cursor"]
        self._cursor_id = int(cursor["id"])
        self._buffer = deque(collection._codec.decode(cursor.get("firstBatch", [])))
        self.batch_size(batch_size)
        self._killed = not self._cursor_id
        self._retrieved = 0
        ns = cursor.get("ns", "")
        self._ns_name = ns_collection or (ns.split(".", 1)[1] if "." in ns else collection.name)

    def _ns_collection(self) -> str:
        return self._ns_name

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        """The next document, by ``getMore`` when the batch runs out.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/command_cursor.html"""
        return self._next_document()

    next = __next__

    def try_next(self) -> dict[str, Any] | None:
        """The next document, or None when none is available yet.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/command_cursor.html"""
        try:
            return self._next_document()
        except StopIteration:
            return None

    def batch_size(self, batch_size: int) -> CommandCursor:
        """Documents per ``getMore`` batch (1 asks for 2, as pymongo does: a server once closed
        a cursor after a batch of one).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/command_cursor.html"""
        if not isinstance(batch_size, int):
            raise TypeError(f"batch_size must be an integer, not {type(batch_size)}")
        if batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        self._batch_size = (batch_size == 1 and 2) or batch_size
        return self

    @property
    def alive(self) -> bool:
        """Whether the cursor may still return documents.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/command_cursor.html"""
        return bool(self._buffer) or not self._killed

    def close(self) -> None:
        """Close the cursor, killing its server cursor.

        https://www.mongodb.com/docs/manual/reference/command/killCursors/"""
        self._kill()


class RawBatchCommandCursor(CommandCursor, pymongo.command_cursor.RawBatchCommandCursor[Any]):  # type: ignore[misc]
    """``aggregate_raw_batches``: each item is one batch of BSON bytes."""

    def __next__(self) -> bytes:  # type: ignore[override]
        """The next batch, its documents' BSON concatenated.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/command_cursor.html"""
        return self._next_raw_batch()

    next = __next__  # type: ignore[assignment]

    def __getitem__(self, index: int) -> Any:
        raise InvalidOperation("Cannot call __getitem__ on RawBatchCommandCursor")
