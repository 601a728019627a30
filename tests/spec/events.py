"""Command monitoring for the unified runner: a pymongo CommandListener that
keeps the events a client entity observes, and the ``expectEvents`` check.

Spec: unified-test-format.md, "expectedEventsForClient" and "expectedCommandEvent".
Both targets' clients emit them: pymongo over the wire, and the embedded
facade (foliodb/client/monitoring.py).
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
_KINDS = {
    "commandStartedEvent": monitoring.CommandStartedEvent,
    "commandSucceededEvent": monitoring.CommandSucceededEvent,
    "commandFailedEvent": monitoring.CommandFailedEvent,
}


class CommandRecorder(monitoring.CommandListener):
    def __init__(self, observe: Iterable[str], ignore: Iterable[str], sensitive: bool) -> None:
        self.observe = set(observe)
        self.ignore = set(ignore) | {"configureFailPoint"}
        self.sensitive = sensitive
        self.events: list[tuple[str, Any]] = []
        self.recording = True  # off once the test's operations are done (the spec's "disable listeners")

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


def last_two_lsids(recorder: CommandRecorder) -> tuple[Any, Any]:
    """The ``lsid`` of the last two observed CommandStartedEvents (AssertionError without two)."""
    started = [event.command for kind, event in recorder.events if kind == "commandStartedEvent"]
    if len(started) < 2 or "lsid" not in started[-1] or "lsid" not in started[-2]:
        raise AssertionError(f"need two observed commands with an lsid, got {started[-2:]!r}")
    return started[-2]["lsid"], started[-1]["lsid"]


def check_events(matcher: Matcher, expected: Mapping[str, Any], recorder: CommandRecorder) -> None:
    """Raise AssertionError unless the recorded events match ``expected`` (one client's list)."""
    wanted = expected["events"]
    actual = recorder.events
    if expected.get("ignoreExtraEvents"):
        actual = actual[: len(wanted)]
    if len(actual) != len(wanted):
        raise AssertionError(
            f"expected {len(wanted)} command events, got {len(actual)}: {[(k, e.command_name) for k, e in actual]}"
        )
    for n, (spec, (kind, event)) in enumerate(zip(wanted, actual, strict=True)):
        ((want_kind, fields),) = spec.items()
        if want_kind != kind:
            raise AssertionError(f"event {n}: expected {want_kind}, got {kind} ({event.command_name})")
        try:
            if "commandName" in fields and fields["commandName"] != event.command_name:
                raise MatchError(f"commandName {event.command_name!r}, expected {fields['commandName']!r}")
            if "databaseName" in fields and fields["databaseName"] != event.database_name:
                raise MatchError(f"databaseName {event.database_name!r}, expected {fields['databaseName']!r}")
            if "command" in fields:
                matcher.match(fields["command"], event.command, root=True)
            if "reply" in fields:
                matcher.match(fields["reply"], event.reply, root=True)
        except MatchError as exc:
            raise AssertionError(f"event {n} ({kind} {event.command_name}): {exc}") from None
