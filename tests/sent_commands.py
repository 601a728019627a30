"""A command listener keeping the command documents a client sent, in order:
what the session, transaction and command tests read to see what FolioDB's
client sends (lsids, txnNumbers, read and write concerns)."""

from __future__ import annotations

from typing import Any

from pymongo import monitoring


class SentCommands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.sent.append(dict(event.command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def named(self, name: str) -> list[dict[str, Any]]:
        return [cmd for cmd in self.sent if next(iter(cmd)) == name]
