"""The iteration every FolioDB cursor shares: a server cursor's batches, getMore, killCursors.

A :class:`BatchCursor` holds a buffer of decoded documents and the server
cursor's id; when the buffer runs out it sends ``getMore`` (with the cursor's
batch size, comment and maxAwaitTimeMS, as pymongo does), and closing or
collecting it sends ``killCursors``. It is mixed in before a pymongo cursor
class (:class:`~foliodb.client.cursor.Cursor`,
:class:`~foliodb.client.command_cursor.CommandCursor`), which sets its fields.

A cursor keeps the session it was opened in, as pymongo's does: its getMore
and killCursors carry the same ``lsid`` (and, inside a transaction, its
``txnNumber``). An implicit session (retryable writes on) is held only while
the server cursor is open and goes back to the pool when it is exhausted or
killed; ``cursor.session`` shows only an explicit one.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import bson

from foliodb.client._reply import check

if TYPE_CHECKING:
    from foliodb.client.collection import Collection
    from foliodb.client.session import ClientSession


class BatchCursor:
    """Iteration over a server cursor: a buffer of documents and getMore."""

    _collection: Collection
    _cursor_id: int | None
    _buffer: deque[dict[str, Any]]
    _batch_size: int
    _killed: bool
    _retrieved: int
    _comment: Any = None
    _session: ClientSession | None = None  # the one its commands run in, explicit or implicit
    _max_await_time_ms: int | None = None

    def _get_more_batch_size(self) -> int:
        return self._batch_size

    def _get_more(self) -> None:
        assert self._cursor_id
        cmd: dict[str, Any] = {"getMore": self._cursor_id, "collection": self._ns_collection()}
        batch_size = self._get_more_batch_size()
        if batch_size:
            cmd["batchSize"] = batch_size
        if self._comment is not None:
            cmd["comment"] = self._comment  # as pymongo sends it on getMore (MongoDB 4.4+)
        if self._max_await_time_ms is not None:
            cmd["maxTimeMS"] = self._max_await_time_ms
        reply = check(self._collection.database._run_command(cmd, self._session, kind="otherRead"))
        cursor = reply["cursor"]
        self._cursor_id = int(cursor["id"])
        self._buffer.extend(self._collection._codec.decode(cursor["nextBatch"]))
        self._took_batch(cursor)
        if not self._cursor_id:
            self._killed = True
            self._release_session()

    def _took_batch(self, cursor: Mapping[str, Any]) -> None:
        """A getMore's reply arrived (change stream cursors keep its postBatchResumeToken)."""

    def _release_session(self) -> None:
        """Done with the server cursor: an implicit session goes back to the pool (pymongo's)."""
        session = self._session
        if session is not None and session._implicit:
            session._end_implicit_session()
            self._session = None

    def _ns_collection(self) -> str:
        return self._collection.name

    def _next_document(self) -> dict[str, Any]:
        if not self._buffer and self._cursor_id and not self._killed:
            self._get_more()
        if self._buffer:
            self._retrieved += 1
            return self._buffer.popleft()
        if not self._cursor_id:
            self._killed = True  # a server cursor still open (tailable, nothing new yet) stays alive, as pymongo's
        raise StopIteration

    def _next_raw_batch(self) -> bytes:
        """The rest of the current batch, its documents' BSON concatenated (pymongo's raw batch cursors)."""
        if not self._buffer and self._cursor_id and not self._killed:
            self._get_more()
        if not self._buffer:
            self._killed = True
            raise StopIteration
        batch = b"".join(bson.encode(doc) for doc in self._buffer)
        self._retrieved += len(self._buffer)
        self._buffer.clear()
        return batch

    def _kill(self, in_session: bool = True) -> None:
        if self._cursor_id and not self._killed:
            cmd = {"killCursors": self._ns_collection(), "cursors": [self._cursor_id]}
            self._collection.database._run_command(cmd, self._session if in_session else None)
        self._killed = True
        self._buffer.clear()
        self._release_session()

    @property
    def cursor_id(self) -> int | None:
        """The server cursor's id; 0 once exhausted, None before the first batch.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        return self._cursor_id

    @property
    def address(self) -> None:
        """None: an embedded client has no server address.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        return None

    @property
    def retrieved(self) -> int:
        """How many documents have been returned so far.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        return self._retrieved

    @property
    def session(self) -> ClientSession | None:
        """The explicit session the cursor runs in, or None (an implicit one is not shown).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        session = self._session
        return session if session is not None and not session._implicit else None

    def to_list(self, length: int | None = None) -> list[dict[str, Any]]:
        """The remaining documents as a list, at most ``length`` of them.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        if length is not None and length < 1:
            raise ValueError("to_list() length must be greater than 0")
        out = []
        for doc in self:  # type: ignore[attr-defined]
            out.append(doc)
            if length is not None and len(out) >= length:
                break
        return out

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()  # type: ignore[attr-defined]

    def __del__(self) -> None:
        # The client may already be closed at interpreter exit. pymongo kills a collected cursor
        # later from its background thread, outside any session; so does this, at once.
        with contextlib.suppress(Exception):
            self._kill(in_session=False)
