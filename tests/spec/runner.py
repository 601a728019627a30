"""A runner for MongoDB's unified-format spec tests against any
pymongo-compatible client.

Spec: https://github.com/mongodb/specifications/blob/master/source/unified-test-format/unified-test-format.md

A :class:`Target` opens clients (``open_client(uri_options)``) that all see
the same data: one MongoDB 8.0.0 server, not serverless, with or without
authentication (``Target.auth``: its clients then authenticate), whose
topology ("single", "replicaset" or "sharded") the runner reads from
``hello``. For each test it evaluates ``runOnRequirements``, sets up
``initialData`` with an internal client, creates the entities (clients,
databases, collections, sessions; change streams an operation saves), runs the operations judging
``expectResult`` and ``expectError`` (and the special ``testRunner``
operations: fail points, session and transaction assertions, collection and
index assertions), then switches the fail points it set off, judges
``expectEvents`` and compares ``outcome`` exactly; at the end it ends the
sessions, closes the change streams and closes the clients.

What the runner does not judge, and how that ends:

* ``expectEvents`` (command monitoring) is judged when the target's clients
  emit command events (``Target.monitors_commands``: both the embedded client
  and pymongo over the wire do);
  otherwise it is ignored while results, errors and outcomes are still
  judged, and a test asserting nothing but events runs its operations (an
  error fails it) and is then skipped as "only asserts command events".
  Connection pool (CMAP) events are judged for targets whose clients have
  pools (pymongo over the wire); SDAM events are not recorded: tests
  asserting them are skipped.
* Tests needing what the target cannot offer are skipped with the reason:
  fail points without ``enableTestCommands``, mongos pinning
  (``targetedFailPoint``), sessions when the client has
  no ``start_session``, a client-level ``bulk_write`` the client lacks, other
  topologies or server versions, auth where the target has none (or the
  reverse), client-side encryption.

Every skip raises :class:`Skip` with its reason; nothing is skipped silently.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bson import json_util
from pymongo.client_session_shared import _TxnState
from pymongo.errors import (
    BulkWriteError,
    ClientBulkWriteException,
    NotPrimaryError,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
)
from pymongo.read_concern import ReadConcern
from pymongo.results import BulkWriteResult
from pymongo.write_concern import WriteConcern

from tests.spec.events import CMAP_EVENTS, COMMAND_EVENTS, CommandRecorder, check_events, last_two_lsids
from tests.spec.matching import MISSING, Matcher, MatchError, exactly_equal
from tests.spec.operations import (
    CURSOR_OPERATIONS,
    OPERATIONS,
    RESULT_ENTITIES,
    Skip,
    bulk_result,
    client_bulk_result,
    collection_options,
    has_method,
    session_options,
)

SERVER_VERSION = (8, 0, 0)
SCHEMA_MAJOR, SCHEMA_MINOR = 1, 21  # the newest schema version this runner reads

SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-1")  # the mechanisms an auth target's clients can use
# heartbeatFrequencyMS of the clients of a test that sets fail points (the spec's "MAY": faster recovery).
FAIL_POINT_HEARTBEAT_MS = 50

NOT_IMPLEMENTED = 238  # FolioDB's answer for what it knows of but has not built

# pymongo's ServerSelectionTimeoutError for a read preference no member of the set matches.
_NO_SECONDARY = 'match selector "Secondary('

# assertSessionTransactionState's names for pymongo's transaction states.
TRANSACTION_STATES = {
    _TxnState.NONE: "none",
    _TxnState.STARTING: "starting",
    _TxnState.IN_PROGRESS: "in_progress",
    _TxnState.COMMITTED: "committed",
    _TxnState.COMMITTED_EMPTY: "committed",
    _TxnState.ABORTED: "aborted",
}


class Target(Protocol):
    monitors_commands: bool  # whether open_client's clients take a pymongo CommandListener
    monitors_pools: bool  # whether they have connection pools that emit CMAP events
    auth: bool  # whether the server requires authentication (its clients authenticate)

    def open_client(self, uri_options: Mapping[str, Any], recorder: CommandRecorder | None = None) -> Any: ...


@dataclass(frozen=True)
class SpecTest:
    path: Path
    file: Mapping[str, Any]
    test: Mapping[str, Any]

    @property
    def id(self) -> str:
        return f"{self.path.stem}: {self.test['description']}"


def load_tests(directory: Path) -> list[SpecTest]:
    """Every test of every ``*.json`` file, in file then test order."""
    out = []
    for path in sorted(directory.glob("*.json")):
        doc = json_util.loads(path.read_text())
        out.extend(SpecTest(path, doc, test) for test in doc["tests"])
    return out


# -- requirements -----------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split("-")[0].split(".")]
    return tuple(parts + [0] * (3 - len(parts)))[:3]


def topology_of(hello: Mapping[str, Any]) -> str:
    """The runOnRequirements topology of the server that answered ``hello``."""
    if hello.get("msg") == "isdbgrid":
        return "sharded"
    return "replicaset" if "setName" in hello else "single"


def unmet(requirement: Mapping[str, Any], topology: str, auth: bool, parameters: Callable[[str], Any]) -> str | None:
    """Why ``requirement`` is not met by an 8.0.0 server of ``topology`` (with ``auth`` or not), or None."""
    if "minServerVersion" in requirement and _version(requirement["minServerVersion"]) > SERVER_VERSION:
        return f"minServerVersion {requirement['minServerVersion']}"
    if "maxServerVersion" in requirement and _version(requirement["maxServerVersion"]) < SERVER_VERSION:
        return f"maxServerVersion {requirement['maxServerVersion']}"
    topologies = requirement.get("topologies")
    if topologies is not None and topology not in topologies:
        return f"topologies {topologies}"
    if requirement.get("serverless") == "require":
        return "serverless required"
    if requirement.get("auth") is True and not auth:
        return "auth required"
    if requirement.get("auth") is False and auth:
        return "auth forbidden"
    if "authMechanism" in requirement and (not auth or requirement["authMechanism"] not in SCRAM):
        return f"authMechanism {requirement['authMechanism']}"
    if requirement.get("csfle") is True:
        return "client-side field level encryption"
    for name, wanted in (requirement.get("serverParameters") or {}).items():
        actual = parameters(name)
        if actual is MISSING or not _same_parameter(wanted, actual):
            return f"server parameter {name}={wanted!r} (have {'none' if actual is MISSING else repr(actual)})"
    return None


def _same_parameter(wanted: Any, actual: Any) -> bool:
    try:
        Matcher().match(wanted, actual, root=False)
    except MatchError:
        return False
    return True


_DESCRIBED = {"single": "a standalone", "replicaset": "a one-member replica set", "sharded": "a sharded cluster"}


def requirements_reason(
    lists: list[list[Mapping[str, Any]]], topology: str, auth: bool, parameters: Callable[[str], Any]
) -> str | None:
    """Each list needs one satisfied requirement; the reason when one has none."""
    for requirements in lists:
        reasons = [unmet(r, topology, auth, parameters) for r in requirements]
        if reasons and all(reasons):
            return f"runOnRequirements not met by {_DESCRIBED[topology]} (8.0.0): " + "; ".join(
                sorted(set(filter(None, reasons)))
            )
    return None


def _operations(ops: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Operations, those of withTransaction callbacks included."""
    for op in ops:
        yield op
        if op["name"] == "withTransaction":
            yield from _operations(op["arguments"]["callback"])


def requires_auth(spec: SpecTest) -> bool:
    """Whether a runOnRequirements list (the file's or the test's) can be met only with auth."""
    lists = [spec.file.get("runOnRequirements"), spec.test.get("runOnRequirements")]
    return any(requirements and all(r.get("auth") is True for r in requirements) for requirements in lists)


def runner_operations(test: Mapping[str, Any]) -> set[str]:
    return {op["name"] for op in _operations(test["operations"]) if op["object"] == "testRunner"}


def expects_read_preference(spec: SpecTest) -> bool:
    """Whether an expected command event carries ``$readPreference``."""
    return any(
        "$readPreference" in (event.get("commandStartedEvent") or {}).get("command", {})
        for expected in spec.test.get("expectEvents", ())
        for event in expected["events"]
    )


def static_reason(spec: SpecTest) -> str | None:
    """A reason to skip that needs no client: mongos pinning, event kinds."""
    test = spec.test
    if test.get("skipReason"):
        return str(test["skipReason"])
    if "targetedFailPoint" in runner_operations(test):
        return "targetedFailPoint sets a fail point on the mongos a session is pinned to: mongos only"
    for expected in test.get("expectEvents", ()):
        if expected.get("eventType", "command") not in ("command", "cmap"):
            return f"asserts {expected['eventType']} events, which the runner does not record"
    return None


def only_events(test: Mapping[str, Any]) -> bool:
    judged = ("expectResult", "expectError", "saveResultAsEntity")
    return (
        "expectEvents" in test
        and "outcome" not in test
        and not any(key in op for op in _operations(test["operations"]) for key in judged)
    )


# -- running a test -------------------------------------------------------------------


class Run:
    """One test: entities, operations, assertions. Use :meth:`execute`."""

    def __init__(self, spec: SpecTest, target: Target) -> None:
        self.spec = spec
        self.target = target
        self.entities: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.lsids: dict[str, Any] = {}  # session entity -> its lsid, kept once it ends
        self.clients: list[Any] = []
        self.matcher = Matcher(self.entities, self.lsids)
        self.recorders: dict[str, CommandRecorder] = {}
        self.fail_points: list[tuple[Any, str]] = []  # (client, fail point) to switch off after the test
        self._parameters: dict[str, Any] | None = None
        self._fail_point_test = "failPoint" in runner_operations(spec.test)

    def execute(self) -> None:
        try:
            self._execute()
        finally:
            try:
                self._disable_fail_points()
            finally:
                for name, kind in self.kinds.items():
                    if kind == "session":
                        self.entities[name].end_session()
                    elif kind == "changeStream":
                        self.entities[name].close()
                for client in self.clients:
                    client.close()

    def _execute(self) -> None:
        spec, test = self.spec, self.spec.test
        major, minor = _version(spec.file["schemaVersion"])[:2]
        if major != SCHEMA_MAJOR or minor > SCHEMA_MINOR:
            raise AssertionError(f"schemaVersion {spec.file['schemaVersion']} is not supported by this runner")
        self.internal = self._client({})
        topology = topology_of(self.internal.admin.command("hello"))
        lists = [spec.file.get("runOnRequirements"), test.get("runOnRequirements")]
        reason = requirements_reason([r for r in lists if r], topology, self.target.auth, self._parameter)
        if reason:
            raise Skip(reason)
        reason = static_reason(spec)
        if reason:
            raise Skip(reason)
        cmap = any(expected.get("eventType") == "cmap" for expected in test.get("expectEvents", ()))
        if cmap and not self.target.monitors_pools:
            raise Skip("asserts connection pool (CMAP) events: the target's clients have no connection pools")
        if self._fail_point_test and not self._parameter("enableTestCommands"):
            raise Skip("needs fail points: the server runs without enableTestCommands")
        for data in spec.file.get("initialData", ()):
            self._initial_data(data)
        for entity in spec.file.get("createEntities", ()):
            self._create_entity(entity)
        for op in test["operations"]:
            self._operation(op)
        for recorder in self.recorders.values():
            recorder.recording = False
        self._disable_fail_points()
        if self.target.monitors_commands:
            for expected in test.get("expectEvents", ()):
                check_events(self.matcher, expected, self.recorders[expected["client"]])
        elif only_events(test):
            raise Skip("only asserts command events (its operations ran without error)")
        for data in test.get("outcome", ()):
            self._outcome(data)

    def _client(self, uri_options: Mapping[str, Any], recorder: CommandRecorder | None = None) -> Any:
        client = self.target.open_client(uri_options, recorder)
        self.clients.append(client)
        return client

    def _parameter(self, name: str) -> Any:
        if self._parameters is None:
            reply = self.internal.admin.command({"getParameter": "*"}, check=False)
            self._parameters = dict(reply) if reply.get("ok") else {}
        return self._parameters.get(name, MISSING)

    def _disable_fail_points(self) -> None:
        while self.fail_points:
            client, name = self.fail_points.pop()
            client.admin.command({"configureFailPoint": name, "mode": "off"})

    # -- setup and outcome ---------------------------------------------------------------

    def _initial_data(self, data: Mapping[str, Any]) -> None:
        db = self.internal[data["databaseName"]]
        name = data["collectionName"]
        majority = WriteConcern(w="majority")
        db.drop_collection(name)
        options = data.get("createOptions")
        if options is not None or not data["documents"]:
            db.command({"create": name, **(options or {}), "writeConcern": {"w": "majority"}})
        if data["documents"]:
            # Copies: the file's documents serve every test, and inserting adds missing _ids.
            db.get_collection(name, write_concern=majority).insert_many(copy.deepcopy(data["documents"]))

    def _outcome(self, data: Mapping[str, Any]) -> None:
        coll = self.internal[data["databaseName"]].get_collection(
            data["collectionName"], read_concern=ReadConcern("local")
        )
        actual = list(coll.find({}, sort=[("_id", 1)]))
        expected = data["documents"]
        if not exactly_equal(expected, actual):
            raise AssertionError(
                f"outcome of {data['databaseName']}.{data['collectionName']}:\n"
                f"  expected {expected!r}\n  actual   {actual!r}"
            )

    # -- entities -----------------------------------------------------------------------

    def _create_entity(self, entity: Mapping[str, Any]) -> None:
        ((kind, spec),) = entity.items()
        name = spec["id"]
        if name in self.entities:
            raise AssertionError(f"entity {name!r} defined twice")
        if kind == "client":
            value = self._client_entity(name, spec)
        elif kind == "database":
            value = self._entity(spec["client"], "client").get_database(
                spec["databaseName"], **collection_options(spec.get("databaseOptions"))
            )
        elif kind == "collection":
            value = self._entity(spec["database"], "database").get_collection(
                spec["collectionName"], **collection_options(spec.get("collectionOptions"))
            )
        elif kind == "session":
            client = self._entity(spec["client"], "client")
            if not has_method(client, "start_session"):
                raise Skip("needs sessions: the client has no start_session")
            value = client.start_session(**session_options(spec.get("sessionOptions") or {}))
            self.lsids[name] = value.session_id
        else:
            raise Skip(f"needs {kind} entities, which this runner does not build")
        self.entities[name] = value
        self.kinds[name] = kind

    def _client_entity(self, name: str, spec: Mapping[str, Any]) -> Any:
        if "storeEventsAsEntities" in spec or "observeLogMessages" in spec:
            raise Skip("needs stored events or log messages")
        unrecorded = set(spec.get("observeEvents", ())) - COMMAND_EVENTS - CMAP_EVENTS
        if unrecorded:
            raise Skip(f"observes {sorted(unrecorded)}, which the runner does not record")
        options = dict(spec.get("uriOptions") or {})
        if self._fail_point_test:
            options.setdefault("heartbeatFrequencyMS", FAIL_POINT_HEARTBEAT_MS)
        recorder = None
        if self.target.monitors_commands:
            recorder = CommandRecorder(
                spec.get("observeEvents", ()),
                spec.get("ignoreCommandMonitoringEvents", ()),
                bool(spec.get("observeSensitiveCommands")),
            )
            self.recorders[name] = recorder
        # useMultipleMongoses matters only for a sharded cluster; the targets are one server.
        return self._client(options, recorder)

    def _entity(self, name: str, kind: str | None = None) -> Any:
        if name not in self.entities:
            raise AssertionError(f"no entity {name!r}")
        if kind is not None and self.kinds[name] != kind:
            raise AssertionError(f"entity {name!r} is a {self.kinds[name]}, not a {kind}")
        return self.entities[name]

    # -- operations ---------------------------------------------------------------------

    def _operation(self, op: Mapping[str, Any], in_callback: bool = False) -> None:
        """Run one operation and judge it. In a withTransaction callback, its
        error also propagates (to withTransaction), as the spec says."""
        name, obj = op["name"], op["object"]
        args = copy.deepcopy(dict(op.get("arguments") or {}))
        if obj == "testRunner":
            self._special(name, args)
            return
        kind = self.kinds.get(obj)
        handler = self._handler(kind, name) if kind else None
        if handler is None:
            raise AssertionError(f"unsupported operation {name!r} on {kind or obj!r}")
        if "session" in args:
            args["session"] = self._entity(args["session"], "session")
        expect_error = op.get("expectError")
        try:
            result = handler(self._entity(obj), args)
        except (Skip, AssertionError):
            raise  # the runner's own verdicts, from a callback too
        except ServerSelectionTimeoutError as exc:
            if _NO_SECONDARY in str(exc):
                raise Skip(
                    "needs a secondary: pymongo selects a server by the read preference before it refuses a"
                    " non-primary one in a transaction, and a one-member replica set has none to select"
                ) from exc
            raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            if not op.get("ignoreResultAndError"):
                if expect_error is None:
                    unbuilt = _server_reply(exc)
                    if unbuilt is not None and unbuilt.get("code") == NOT_IMPLEMENTED:
                        raise Skip(f"needs what FolioDB has not built yet: {unbuilt.get('errmsg')}") from exc
                    if in_callback:
                        raise
                    raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc
                self._check_error(name, exc, expect_error)
            if in_callback:
                raise
            return
        if op.get("ignoreResultAndError"):
            return
        if expect_error is not None:
            raise AssertionError(f"{name} was expected to fail ({expect_error}) but returned {result!r}")
        if "expectResult" in op:
            self._check_result(name, op["expectResult"], result)
        if "saveResultAsEntity" in op:
            self.entities[op["saveResultAsEntity"]] = result
            self.kinds[op["saveResultAsEntity"]] = RESULT_ENTITIES.get(name, "bson")

    def _handler(self, kind: str, name: str) -> Callable[[Any, dict[str, Any]], Any] | None:
        if (kind, name) == ("session", "withTransaction"):
            return self._with_transaction
        return OPERATIONS.get((kind, name))

    def _with_transaction(self, session: Any, args: dict[str, Any]) -> Any:
        callback = args.pop("callback")

        def run(_: Any) -> None:
            for op in callback:
                self._operation(op, in_callback=True)

        return session.with_transaction(run, **collection_options(args))

    def _check_result(self, name: str, expected: Any, actual: Any) -> None:
        try:
            if isinstance(expected, list) and name in CURSOR_OPERATIONS:
                self.matcher.match_root_list(expected, actual)
            else:
                self.matcher.match(expected, actual, root=True)
        except MatchError as exc:
            raise AssertionError(f"{name} result: {exc}\n  expected {expected!r}\n  actual   {actual!r}") from None

    def _check_error(self, name: str, exc: Exception, spec: Mapping[str, Any]) -> None:
        error = exc.error if isinstance(exc, ClientBulkWriteException) and exc.error is not None else exc
        server = _server_reply(error) is not None
        where = f"{name} raised {type(exc).__name__}: {exc}"
        if "isClientError" in spec and spec["isClientError"] == server:
            raise AssertionError(f"{where}; expected a {'client' if spec['isClientError'] else 'server'} error")
        if spec.get("isTimeoutError"):
            raise Skip("needs client-side operation timeouts (timeoutMS)")
        responses = _responses(exc)
        if "errorContains" in spec:
            wanted = spec["errorContains"].lower()
            messages = [str(error)] + [str(r.get("errmsg", "")) for r in responses]
            if not any(wanted in m.lower() for m in messages):
                raise AssertionError(f"{where}; expected a message containing {spec['errorContains']!r}")
        if "errorCode" in spec and not any(r.get("code") == spec["errorCode"] for r in responses):
            raise AssertionError(f"{where}; expected code {spec['errorCode']}, got {responses!r}")
        if "errorCodeName" in spec:
            wanted = spec["errorCodeName"].lower()
            if not any(str(r.get("codeName", "")).lower() == wanted for r in responses):
                raise AssertionError(f"{where}; expected codeName {spec['errorCodeName']}, got {responses!r}")
        # Labels a server sent and labels the driver added (UnknownTransactionCommitResult...).
        labelled = exc if isinstance(exc, PyMongoError) else None
        missing = {label for label in spec.get("errorLabelsContain", ()) if not _has_label(labelled, error, label)}
        present = {label for label in spec.get("errorLabelsOmit", ()) if _has_label(labelled, error, label)}
        if missing or present:
            raise AssertionError(f"{where}; missing labels {sorted(missing)}, unexpected labels {sorted(present)}")
        if "errorResponse" in spec:
            if not server:
                raise AssertionError(f"{where}; expected a server response")
            try:
                self.matcher.match(spec["errorResponse"], _server_reply(error), root=True)
            except MatchError as mismatch:
                raise AssertionError(f"{where}; errorResponse: {mismatch}") from None
        if "writeErrors" in spec or "writeConcernErrors" in spec:
            self._check_client_bulk_errors(where, exc, spec)
        if "expectResult" in spec:
            self._check_result(name, spec["expectResult"], _partial_result(exc))

    def _check_client_bulk_errors(self, where: str, exc: Exception, spec: Mapping[str, Any]) -> None:
        if not isinstance(exc, ClientBulkWriteException):
            raise AssertionError(f"{where}; expected a ClientBulkWriteException")
        try:
            if "writeErrors" in spec:
                actual = {str(e["idx"]): e for e in exc.write_errors or []}
                if set(actual) != set(spec["writeErrors"]):
                    raise MatchError(f"write errors at {sorted(actual)}, expected {sorted(spec['writeErrors'])}")
                for index, expected in spec["writeErrors"].items():
                    self.matcher.match(expected, actual[index], root=True, path=f"writeErrors.{index}")
            if "writeConcernErrors" in spec:
                actual_wces = [_write_concern_error(e) for e in exc.write_concern_errors or []]
                self.matcher.match_root_list(spec["writeConcernErrors"], actual_wces)
        except MatchError as mismatch:
            raise AssertionError(f"{where}; {mismatch}") from None

    # -- special test operations ----------------------------------------------------------

    def _special(self, name: str, args: dict[str, Any]) -> None:
        if name == "failPoint":
            client = self._entity(args["client"], "client")
            command = args["failPoint"]
            client.admin.command(command)
            self.fail_points.append((client, command["configureFailPoint"]))
        elif name == "createEntities":
            for entity in args["entities"]:
                self._create_entity(entity)
        elif name == "assertSessionTransactionState":
            session = self._entity(args["session"], "session")
            state = TRANSACTION_STATES[session._transaction.state]
            if state != args["state"]:
                raise AssertionError(f"session {args['session']} is in transaction state {state}, not {args['state']}")
        elif name in ("assertSessionPinned", "assertSessionUnpinned"):
            pinned = self._entity(args["session"], "session")._pinned_address is not None
            if pinned != (name == "assertSessionPinned"):
                raise AssertionError(f"session {args['session']} is {'' if pinned else 'not '}pinned to a mongos")
        elif name in ("assertSessionDirty", "assertSessionNotDirty"):
            dirty = self._entity(args["session"], "session")._server_session.dirty
            if dirty != (name == "assertSessionDirty"):
                raise AssertionError(f"session {args['session']} is {'' if dirty else 'not '}dirty")
        elif name in ("assertSameLsidOnLastTwoCommands", "assertDifferentLsidOnLastTwoCommands"):
            self._entity(args["client"], "client")
            first, second = last_two_lsids(self.recorders[args["client"]])
            if (first == second) != (name == "assertSameLsidOnLastTwoCommands"):
                raise AssertionError(f"{name}: the last two commands had lsids {first!r} and {second!r}")
        elif name in ("assertCollectionExists", "assertCollectionNotExists"):
            names = self.internal[args["databaseName"]].list_collection_names()
            if (args["collectionName"] in names) != (name == "assertCollectionExists"):
                raise AssertionError(f"{name}: {args['databaseName']}.{args['collectionName']} (have {names})")
        elif name in ("assertIndexExists", "assertIndexNotExists"):
            coll = self.internal[args["databaseName"]][args["collectionName"]]
            indexes = [index["name"] for index in coll.list_indexes()]
            if (args["indexName"] in indexes) != (name == "assertIndexExists"):
                raise AssertionError(f"{name}: {args['indexName']} on {coll.full_name} (have {indexes})")
        else:
            raise AssertionError(f"special test operation {name!r} is not supported")


def _has_label(labelled: PyMongoError | None, error: Any, label: str) -> bool:
    if labelled is not None and labelled.has_error_label(label):
        return True
    return isinstance(error, PyMongoError) and error.has_error_label(label)


def _server_reply(error: Any) -> Mapping[str, Any] | None:
    """The server's error document behind ``error``: an OperationFailure's, or
    a NotPrimaryError's (pymongo raises it, a ConnectionFailure, for a
    server's not-primary and shutting-down codes); None for a client error."""
    if isinstance(error, OperationFailure):
        return error.details or {"code": error.code}
    if isinstance(error, NotPrimaryError) and isinstance(error.details, Mapping):
        return error.details
    return None


def _responses(exc: Exception) -> list[Mapping[str, Any]]:
    """The server error documents an exception carries: its reply, or a
    bulk write's write errors and write concern errors."""
    if isinstance(exc, ClientBulkWriteException):
        reply = _server_reply(exc.error)
        out = [reply] if reply is not None else []
        return out + list(exc.write_errors or []) + list(exc.write_concern_errors or [])
    if isinstance(exc, BulkWriteError):
        return list(exc.details.get("writeErrors", [])) + list(exc.details.get("writeConcernErrors", []))
    reply = _server_reply(exc)
    return [reply] if reply is not None else []


def _write_concern_error(error: Mapping[str, Any]) -> dict[str, Any]:
    """A client bulk write's write concern error as the CRUD spec's WriteConcernError (code, message, details)."""
    out = {"code": error.get("code"), "message": error.get("errmsg")}
    if "errInfo" in error:
        out["details"] = error["errInfo"]
    return out


def _partial_result(exc: Exception) -> Any:
    """The result an error carries (a bulk write's partial result); MISSING when it carries none."""
    if isinstance(exc, BulkWriteError):
        return bulk_result(BulkWriteResult(exc.details, True))
    if isinstance(exc, ClientBulkWriteException):
        partial = exc.partial_result
        return MISSING if partial is None else client_bulk_result(partial)
    return MISSING
