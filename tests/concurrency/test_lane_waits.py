"""Nothing waits in the server's lane (foliodb/lane.py).

A connection runs each command in the lane, one at a time; a command about to
wait leaves it first. Here one client waits in each of the places a command
can wait - an awaitData ``getMore`` of a change stream, a fail point's
``blockConnection``, the writer lock behind a long write, ``hello`` awaiting a
topology change - while another client pings. The lane's patience with a
holder is raised to 2 s, so a wait that kept its turn would hold every ping
back until it next checks for killOp, or 2 s; each ping must answer as if
nothing else were running (tests/concurrency/test_server_loop.py has the
loop's own cases: a command answers while another thread holds the lane).
The server runs in this process so the test can set that patience.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import ExecutionTimeout

from foliodb import lane
from foliodb.commands.failpoints import enable_test_commands
from foliodb.server import Server

HOLDER_SECONDS = 2.0
# A ping's median beside a wait. Waits that check for killOp every 50 ms would
# leave the lane at their first check after the slice anyway: this bound is
# below that, so it is the leave before the wait that is tested.
QUICK = 0.015
# The same check against the machine's load of the moment: the median ping beside a wait is
# within half that 50 ms slice of the median ping of the same client with nothing running.
SLICE = 0.050


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Callable[[], Any]]]:
    monkeypatch.setattr(lane, "HOLDER_SECONDS", HOLDER_SECONDS)
    monkeypatch.setattr(lane, "WAIT_SECONDS", 30.0)
    server = Server(str(tmp_path / "data"), "127.0.0.1", 0)
    enable_test_commands(server.executor)  # configureFailPoint
    host, port = server.start()
    clients: list[Any] = []

    def connect() -> Any:
        client: Any = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=10_000)
        clients.append(client)
        return client

    try:
        yield server, connect
    finally:
        for client in clients:
            client.close()
        server.shutdown()


def _median_ping(client: Any, waiting: threading.Thread) -> float:
    samples = []
    while waiting.is_alive() and len(samples) < 20:
        started = time.perf_counter()
        client.admin.command("ping")
        samples.append(time.perf_counter() - started)
        time.sleep(0.01)
    assert len(samples) >= 5, "the waiting command ended too soon to probe beside it"
    return statistics.median(samples)


def _alone(client: Any) -> float:
    samples = []
    for _ in range(20):
        started = time.perf_counter()
        client.admin.command("ping")
        samples.append(time.perf_counter() - started)
        time.sleep(0.01)
    return statistics.median(samples)


def _quick(connect: Callable[[], Any], wait: Callable[[Any], object]) -> None:
    """One client's pings while another runs ``wait`` are as quick as with nothing running."""
    beside, alone = _beside(connect, wait)
    assert beside < alone + SLICE / 2, f"median ping {beside * 1000:.1f} ms beside the wait, {alone * 1000:.1f} alone"


def _beside(connect: Callable[[], Any], wait: Callable[[Any], object]) -> tuple[float, float]:
    """The median ping latency of one client while another runs ``wait``, and with nothing running."""
    waiter, prober = connect(), connect()
    alone = _alone(prober)
    waiter.admin.command("ping")
    thread = threading.Thread(target=wait, args=(waiter,), daemon=True)
    thread.start()
    time.sleep(0.3)  # the wait has begun
    median = _median_ping(prober, thread)
    thread.join(timeout=60)
    return median, alone


def test_an_awaitdata_getmore_waits_outside_the_lane(served: tuple[Server, Callable[[], Any]]) -> None:
    _server, connect = served

    def wait(client: Any) -> None:
        with client.test.c.watch(max_await_time_ms=2000) as stream:
            stream.try_next()  # one getMore awaiting a change for 2 s

    _quick(connect, wait)


def test_a_blocked_connection_waits_outside_the_lane(served: tuple[Server, Callable[[], Any]]) -> None:
    _server, connect = served
    admin = connect()
    admin.test.c.insert_one({"_id": 1})
    admin.admin.command(
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["find"], "blockConnection": True, "blockTimeMS": 2000},
        }
    )
    _quick(connect, lambda client: client.test.c.find_one({"_id": 1}))


def test_a_writer_waits_for_the_writer_lock_outside_the_lane(served: tuple[Server, Callable[[], Any]]) -> None:
    _server, connect = served
    loader = connect()
    loader.test.c.insert_one({"_id": -1})
    loader.test.big.insert_many([{"_id": i, "n": 0} for i in range(100_000)])
    # One command, one write transaction: it holds the writer lock for seconds.
    long_write = threading.Thread(target=lambda: loader.test.big.update_many({}, {"$inc": {"n": 1}}), daemon=True)
    long_write.start()
    time.sleep(0.2)  # the long write holds the writer

    def wait(client: Any) -> None:
        client.test.c.update_one({"_id": -1}, {"$set": {"after": True}})  # waits for the writer lock

    beside, alone = _beside(connect, wait)
    long_write.join(timeout=120)
    assert beside < alone + SLICE / 2


def test_an_awaitable_hello_waits_outside_the_lane(served: tuple[Server, Callable[[], Any]]) -> None:
    _server, connect = served
    topology = connect().admin.command("hello")["topologyVersion"]

    def wait(client: Any) -> None:  # what a driver's monitor sends: answered after maxAwaitTimeMS
        client.admin.command({"hello": 1, "topologyVersion": topology, "maxAwaitTimeMS": 2000})

    _quick(connect, wait)


def test_a_slow_regular_expression_matches_outside_the_lane(served: tuple[Server, Callable[[], Any]]) -> None:
    _server, connect = served
    loader = connect()
    loader.test.s.insert_many([{"_id": i, "s": "a" * 40 + "!"} for i in range(3)])

    def wait(client: Any) -> None:  # catastrophic backtracking, until maxTimeMS
        with contextlib.suppress(ExecutionTimeout):
            list(client.test.s.find({"s": {"$regex": "(a|a)+$"}}).max_time_ms(900))

    waiter, prober = connect(), connect()
    prober.test.s.find_one({"_id": 0})
    thread = threading.Thread(target=wait, args=(waiter,), daemon=True)
    thread.start()
    time.sleep(0.3)
    samples = []
    while thread.is_alive() and len(samples) < 20:
        started = time.perf_counter()
        prober.test.s.find_one({"_id": 0})  # takes its turn in the lane
        samples.append(time.perf_counter() - started)
        time.sleep(0.01)
    thread.join(timeout=60)
    assert len(samples) >= 5
    assert statistics.median(samples) < QUICK
