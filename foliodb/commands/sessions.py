"""Sessions, transactions and retryable writes as a replica set member runs them.

Every command carrying ``lsid`` touches its server session
(:mod:`foliodb.engine.sessions`). With ``txnNumber`` it is either

* a statement of a multi-document transaction (``autocommit: false``; the
  first also ``startTransaction: true``): it runs in the transaction's
  snapshot and writes to its overlay (:mod:`foliodb.engine.transactions`);
  ``commitTransaction`` and ``abortTransaction`` end it. Any error aborts
  the transaction, as mongod does; WriteConflict and NoSuchTransaction carry
  the TransientTransactionError label; or
* a retryable write (no ``autocommit``): executed at most once per
  (session, txnNumber) - its reply is stored in the write's own SQLite
  transaction, and a retry (after a lost reply, a closed connection or a
  crash) gets the stored reply without running again.

A standalone persona refuses ``txnNumber`` (IllegalOperation), as a
standalone mongod does. The session commands (``startSession``,
``endSessions``, ``refreshSessions``, ``killSessions``, ``killAllSessions``)
and ``$listLocalSessions`` live here too.

Manual: https://www.mongodb.com/docs/manual/core/transactions/ ,
https://www.mongodb.com/docs/manual/core/retryable-writes/ ,
https://github.com/mongodb/specifications/blob/master/source/transactions/transactions.md
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bson import Int64, Timestamp
from bson.binary import Binary, UuidRepresentation

from foliodb.auth.caller import CALLER
from foliodb.commands.registry import COMMANDS
from foliodb.engine.sessions import ServerSession, lsid_key
from foliodb.engine.transactions import TRANSIENT, State, Transaction, WriteConflictError
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

Handler = Callable[["Request", Mapping[str, Any]], dict[str, Any]]

# What mongod runs inside a transaction (the rest: OperationNotSupportedInTransaction).
IN_TRANSACTION = frozenset(
    {
        "find",
        "getMore",
        "killCursors",
        "aggregate",
        "distinct",
        "insert",
        "update",
        "delete",
        "findAndModify",
        "findandmodify",
        "bulkWrite",
        "create",
        "createIndexes",
        "commitTransaction",
        "abortTransaction",
    }
)
RETRYABLE = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite"})


def _no_such_transaction(number: int, active: int) -> CommandError:
    error = CommandError(
        ErrorCode.NoSuchTransaction,
        f"Given transaction number {number} does not match any in-progress transactions. "
        f"The active transaction number is {active}",
    )
    error.labels.append(TRANSIENT)
    return error


def _txn_number(cmd: Mapping[str, Any]) -> int:
    number = cmd["txnNumber"]
    if isinstance(number, bool) or not isinstance(number, int):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'txnNumber' is the wrong type, expected type 'long'")
    if number < 0:
        raise CommandError(ErrorCode.BadValue, f"txnNumber {number} is not >= 0")
    return int(number)


def run(request: Request, handler: Handler, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """Run ``cmd`` (which carries ``lsid``) in its session."""
    engine = request.engine
    session = engine.sessions.touch(cmd["lsid"], _owner(), request.lsid)
    if "txnNumber" not in cmd:
        if "autocommit" in cmd or "startTransaction" in cmd:
            raise CommandError(
                ErrorCode.InvalidOptions, "txnNumber must be specified with autocommit or startTransaction"
            )
        return handler(request, cmd)
    if request.executor.replica_set is None:
        raise CommandError(
            ErrorCode.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos"
        )
    number = _txn_number(cmd)
    autocommit = cmd.get("autocommit")
    if autocommit is None:
        if cmd.get("startTransaction"):
            raise CommandError(ErrorCode.InvalidOptions, "'autocommit' field must be false when starting a transaction")
        return _retryable(request, handler, cmd, session, number)
    if autocommit is not False:
        raise CommandError(ErrorCode.InvalidOptions, "autocommit field can only be specified as false")
    return _statement(request, handler, cmd, session, number)


# -- transactions ---------------------------------------------------------------------


def _statement(
    request: Request, handler: Handler, cmd: Mapping[str, Any], session: ServerSession, number: int
) -> dict[str, Any]:
    engine = request.engine
    name = request.command_name
    if name not in IN_TRANSACTION:
        raise CommandError(
            ErrorCode.OperationNotSupportedInTransaction, f"Cannot run '{name}' in a multi-document transaction."
        )
    if number < session.txn_number:
        raise CommandError(
            ErrorCode.TransactionTooOld,
            f"Cannot start transaction {number} on session {_shown(session)} because a newer transaction "
            f"{session.txn_number} has already started.",
        )
    if cmd.get("startTransaction"):
        txn = _start(request, cmd, session, number)
    else:
        current = session.txn if session.txn_number_of_txn == number else None
        if current is None:
            raise _no_such_transaction(number, session.txn_number)
        txn = current
        if "readConcern" in cmd:
            raise CommandError(
                ErrorCode.InvalidOptions, "Only the first command in a transaction may specify a readConcern"
            )
        if txn.state is State.ABORTED:
            raise _no_such_transaction(number, session.txn_number)
        if txn.state is State.COMMITTED:
            if name == "commitTransaction":
                return {"ok": 1.0}  # a retried commit of a committed transaction succeeds again
            raise CommandError(ErrorCode.TransactionCommitted, f"Transaction {number} has been committed.")
    if "writeConcern" in cmd and name not in ("commitTransaction", "abortTransaction"):
        engine.abort_transaction(txn)
        raise CommandError(ErrorCode.InvalidOptions, "Cannot set write concern after starting a transaction.")
    if name == "commitTransaction":
        try:
            engine.commit_transaction(txn)
        except WriteConflictError as conflict:
            return conflict.error.to_reply()
        return {"ok": 1.0}
    if name == "abortTransaction":
        engine.abort_transaction(txn)
        return {"ok": 1.0}
    if name == "aggregate" and _writes(cmd):
        engine.abort_transaction(txn)
        raise CommandError(
            ErrorCode.OperationNotSupportedInTransaction, "$out and $merge are not allowed in a transaction"
        )
    first = _first_stage(cmd) if name == "aggregate" else None
    if first in _NOT_IN_TRANSACTION:
        engine.abort_transaction(txn)
        raise CommandError(
            ErrorCode.OperationNotSupportedInTransaction,
            f"Operation not permitted in transaction :: caused by :: Stage not supported inside of a "
            f"multi-document transaction: {first}",
        )
    storage = engine.storage
    storage.bind_transaction(txn.view)
    try:
        reply = handler(request, cmd)
    except WriteConflictError as conflict:
        engine.abort_transaction(txn)
        return conflict.error.to_reply()
    except BaseException:
        engine.abort_transaction(txn)
        raise
    finally:
        storage.bind_transaction(None)
        storage.end_view()
    if reply.get("ok") != 1.0 or reply.get("writeErrors"):
        engine.abort_transaction(txn)  # any error aborts the transaction, as in mongod
    return reply


def _start(request: Request, cmd: Mapping[str, Any], session: ServerSession, number: int) -> Transaction:
    engine = request.engine
    if session.txn_number == number:
        raise CommandError(
            ErrorCode.ConflictingOperationInProgress,
            f"Cannot start transaction {number} on session {_shown(session)} because a transaction with the same "
            "number has already started",
        )
    concern = cmd.get("readConcern")
    level = concern.get("level") if isinstance(concern, Mapping) else None
    if level not in (None, "local", "majority", "snapshot"):
        raise CommandError(
            ErrorCode.InvalidOptions,
            "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in a transaction: "
            f"{level}",
        )
    previous = session.txn
    if previous is not None:
        engine.abort_transaction(previous)
    txn = engine.begin_transaction({"readConcern": concern})
    txn.lsid, txn.number = dict(cmd["lsid"]), Int64(number)
    session.txn, session.txn_number, session.txn_number_of_txn = txn, number, number
    return txn


# Source stages mongod refuses in a transaction (their LiteParsed transactionNotSupported).
_NOT_IN_TRANSACTION = frozenset({"$listLocalSessions", "$listSessions"})


def _first_stage(cmd: Mapping[str, Any]) -> str | None:
    stages = cmd.get("pipeline")
    if isinstance(stages, list) and stages and isinstance(stages[0], Mapping) and len(stages[0]) == 1:
        return str(next(iter(stages[0])))
    return None


def _writes(cmd: Mapping[str, Any]) -> bool:
    stages = cmd.get("pipeline")
    return (
        isinstance(stages, list)
        and bool(stages)
        and isinstance(stages[-1], Mapping)
        and ("$out" in stages[-1] or "$merge" in stages[-1])
    )


def _shown(session: ServerSession) -> str:
    return f"{uuid.UUID(bytes=session.key)} - "


# -- retryable writes ---------------------------------------------------------------------


def _retryable(
    request: Request, handler: Handler, cmd: Mapping[str, Any], session: ServerSession, number: int
) -> dict[str, Any]:
    name = request.command_name
    if name not in RETRYABLE:
        raise CommandError(
            ErrorCode.InvalidOptions,
            f"txnNumber may only be provided for multi-document transactions and retryable write commands. "
            f"autocommit:false was not provided, and {name} is not a retryable write command.",
        )
    engine = request.engine
    storage = engine.storage
    engine.sessions.load_retryable(session, storage.read_latest)
    if number < session.txn_number:
        raise CommandError(
            ErrorCode.TransactionTooOld,
            f"Retryable write with txnNumber {number} is prohibited on session {_shown(session)} because a newer "
            f"retryable write with txnNumber {session.txn_number} has already started on this session.",
        )
    if session.retryable is not None and session.retryable[0] == number:
        return dict(session.retryable[1])  # executed already: answer as the first time
    if session.txn_number_of_txn == number:
        raise CommandError(
            ErrorCode.IncompleteTransactionHistory,
            f"Cannot retry a retryable write with txnNumber {number}: it was used by a transaction",
        )
    session.txn_number = number
    with storage.write():
        reply = handler(request, cmd)
        if reply.get("ok") == 1.0:
            engine.sessions.store_retryable(storage, session, number, reply)
    concern = cmd.get("writeConcern")
    if isinstance(concern, Mapping) and (concern.get("j") or concern.get("fsync")):
        storage.sync()  # the reply's write committed just now (the handler's own sync ran before)
    return reply


# -- readConcern snapshot outside transactions ------------------------------------------------------

SNAPSHOT_READS = frozenset({"find", "aggregate", "distinct"})
# Drivers stamp a snapshot session's readConcern on these too; they go on with their cursor's own.
CURSOR_FOLLOW_UPS = frozenset({"getMore", "killCursors"})


def wants_snapshot(cmd: Mapping[str, Any]) -> bool:
    """A readConcern snapshot command outside a transaction (a snapshot session's, say)."""
    concern = cmd.get("readConcern")
    return (
        concern is not None  # first: the ABC check is slow
        and isinstance(concern, Mapping)
        and concern.get("level") == "snapshot"
        and cmd.get("autocommit") is not False
        and next(iter(cmd), None) not in CURSOR_FOLLOW_UPS
    )


def snapshot_read(request: Request, handler: Handler, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """A find, aggregate or distinct at readConcern snapshot: it reads one
    pinned snapshot (its session's at ``atClusterTime``, or the newest), and
    its reply names that time (``atClusterTime``) for the session's next reads."""
    name = request.command_name
    if name not in SNAPSHOT_READS or request.executor.replica_set is None:
        if request.executor.replica_set is None:
            raise CommandError(
                ErrorCode.NotAReplicaSet, "node needs to be a replica set member to use readConcern: snapshot"
            )
        raise CommandError(
            ErrorCode.InvalidOptions, f'Command {name} does not support {{ readConcern: {{ level: "snapshot" }} }}'
        )
    concern = cmd["readConcern"]
    at = concern.get("atClusterTime")
    if at is not None and not isinstance(at, Timestamp):
        raise CommandError(
            ErrorCode.TypeMismatch,
            "BSON field 'readConcern.atClusterTime' is the wrong type, expected type 'timestamp'",
        )
    engine = request.engine
    view, chosen = engine.snapshot_at(request.lsid, at)
    storage = engine.storage
    storage.bind_transaction(view)
    try:
        reply = handler(request, cmd)
    finally:
        storage.bind_transaction(None)
    cursor = reply.get("cursor")
    if isinstance(cursor, dict):
        cursor["atClusterTime"] = chosen
        if cursor.get("id") and request.lsid is not None:
            request.cursors.attach_snapshot(int(cursor["id"]), view)
    elif reply.get("ok") == 1.0:
        reply["atClusterTime"] = chosen
    if request.lsid is None:
        engine.release_snapshot(view)  # without a session nothing reads this point again
    return reply


# -- session commands ---------------------------------------------------------------------------


def _ids(cmd: Mapping[str, Any], name: str) -> list[bytes]:
    value = cmd[name]
    if not isinstance(value, list):
        raise CommandError(ErrorCode.TypeMismatch, f"BSON field '{name}.{name}' is the wrong type, expected array")
    return [lsid_key(item) for item in value]


@COMMANDS.register("startSession")
def cmd_startSession(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    lsid = {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}
    request.engine.sessions.touch(lsid, _owner())
    return {"id": lsid, "timeoutMinutes": request.engine.sessions.timeout_minutes, "ok": 1.0}


@COMMANDS.register("endSessions")
def cmd_endSessions(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    request.engine.sessions.end(_ids(cmd, "endSessions"))
    return {"ok": 1.0}


@COMMANDS.register("killSessions")
def cmd_killSessions(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    keys = _ids(cmd, "killSessions")
    request.engine.sessions.end(keys)
    request.cursors.kill_sessions(keys)
    return {"ok": 1.0}


@COMMANDS.register("killAllSessions", "killAllSessionsByPattern")
def cmd_killAllSessions(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    request.engine.sessions.end_all()
    request.cursors.kill_sessions(None)
    return {"ok": 1.0}


@COMMANDS.register("refreshSessions")
def cmd_refreshSessions(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    value = cmd["refreshSessions"]
    if not isinstance(value, list):
        raise CommandError(ErrorCode.TypeMismatch, "BSON field 'refreshSessions' is the wrong type, expected array")
    for lsid in value:
        request.engine.sessions.touch(lsid, _owner())
    return {"ok": 1.0}


def _owner() -> tuple[str, str] | None:
    """The (db, user) running the command under access control; None without it."""
    caller = CALLER.get()
    return min(caller.users) if caller is not None and caller.users else None


def listed_sessions(request: Request, all_users: bool, users: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """``$listLocalSessions`` (and ``$listSessions``) documents: every session, those of ``users``,
    or the running user's (without access control: every session, as all belong to no user)."""
    if all_users:
        return request.engine.sessions.listing(None)
    if users:
        return request.engine.sessions.listing(set(users))
    caller = CALLER.get()
    if caller is not None and not caller.users:
        raise CommandError(ErrorCode.Unauthorized, "There is no user authenticated")
    return request.engine.sessions.listing({_owner()})


# The unsigned signature of every $clusterTime (one node signs nothing), shared by every reply
# (nothing changes it): made once. The hash is plain bytes, which BSON encodes as a Binary of
# subtype 0 as mongod sends it (and pymongo decodes into bytes), without the Binary's Python
# ``subtype`` property the encoder would call on every reply.
_SIGNATURE = {"hash": b"\x00" * 20, "keyId": Int64(0)}


def cluster_time_fields(request: Request) -> dict[str, Any]:
    """``operationTime`` and ``$clusterTime`` of a replica set member's replies."""
    ts = request.engine.storage.cluster_time
    return {"operationTime": ts, "$clusterTime": {"clusterTime": ts, "signature": _SIGNATURE}}


@COMMANDS.register("commitTransaction", "abortTransaction")
def cmd_endTransaction(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """Reached only without a transaction's lsid, txnNumber and autocommit (with them, :func:`run` ends it)."""
    if request.db != "admin":
        raise CommandError(
            ErrorCode.Unauthorized, f"{request.command_name} may only be run against the admin database."
        )
    raise CommandError(
        ErrorCode.InvalidOptions,
        f"{request.command_name} must be run within a transaction: lsid, txnNumber and autocommit: false",
    )
