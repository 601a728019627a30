"""Event monitoring for the unified runner: a pymongo listener that keeps
the command and connection pool (CMAP) events a client entity observes, and
the ``expectEvents`` check.

Spec: unified-test-format.md, "expectedEventsForClient", "expectedCommandEvent"
and "expectedCmapEvent". Both targets' clients emit command events: pymongo
over the wire, and the embedded facade (foliodb/client/monitoring.py); only
pymongo's connection pools emit CMAP events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pymongo import monitoring

from tests.spec.matching import Matcher, MatchError

# Commands whose events drivers redact; observed only with observeSensitiveCommands.
SENSITIVE = frozenset(
    {
        "authenticate",
        "saslstart",
        "saslcontinue",
        "getnonce",
        "createuser",
        "updateuser",
        "copydbgetnonce",
        "copydbsaslstart",
        "copydb",
    }
)
COMMAND_EVENTS = frozenset({"commandStartedEvent", "commandSucceededEvent", "commandFailedEvent"})
# The spec's CMAP event names (pymongo's ConnectionPoolListener methods, below, record them).
CMAP_EVENTS = frozenset(
    {
        "poolCreatedEvent",
        "poolReadyEvent",
        "poolClearedEvent",
        "poolClosedEvent",
        "connectionCreatedEvent",
        "connectionReadyEvent",
        "connectionClosedEvent",
        "connectionCheckOutStartedEvent",
        "connectionCheckOutFailedEvent",
        "connectionCheckedOutEvent",
        "connectionCheckedInEvent",
    }
)
# expectedCmapEvent fields, as pymongo's event attributes.
_CMAP_FIELDS = {
    "reason": lambda event: event.reason,
    "hasServiceId": lambda event: event.service_id is not None,
    "interruptInUseConnections": lambda event: event.interrupt_connections,
}


class CommandRecorder(monitoring.CommandListener):
    """A client entity's observed events, in order: command events, and the
    CMAP events of its :attr:`pool` listener (a separate object: a listener
    of both kinds is announced twice by pymongo's ``ClientOptions.event_listeners``)."""

    def __init__(self, observe: Iterable[str], ignore: Iterable[str], sensitive: bool) -> None:
        self.observe = set(observe)
        self.ignore = set(ignore) | {"configureFailPoint"}
        self.sensitive = sensitive
        self.events: list[tuple[str, Any]] = []
        self.recording = True  # off once the test's operations are done (the spec's "disable listeners")
        self.pool = PoolRecorder(self)

    def _keep(self, kind: str, event: Any) -> None:
        name = event.command_name
        if not self.recording or kind not in self.observe or name in self.ignore:
            return
        if not self.sensitive and (name.lower() in SENSITIVE or name.lower() in ("hello", "ismaster")):
            return
        self.events.append((kind, event))

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self._keep("commandStartedEvent", event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self._keep("commandSucceededEvent", event)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._keep("commandFailedEvent", event)


class PoolRecorder(monitoring.ConnectionPoolListener):
    """The CMAP events of a :class:`CommandRecorder`'s client."""

    def __init__(self, recorder: CommandRecorder) -> None:
        self.recorder = recorder

    def _keep(self, kind: str, event: Any) -> None:
        if self.recorder.recording and kind in self.recorder.observe:
            self.recorder.events.append((kind, event))

    def pool_created(self, event: Any) -> None:
        self._keep("poolCreatedEvent", event)

    def pool_ready(self, event: Any) -> None:
        self._keep("poolReadyEvent", event)

    def pool_cleared(self, event: Any) -> None:
        self._keep("poolClearedEvent", event)

    def pool_closed(self, event: Any) -> None:
        self._keep("poolClosedEvent", event)

    def connection_created(self, event: Any) -> None:
        self._keep("connectionCreatedEvent", event)

    def connection_ready(self, event: Any) -> None:
        self._keep("connectionReadyEvent", event)

    def connection_closed(self, event: Any) -> None:
        self._keep("connectionClosedEvent", event)

    def connection_check_out_started(self, event: Any) -> None:
        self._keep("connectionCheckOutStartedEvent", event)

    def connection_check_out_failed(self, event: Any) -> None:
        self._keep("connectionCheckOutFailedEvent", event)

    def connection_checked_out(self, event: Any) -> None:
        self._keep("connectionCheckedOutEvent", event)

    def connection_checked_in(self, event: Any) -> None:
        self._keep("connectionCheckedInEvent", event)


def last_two_lsids(recorder: CommandRecorder) -> tuple[Any, Any]:
    """The ``lsid`` of the last two observed CommandStartedEvents (AssertionError without two)."""
    started = [event.command for kind, event in recorder.events if kind == "commandStartedEvent"]
    if len(started) < 2 or "lsid" not in started[-1] or "lsid" not in started[-2]:
        raise AssertionError(f"need two observed commands with an lsid, got {started[-2:]!r}")
    return started[-2]["lsid"], started[-1]["lsid"]


def _described(kind: str, event: Any) -> str:
    return f"{kind} {event.command_name}" if kind in COMMAND_EVENTS else kind


def check_events(matcher: Matcher, expected: Mapping[str, Any], recorder: CommandRecorder) -> None:
    """Raise AssertionError unless the recorded events of ``expected``'s type (command or cmap)
    match ``expected`` (one client's list)."""
    wanted = expected["events"]
    cmap = expected.get("eventType", "command") == "cmap"
    actual = [(kind, event) for kind, event in recorder.events if (kind in COMMAND_EVENTS) != cmap]
    if expected.get("ignoreExtraEvents"):
        actual = actual[: len(wanted)]
    if len(actual) != len(wanted):
        raise AssertionError(
            f"expected {len(wanted)} {'cmap' if cmap else 'command'} events, got {len(actual)}:"
            f" {[_described(k, e) for k, e in actual]}"
        )
    for n, (spec, (kind, event)) in enumerate(zip(wanted, actual, strict=True)):
        ((want_kind, fields),) = spec.items()
        if want_kind != kind:
            raise AssertionError(f"event {n}: expected {want_kind}, got {_described(kind, event)}")
        try:
            if cmap:
                for name, value in fields.items():
                    if name not in _CMAP_FIELDS:
                        raise AssertionError(f"event {n}: the runner does not check {kind}.{name}")
                    matcher.match(value, _CMAP_FIELDS[name](event), root=False, path=name)
                continue
            if "commandName" in fields and fields["commandName"] != event.command_name:
                raise MatchError(f"commandName {event.command_name!r}, expected {fields['commandName']!r}")
            if "databaseName" in fields and fields["databaseName"] != event.database_name:
                raise MatchError(f"databaseName {event.database_name!r}, expected {fields['databaseName']!r}")
            if "command" in fields:
                matcher.match(fields["command"], event.command, root=True)
            if "reply" in fields:
                matcher.match(fields["reply"], event.reply, root=True)
        except MatchError as exc:
            raise AssertionError(f"event {n} ({_described(kind, event)}): {exc}") from None
