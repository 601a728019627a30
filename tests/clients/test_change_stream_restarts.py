"""Change streams resumed across a restart of ``foliodb serve`` on the same dbpath, through
pymongo, motor and pymongo's AsyncMongoClient.

A stream reads some events, the server stops, a new one starts on the dbpath; the stream
resumes after the last token its driver cached, and the events after that token arrive
once each, in commit order: those written before the stop and not yet read, those written
while no stream was open, and those written after resuming. Expected events are the writes
the test makes, listed here as (operationType, _id).

Manual: https://www.mongodb.com/docs/manual/changeStreams/#resume-a-change-stream ;
driver behaviour (the cached resume token, one automatic resume after a network error):
https://github.com/mongodb/specifications/blob/master/source/change-streams/change-streams.md#resume-process
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from motor.motor_asyncio import AsyncIOMotorClient
from pymongo import AsyncMongoClient, monitoring

from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients

Key = tuple[str, Any]
AWAIT_MS = 200  # each getMore's wait: short, so an empty try_next() and a stop are quick


def writes(first: int, count: int) -> list[tuple[str, int]]:
    """``count`` inserts from ``first``, then an update of the first and a delete of the last."""
    ops = [("insert", i) for i in range(first, first + count)]
    return [*ops, ("update", first), ("delete", first + count - 1)]


def apply(coll: Any, ops: list[tuple[str, int]]) -> None:
    for kind, key in ops:
        if kind == "insert":
            coll.insert_one({"_id": key, "n": 0})
        elif kind == "update":
            coll.update_one({"_id": key}, {"$inc": {"n": 1}})
        else:
            coll.delete_one({"_id": key})


async def apply_async(coll: Any, ops: list[tuple[str, int]]) -> None:
    for kind, key in ops:
        if kind == "insert":
            await coll.insert_one({"_id": key, "n": 0})
        elif kind == "update":
            await coll.update_one({"_id": key}, {"$inc": {"n": 1}})
        else:
            await coll.delete_one({"_id": key})


def keys(events: list[dict[str, Any]]) -> list[Key]:
    return [(e["operationType"], e["documentKey"]["_id"]) for e in events]


def check_tokens(events: list[dict[str, Any]]) -> None:
    tokens = [e["_id"]["_data"] for e in events]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), tokens


def take(stream: Any, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(events) < n and time.monotonic() < deadline:
        event = stream.try_next()
        if event is not None:
            events.append(event)
    assert len(events) == n, keys(events)
    return events


class Commands(monitoring.CommandListener):
    """The aggregate and getMore commands a client sends, and how each ended."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.outcomes: list[tuple[str, str]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in ("aggregate", "getMore"):
            self.sent.append((event.command_name, dict(event.command)))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name in ("aggregate", "getMore"):
            self.outcomes.append((event.command_name, "ok"))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if event.command_name in ("aggregate", "getMore"):
            failure = event.failure  # a network error's is {errtype, errmsg}; a server error's, its reply
            self.outcomes.append((event.command_name, str(failure.get("errtype", failure.get("codeName")))))


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


async def take_async(stream: Any, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(events) < n and time.monotonic() < deadline:
        event = await stream.try_next()
        if event is not None:
            events.append(event)
    assert len(events) == n, keys(events)
    return events


def test_pymongo_resumes_on_a_new_server_from_the_last_token(tmp_path: Path) -> None:
    dbpath = tmp_path / "data"
    before = writes(0, 4)  # 6 events: 3 read before the stop, 3 left unread
    between = writes(10, 2)  # written after the restart, before the stream reopens
    after = writes(20, 3)  # written while the resumed stream is open
    first = RunningServer(dbpath)
    try:
        with first.client() as client, client.shop.orders.watch(max_await_time_ms=AWAIT_MS) as stream:
            apply(client.shop.orders, before)
            seen = take(stream, 3)
            token = stream.resume_token
    finally:
        first.stop()
    assert token == seen[-1]["_id"]  # in the middle of a batch: the last event returned

    second = RunningServer(dbpath)  # another port: a new client
    try:
        with second.client() as client:
            coll = client.shop.orders
            apply(coll, between)
            with coll.watch(resume_after=token, max_await_time_ms=AWAIT_MS) as resumed:
                apply(coll, after)
                rest = take(resumed, len(before) + len(between) + len(after) - 3)
                assert resumed.try_next() is None  # nothing repeated, nothing extra
    finally:
        second.stop()
    assert keys(seen + rest) == before + between + after
    check_tokens(seen + rest)


def test_the_same_pymongo_client_resumes_by_itself_across_a_restart_on_the_same_port(tmp_path: Path) -> None:
    """A reader is blocked in a waiting getMore when the server stops; the driver's one
    automatic resume (a network error is resumable) reconnects to the new server on the
    same port and reopens the stream after its cached token."""
    dbpath = tmp_path / "data"
    before, after = writes(0, 3), writes(10, 3)
    server = RunningServer(dbpath)
    port = server.port
    commands = Commands()
    client = server.client(event_listeners=[commands])
    received: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    done = threading.Event()
    try:
        stream = client.shop.orders.watch(max_await_time_ms=AWAIT_MS)

        def read() -> None:
            try:
                while not done.is_set():
                    event = stream.try_next()
                    if event is not None:
                        received.append(event)
            except BaseException as exc:  # the test reports it
                errors.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        apply(client.shop.orders, before)
        wait_for(lambda: len(received) >= len(before) or bool(errors))
        time.sleep(AWAIT_MS / 2000)  # the reader is now waiting in a getMore on the server
        server.stop()
        server = RunningServer(dbpath, port)  # SO_REUSEADDR: the port is free again at once
        apply(client.shop.orders, after)  # the same client's writes reconnect too
        wait_for(lambda: len(received) >= len(before) + len(after) or bool(errors))
        time.sleep(3 * AWAIT_MS / 1000)  # a duplicate would come by now
        done.set()
        reader.join(timeout=10)
        stream.close()
    finally:
        done.set()
        client.close()
        server.stop()
    assert not errors, errors
    assert keys(received) == before + after
    check_tokens(received)
    # The driver resumed once, with resumeAfter its cached token (the last event read before the
    # stop, or a later postBatchResumeToken), after the getMore the stop cut short failed.
    opened = [cmd["pipeline"][0]["$changeStream"] for name, cmd in commands.sent if name == "aggregate"]
    assert len(opened) == 2 and "resumeAfter" not in opened[0]
    assert opened[1]["resumeAfter"]["_data"] >= received[len(before) - 1]["_id"]["_data"]
    assert [outcome for outcome in commands.outcomes if outcome[1] != "ok"] == [("getMore", "AutoReconnect")]


@pytest.mark.parametrize("driver", ["motor", "AsyncMongoClient"])
def test_async_drivers_resume_on_a_new_server_from_the_last_token(tmp_path: Path, driver: str) -> None:
    def connect(server: RunningServer) -> Any:
        if driver == "motor":
            return AsyncIOMotorClient(server.uri, serverSelectionTimeoutMS=5000)
        return AsyncMongoClient(server.uri, serverSelectionTimeoutMS=5000)

    async def close(client: Any) -> None:
        closing = client.close()
        if asyncio.iscoroutine(closing):  # AsyncMongoClient.close is a coroutine; motor's is not
            await closing

    async def watch(coll: Any, **options: Any) -> Any:
        stream = coll.watch(max_await_time_ms=AWAIT_MS, **options)
        if asyncio.iscoroutine(stream):  # AsyncCollection.watch is a coroutine; motor's is not
            stream = await stream
        return stream

    dbpath = tmp_path / "data"
    before, between, after = writes(0, 4), writes(10, 2), writes(20, 3)

    async def main() -> None:
        first = RunningServer(dbpath)
        client = connect(first)
        try:
            async with await watch(client.shop.orders) as stream:
                await apply_async(client.shop.orders, before)
                seen = await take_async(stream, 3)
                token = stream.resume_token
        finally:
            await close(client)
            first.stop()
        assert token == seen[-1]["_id"]

        second = RunningServer(dbpath)
        client = connect(second)
        try:
            coll = client.shop.orders
            await apply_async(coll, between)
            async with await watch(coll, resume_after=token) as resumed:
                await apply_async(coll, after)
                rest = await take_async(resumed, len(before) + len(between) + len(after) - 3)
                assert await resumed.try_next() is None
        finally:
            await close(client)
            second.stop()
        assert keys(seen + rest) == before + between + after
        check_tokens(seen + rest)

    asyncio.run(main())
