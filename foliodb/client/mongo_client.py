"""``foliodb.MongoClient``: pymongo's MongoClient over an embedded engine.

``MongoClient("./data")`` opens (or creates) a dbpath directory in this
process; ``MongoClient(":memory:")`` an in-memory database that vanishes with
the client. Every operation becomes a MongoDB command run by the same
executor the wire server uses.

Sessions are pymongo's (:mod:`foliodb.client.session`). What an embedded
client leaves out of pymongo's commands, because nothing in process needs it
and it costs time on every call: ``$clusterTime`` gossip (one node has no
other member's time to learn), an implicit ``lsid`` on commands without an
explicit session, and retryable writes' ``txnNumber`` (no connection can be
lost between a write and its reply). ``retryWrites=True`` given explicitly
restores the last two exactly as pymongo sends them: implicit sessions from
the client's pool of server sessions, and a ``txnNumber`` on every
retryable write command.

A reply that fails as a failing server's would (a fail point's error, write
concern error or closed connection) is retried as pymongo retries it
(:mod:`foliodb.client.retry`); a successful reply costs one check.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pymongo
import pymongo.database
from bson.codec_options import CodecOptions
from pymongo import common
from pymongo.client_options import ClientOptions
from pymongo.client_session_shared import (
    SessionOptions,
    TransactionOptions,
    _EmptyServerSession,
    _ServerSession,
    _ServerSessionPool,
    _validate_session_write_concern,
)
from pymongo.errors import ConfigurationError, InvalidOperation
from pymongo.helpers_shared import _RetryPolicy
from pymongo.monitoring import CommandListener
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import ReadPreference, _ServerMode
from pymongo.results import ClientBulkWriteResult
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply, retry
from foliodb.client.arguments import command_doc
from foliodb.client.client_bulk import ClientBulk
from foliodb.client.command_cursor import CommandCursor
from foliodb.client.database import Database
from foliodb.client.driver_hooks import DriverHooks
from foliodb.client.monitoring import publish_command_events
from foliodb.client.remote import SharedExecutor
from foliodb.client.retry import Kind
from foliodb.client.session import ClientSession, NodeDescription
from foliodb.client.topology import SingleNode
from foliodb.commands import Executor
from foliodb.commands.executor import PointHandler
from foliodb.commands.failpoints import closes_connection
from foliodb.commands.replication import ReplicaSet
from foliodb.errors import CommandError, ErrorCode

DEFAULT_PATH = "./foliodb-data"

# Options of the embedded client that pymongo does not have.
_FOLIODB_OPTIONS = ("ttlmonitorsleepsecs", "read_only", "noscripting")
# Spellings the embedded client has always taken that pymongo's MongoClient refuses (it wants journal=).
_ALIASES = {"j": "journal"}


# pymongo declares _topology as an attribute; the hooks answer it with a property that raises.
class MongoClient(DriverHooks, SingleNode, pymongo.MongoClient[Any]):  # type: ignore[misc]
    """pymongo's ``MongoClient`` over an embedded dbpath.

    An instance of ``pymongo.MongoClient`` (so gridfs and libraries that check
    for one accept it) whose pymongo ``__init__`` never runs: no topology, no
    monitor threads, no sockets. Options are parsed and validated by pymongo
    (``client.options`` is pymongo's ``ClientOptions``); every public method
    is the facade's own. https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html
    """

    HOST = DEFAULT_PATH
    PORT = 0

    def __init__(
        self,
        host: str | Sequence[str] | None = None,
        port: int | None = None,
        document_class: type | None = None,
        tz_aware: bool | None = None,
        connect: bool | None = None,
        type_registry: Any = None,
        **kwargs: Any,
    ) -> None:
        path = _dbpath(host)
        foliodb_options = {key.lower(): kwargs.pop(key) for key in list(kwargs) if key.lower() in _FOLIODB_OPTIONS}
        for key in [key for key in kwargs if key.lower() in _ALIASES]:
            kwargs.setdefault(_ALIASES[key.lower()], kwargs.pop(key))
        keyword_opts = common._CaseInsensitiveDictionary(kwargs)
        # Retryable writes only when asked for by name (see the module docstring); then pymongo's.
        keyword_opts.setdefault("retrywrites", False)
        keyword_opts["document_class"] = document_class or dict
        keyword_opts["tz_aware"] = bool(tz_aware)
        if type_registry is not None:
            keyword_opts["type_registry"] = type_registry
        # pymongo's own parsing and validation of its options (deprecated names, types, conflicts).
        opts = self._validate_kwargs_and_update_opts(keyword_opts, common._CaseInsensitiveDictionary())
        opts = self._normalize_and_validate_options(opts, set())
        self._options = ClientOptions(opts.get("username"), opts.get("password"), None, opts)
        if self._options.auto_encryption_opts is not None:
            raise ConfigurationError("client-side field level encryption is not available on the embedded client")
        common.BaseObject.__init__(
            self,
            self._options.codec_options,
            self._options.read_preference,
            self._options.write_concern,
            self._options.read_concern,
        )
        self._timeout = self._options.timeout
        self._encrypter = None  # pymongo's cursors look for client-side encryption before each batch
        self._path = path
        try:
            # An embedded engine answers as a one-member replica set's primary: transactions, retryable writes.
            # A dbpath another process owns is reached through the owner (foliodb.client.remote);
            # noscripting=True: no server-side JavaScript, as `foliodb serve --noscripting`.
            javascript = not foliodb_options.get("noscripting")
            self._executor: Executor | SharedExecutor = (
                Executor.open(path, ReplicaSet(), javascript=javascript)
                if path == ":memory:"
                else SharedExecutor(path, read_only=bool(foliodb_options.get("read_only")), javascript=javascript)
            )
        except CommandError as exc:
            _reply.check(exc.to_reply())
            raise
        self._closed = False
        self._retry_writes: bool = self._options.retry_writes
        self._retry_policy = _RetryPolicy(attempts=self._options.max_adaptive_retries)  # backpressure's backoff
        # The executor, told the client's appName as a server learns it from the handshake (fail points match it).
        # Its operations carry the client's id (owner): close() stops those still running.
        app_name = self._options.pool_options.metadata.get("application", {}).get("name")
        self._app_name: str | None = app_name
        named = {} if app_name is None else {"app_name": app_name}
        self._run: Callable[[str, Mapping[str, Any]], dict[str, Any]] = functools.partial(
            self._executor.execute, owner=id(self), **named
        )
        # pymongo's pool of server sessions (lsid and txnNumber), the topology's on a pymongo client.
        self._server_session_pool = _ServerSessionPool()
        self._node_description: NodeDescription | None = None
        # pymongo's command monitoring: listeners see every command this client runs.
        listeners: list[Any] = self._options.event_listeners
        self._command_listeners = [listener for listener in listeners if isinstance(listener, CommandListener)]
        if "ttlmonitorsleepsecs" in foliodb_options:
            seconds = foliodb_options["ttlmonitorsleepsecs"]
            _reply.check(self._execute("admin", {"setParameter": 1, "ttlMonitorSleepSecs": seconds}))

    # -- plumbing ------------------------------------------------------------------------

    def _execute(
        self,
        db: str,
        cmd: dict[str, Any],
        session: Any = None,
        *,
        read_concern: ReadConcern | None = None,
        read_preference: _ServerMode | None = ReadPreference.PRIMARY,
        retryable_write: bool = False,
        write_concern: WriteConcern | None = None,
        kind: Kind = "write",
    ) -> dict[str, Any]:
        """Run ``cmd`` on ``db`` in ``session`` (else the bound session, else an
        implicit one when retryable writes are on), as pymongo's connection
        sends a command: ``read_concern`` is a read's concern (pymongo adds
        it, and a session's afterClusterTime, outside transactions only);
        ``read_preference`` None is a read's, the running transaction's (which
        must be primary); ``retryable_write`` asks for a txnNumber; an
        unacknowledged ``write_concern`` refuses an explicit session; and
        ``kind`` is what the operation is to pymongo's retry rules
        (:mod:`foliodb.client.retry`). A lost connection raises pymongo's
        AutoReconnect; any other reply is returned, for the caller to check."""
        if self._closed:
            raise InvalidOperation("Cannot use MongoClient after close")
        if session is None:
            session = self._get_bound_session()
            if session is None:
                if not self._retry_writes or (write_concern is not None and not write_concern.acknowledged):
                    if read_concern is not None and read_concern.level:
                        cmd["readConcern"] = read_concern.document
                    # _send, inlined: every command without a session comes here.
                    if self._command_listeners:
                        reply = publish_command_events(self._command_listeners, self._run, db, cmd)
                    else:
                        reply = self._run(db, cmd)
                    if reply.get("ok") != 1.0:  # an error: pymongo retries a read, or after backpressure
                        return self._retry(db, cmd, reply, kind)
                    return reply
                implicit = self._start_session(True, causal_consistency=False)
                try:
                    return self._in_session(db, cmd, implicit, read_concern, read_preference, retryable_write, kind)
                finally:
                    implicit._end_implicit_session()
        elif not isinstance(session, pymongo.client_session.ClientSession):
            raise ValueError(f"'session' argument must be a ClientSession or None, not {type(session)}")
        if session._client is not self:
            raise InvalidOperation("Can only use session with the MongoClient that started it")
        if _validate_session_write_concern(session, write_concern) is None:
            if read_concern is not None and read_concern.level:
                cmd["readConcern"] = read_concern.document
            # An implicit session a cursor holds, with a w: 0 write: sent outside any session.
            reply = self._send(db, cmd)
            if retry.failed(reply):
                return self._retry(db, cmd, reply, kind)
            return reply
        return self._in_session(db, cmd, session, read_concern, read_preference, retryable_write, kind)

    def _in_session(
        self,
        db: str,
        cmd: dict[str, Any],
        session: ClientSession,
        read_concern: ReadConcern | None,
        read_preference: _ServerMode | None,
        retryable_write: bool,
        kind: Kind,
    ) -> dict[str, Any]:
        # pymongo's order: server selection resets a finished transaction's state, a retryable
        # write takes the next txnNumber (once: a retry sends the same one), _apply_to stamps the
        # command, the read concern follows.
        in_transaction = session.in_transaction
        if not in_transaction:
            session._transaction.reset()
        retryable = retryable_write and self._retry_writes and not in_transaction
        if retryable:
            session._start_retryable_write()
        attempts: retry.Attempts | None = None
        while True:
            reply = self._attempt(db, cmd, session, read_concern, read_preference, retryable, in_transaction)
            if not retry.failed(reply):
                return reply
            if attempts is None:
                eligible = retryable or (kind == "read" and not in_transaction)
                attempts = retry.Attempts(self._options, self._retry_policy, kind, eligible, session)
            if not attempts.again(reply):
                return dict(attempts.outcome(reply))

    def _attempt(
        self,
        db: str,
        cmd: dict[str, Any],
        session: ClientSession,
        read_concern: ReadConcern | None,
        read_preference: _ServerMode | None,
        retryable_write: bool,
        in_transaction: bool,
    ) -> dict[str, Any]:
        """One attempt of ``cmd`` in ``session``, stamped as pymongo's _apply_to stamps it (a retry
        again: a transaction may be starting again); the raw reply, a ClosedConnection included."""
        node = self._node
        preference = read_preference or session._txn_read_preference() or ReadPreference.PRIMARY
        session._apply_to(cmd, retryable_write, preference, node)  # type: ignore[arg-type]
        if read_concern is not None and not in_transaction:
            if read_concern.level:
                cmd["readConcern"] = read_concern.document
            session._update_read_concern(cmd, node)  # type: ignore[arg-type]
        if session._starting_transaction:
            session._transaction.set_in_progress()
        reply = self._send(db, cmd)
        if closes_connection(reply):
            return reply
        session._process_response(reply)
        if session.in_transaction and not retry.failed(reply):
            session._transaction.has_completed_command = True  # a backpressure retry no longer restarts it
        return reply

    def _retry(self, db: str, cmd: dict[str, Any], reply: dict[str, Any], kind: Kind) -> dict[str, Any]:
        """After the failed first reply of a command sent outside any session: pymongo's retries
        (a read's only: a retryable write needs a session)."""
        attempts = retry.Attempts(self._options, self._retry_policy, kind, kind == "read", None)
        while attempts.again(reply):
            reply = self._send(db, cmd)
            if not retry.failed(reply):
                return reply
        return dict(attempts.outcome(reply))

    def _open_cursor(
        self, db: str, cmd: dict[str, Any], session: Any, **how: Any
    ) -> tuple[Mapping[str, Any], ClientSession | None]:
        """A cursor-opening command's checked reply, and the session its cursor keeps: the given
        or bound one, or an implicit one while the server cursor stays open (pymongo's)."""
        session = self._ensure_session(session)
        try:
            reply = _reply.check(self._execute(db, cmd, session, **how))
        except BaseException:
            if session is not None and session._implicit:
                session._end_implicit_session()
            raise
        cursor = reply.get("cursor")
        if session is not None and session._implicit and not (isinstance(cursor, Mapping) and cursor.get("id")):
            session._end_implicit_session()
            session = None
        return reply, session

    def _pointable(self) -> bool:
        """Would :meth:`_execute` send a command of no session as it is, unwatched? Then
        :meth:`_point` may run it (no retryable writes' session, no command listeners, no
        appName for fail points to match, no bound session; open)."""
        return not (
            self._closed
            or self._retry_writes
            or self._command_listeners
            or self._app_name is not None
            or self._get_bound_session()
        )

    def _point(
        self,
        db: str,
        cmd: dict[str, Any],
        handler: PointHandler,
        kind: Kind,
        general: Callable[[], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """``_execute(db, cmd)`` when :meth:`_pointable`, for a command sent with the default
        read and write concerns (the caller checks those), through the executor's point path
        (``Executor.point``); ``general``: the command the general path runs instead of
        ``cmd``, when the point path declines or is retried (``Executor.point``'s)."""
        reply = self._executor.point(db, cmd, handler, id(self), general)
        if reply.get("ok") != 1.0:  # an error: pymongo retries a read, or after backpressure
            return self._retry(db, cmd if general is None else general(), reply, kind)
        return reply

    def _send(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        """One attempt: the executor's reply, a ClosedConnection included."""
        if self._command_listeners:
            return publish_command_events(self._command_listeners, self._run, db, cmd)
        return self._run(db, cmd)

    @property
    def _node(self) -> NodeDescription:
        """What the node tells pymongo's sessions: its session timeout, from its hello."""
        if self._node_description is None:
            hello = _reply.check(self._executor.execute("admin", {"hello": 1}))
            self._node_description = NodeDescription(int(hello["logicalSessionTimeoutMinutes"]))
        return self._node_description

    # -- sessions ---------------------------------------------------------------------------

    def _start_session(self, implicit: bool, **kwargs: Any) -> ClientSession:
        return ClientSession(self, _EmptyServerSession(), SessionOptions(**kwargs), implicit)

    def _ensure_session(self, session: Any = None) -> ClientSession | None:
        """pymongo's: the given or bound session, else an implicit one (when retryable writes are on)."""
        session = session or self._get_bound_session()
        if session or not self._retry_writes:
            return session
        return self._start_session(True, causal_consistency=False)

    def _return_server_session(self, server_session: _ServerSession | _EmptyServerSession) -> None:
        if isinstance(server_session, _ServerSession):
            self._server_session_pool.return_server_session(server_session)

    def start_session(
        self,
        causal_consistency: bool | None = None,
        default_transaction_options: TransactionOptions | None = None,
        snapshot: bool | None = False,
    ) -> ClientSession:
        """A ClientSession (pymongo's class): causally consistent by default, or a snapshot session;
        its transactions run on the embedded engine.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        if self._closed:
            raise InvalidOperation("Cannot use MongoClient after close")
        return self._start_session(
            False,
            causal_consistency=causal_consistency,
            default_transaction_options=default_transaction_options,
            snapshot=snapshot,
        )

    # -- properties ------------------------------------------------------------------------

    @property
    def dbpath(self) -> str:
        """The directory this client opened (or ``:memory:``)."""
        return self._path

    @property
    def admin(self) -> Database:
        """The ``admin`` database.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return Database(self, "admin")

    def __getattr__(self, name: str) -> Database:
        if name.startswith("_"):
            raise AttributeError(
                f"MongoClient has no attribute {name!r}. To access the {name} database, use client[{name!r}]."
            )
        return Database(self, name)

    def __getitem__(self, name: str) -> Database:
        return Database(self, name)

    def get_database(
        self,
        name: str | None = None,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Database:
        """The named Database with these options; unset ones are the client's.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        if name is None:
            return self.get_default_database()
        return Database(self, name, codec_options, read_preference, write_concern, read_concern)

    def get_default_database(
        self,
        default: str | None = None,
        codec_options: CodecOptions[Any] | None = None,
        read_preference: Any = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> Database:
        """The database ``default``, else ``test`` (a dbpath names no default database).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return self.get_database(default or "test", codec_options, read_preference, write_concern, read_concern)

    def eq_props(self) -> tuple[Any, ...]:
        """What makes two clients equal: the engine (one per open dbpath) they share."""
        return (self._executor.engine,)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MongoClient):
            return self.eq_props() == other.eq_props()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.eq_props())

    def __repr__(self) -> str:
        return f"MongoClient({self._path!r})"

    def __enter__(self) -> MongoClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- operations -----------------------------------------------------------------------

    def list_databases(self, session: Any = None, comment: Any = None, **kwargs: Any) -> CommandCursor:
        """A cursor over the ``listDatabases`` entries (name, sizeOnDisk, empty).

        https://www.mongodb.com/docs/manual/reference/command/listDatabases/"""
        cmd = command_doc({"listDatabases": 1}, kwargs, comment=comment)
        reply = _reply.check(self._execute("admin", cmd, session, kind="read"))
        cursor = {"cursor": {"id": 0, "firstBatch": reply["databases"], "ns": "admin.$cmd"}, "ok": 1.0}
        return CommandCursor(self.admin["$cmd"], cursor)

    def list_database_names(self, session: Any = None, comment: Any = None) -> list[str]:
        """The names of the databases that hold data.

        https://www.mongodb.com/docs/manual/reference/command/listDatabases/"""
        return [db["name"] for db in self.list_databases(session, nameOnly=True, comment=comment)]

    def drop_database(
        self, name_or_database: str | pymongo.database.Database[Any], session: Any = None, comment: Any = None
    ) -> None:
        """Drop a database and its collections (the ``dropDatabase`` command).

        https://www.mongodb.com/docs/manual/reference/command/dropDatabase/"""
        name = name_or_database.name if isinstance(name_or_database, pymongo.database.Database) else name_or_database
        if not isinstance(name, str):
            raise TypeError("name_or_database must be an instance of str or a Database")
        concern = self._write_concern_for(session)
        cmd = command_doc({"dropDatabase": 1}, comment=comment, writeConcern=concern.document or None)
        _reply.check(self._execute(name, cmd, session, write_concern=concern))

    def bulk_write(
        self,
        models: Sequence[Any],
        session: Any = None,
        ordered: bool = True,
        verbose_results: bool = False,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        write_concern: WriteConcern | None = None,
    ) -> ClientBulkWriteResult:
        """Inserts, updates and deletes across collections in one command
        (pymongo 4.9+'s ``MongoClient.bulk_write``)."""
        bound = session or self._get_bound_session()
        if bound is not None and bound.in_transaction:
            # pymongo's: the bulk inherits the transaction's write concern.
            if write_concern:
                raise InvalidOperation("Cannot set write concern after starting a transaction")
            opts = bound._transaction.opts
            assert opts is not None and opts.write_concern is not None  # start_transaction inherits the client's
            concern = opts.write_concern
        else:
            concern = write_concern or self._write_concern
        if not concern.acknowledged and verbose_results:
            raise InvalidOperation("Cannot request unacknowledged write concern and verbose results")
        if not concern.acknowledged and ordered:
            raise InvalidOperation("Cannot request unacknowledged write concern and ordered writes")
        common.validate_list("models", models)
        bulk = ClientBulk(self, concern, ordered, bypass_document_validation, comment, let, verbose_results, session)
        for model in models:
            try:
                model._add_to_client_bulk(bulk)
            except AttributeError:
                raise TypeError(f"{model!r} is not a valid request") from None
        return bulk.execute()

    def watch(self, pipeline: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A change stream of this client's changes (pymongo's ``watch`` arguments).

        https://www.mongodb.com/docs/manual/changeStreams/"""
        from foliodb.client import change_stream  # it imports the cursor module, which imports this one

        return change_stream.watch(change_stream.ClusterChangeStream, self, pipeline, *args, **kwargs)

    def server_info(self, session: Any = None) -> dict[str, Any]:
        """The ``buildInfo`` command's reply (version, versionArray...).

        https://www.mongodb.com/docs/manual/reference/command/buildInfo/"""
        # pymongo's runs it as admin.command(...)
        return dict(_reply.check(self._execute("admin", {"buildinfo": 1}, session, kind="runCommand")))

    def close(self) -> None:
        """Close the engine and release the dbpath; later operations raise InvalidOperation.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        if self._closed:
            return
        # As pymongo: the pooled server sessions end with the client (their open transactions abort).
        ids = self._server_session_pool.pop_all()
        for start in range(0, len(ids), common._MAX_END_SESSIONS):
            self._send("admin", {"endSessions": ids[start : start + common._MAX_END_SESSIONS]})
        self._closed = True
        # As mongod when a client disconnects: its operations still running stop (ClientDisconnect).
        self._executor.kill_operations(ErrorCode.ClientDisconnect, owner=id(self))
        self._executor.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            # At interpreter shutdown the storage may already be gone.
            with contextlib.suppress(Exception):
                self.close()


def _dbpath(host: str | Sequence[str] | None) -> str:
    """The dbpath ``host`` names: a string, or a list of one (as mongoengine passes it)."""
    if host is None:
        return DEFAULT_PATH
    if isinstance(host, (list, tuple)) and len(host) == 1:
        host = host[0]
    if not isinstance(host, str):
        raise TypeError("host must be a dbpath string (a directory, or ':memory:')")
    if host.startswith(("mongodb://", "mongodb+srv://")):
        raise ValueError(
            "foliodb.MongoClient opens a local dbpath; for a MongoDB server use foliodb.connect(uri), "
            "which returns a pymongo.MongoClient"
        )
    return host


def connect(target: str = DEFAULT_PATH, **kwargs: Any) -> Any:
    """A client for ``target``: a ``mongodb://`` or ``mongodb+srv://`` URI
    gives a ``pymongo.MongoClient`` (a real server or cluster), anything else
    is a dbpath opened embedded. Code written against one runs on the other."""
    if target.startswith(("mongodb://", "mongodb+srv://")):
        return pymongo.MongoClient(target, **kwargs)
    return MongoClient(target, **kwargs)
