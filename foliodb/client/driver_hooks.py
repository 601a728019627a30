"""The private client methods pymongo's own classes call, answered in process.

The facade's classes subclass pymongo's without running pymongo's
``__init__``, and override every public method. Some pymongo code still runs
on them: gridfs's ``GridOutCursor`` (and any user subclass of
``pymongo.cursor.Cursor`` built over a FolioDB collection) is pymongo's
Cursor, whose iteration asks the client to run a ``_Query`` or ``_GetMore``
(:meth:`DriverHooks._run_operation`) and to release the cursor afterwards
(``_cleanup_cursor_lock`` / ``_cleanup_cursor_no_lock``). These hooks answer
through the executor with the command pymongo would have put on the wire
(pymongo's own ``_gen_find_command`` / ``_gen_get_more_command``, stamped by
the cursor's session as pymongo's ``_Query.as_command`` stamps it).

Invariant: nothing here opens a socket or starts a thread. Every other path
of pymongo's toward the network starts at ``client._get_topology()`` or
``client._topology`` (server selection, connection checkout, retryable
reads and writes, killCursors, ending sessions); both raise
:class:`NoNetworkLayer`, so a pymongo method that the facade did not
override fails loudly instead of dialling out.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any, NoReturn

import bson
from pymongo.errors import InvalidOperation
from pymongo.message import _gen_find_command, _gen_get_more_command, _GetMore, _OpMsg, _Query
from pymongo.read_concern import ReadConcern
from pymongo.response import Response

from foliodb.client import _reply
from foliodb.client.codec import DocumentCodec
from foliodb.client.monitoring import ADDRESS
from foliodb.commands import CODEC


class NoNetworkLayer(InvalidOperation):
    """pymongo's network layer was reached on the embedded client, which has none."""


def no_network(what: str) -> NoNetworkLayer:
    return NoNetworkLayer(
        f"{what}: foliodb.MongoClient is embedded and has no server topology or connections; "
        "this pymongo code path is not available on it (use the facade's public methods, or "
        "`foliodb serve` with pymongo.MongoClient)"
    )


class DriverHooks:
    """Mixed into the embedded MongoClient (which provides ``_execute``)."""

    _execute: Callable[..., dict[str, Any]]  # the client's

    @property
    def _topology(self) -> NoReturn:
        raise no_network("MongoClient._topology")

    def _get_topology(self) -> NoReturn:
        raise no_network("MongoClient._get_topology()")

    def _run_operation(
        self, operation: _Query | _GetMore, run_with_conn: Callable[..., Any], address: Any = None
    ) -> Response:
        """Run a pymongo cursor's find or getMore; the reply decoded with the cursor's codec options."""
        if isinstance(operation, _Query):
            cmd = _gen_find_command(
                operation.coll,
                operation.spec,
                operation.fields,
                operation.ntoskip,
                operation.limit,
                operation.batch_size,
                operation.flags,
                operation.read_concern,
                operation.collation,
                operation.session,
                operation.allow_disk_use,
            )
            # pymongo adds the session's read concern (afterClusterTime, atClusterTime) except to an explain.
            read_concern: ReadConcern | None = operation.read_concern
            if "$explain" in operation.spec:
                operation.name = "explain"  # pymongo's cursor reads the reply by this name
                cmd = {"explain": cmd}
                read_concern = None
        else:
            cmd = _gen_get_more_command(
                operation.cursor_id,
                operation.coll,
                operation.ntoreturn,
                operation.max_await_time_ms,
                operation.comment,
            )
            read_concern = None
        codec = DocumentCodec(operation.codec_options)
        started = time.perf_counter()
        # pymongo's: a find is a retryable read, a getMore only backpressure's.
        kind = "read" if isinstance(operation, _Query) else "otherRead"
        how = {"read_concern": read_concern, "read_preference": operation.read_preference, "kind": kind}
        reply = dict(_reply.check(self._execute(operation.db, codec.encode(cmd), operation.session, **how)))
        duration = datetime.timedelta(seconds=time.perf_counter() - started)
        message = _OpMsg(0, bson.encode(reply, codec_options=CODEC))
        return Response(message, ADDRESS, 0, duration, [codec.decode([reply])[0]])

    def _cleanup_cursor_lock(self, cursor_id: int, address: Any, conn_mgr: Any, session: Any) -> None:
        """A pymongo cursor closed: kill its server-side cursor, if any, in its session; an
        implicit session goes back to the pool (pymongo's)."""
        if cursor_id and address is not None:
            db, collection = address.namespace.split(".", 1)
            self._execute(db, {"killCursors": collection, "cursors": [cursor_id]}, session)
        if session is not None and session._implicit and not session._leave_alive:
            session._end_implicit_session()

    def _cleanup_cursor_no_lock(self, cursor_id: int, address: Any, conn_mgr: Any, session: Any) -> None:
        """A pymongo cursor collected: killed at once, outside any session (pymongo kills it later
        from its background thread, outside any session too)."""
        self._cleanup_cursor_lock(cursor_id, address, conn_mgr, None)
        if session is not None and session._implicit and not session._leave_alive:
            session._end_implicit_session()
