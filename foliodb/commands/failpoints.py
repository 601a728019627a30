"""Test commands as mongod has them: ``configureFailPoint`` with the
``failCommand``, ``failGetMoreAfterCursorCheckout``, ``onPrimaryTransactionalWrite``,
``maxTimeAlwaysTimeOut`` and ``maxTimeNeverTimeOut`` fail points, so drivers'
retry and error-label behaviour can be tested against FolioDB as against mongod.

Only when test commands are enabled (``foliodb serve --enableTestCommands``,
mongod's ``--setParameter enableTestCommands=1``; the ``enableTestCommands``
parameter, fixed at startup): otherwise ``configureFailPoint`` is
CommandNotFound, as in mongod. Fail points belong to the engine, so every
client of one dbpath in this process (embedded or over the wire) sees them, as
every client of one mongod does.

A fail point's ``mode``: ``"alwaysOn"``, ``"off"``, ``{times: n}`` (fire n
times, then off) or ``{skip: n}`` (let n pass, then alwaysOn). It is
*evaluated* only where its predicate holds (a named command, an appName...),
and only evaluations count against ``times``/``skip``. ``configureFailPoint``
answers ``count``: how often the fail point fired before this change.

``failCommand`` (``data``), evaluated by :func:`run` around every command
the executor runs, before the command touches its session or transaction:

* ``failCommands`` (names, aliases included: ``isMaster`` fails ``hello``),
  or ``failAllCommands``; narrowed by ``appName`` (the client's handshake
  metadata), ``threadName`` (``conn<id>``), ``namespace``.
  ``configureFailPoint`` itself is never failed. ``failInternalCommands`` and
  ``failLocalClients`` are accepted and change nothing: FolioDB has no
  internal clients (no mongos, no other members). Commands the connection
  answers itself (SASL, ``authenticate``, ``shutdown``) cannot be failed.
* ``blockConnection``/``blockTimeMS``: the command sleeps first (mongod's
  ``opCtx->sleepFor``: maxTimeMS and killOp still interrupt it);
* ``closeConnection``: the command does not run and no reply is sent: the
  reply is a :class:`ClosedConnection`, on which the server closes the
  connection and the embedded facade raises pymongo's ``AutoReconnect``;
* ``errorCode`` (with ``errorExtraInfo``): the command does not run; the
  error "Failing command via 'failCommand' failpoint";
* ``writeConcernError``: only for commands that take a write concern: the
  command runs, and the document is attached to its reply (ok or not) in
  place of waiting for the write concern;
* ``errorLabels``: replaces the labels mongod would add to the reply (an
  empty list: none). Without it, labels follow mongod's ``ErrorLabelBuilder``
  (:func:`error_labels`): TransientTransactionError for a transaction's
  statements, RetryableWriteError for retryable writes and commit/abort.
  mongod also adds NoWritesPerformed when the connection's last optime did
  not move; FolioDB keeps no per-connection optimes and never adds it.

mongod evaluates failCommand twice for a command (once to fail it, once for
the write concern error), each evaluation counting against ``times``; here
one command is one evaluation, whatever the fail point does to it.

``failGetMoreAfterCursorCheckout`` (``data``: ``errorCode``, and
``failCommand``'s ``appName``, ``threadName``, ``namespace``) fails a
``getMore`` once it holds its cursor (:func:`after_cursor_checkout`), so the
error is the cursor's: the cursor is killed, and a change stream's error gets
the change stream labels (``ResumableChangeStreamError``) that an error
failCommand raises before the checkout does not.

``maxTimeAlwaysTimeOut`` and ``maxTimeNeverTimeOut`` (no ``data``) are
evaluated when an operation gets a deadline (:func:`deadline_set`: a command's
``maxTimeMS``, a getMore's share of its cursor's): the first stops it at once
with MaxTimeMSExpired (mongod checks for interruption right after setting
the deadline), the second takes the deadline away.

``onPrimaryTransactionalWrite`` (``data``: ``closeConnection``, default
true; ``failBeforeCommitExceptionCode``) is evaluated once per statement of
a retryable write that executes (not for a retry answered from the stored
reply): the connection closes after the write commits, or, with
``failBeforeCommitExceptionCode``, the statement fails uncommitted. FolioDB
stores a retryable write per command, not per statement, so a command that
fails at its n-th statement commits none of them (mongod keeps the first
n-1, and skips them when the command is retried).

Source: mongod's ``CommandHelpers::evaluateFailCommandFailPoint`` and
``shouldActivateFailCommandFailPoint`` (src/mongo/db/commands.cpp),
``error_labels.cpp``; the unified test format's "Server Fail Points":
https://github.com/mongodb/specifications/blob/master/source/unified-test-format/unified-test-format.md#server-fail-points
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from foliodb import interrupt
from foliodb.commands import params
from foliodb.commands.registry import COMMANDS
from foliodb.commands.replication import takes_write_concern
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp

if TYPE_CHECKING:
    from foliodb.commands.executor import Executor, Request
    from foliodb.engine.engine import Engine

FAIL_COMMAND = "failCommand"
ON_PRIMARY_TRANSACTIONAL_WRITE = "onPrimaryTransactionalWrite"
FAIL_GET_MORE_AFTER_CURSOR_CHECKOUT = "failGetMoreAfterCursorCheckout"
# Commands that exist only with enableTestCommands (the others: foliodb.commands.sleep).
TEST_COMMANDS = frozenset({"configureFailPoint", "sleep"})
MAX_TIME_ALWAYS_TIME_OUT = "maxTimeAlwaysTimeOut"
MAX_TIME_NEVER_TIME_OUT = "maxTimeNeverTimeOut"
FAIL_POINTS = frozenset(
    {
        FAIL_COMMAND,
        ON_PRIMARY_TRANSACTIONAL_WRITE,
        FAIL_GET_MORE_AFTER_CURSOR_CHECKOUT,
        MAX_TIME_ALWAYS_TIME_OUT,
        MAX_TIME_NEVER_TIME_OUT,
    }
)

_MESSAGE = "Failing command via 'failCommand' failpoint"
_CLOSED_CODE = 50985  # what mongod raises after ending the connection (no client sees it)

# mongod's command aliases beyond one handler under several names.
_ALIASES = ({"hello", "isMaster", "ismaster"},)

_RETRYABLE_WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite"})
_COMMIT_OR_ABORT = frozenset({"commitTransaction", "abortTransaction"})

# mongod's ErrorCategory::RetriableError (error_codes.yml), as clients can see them.
RETRIABLE = frozenset(
    {
        ErrorCode.HostUnreachable,
        ErrorCode.HostNotFound,
        ErrorCode.NetworkTimeout,
        ErrorCode.ShutdownInProgress,
        ErrorCode.ReadConcernMajorityNotAvailableYet,
        ErrorCode.PrimarySteppedDown,
        ErrorCode.ExceededTimeLimit,
        ErrorCode.SocketException,
        ErrorCode.NotWritablePrimary,
        ErrorCode.InterruptedAtShutdown,
        ErrorCode.InterruptedDueToReplStateChange,
        ErrorCode.NotPrimaryNoSecondaryOk,
        ErrorCode.NotPrimaryOrSecondary,
    }
)
# A change stream's error of the RetriableError, NetworkError or NeedRetargettingError categories, or
# RetryChangeStream or FailedToSatisfyReadPreference, is ResumableChangeStreamError; one of the
# NonResumableChangeStreamError category says so, whatever the command.
CHANGE_STREAM_RESUMABLE = RETRIABLE | {
    ErrorCode.StaleEpoch,
    ErrorCode.StaleConfig,
    ErrorCode.RetryChangeStream,
    ErrorCode.FailedToSatisfyReadPreference,
}
CHANGE_STREAM_NON_RESUMABLE = frozenset({ErrorCode.ChangeStreamFatalError, ErrorCode.ChangeStreamHistoryLost})
# isTransientTransactionError's own codes, and ErrorCategory::SnapshotError.
_TRANSIENT = frozenset(
    {
        ErrorCode.WriteConflict,
        ErrorCode.LockTimeout,
        ErrorCode.PreparedTransactionInProgress,
        ErrorCode.StaleDbVersion,
        ErrorCode.SnapshotTooOld,
        ErrorCode.SnapshotUnavailable,
    }
)


class ClosedConnection(dict[str, Any]):
    """The reply to a command a fail point answered by closing the
    connection: no client may see it. The server closes the connection
    instead of sending it; the embedded facade raises pymongo's
    ``AutoReconnect``. Its contents (mongod's error after closing, or the
    reply of a write that committed) are for the profiler and the log."""


@dataclass
class FailPoint:
    """One configured fail point: its mode, its data, how often it fired."""

    mode: str  # "alwaysOn", "times" or "skip"
    count: int  # times left to fire, or evaluations left to let pass
    data: dict[str, Any] = field(default_factory=dict)

    def fires(self) -> bool:
        """One evaluation (under the registry's lock): whether it fires now."""
        if self.mode == "times":
            if self.count <= 0:
                return False
            self.count -= 1
            return True
        if self.mode == "skip" and self.count > 0:
            self.count -= 1
            return False
        return True


class FailPoints:
    """The fail points of one engine."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.points: dict[str, FailPoint] = {}
        self.entered: dict[str, int] = dict.fromkeys(FAIL_POINTS, 0)

    def configure(self, name: str, point: FailPoint | None) -> int:
        """Set (or with None, switch off) ``name``; how often it fired before."""
        with self.lock:
            before = self.entered[name]
            if point is None:
                self.points.pop(name, None)
            else:
                self.points[name] = point
            return before

    def fire(self, name: str, applies: Callable[[Mapping[str, Any]], bool]) -> dict[str, Any] | None:
        """The data of ``name`` when it is evaluated here (``applies``) and fires; else None."""
        with self.lock:
            point = self.points.get(name)
            if point is None or not applies(point.data) or not point.fires():
                return None
            self.entered[name] += 1
            if point.mode == "times" and point.count <= 0:
                del self.points[name]
            return point.data


_REGISTRY: weakref.WeakKeyDictionary[Engine, FailPoints] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()
_configured = False  # set when any engine gets its fail points


def enable_test_commands(executor: Executor) -> None:
    """Enable the test commands on the executor's engine (at startup: a
    server's ``--enableTestCommands``, a test's fixture)."""
    executor.engine.parameters["enableTestCommands"] = True


def _points(engine: Engine) -> FailPoints:
    global _configured
    with _REGISTRY_LOCK:
        points = _REGISTRY.get(engine)
        if points is None:
            points = _REGISTRY[engine] = FailPoints()
            _configured = True
        return points


def _integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not cmp.is_number(value):
        raise CommandError(ErrorCode.TypeMismatch, f"'{what}' must be a number")
    return params.as_int(value, what)


# -- configureFailPoint ----------------------------------------------------------------------


def _mode(value: Any) -> tuple[str, int] | None:
    """(mode, count) of a ``mode`` argument; None for "off"."""
    if value == "off":
        return None
    if value == "alwaysOn":
        return ("alwaysOn", 0)
    if isinstance(value, Mapping) and len(value) == 1:
        ((kind, n),) = value.items()
        if kind in ("times", "skip"):
            number = _integer(n, f"mode.{kind}")
            if number < 0:
                raise CommandError(ErrorCode.BadValue, f"'{kind}' option to 'mode' must be a non-negative integer")
            if kind == "times" and number == 0:
                return None
            return (kind, number)
    raise CommandError(ErrorCode.BadValue, "'mode' must be one of 'off', 'alwaysOn', {times: n}, {skip: n}")


def test_command(request: Request) -> None:
    """A test command's preconditions: it exists only with test commands enabled (as mongod,
    CommandNotFound otherwise), and runs on ``admin`` only."""
    if not request.engine.parameters.get("enableTestCommands"):
        raise CommandError(ErrorCode.CommandNotFound, f"no such command: '{request.command_name}'")
    params.admin_only(request.db, request.command_name)


@COMMANDS.register("configureFailPoint")
def cmd_configureFailPoint(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    test_command(request)
    name = cmd["configureFailPoint"]
    if not isinstance(name, str):
        raise CommandError(ErrorCode.TypeMismatch, "the fail point name must be a string")
    if name not in FAIL_POINTS:
        raise CommandError(ErrorCode.FailPointSetFailed, f"{name} not found")
    if "mode" not in cmd:
        raise CommandError(ErrorCode.IllegalOperation, "When setting a failpoint, you must supply a 'mode'")
    mode = _mode(cmd["mode"])
    data = cmd.get("data", {})
    if not isinstance(data, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "the fail point's 'data' must be an object")
    point = None if mode is None else FailPoint(mode[0], mode[1], dict(data))
    return {"count": _points(request.engine).configure(name, point), "ok": 1.0}


# -- evaluation --------------------------------------------------------------------------------


def _same_command(listed: Any, name: str) -> bool:
    if not isinstance(listed, str):
        return False
    if listed == name:
        return True
    if any(listed in group and name in group for group in _ALIASES):
        return True
    # One handler under several names (findAndModify/findandmodify); the connection's own commands have none.
    return listed in COMMANDS and name in COMMANDS and COMMANDS.get(listed) is COMMANDS.get(name)


def _namespace(request: Request, cmd: Mapping[str, Any]) -> str:
    target = cmd.get(request.command_name)
    return f"{request.db}.{target}" if isinstance(target, str) else request.db


def _applies(request: Request, cmd: Mapping[str, Any], data: Mapping[str, Any], ns: str | None = None) -> bool:
    """mongod's shouldActivateFailCommandFailPoint (``ns``: the namespace, when not the command's own)."""
    name = request.command_name
    if name == "configureFailPoint":
        return False
    if "threadName" in data and data["threadName"] != f"conn{request.extra.get('connection_id')}":
        return False
    if "appName" in data and data["appName"] != request.extra.get("app_name"):
        return False
    if "namespace" in data and data["namespace"] != (ns or _namespace(request, cmd)):
        return False
    if data.get("failAllCommands"):
        return True
    listed = data.get("failCommands")
    return isinstance(listed, list) and any(_same_command(item, name) for item in listed)


def _flag(data: Mapping[str, Any], key: str) -> bool:
    return data.get(key) is True


def error_labels(cmd: Mapping[str, Any], name: str, code: int | None, wc_code: int | None) -> list[str]:
    """The labels mongod's ErrorLabelBuilder gives a reply with error ``code``
    and/or write concern error ``wc_code`` (error_labels.cpp). The change
    stream labels of a getMore are the cursor's (:func:`change_stream_label`):
    an error before its cursor is checked out has none."""
    in_session = "txnNumber" in cmd
    in_transaction = in_session and "autocommit" in cmd
    commit_or_abort = name in _COMMIT_OR_ABORT
    if code is not None and in_transaction and _transient(code, wc_code is not None, commit_or_abort):
        return ["TransientTransactionError"]
    retryable_write = in_session and not in_transaction
    if (retryable_write or (in_transaction and commit_or_abort)) and (
        (code is not None and code in RETRIABLE) or (wc_code is not None and wc_code in RETRIABLE)
    ):
        return ["RetryableWriteError"]
    if code is None or wc_code is not None:
        return []
    label = change_stream_label(code, name == "aggregate" and _opens_change_stream(cmd))
    return [label] if label else []


def change_stream_label(code: int, change_stream: bool) -> str | None:
    """The change stream label of an error with ``code``; ``change_stream``:
    the failed command is a change stream's (its aggregate, or a getMore of
    its cursor)."""
    if change_stream and code in CHANGE_STREAM_RESUMABLE:
        return "ResumableChangeStreamError"
    return "NonResumableChangeStreamError" if code in CHANGE_STREAM_NON_RESUMABLE else None


def _opens_change_stream(cmd: Mapping[str, Any]) -> bool:
    pipeline = cmd.get("pipeline")
    return isinstance(pipeline, list) and any(isinstance(s, Mapping) and "$changeStream" in s for s in pipeline)


def _transient(code: int, has_write_concern_error: bool, commit_or_abort: bool) -> bool:
    if code in _TRANSIENT:
        return True
    if commit_or_abort:
        return code == ErrorCode.NoSuchTransaction and not has_write_concern_error
    return code in RETRIABLE or code == ErrorCode.NoSuchTransaction


def _block(request: Request, data: Mapping[str, Any]) -> None:
    if "blockTimeMS" not in data:
        raise CommandError(ErrorCode.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
    millis = _integer(data["blockTimeMS"], "blockTimeMS")
    if millis < 0:
        raise CommandError(ErrorCode.InvalidOptions, "'blockTimeMS' must be non-negative")
    interrupt.wait_until(time.monotonic() + millis / 1000.0)


def _error(data: Mapping[str, Any], code: int, labels: list[str]) -> dict[str, Any]:
    extra = data.get("errorExtraInfo")
    error = CommandError(code, _MESSAGE, **(dict(extra) if isinstance(extra, Mapping) else {}))
    error.labels = labels
    return error.to_reply()


def _set_labels(reply: dict[str, Any], labels: list[str]) -> None:
    if labels:
        reply["errorLabels"] = labels
    else:
        reply.pop("errorLabels", None)


def configured() -> bool:
    """Has any engine of this process had fail points (which only the general path fires)?"""
    return _configured


def run(request: Request, cmd: Mapping[str, Any], call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The reply to ``cmd``: ``call()``'s, as the engine's fail points change it."""
    if not _configured:  # no engine ever had fail points: the usual case, without a weak-key lookup
        return call()
    points = _REGISTRY.get(request.engine)
    if points is None or not points.points:
        return call()
    name = request.command_name
    override: list[str] | None = None
    data = points.fire(
        FAIL_COMMAND,
        lambda d: (
            _applies(request, cmd, d)
            and (_flag(d, "closeConnection") or _flag(d, "blockConnection") or "errorCode" in d)
        ),
    )
    if data is not None:
        labels = data.get("errorLabels")
        override = [str(label) for label in labels] if isinstance(labels, list) else None
        if _flag(data, "blockConnection"):
            _block(request, data)
        if _flag(data, "closeConnection"):
            return ClosedConnection(CommandError(_CLOSED_CODE, _MESSAGE).to_reply())
        if "errorCode" in data:
            code = _integer(data["errorCode"], "errorCode")
            return _error(data, code, override if override is not None else error_labels(cmd, name, code, None))
    close_after, failed = _transactional_write(request, points, cmd)
    if failed is not None:
        return failed
    reply = call()
    if takes_write_concern(name, cmd):  # a writeConcernError follows only those
        concern = points.fire(FAIL_COMMAND, lambda d: _applies(request, cmd, d) and "writeConcernError" in d)
        if concern is not None:
            problem = concern["writeConcernError"]
            # A copy: a retryable write's reply is also its stored reply, which a retry gets without the error.
            reply = {**reply, "writeConcernError": problem}
            failed_code = reply.get("code") if reply.get("ok") != 1.0 else None
            wc_code = problem.get("code") if isinstance(problem, Mapping) else None
            computed = list(reply.get("errorLabels", []))
            computed += [label for label in error_labels(cmd, name, failed_code, wc_code) if label not in computed]
            _set_labels(reply, override if override is not None else computed)
    elif override is not None and reply.get("ok") != 1.0:
        _set_labels(reply, override)
    if close_after and _stored(request, cmd):  # stored now: it committed
        return ClosedConnection(reply)
    return reply


# -- failGetMoreAfterCursorCheckout -----------------------------------------------------------------


def after_cursor_checkout(request: Request, cmd: Mapping[str, Any], ns: str) -> None:
    """Evaluate failGetMoreAfterCursorCheckout in a getMore that holds its
    cursor (of namespace ``ns``): raise its ``errorCode`` (InternalError
    without one) when it fires."""
    points = _REGISTRY.get(request.engine)
    if points is None or FAIL_GET_MORE_AFTER_CURSOR_CHECKOUT not in points.points:
        return
    data = points.fire(
        FAIL_GET_MORE_AFTER_CURSOR_CHECKOUT, lambda d: _applies(request, cmd, {**d, "failCommands": ["getMore"]}, ns)
    )
    if data is not None:
        code = _integer(data["errorCode"], "errorCode") if "errorCode" in data else ErrorCode.InternalError
        raise CommandError(code, "Hit the 'failGetMoreAfterCursorCheckout' failpoint")


# -- maxTimeAlwaysTimeOut, maxTimeNeverTimeOut ---------------------------------------------------


def deadline_set(request: Request, op: interrupt.Operation) -> None:
    """Evaluate the maxTime fail points for ``op``, just given a deadline."""
    if not _configured:
        return
    points = _REGISTRY.get(request.engine)
    if points is None or not points.points:
        return
    if points.fire(MAX_TIME_NEVER_TIME_OUT, lambda d: True) is not None:
        op.deadline = None
    elif points.fire(MAX_TIME_ALWAYS_TIME_OUT, lambda d: True) is not None:
        raise CommandError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")


# -- onPrimaryTransactionalWrite -------------------------------------------------------------------


def _statements(name: str, cmd: Mapping[str, Any]) -> int:
    field_name = {"insert": "documents", "update": "updates", "delete": "deletes", "bulkWrite": "ops"}.get(name)
    if field_name is None:
        return 1  # findAndModify
    statements = cmd.get(field_name)
    return len(statements) if isinstance(statements, list) else 0


def _transactional_write(
    request: Request, points: FailPoints, cmd: Mapping[str, Any]
) -> tuple[bool, dict[str, Any] | None]:
    """Evaluate onPrimaryTransactionalWrite for a retryable write about to
    run: (whether to close the connection once it has committed, the reply
    of a statement failed before its commit)."""
    name = request.command_name
    if name not in _RETRYABLE_WRITES or "txnNumber" not in cmd or "autocommit" in cmd or "lsid" not in cmd:
        return False, None
    if ON_PRIMARY_TRANSACTIONAL_WRITE not in points.points or _stored(request, cmd):
        return False, None  # a retry answered from the stored reply executes no statement
    close_after = False
    for _ in range(_statements(name, cmd)):
        data = points.fire(ON_PRIMARY_TRANSACTIONAL_WRITE, lambda d: True)
        if data is None:
            continue
        close = data.get("closeConnection", True) is not False
        if "failBeforeCommitExceptionCode" in data:
            code = _integer(data["failBeforeCommitExceptionCode"], "failBeforeCommitExceptionCode")
            error = CommandError(
                code,
                f"Failing write for {cmd['lsid']}:{cmd['txnNumber']} due to failpoint. "
                "The write must not be reflected.",
            )
            error.labels = error_labels(cmd, name, error.code, None)
            reply = error.to_reply()
            return False, ClosedConnection(reply) if close else reply
        close_after = close_after or close
    return close_after, None


def _stored(request: Request, cmd: Mapping[str, Any]) -> bool:
    """Whether the session holds the reply of this retryable write (it ran and committed)."""
    session = request.engine.sessions.find(cmd["lsid"])
    return session is not None and session.retryable is not None and session.retryable[0] == cmd["txnNumber"]


def closes_connection(reply: Mapping[str, Any]) -> bool:
    """Whether ``reply`` must not be sent: the connection closes instead."""
    return isinstance(reply, ClosedConnection)
