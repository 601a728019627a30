"""pymongo's command monitoring on the embedded client: listeners passed as
``event_listeners`` see each command started, then succeeded or failed,
with pymongo's event classes.

https://pymongo.readthedocs.io/en/stable/api/pymongo/monitoring.html
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import monitoring
from pymongo.errors import OperationFailure

import foliodb


class Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.events.append(("started", event))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self.events.append(("succeeded", event))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.events.append(("failed", event))


class Broken(monitoring.CommandListener):
    def started(self, event: Any) -> None:
        raise RuntimeError("a listener bug")

    def succeeded(self, event: Any) -> None:
        raise RuntimeError("a listener bug")

    def failed(self, event: Any) -> None:
        raise RuntimeError("a listener bug")


def test_commands_are_published() -> None:
    recorder = Recorder()
    with foliodb.MongoClient(":memory:", event_listeners=[recorder, Broken()]) as client:
        client.shop.orders.insert_one({"_id": 1})
        assert client.shop.orders.find_one({"_id": 1}) == {"_id": 1}  # a broken listener changes nothing
        with pytest.raises(OperationFailure):
            client.shop.command("noSuchCommand")
    kinds = [(kind, event.command_name) for kind, event in recorder.events]
    assert kinds == [
        ("started", "insert"),
        ("succeeded", "insert"),
        ("started", "find"),
        ("succeeded", "find"),
        ("started", "noSuchCommand"),
        ("failed", "noSuchCommand"),
    ]
    started, succeeded = recorder.events[0][1], recorder.events[1][1]
    assert started.database_name == "shop" and started.command["insert"] == "orders"
    assert started.command["$db"] == "shop" and started.request_id == succeeded.request_id
    assert succeeded.reply["n"] == 1 and succeeded.duration_micros >= 0
    failed = recorder.events[5][1]
    assert failed.failure["code"] == 59
