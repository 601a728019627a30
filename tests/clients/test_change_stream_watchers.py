"""Many idle change stream watchers on one ``foliodb serve``: each blocked in a waiting
``getMore`` (maxAwaitTimeMS 1000) costs the other clients nothing they notice, and each
wakes with the write.

A waiting getMore holds no snapshot and no lock (foliodb/commands/change_streams.py), so a
writer, a ping and a new connection's ``hello`` answer as on an idle server. The bounds
asserted are generous (2 s); the test prints what it measured.

Manual: https://www.mongodb.com/docs/manual/reference/command/getMore/ (maxTimeMS of a
tailable awaitData cursor: how long the server waits for new data);
https://www.mongodb.com/docs/manual/reference/change-events/insert/
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import pytest
from pymongo import monitoring

from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients

WATCHERS = 50
# Long awaits, so that a loaded machine cannot pass for a wait's end: what waits for the watchers
# would take their 10 s, what is woken by the commit comes well within half of it.
AWAIT_MS = 10_000
BOUND = AWAIT_MS / 2000  # seconds: "not delayed by the waiting watchers"


class InFlightGetMores(monitoring.CommandListener):
    """How many getMores the client has sent and not yet had answered."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def _add(self, name: str, delta: int) -> None:
        if name == "getMore":
            with self._lock:
                self.count += delta

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self._add(event.command_name, 1)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self._add(event.command_name, -1)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._add(event.command_name, -1)


def timed(action: Any) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def test_idle_watchers_delay_no_one_and_all_wake_with_the_write(server: RunningServer) -> None:
    in_flight = InFlightGetMores()
    watchers = server.client(maxPoolSize=WATCHERS + 5, event_listeners=[in_flight])
    opened = threading.Barrier(WATCHERS + 1, timeout=30)
    arrivals: dict[int, tuple[float, dict[str, Any]]] = {}
    errors: list[BaseException] = []

    def watch(index: int) -> None:
        try:
            with watchers.shop.orders.watch(max_await_time_ms=AWAIT_MS) as stream:
                opened.wait()
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    event = stream.try_next()
                    if event is not None:
                        arrivals[index] = (time.monotonic(), event)
                        return
        except BaseException as exc:  # reported below
            errors.append(exc)
            opened.abort()

    threads = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(WATCHERS)]
    try:
        for thread in threads:
            thread.start()
        opened.wait()
        time.sleep(0.3)  # every watcher is now inside a getMore waiting on the server
        waiting = in_flight.count
        with server.client() as other:
            hello = timed(lambda: other.admin.command("hello"))  # a new connection's handshake and hello
            ping = timed(lambda: other.admin.command("ping"))
            written = time.monotonic()  # event latencies count from the insert's start
            insert = timed(lambda: other.shop.orders.insert_one({"_id": "warm", "n": 0}))
        for thread in threads:
            thread.join(timeout=20)
    finally:
        watchers.close()
    assert not errors, errors[:3]
    latencies = sorted(arrived - written for arrived, _ in arrivals.values())
    print(
        f"\n{WATCHERS} watchers, {waiting} getMores waiting: hello {hello * 1000:.1f} ms, ping {ping * 1000:.1f} ms, "
        f"insert {insert * 1000:.1f} ms; "
        f"event after the write: median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms"
    )
    assert waiting >= WATCHERS // 2  # the measurement ran while the watchers waited
    assert hello < BOUND and ping < BOUND and insert < BOUND
    assert sorted(arrivals) == list(range(WATCHERS))
    # Woken by the commit, not at the end of their wait (which was ~9.7 s away when the write came).
    assert statistics.median(latencies) < AWAIT_MS / 2000
    for _, event in arrivals.values():
        assert (event["operationType"], event["documentKey"], event["fullDocument"]) == (
            "insert",
            {"_id": "warm"},
            {"_id": "warm", "n": 0},
        )
