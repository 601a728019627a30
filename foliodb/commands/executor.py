"""Run a command document and answer with MongoDB's reply document.

This is the one path every operation takes, from the embedded facade and from
the wire: ``Executor.execute(db, command)``. It finds the handler, runs it as
one *operation* - registered for ``currentOp``/``killOp``, bound to the thread
for interruption checks (:mod:`foliodb.interrupt`), and reading one storage
snapshot (:mod:`foliodb.engine.storage`) - and turns errors into error
replies, so the two front ends cannot disagree. Commands run concurrently:
nothing here serializes them (writes serialize at the storage's writer). A
bug in FolioDB surfaces as an InternalError reply carrying the Python
exception, never as a traceback in the caller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import bson
from bson import ObjectId

from foliodb import interrupt, lane
from foliodb.auth.caller import CALLER
from foliodb.commands import api_version, failpoints, params, profiler, registry, sessions
from foliodb.commands.cursors import CursorManager
from foliodb.commands.replication import ReplicaSet, with_write_concern_error
from foliodb.engine import usage
from foliodb.engine.catalog import CODEC
from foliodb.engine.engine import Engine, open_engine
from foliodb.engine.sessions import lsid_key
from foliodb.engine.transactions import HeldByTransactionError
from foliodb.errors import CommandError, ErrorCode
from foliodb.interrupt import DEFAULT_JS_HEAP_LIMIT_MB, DEFAULT_JS_HEAP_TOTAL_MB, Operation
from foliodb.query.collation import Collator
from foliodb.query.context import Context
from foliodb.query.expr import Scope, compile_expression, root_variables
from foliodb.query.expr.core import check_variable_name
from foliodb.query.paths import MISSING

if TYPE_CHECKING:
    from foliodb.engine.query import FindExecution

log = logging.getLogger("foliodb")

# A command's point path (commands.find.point_find, commands.insert.point_insert...): its reply,
# or None when the general path must answer.
PointHandler = Callable[["Request", Mapping[str, Any]], "dict[str, Any] | None"]
# The opcounter of each command with a point path (as :meth:`Executor._count` counts it).
_POINT_COUNTERS = {"insert": "insert", "update": "update", "delete": "delete", "find": "query"}


def _await_end(held: HeldByTransactionError) -> None:
    """Wait, out of the lane, for the transaction holding a document to end (killOp and the
    deadline stop the wait)."""
    lane.leave()
    while not held.txn.ended.wait(0.05):
        interrupt.check()


@dataclass
class Request:
    """One command's execution: where it runs and what it may use."""

    executor: Executor
    db: str
    command_name: str
    lsid: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    # What this command's finds examined, for the profiler: None unless it profiles this database.
    scans: ScanTotals | None = None

    def track(self, run: FindExecution) -> FindExecution:
        """Count ``run`` in :attr:`scans` when the profiler is on for this database, or when a
        caller set them (explain, for a stage's finds)."""
        scans = self.scans
        if scans is None:
            profiling = self.engine.profiling
            settings = profiling.get(self.db) if profiling else None
            if settings is None or not settings.level:
                return run
            scans = self.scans = ScanTotals()
        scans.add(run)
        return run

    @property
    def engine(self) -> Engine:
        return self.executor.engine

    @property
    def cursors(self) -> CursorManager:
        return self.executor.cursors

    def context(self, let: Mapping[str, Any] | None = None, collator: Collator | None = None) -> Context:
        """The run context of a command; its ``let`` variables are
        expressions, evaluated once (they may use ``$$NOW`` and earlier ones)."""
        ctx = Context(collator=collator)
        for name, spec in (let or {}).items():
            check_variable_name(name)
            value = compile_expression(spec, Scope(frozenset(ctx.variables)))(
                {}, root_variables({}, ctx.variables, ctx.now)
            )
            ctx.variables[name] = None if value is MISSING else value
        return ctx


@dataclass
class ScanTotals:
    """Keys and documents examined by a command's finds, and their plans.

    Finished finds are folded into the totals as they pile up, so a $lookup
    running one find per input document holds a bounded number of them."""

    keys: int = 0
    docs: int = 0
    plans: dict[str, None] = field(default_factory=dict)  # an ordered set of plan summaries
    running: list[FindExecution] = field(default_factory=list)
    # Counted only when ``accesses`` (explain's $lookup): the finds' COLLSCAN stages, and an
    # ordered set of the index names they read.
    accesses: bool = False
    collection_scans: int = 0
    indexes: dict[str, None] = field(default_factory=dict)

    def add(self, run: FindExecution) -> None:
        self.running.append(run)
        if len(self.running) > 64:
            self.fold(done_only=True)

    def fold(self, done_only: bool) -> None:
        keep = []
        for run in self.running:
            access = run.plan.access if run.plan is not None else None
            if done_only and not run.stats.finished:
                keep.append(run)
            elif access is not None:
                self.keys += access.keys_examined
                self.docs += access.docs_examined
                self.plans[access.summary()] = None
                if self.accesses:
                    self._count_accesses(access.explain())
        self.running = keep

    def _count_accesses(self, node: Mapping[str, Any]) -> None:
        """Fold an access path's explained stages into :attr:`collection_scans` and :attr:`indexes`."""
        if node.get("stage") == "COLLSCAN":
            self.collection_scans += 1
        name = node.get("indexName")
        if isinstance(name, str):
            self.indexes[name] = None
        children = node.get("inputStages") or ([node["inputStage"]] if "inputStage" in node else [])
        for child in children:
            if isinstance(child, Mapping):
                self._count_accesses(child)


class Executor:
    """Executes commands against one engine; owns its server-side cursors."""

    def __init__(self, engine: Engine, replica_set: ReplicaSet | None = None, javascript: bool = True) -> None:
        self.engine = engine
        # Server-side JavaScript: off as mongod's --noscripting (security.javascriptEnabled: false).
        self.javascript = javascript
        # The persona: a one-member replica set's primary (transactions, retryable writes), or a standalone.
        self.replica_set = replica_set
        self.cursors = CursorManager()
        self.process_id = ObjectId()  # topologyVersion.processId of hello
        # serverStatus.opcounters: documents inserted, statements updated and deleted, commands run.
        self.opcounters = dict.fromkeys(("insert", "query", "update", "delete", "getmore", "command"), 0)
        # serverStatus.connections, when a server runs this executor: () -> {current, available, totalCreated}.
        self.connection_stats: Callable[[], dict[str, int]] | None = None
        # $currentOp's idle connections, when a server runs this executor:
        # () -> [(connection id, client, the (db, user) pairs authenticated on it)].
        self.connection_list: Callable[[], list[tuple[int, str, frozenset[tuple[str, str]]]]] | None = None
        # The commands running now on this engine, from every client and connection: opid -> op.
        self.operations = engine.operations
        self._opids = engine.opids

    def execute(self, db: str, command: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
        # A turn in the engine's lane: an embedded client's threads take turns, as a server's
        # connections do in the server's (whose turn this thread then holds: take() passes by,
        # as it does for a command run inside another).
        road = self.engine.lane
        if not road.take():
            return self._execute(db, command, extra)
        try:
            return self._execute(db, command, extra)
        finally:
            road.done()

    def point(
        self,
        db: str,
        command: dict[str, Any],
        handler: PointHandler,
        owner: int | None = None,
        general: Callable[[], Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """``execute(db, command)`` for a command the embedded client sends as drivers do
        (no session, Stable API, maxTimeMS or write concern fields), answered by ``point``
        (a command's point path: ``point_find``, ``point_insert``, ...) without the general
        path's checks of fields it has none of. Everything a command has that others see is
        kept: its turn, its operation (currentOp, killOp), its snapshot, ``top`` and the
        opcounters, the wait for a document an open transaction holds. With fail points
        configured, or where ``handler`` declines, the general path answers. ``owner``: the
        embedded client's id, as ``execute`` takes it (its close() stops its operations).
        ``general``: what the general path runs instead of ``command`` (made only when it
        runs): a handler given what ``command`` holds in another form (an insert's
        document already encoded) declines when the general path needs the other one."""
        if failpoints.configured():
            return self.execute(db, command if general is None else general(), owner=owner)
        road = self.engine.lane
        taken = road.take()
        try:
            # _execute's bookkeeping, in one frame: the operation registered and bound, one snapshot.
            op = Operation(next(self._opids), db, command)
            op.owner = owner
            if not self.javascript:
                op.javascript = False
            opid = op.opid
            operations = self.operations
            operations[opid] = op
            previous = interrupt.bind(op)
            engine = self.engine
            storage = engine.storage
            name = next(iter(command))
            started = time.perf_counter()
            try:
                storage.begin_operation()
                try:
                    request = Request(self, db, name)
                    while True:
                        try:
                            reply = handler(request, command)
                            break
                        except HeldByTransactionError as held:  # as _call: run again once that transaction ends
                            _await_end(held)
                finally:
                    storage.end_operation()
                if reply is not None:
                    micros = int((time.perf_counter() - started) * 1_000_000)
                    usage.point_finished(engine.usage, storage.published, db, command[name], name, micros)
                    counter = _POINT_COUNTERS[name]
                    self.opcounters[counter] += len(command["documents"]) if counter == "insert" else 1
            except CommandError as exc:
                return exc.to_reply()
            except RecursionError:
                return CommandError(ErrorCode.Overflow, "the document or expression is nested too deeply").to_reply()
            except Exception as exc:  # a FolioDB bug: report it, keep serving
                log.exception("internal error running %r", command)
                return CommandError(ErrorCode.InternalError, f"internal error: {type(exc).__name__}: {exc}").to_reply()
            finally:
                interrupt.bind(previous)
                del operations[opid]
            if reply is not None:
                return reply
            # Declined: the general path answers, as a new operation (still in this turn).
            return self._execute(db, command if general is None else general(), {"owner": owner})
        finally:
            if taken:
                road.done()

    def _execute(self, db: str, command: Mapping[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        op = Operation(next(self._opids), db, command, None, extra.get("connection_id"), extra.get("peer", ""))
        caller = CALLER.get()
        if caller is not None:
            op.users = caller.users
        op.owner = extra.get("owner")
        op.javascript = self.javascript
        op.js_heap_limit_mb = self.engine.parameters.get("jsHeapLimitMB", DEFAULT_JS_HEAP_LIMIT_MB)
        op.js_heap_total_mb = self.engine.parameters.get("jsHeapLimitTotalMB", DEFAULT_JS_HEAP_TOTAL_MB)
        op.stored_javascript = self.stored_javascript
        operations = self.operations
        operations[op.opid] = op
        previous = interrupt.bind(op)
        storage = self.engine.storage
        try:
            storage.begin_operation()
            try:
                return self._run(op, db, command, extra)
            finally:
                storage.end_operation()
        except CommandError as exc:
            return exc.to_reply()
        except RecursionError:
            return CommandError(ErrorCode.Overflow, "the document or expression is nested too deeply").to_reply()
        except Exception as exc:  # a FolioDB bug: report it, keep serving
            log.exception("internal error running %r", dict(command) if isinstance(command, Mapping) else command)
            return CommandError(ErrorCode.InternalError, f"internal error: {type(exc).__name__}: {exc}").to_reply()
        finally:
            interrupt.bind(previous)
            del operations[op.opid]

    def kill_operations(self, code: int, *, connection_id: int | None = None, owner: int | None = None) -> list[int]:
        """Mark killed with ``code`` the running operations of a server connection or of an
        embedded client (``owner``); their opids. As mongod when a client disconnects (279)."""
        killed = []
        for op in list(self.operations.values()):
            if (connection_id is not None and op.connection_id == connection_id) or (
                owner is not None and op.owner == owner
            ):
                op.kill(code)
                killed.append(op.opid)
        return killed

    def _run(self, op: Operation, db: str, command: Mapping[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        if not command:
            raise CommandError(ErrorCode.FailedToParse, "Empty command")
        name = next(iter(command))
        handler = registry.COMMANDS.get(name)
        engine = self.engine
        api_version.check_api_parameters(name, command, engine.parameters)
        request = Request(self, db, name, extra=extra)
        if "maxTimeMS" in command:
            max_time = params.max_time_ms(command["maxTimeMS"])
            if max_time and name != "getMore":  # a getMore's maxTimeMS is its await time (awaitData cursors)
                op.deadline = time.monotonic() + max_time / 1000.0
                failpoints.deadline_set(request, op)
        in_session = "lsid" in command
        if in_session:
            op.session = request.lsid = lsid_key(command["lsid"])
        started = time.perf_counter()
        try:
            if failpoints.configured():
                reply = failpoints.run(request, command, lambda: self._ran(request, handler, command, in_session))
            else:  # the usual case: no closure and no fail points' frame, every request
                reply = self._ran(request, handler, command, in_session)
        except CommandError as exc:
            reply = exc.to_reply()
        if self.replica_set is not None and (in_session or "connection_id" in extra):
            reply.update(sessions.cluster_time_fields(request))
        if engine.profiling:
            profiler.record(request, command, reply, int((time.perf_counter() - started) * 1000))
        seconds = time.perf_counter() - started
        target = command[name]
        if name in _POINT_COUNTERS and type(target) is str:
            # A find or write of a collection (most requests): point_finished counts it as
            # command_finished would, without the dispatch on the command's kind.
            usage.point_finished(engine.usage, engine.storage.published, db, target, name, int(seconds * 1_000_000))
        else:
            usage.command_finished(engine.usage, engine.storage.published, db, name, command, seconds)
        self._count(name, command)
        return reply

    def _ran(
        self, request: Request, handler: registry.Handler, command: Mapping[str, Any], in_session: bool
    ) -> dict[str, Any]:
        """The reply of a command that ran, failed or not, with the write concern error a one-member
        replica set adds. A reply a fail point makes instead has none: mongod's failCommand fires
        before the command runs and waits for its write concern."""
        try:
            reply = self._call(request, handler, command, in_session)
        except CommandError as exc:
            reply = exc.to_reply()
        if self.replica_set is not None:
            reply = with_write_concern_error(request.command_name, command, reply)
        return reply

    def _call(
        self, request: Request, handler: registry.Handler, command: Mapping[str, Any], in_session: bool
    ) -> dict[str, Any]:
        """The handler's reply; a write that met a document held by an open
        transaction is run again once that transaction ends (all of it: the
        write rolled back), waiting no longer than its maxTimeMS."""
        if sessions.wants_snapshot(command):
            inner = handler

            def handler(request: Request, command: Mapping[str, Any]) -> dict[str, Any]:
                return sessions.snapshot_read(request, inner, command)

        while True:
            try:
                if in_session:
                    return sessions.run(request, handler, command)
                return handler(request, command)
            except HeldByTransactionError as held:
                _await_end(held)

    def stored_javascript(self, db: str) -> list[dict[str, Any]]:
        """The documents of ``db``'s ``system.js`` in the running operation's snapshot (its
        transaction's, its snapshot read's); a catalog lookup only, when it does not exist."""
        store = self.engine.store(db, "system.js")
        if store is None:
            return []
        return [bson.decode(data, CODEC) for _, data in store.scan()]

    def _count(self, name: str, command: Mapping[str, Any]) -> None:
        counters = self.opcounters
        if name == "insert":
            documents = command.get("documents")
            counters["insert"] += len(documents) if isinstance(documents, list) else 0
        elif name in ("update", "delete"):
            statements = command.get("updates" if name == "update" else "deletes")
            counters[name] += len(statements) if isinstance(statements, list) else 0
        elif name == "find":
            counters["query"] += 1
        elif name == "getMore":
            counters["getmore"] += 1
        else:
            counters["command"] += 1

    @classmethod
    def open(
        cls, path: str, replica_set: ReplicaSet | None = None, javascript: bool = True, read_only: bool = False
    ) -> Executor:
        """An executor over the dbpath's engine (shared within the process)."""
        return cls(open_engine(path, read_only), replica_set, javascript)

    def close(self) -> None:
        """Done with it: close its cursors and release the engine."""
        self.cursors.kill_all()
        self.engine.release()
