"""A runner for MongoDB's unified-format spec tests against any
pymongo-compatible client.

Spec: https://github.com/mongodb/specifications/blob/master/source/unified-test-format/unified-test-format.md

A :class:`Target` opens clients (``open_client(uri_options)``) that all see
the same data; the runner treats it as a standalone ("single") MongoDB 8.0.0
server, not serverless, without auth. For each test it evaluates
``runOnRequirements``, sets up ``initialData`` with an internal client,
creates the entities, runs the operations judging ``expectResult`` and
``expectError``, and compares ``outcome`` exactly.

What the runner does not judge, and how that ends:

* ``expectEvents`` (command monitoring) is judged when the target's clients
  emit command events (``Target.monitors_commands``: both the embedded client
  and pymongo over the wire do);
  otherwise it is ignored while results, errors and outcomes are still
  judged, and a test asserting nothing but events runs its operations (an
  error fails it) and is then skipped as "only asserts command events".
* Tests needing what an embedded database cannot offer are skipped with the
  reason: fail points, non-simple collation, sessions when the client has no
  ``start_session``, a client-level ``bulk_write`` the client lacks, other
  topologies or server versions, auth, client-side encryption.

Every skip raises :class:`Skip` with its reason; nothing is skipped silently.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bson import json_util
from pymongo.errors import BulkWriteError, ClientBulkWriteException, OperationFailure
from pymongo.read_concern import ReadConcern
from pymongo.results import BulkWriteResult
from pymongo.write_concern import WriteConcern

from tests.spec.events import CommandRecorder, check_events
from tests.spec.matching import MISSING, Matcher, MatchError, exactly_equal
from tests.spec.operations import (
    CURSOR_OPERATIONS,
    OPERATIONS,
    Skip,
    bulk_result,
    client_bulk_result,
    collection_options,
    has_method,
)

SERVER_VERSION = (8, 0, 0)
TOPOLOGY = "single"
SCHEMA_MAJOR, SCHEMA_MINOR = 1, 21  # the newest schema version this runner reads

SIMPLE_COLLATION = {"locale": "simple"}


class Target(Protocol):
    monitors_commands: bool  # whether open_client's clients take a pymongo CommandListener

    def open_client(self, uri_options: Mapping[str, Any], listener: Any = None) -> Any: ...


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


def unmet(requirement: Mapping[str, Any], parameters: Callable[[str], Any]) -> str | None:
    """Why ``requirement`` is not met by a standalone 8.0.0, or None."""
    if "minServerVersion" in requirement and _version(requirement["minServerVersion"]) > SERVER_VERSION:
        return f"minServerVersion {requirement['minServerVersion']}"
    if "maxServerVersion" in requirement and _version(requirement["maxServerVersion"]) < SERVER_VERSION:
        return f"maxServerVersion {requirement['maxServerVersion']}"
    topologies = requirement.get("topologies")
    if topologies is not None and TOPOLOGY not in topologies:
        return f"topologies {topologies}"
    if requirement.get("serverless") == "require":
        return "serverless required"
    if requirement.get("auth") is True:
        return "auth required"
    if "authMechanism" in requirement:
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


def requirements_reason(lists: list[list[Mapping[str, Any]]], parameters: Callable[[str], Any]) -> str | None:
    """Each list needs one satisfied requirement; the reason when one has none."""
    for requirements in lists:
        reasons = [unmet(r, parameters) for r in requirements]
        if reasons and all(reasons):
            return "runOnRequirements not met by a standalone 8.0.0 server: " + "; ".join(
                sorted(set(filter(None, reasons)))
            )
    return None


def _arguments(test: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for op in test["operations"]:
        args = op.get("arguments") or {}
        yield args
        for model in [*args.get("requests", ()), *args.get("models", ())]:
            yield from model.values()


def static_reason(spec: SpecTest) -> str | None:
    """A reason to skip that needs no client: fail points, collation."""
    test = spec.test
    if test.get("skipReason"):
        return str(test["skipReason"])
    names = {op["name"] for op in test["operations"] if op["object"] == "testRunner"}
    if names & {"failPoint", "targetedFailPoint"}:
        return "needs server fail points (failPoint/targetedFailPoint)"
    for args in _arguments(test):
        for stage in args.get("pipeline") or ():
            if "$listLocalSessions" in stage:
                return "needs server sessions ($listLocalSessions): sessions are not built yet (no open issue)"
    for args in _arguments(test):
        collation = args.get("collation")
        if collation is not None and dict(collation) != SIMPLE_COLLATION:
            return "collation not supported"
    for data in spec.file.get("initialData", ()):
        collation = (data.get("createOptions") or {}).get("collation")
        if collation is not None and dict(collation) != SIMPLE_COLLATION:
            return "collation not supported"
    return None


def only_events(test: Mapping[str, Any]) -> bool:
    judged = ("expectResult", "expectError", "saveResultAsEntity")
    return (
        "expectEvents" in test
        and "outcome" not in test
        and not any(key in op for op in test["operations"] for key in judged)
    )


# -- running a test -------------------------------------------------------------------


class Run:
    """One test: entities, operations, assertions. Use :meth:`execute`."""

    def __init__(self, spec: SpecTest, target: Target) -> None:
        self.spec = spec
        self.target = target
        self.entities: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.clients: list[Any] = []
        self.matcher = Matcher(self.entities)
        self.recorders: dict[str, CommandRecorder] = {}
        self._parameters: dict[str, Any] | None = None

    def execute(self) -> None:
        try:
            self._execute()
        finally:
            for client in self.clients:
                client.close()

    def _execute(self) -> None:
        spec, test = self.spec, self.spec.test
        major, minor = _version(spec.file["schemaVersion"])[:2]
        if major != SCHEMA_MAJOR or minor > SCHEMA_MINOR:
            raise AssertionError(f"schemaVersion {spec.file['schemaVersion']} is not supported by this runner")
        reason = static_reason(spec)
        if reason:
            raise Skip(reason)
        self.internal = self._client({})
        lists = [spec.file.get("runOnRequirements"), test.get("runOnRequirements")]
        reason = requirements_reason([r for r in lists if r], self._parameter)
        if reason:
            raise Skip(reason)
        for data in spec.file.get("initialData", ()):
            self._initial_data(data)
        for entity in spec.file.get("createEntities", ()):
            self._create_entity(entity)
        for op in test["operations"]:
            self._operation(op)
        for data in test.get("outcome", ()):
            self._outcome(data)
        if self.target.monitors_commands:
            for expected in test.get("expectEvents", ()):
                if expected.get("eventType", "command") != "command":
                    raise Skip(f"needs {expected['eventType']} events")
                check_events(self.matcher, expected, self.recorders[expected["client"]])
        elif only_events(test):
            raise Skip("only asserts command events (its operations ran without error)")

    def _client(self, uri_options: Mapping[str, Any], listener: Any = None) -> Any:
        client = self.target.open_client(uri_options, listener)
        self.clients.append(client)
        return client

    def _parameter(self, name: str) -> Any:
        if self._parameters is None:
            reply = self.internal.admin.command({"getParameter": "*"}, check=False)
            self._parameters = dict(reply) if reply.get("ok") else {}
        return self._parameters.get(name, MISSING)

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
            if "storeEventsAsEntities" in spec or "observeLogMessages" in spec:
                raise Skip("needs stored events or log messages")
            recorder = None
            if self.target.monitors_commands:
                recorder = CommandRecorder(
                    spec.get("observeEvents", ()),
                    spec.get("ignoreCommandMonitoringEvents", ()),
                    bool(spec.get("observeSensitiveCommands")),
                )
                self.recorders[name] = recorder
            value = self._client(spec.get("uriOptions") or {}, recorder)
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
            value = client.start_session(**(spec.get("sessionOptions") or {}))
        else:
            raise Skip(f"needs {kind} entities, which this runner does not build")
        self.entities[name] = value
        self.kinds[name] = kind

    def _entity(self, name: str, kind: str | None = None) -> Any:
        if name not in self.entities:
            raise AssertionError(f"no entity {name!r}")
        if kind is not None and self.kinds[name] != kind:
            raise AssertionError(f"entity {name!r} is a {self.kinds[name]}, not a {kind}")
        return self.entities[name]

    # -- operations ---------------------------------------------------------------------

    def _operation(self, op: Mapping[str, Any]) -> None:
        name, obj = op["name"], op["object"]
        args = copy.deepcopy(dict(op.get("arguments") or {}))
        if obj == "testRunner":
            raise AssertionError(f"special test operation {name!r} is not supported")
        kind = self.kinds.get(obj)
        handler = OPERATIONS.get((kind, name)) if kind else None
        if handler is None:
            raise AssertionError(f"unsupported operation {name!r} on {kind or obj!r}")
        if "session" in args:
            args["session"] = self._entity(args["session"], "session")
        expect_error = op.get("expectError")
        try:
            result = handler(self._entity(obj), args)
        except Skip:
            raise
        except Exception as exc:
            if op.get("ignoreResultAndError"):
                return
            if expect_error is None:
                raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc
            self._check_error(name, exc, expect_error)
            return
        if op.get("ignoreResultAndError"):
            return
        if expect_error is not None:
            raise AssertionError(f"{name} was expected to fail ({expect_error}) but returned {result!r}")
        if "expectResult" in op:
            self._check_result(name, op["expectResult"], result)
        if "saveResultAsEntity" in op:
            self.entities[op["saveResultAsEntity"]] = result
            self.kinds[op["saveResultAsEntity"]] = "bson"

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
        server = isinstance(error, OperationFailure)
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
        labels = set(error.details.get("errorLabels", [])) if isinstance(error, OperationFailure) else set()
        missing = set(spec.get("errorLabelsContain", ())) - labels
        present = set(spec.get("errorLabelsOmit", ())) & labels
        if missing or present:
            raise AssertionError(f"{where}; labels {sorted(labels)}, missing {missing}, unexpected {present}")
        if "errorResponse" in spec:
            if not server:
                raise AssertionError(f"{where}; expected a server response")
            try:
                self.matcher.match(spec["errorResponse"], error.details, root=True)
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
                self.matcher.match_root_list(spec["writeConcernErrors"], list(exc.write_concern_errors or []))
        except MatchError as mismatch:
            raise AssertionError(f"{where}; {mismatch}") from None


def _responses(exc: Exception) -> list[Mapping[str, Any]]:
    """The server error documents an exception carries: its reply, or a
    bulk write's write errors and write concern errors."""
    if isinstance(exc, ClientBulkWriteException):
        out = [exc.error.details] if isinstance(exc.error, OperationFailure) else []
        return out + list(exc.write_errors or []) + list(exc.write_concern_errors or [])
    if isinstance(exc, BulkWriteError):
        return list(exc.details.get("writeErrors", [])) + list(exc.details.get("writeConcernErrors", []))
    if isinstance(exc, OperationFailure):
        return [exc.details or {"code": exc.code}]
    return []


def _partial_result(exc: Exception) -> Any:
    if isinstance(exc, BulkWriteError):
        return bulk_result(BulkWriteResult(exc.details, True))
    if isinstance(exc, ClientBulkWriteException):
        partial = exc.partial_result
        return MISSING if partial is None else client_bulk_result(partial)
    raise AssertionError(f"{type(exc).__name__} carries no result")
