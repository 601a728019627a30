"""pymongo's ClientSession on the embedded client.

:class:`ClientSession` is pymongo's own class (``pymongo.client_session.ClientSession``):
its state machine (start/commit/abort, ``with_transaction``'s retry loop and
its 120-second limit, the UnknownTransactionCommitResult labelling) and the
way it stamps commands (``_apply_to``: ``lsid``; ``txnNumber``,
``autocommit: false``, ``startTransaction`` and the transaction's
``readConcern`` on the first command; ``afterClusterTime`` of causally
consistent sessions; ``atClusterTime`` of snapshot sessions) run unchanged.
Only the three places where pymongo reaches for its topology are answered
here instead:

* a server session comes from the client's pool (pymongo's
  ``_ServerSessionPool``), not the topology's (:meth:`ClientSession._materialize`);
* commit and abort run through the client's executor, retried by
  pymongo's rules (:meth:`ClientSession._finish_transaction_with_retry`,
  :mod:`foliodb.client.retry`);
* what ``_apply_to`` reads off a connection comes from a
  :class:`NodeDescription` of the embedded node (``MongoClient._node``):
  sessions supported, its session timeout, MongoDB 8.0's wire version.

Invariant: a command of an explicit session goes to the executor only after
``_apply_to`` stamped it and its reply always passes ``_process_response``,
so the session's cluster and operation times, and a snapshot session's
pinned time, follow every reply (see ``MongoClient._execute``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pymongo.client_session
from pymongo.client_session_shared import _EmptyServerSession
from pymongo.errors import InvalidOperation
from pymongo.helpers_shared import _check_command_response
from pymongo.read_preferences import ReadPreference
from pymongo.write_concern import WriteConcern

from foliodb.client import retry
from foliodb.commands.diagnostics import MAX_WIRE_VERSION

if TYPE_CHECKING:
    from foliodb.client.mongo_client import MongoClient


@dataclass(frozen=True)
class NodeDescription:
    """What pymongo's ``_apply_to`` and ``_update_read_concern`` read off a connection."""

    logical_session_timeout_minutes: int
    supports_sessions: bool = True
    max_wire_version: int = MAX_WIRE_VERSION


class ClientSession(pymongo.client_session.ClientSession):
    """pymongo's ``ClientSession`` (an instance of ``pymongo.client_session.ClientSession``) of the embedded client.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""

    _client: MongoClient

    @property
    def session_id(self) -> Mapping[str, Any]:
        """The session's id document (``{id: UUID}``); InvalidOperation once ended.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        self._check_ended()
        self._materialize()
        return self._server_session.session_id

    @property
    def _transaction_id(self) -> Any:
        self._materialize()
        return self._server_session.transaction_id

    def _materialize(self, logical_session_timeout_minutes: int | None = None) -> None:
        # pymongo's, with the client's pool standing in for the topology's.
        if isinstance(self._server_session, _EmptyServerSession):
            started = self._server_session.started_retryable_write
            self._server_session = self._client._server_session_pool.get_server_session(
                self._client._node.logical_session_timeout_minutes
            )
            if started:
                self._server_session.inc_transaction_id()

    def _finish_transaction_with_retry(self, command_name: str) -> dict[str, Any]:
        # pymongo's: commit and abort are sent once more after a RetryableWriteError (a lost connection
        # gets one), whatever retryWrites says, and as often as backpressure allows; each attempt is
        # built again (a second commit asks for w: "majority"). pymongo's commit_transaction and
        # abort_transaction label or swallow the error raised here.
        client = self._client
        if client._closed:
            raise InvalidOperation("Cannot use MongoClient after close")
        attempts: retry.Attempts | None = None
        while True:
            reply = self._finish_transaction(None, command_name)
            if not retry.failed(reply):
                break
            if attempts is None:
                attempts = retry.Attempts(client._options, client._retry_policy, "finish", True, self)
            if not attempts.again(reply):
                reply = dict(attempts.outcome(reply))
                break
        # pymongo's own check, so a write concern timeout is WTimeoutError as commit_transaction expects.
        _check_command_response(reply, MAX_WIRE_VERSION, parse_write_concern_error=True)
        return reply

    def _finish_transaction(self, conn: Any, command_name: str) -> dict[str, Any]:
        # pymongo's command, one attempt through the client (recoveryToken is a sharded cluster's
        # only); its raw reply.
        self._transaction.attempt += 1
        opts = self._transaction.opts
        assert opts is not None
        concern = opts.write_concern
        cmd: dict[str, Any] = {command_name: 1}
        if command_name == "commitTransaction":
            if opts.max_commit_time_ms:
                cmd["maxTimeMS"] = opts.max_commit_time_ms
            # The transactions specification: a commit after the first attempt is upgraded to
            # w: "majority" with a 10-second wtimeout unless one was given.
            if self._transaction.attempt > 1:
                assert concern is not None
                upgraded = concern.document
                upgraded["w"] = "majority"
                upgraded.setdefault("wtimeout", 10000)
                concern = WriteConcern(**upgraded)
        if concern is not None and concern.document:
            cmd["writeConcern"] = concern.document
        return self._client._attempt("admin", cmd, self, None, ReadPreference.PRIMARY, False, True)
