"""pymongo's retry rules, for the embedded client's replies.

An embedded client has no connection to lose and no primary to step down,
but a fail point (:mod:`foliodb.commands.failpoints`) answers as a failing
server does: an error reply with labels, a write concern error, or a
:class:`~foliodb.commands.failpoints.ClosedConnection` where a server would
have dropped the connection. The client then does what pymongo's
``_ClientConnectionRetryable.run`` does with the same failure, decided here
on the reply rather than on an exception (pymongo 4.20, the Retryable
Writes, Retryable Reads, Transactions and Client Backpressure specs):

* a retryable write (a session, ``retryWrites``, no transaction) is sent
  once more after an error labelled RetryableWriteError; a lost connection
  gets that label from the client;
* a retryable read (``retryReads``, no transaction) once more after a lost
  connection or an error whose code is retryable;
* ``commitTransaction`` and ``abortTransaction`` once more after a
  RetryableWriteError, whatever ``retryWrites`` says;
* an error labelled both SystemOverloadedError and RetryableError
  (backpressure) is retried by any operation the client's options let retry
  (``runCommand`` needs both ``retryReads`` and ``retryWrites``), in a
  transaction too, up to ``maxAdaptiveRetries`` times (default 2), each
  after pymongo's jittered exponential backoff (from ``baseBackoffMS`` when
  the reply gives it);
* after a retried error, a reply labelled NoWritesPerformed stands for
  nothing: the earlier error is the operation's.

Invariant: a reply that is ``ok: 1`` without a write concern error is never
looked at here, so an operation that succeeds costs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pymongo.client_options import ClientOptions
from pymongo.errors import AutoReconnect
from pymongo.helpers_shared import _RETRYABLE_ERROR_CODES, _RetryPolicy

from foliodb.client.monitoring import CONNECTION_CLOSED
from foliodb.commands.failpoints import closes_connection

if TYPE_CHECKING:
    from foliodb.client.session import ClientSession

RETRYABLE_WRITE_ERROR = "RetryableWriteError"
TRANSIENT_TRANSACTION_ERROR = "TransientTransactionError"
SYSTEM_OVERLOADED_ERROR = "SystemOverloadedError"
RETRYABLE_ERROR = "RetryableError"
NO_WRITES_PERFORMED = "NoWritesPerformed"


# What an operation is to pymongo's retry loop (a string: the hot paths pass a constant):
# "write": writes and write commands (pymongo's _retryable_write);
# "read": find, aggregate without $out/$merge, distinct, count, list* (pymongo's _retryable_read);
# "otherRead": getMore, cursor_command: a read never retried in itself (backpressure only);
# "runCommand": Database.command, an aggregate with $out or $merge: backpressure only, and only
#   with both retryReads and retryWrites;
# "finish": commitTransaction, abortTransaction: retried whatever retryWrites says.
Kind = Literal["write", "read", "otherRead", "runCommand", "finish"]
_READS = ("read", "otherRead", "runCommand")


def failed(reply: Mapping[str, Any]) -> bool:
    """Whether ``reply`` may call for a retry: an error, a write concern error, a lost connection."""
    return reply.get("ok") != 1.0 or "writeConcernError" in reply or closes_connection(reply)


def _labels(reply: Mapping[str, Any]) -> list[str]:
    # pymongo reads a write concern error's labels from the reply and the error both.
    labels = list(reply.get("errorLabels", ()))
    concern = reply.get("writeConcernError")
    if isinstance(concern, Mapping):
        labels += concern.get("errorLabels", ())
    return labels


def connection_error(labels: list[str]) -> AutoReconnect:
    """pymongo's error for a connection the server closed instead of replying (what the
    reply holds is for the server's log: no client sees it)."""
    error = AutoReconnect(CONNECTION_CLOSED)
    for label in labels:
        error._add_error_label(label)
    return error


class Attempts:
    """The attempts of one operation after its first failed reply. :meth:`again`
    says whether to send it once more (after sleeping any backoff);
    :meth:`outcome` is what the operation answers when not."""

    def __init__(
        self,
        options: ClientOptions,
        policy: _RetryPolicy,
        kind: Kind,
        retryable: bool,
        session: ClientSession | None,
    ) -> None:
        self.options = options
        self.policy = policy
        self.kind = kind
        self.retryable = retryable  # the operation's own retryability: a retryable write or read
        self.session = session
        self.attempt = 0
        self.max_retries = 1
        self.last: Mapping[str, Any] | None = None

    def labels(self, reply: Mapping[str, Any]) -> list[str]:
        """The reply's labels, with those pymongo adds to a lost connection."""
        if not closes_connection(reply):
            return _labels(reply)
        labels = []
        if self.retryable and self.kind in ("write", "finish"):
            labels.append(RETRYABLE_WRITE_ERROR)
        if self.session is not None and self.session.in_transaction:
            labels.append(TRANSIENT_TRANSACTION_ERROR)
        return labels

    def again(self, reply: Mapping[str, Any]) -> bool:
        """Whether to send the operation again after ``reply`` (a failed one)."""
        if closes_connection(reply) and self.session is not None:
            self.session._server_session.mark_dirty()  # pymongo's: its server session may be unusable
        labels = self.labels(reply)
        overloaded = SYSTEM_OVERLOADED_ERROR in labels
        always = overloaded and RETRYABLE_ERROR in labels
        base_backoff = None
        if overloaded:
            self.max_retries = self.options.max_adaptive_retries
            base_backoff = reply.get("baseBackoffMS")
        options = self.options
        if self.kind == "runCommand" and not (options.retry_reads and options.retry_writes):
            return False
        if self.kind in _READS:
            closed = closes_connection(reply)
            if reply.get("ok") == 1.0 and not closed:
                return False  # a read's write concern error is no read error
            exhausted = self.attempt > 0 and self.attempt >= self.max_retries
            eligible = self.retryable and not exhausted and (closed or reply.get("code") in _RETRYABLE_ERROR_CODES)
            if not options.retry_reads or not (always or eligible):
                return False
        else:
            if self.kind != "finish" and (not options.retry_writes or not (self.retryable or always)):
                return False
            exhausted = self.attempt > 0 and self.attempt >= self.max_retries
            if not always and (RETRYABLE_WRITE_ERROR not in labels or not self.retryable or exhausted):
                return False
            if NO_WRITES_PERFORMED not in labels or self.last is None:
                self.last = reply
        self.attempt += 1
        if overloaded and self.session is not None and self.session.in_transaction:
            # The Client Backpressure spec: a transaction whose first command never completed starts again.
            transaction = self.session._transaction
            if not transaction.has_completed_command:
                transaction.set_starting()
            transaction.attempt = 0
        if overloaded:
            delay = self.policy.backoff(self.attempt, base_backoff / 1000 if base_backoff else None)
            if not self.policy.should_retry(self.attempt, delay):
                return False
            time.sleep(delay)
        return True

    def outcome(self, reply: Mapping[str, Any]) -> Mapping[str, Any]:
        """The reply the operation answers with (its error raised by the caller), or
        raise pymongo's error for a lost connection."""
        writes = self.kind not in _READS
        if writes and self.last is not None and NO_WRITES_PERFORMED in self.labels(reply):
            reply = self.last
        if closes_connection(reply):
            raise connection_error(self.labels(reply))
        return reply
