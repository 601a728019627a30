"""Server parameters: getParameter and setParameter.

Each parameter FolioDB reports has the value FolioDB really runs with.
One table says, per parameter, its value and whether it can change:

* settable: FolioDB honours a new value at once (the TTL monitor reads
  ``ttlMonitorEnabled``/``ttlMonitorSleepSecs``, the executor reads
  ``requireApiVersion``, the cursor reaper ``cursorTimeoutMillis``, the
  document cache ``documentCacheSizeMB``, FolioDB's own);
  current values live in ``Engine.parameters``;
* startup-only in mongod too: setParameter answers IllegalOperation (20);
* settable in mongod but fixed in FolioDB: NotImplemented (238), rather
  than a value accepted and then ignored.

Manual: https://www.mongodb.com/docs/manual/reference/command/getParameter/,
https://www.mongodb.com/docs/manual/reference/command/setParameter/,
https://www.mongodb.com/docs/manual/reference/parameters/
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.auth import scram
from foliodb.commands import params
from foliodb.commands.cursors import CURSOR_TIMEOUT_MILLIS, MAX_CURSORS_PER_CONNECTION, MAX_CURSORS_PER_USER
from foliodb.commands.diagnostics import FEATURE_COMPATIBILITY_VERSION
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.engine.cache import DEFAULT_SIZE_MB
from foliodb.engine.query import SORT_MEMORY_LIMIT
from foliodb.errors import CommandError, ErrorCode
from foliodb.interrupt import DEFAULT_JS_HEAP_LIMIT_MB, DEFAULT_JS_HEAP_TOTAL_MB
from foliodb.query import compare as cmp
from foliodb.query.render import render


class Change(enum.Enum):
    SETTABLE = "settable"
    STARTUP_ONLY = "startup only"  # as in mongod
    FIXED = "fixed in FolioDB"  # mongod can change it at runtime; FolioDB cannot yet


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool) or cmp.is_number(value):
        return bool(value)
    raise CommandError(ErrorCode.BadValue, f"Invalid value for {name}: {render(value)}, expected a boolean")


def _as_size_mb(name: str, value: Any) -> int:
    number = params.as_int(value, name) if cmp.is_number(value) else None
    if number is None or number < 0:
        raise CommandError(ErrorCode.BadValue, f"Invalid value for {name}: {render(value)}, expected an integer >= 0")
    return number


def _as_positive_int(name: str, value: Any) -> int:
    number = params.as_int(value, name) if cmp.is_number(value) else None
    if number is None or number < 1:
        raise CommandError(ErrorCode.BadValue, f"Invalid value for {name}: {render(value)}, expected an integer >= 1")
    return number


def _log_verbosity(name: str, value: Any) -> dict[str, Any]:
    """logComponentVerbosity: ``{verbosity: n, <component>: {verbosity: n, ...}, ...}``, merged
    into the current settings; FolioDB logs through Python's ``logging``, so the top-level
    verbosity (0 to 5, above 0 meaning debug output) sets its ``foliodb`` logger's level."""
    if not isinstance(value, Mapping):
        raise CommandError(ErrorCode.BadValue, f"Invalid value for {name}: {render(value)}, expected an object")
    _check_verbosity(name, value)
    level = value.get("verbosity")
    if level is not None:
        logging.getLogger("foliodb").setLevel(logging.DEBUG if cmp.number_value(level) > 0 else logging.NOTSET)
    return dict(value)


def _check_verbosity(name: str, value: Mapping[str, Any]) -> None:
    for key, item in value.items():
        if key == "verbosity":
            if not cmp.is_number(item) or not -1 <= cmp.number_value(item) <= 5:
                raise CommandError(ErrorCode.BadValue, f"Invalid verbosity for {name}: {render(item)}")
        elif isinstance(item, Mapping):
            _check_verbosity(f"{name}.{key}", item)
        elif cmp.is_number(item):
            _check_verbosity(f"{name}.{key}", {"verbosity": item})  # {query: 2} is short for {query: {verbosity: 2}}
        else:
            raise CommandError(ErrorCode.BadValue, f"Invalid value for {name}.{key}: {render(item)}")


@dataclass(frozen=True)
class Parameter:
    value: Any  # the value FolioDB runs with until set
    change: Change
    parse: Callable[[str, Any], Any] | None = None  # for SETTABLE: the value a setParameter stores


PARAMETERS: dict[str, Parameter] = {
    "authenticationMechanisms": Parameter(list(scram.MECHANISMS), Change.STARTUP_ONLY),
    "cursorTimeoutMillis": Parameter(CURSOR_TIMEOUT_MILLIS, Change.SETTABLE, _as_positive_int),
    # FolioDB's own: the decoded-document cache's bound (engine/cache.py; 0 switches it off).
    "documentCacheSizeMB": Parameter(DEFAULT_SIZE_MB, Change.SETTABLE, _as_size_mb),
    # configureFailPoint exists only when enabled: `foliodb serve --enableTestCommands` (foliodb.commands.failpoints).
    "enableTestCommands": Parameter(False, Change.STARTUP_ONLY),
    "featureCompatibilityVersion": Parameter({"version": FEATURE_COMPATIBILITY_VERSION}, Change.STARTUP_ONLY),
    "internalQueryMaxBlockingSortMemoryUsageBytes": Parameter(SORT_MEMORY_LIMIT, Change.FIXED),
    # FolioDB's own bounds on open cursors (foliodb/commands/cursors.py); mongod has none.
    "maxOpenCursorsPerConnection": Parameter(MAX_CURSORS_PER_CONNECTION, Change.SETTABLE, _as_positive_int),
    "maxOpenCursorsPerUser": Parameter(MAX_CURSORS_PER_USER, Change.SETTABLE, _as_positive_int),
    "jsHeapLimitMB": Parameter(DEFAULT_JS_HEAP_LIMIT_MB, Change.SETTABLE, _as_positive_int),
    "logComponentVerbosity": Parameter({"verbosity": 0}, Change.SETTABLE, _log_verbosity),
    # FolioDB's own: the heap of all running scripts together (foliodb/javascript/runtime.py).
    "jsHeapLimitTotalMB": Parameter(DEFAULT_JS_HEAP_TOTAL_MB, Change.SETTABLE, _as_positive_int),
    # Collection scans are always allowed: the planner has no notablescan mode yet.
    "notablescan": Parameter(False, Change.FIXED),
    "requireApiVersion": Parameter(False, Change.SETTABLE, _as_bool),
    "scramIterationCount": Parameter(scram.ITERATIONS["SCRAM-SHA-1"], Change.FIXED),
    "scramSHA256IterationCount": Parameter(scram.ITERATIONS["SCRAM-SHA-256"], Change.FIXED),
    "ttlMonitorEnabled": Parameter(True, Change.SETTABLE, _as_bool),
    "ttlMonitorSleepSecs": Parameter(60, Change.SETTABLE, _as_positive_int),
}


def _current(request: Request, name: str) -> Any:
    return request.engine.parameters.get(name, PARAMETERS[name].value)


# The parameters `foliodb serve` takes at startup (it has no generic --setParameter).
STARTUP_OPTIONS = frozenset({"enableTestCommands"})


def _detailed(request: Request, name: str) -> dict[str, Any]:
    return {
        "value": _current(request, name),
        "settableAtRuntime": PARAMETERS[name].change is Change.SETTABLE,
        "settableAtStartup": name in STARTUP_OPTIONS,
    }


@COMMANDS.register("getParameter")
def cmd_getParameter(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    params.admin_only(request.db, "getParameter")
    arg = cmd["getParameter"]
    options = arg if isinstance(arg, Mapping) else {}
    show = _detailed if options.get("showDetails") else _current
    if arg == "*" or options.get("allParameters"):
        wanted = sorted(PARAMETERS)
    else:
        named = [k for k in cmd if k != "getParameter" and k not in params.GENERIC_FIELDS]
        wanted = [k for k in named if k in PARAMETERS]
        # Naming no parameter at all is no error (mongosh's startup sends {getParameter: "foo"}).
        if named and not wanted:
            raise CommandError(ErrorCode.InvalidOptions, "no option found to get")
    reply = {name: show(request, name) for name in wanted}
    reply["ok"] = 1.0
    return reply


@COMMANDS.register("setParameter")
def cmd_setParameter(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    params.admin_only(request.db, "setParameter")
    # mongod checks every named parameter before it sets any.
    changes: list[tuple[str, Any]] = []
    for name, value in cmd.items():
        if name == "setParameter" or name in params.GENERIC_FIELDS:
            continue
        parameter = PARAMETERS.get(name)
        if parameter is None:
            raise CommandError(
                ErrorCode.InvalidOptions,
                f"attempted to set unrecognized parameter [{name}], use help:true to see options ",
            )
        if parameter.change is Change.STARTUP_ONLY:
            raise CommandError(ErrorCode.IllegalOperation, f"not allowed to change [{name}] at runtime")
        if parameter.parse is None:
            raise CommandError(ErrorCode.NotImplemented, f"setting {name} is not supported by FolioDB yet")
        if any(name == seen for seen, _ in changes):
            raise CommandError(
                ErrorCode.InvalidOptions, f"attempted to set parameter [{name}] twice in the same setParameter command"
            )
        changes.append((name, parameter.parse(name, value)))
    if not changes:
        raise CommandError(ErrorCode.InvalidOptions, "no option found to set, use help:true to see options ")
    # "was" is the first named parameter's previous value, as mongod reports it.
    reply = {"was": _current(request, changes[0][0]), "ok": 1.0}
    for name, value in changes:
        if name == "logComponentVerbosity":  # a partial document changes only what it names
            value = {**_current(request, name), **value}
        request.engine.parameters[name] = value
        if name == "cursorTimeoutMillis":  # the reaper reads it from the cursor manager
            request.cursors.timeout_millis = value
        elif name == "documentCacheSizeMB":
            request.engine.storage.cache.resize(value * 1024 * 1024)
        elif name == "maxOpenCursorsPerConnection":
            request.cursors.max_per_connection = value
        elif name == "maxOpenCursorsPerUser":
            request.cursors.max_per_user = value
    return reply
