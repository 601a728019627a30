"""The async client never stalls the event loop, and cancelling a task stops its operation.

A long aggregation runs on one task while another task reads by ``_id``: the
reads keep answering while it runs (bounds: the read's delay, measured
against the same read with nothing else running so the machine's load
cancels out, and the event loop's ticks), then cancelling the aggregation's
task stops the aggregation as ``killOp`` does: ``currentOp`` lists it while
it runs and not once the task is done.

https://www.mongodb.com/docs/manual/reference/method/db.killOp/
https://docs.python.org/3/library/asyncio-task.html#task-cancellation
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import foliodb

KILL_OP = "https://www.mongodb.com/docs/manual/reference/method/db.killOp/"
DELAY_BOUND = 0.05  # the bound on a point read's delay behind a long aggregation
PROBES = 15
ROOT = Path(__file__).resolve().parents[3]
STOP_BOUND = 30.0  # seconds for a killed operation to end at the owner: interruption, not speed
# An aggregation that runs for seconds on any machine (200 documents x 20,000 unwound values,
# grouped): the test never waits for its end, it cancels it.
LONG_PIPELINE = [
    {"$set": {"r": {"$range": [0, 20000]}}},
    {"$unwind": "$r"},
    {"$group": {"_id": {"$mod": ["$r", 1000]}, "n": {"$sum": "$x"}}},
]


async def running(client: Any, collection: str) -> list[dict[str, Any]]:
    """The aggregations on ``collection`` that currentOp lists."""
    cursor = await client.admin.aggregate([{"$currentOp": {}}, {"$match": {"command.aggregate": collection}}])
    return list(await cursor.to_list())


async def read_latencies(coll: Any) -> list[float]:
    latencies = []
    for _ in range(PROBES):
        started = time.perf_counter()
        assert await coll.find_one({"_id": 7}) == {"_id": 7, "x": 7}
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.002)
    return latencies


async def until_listed(client: Any, collection: str) -> None:
    while not await running(client, collection):
        await asyncio.sleep(0.005)


def test_a_long_aggregation_delays_no_other_task_and_cancelling_it_stops_it() -> None:
    async def main() -> None:
        client = foliodb.AsyncMongoClient(":memory:")
        try:
            coll = client.test.big
            await coll.insert_many([{"_id": i, "x": i} for i in range(200)])
            alone = await read_latencies(coll)

            aggregation = asyncio.ensure_future(coll.aggregate(LONG_PIPELINE))
            await until_listed(client, "big")
            ticks = 0

            async def tick() -> None:  # a coroutine waking every millisecond, as a timer would
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.001)
                    ticks += 1

            ticker = asyncio.ensure_future(tick())
            during = await read_latencies(coll)
            ticker.cancel()
            # Every read ran while the aggregation did (else they measured nothing).
            assert not aggregation.done()
            assert await running(client, "big")
            # The loop kept turning (the timer woke between the reads) and each read was delayed by
            # less than the bound: the typical read against the typical read alone, so the
            # machine's load, felt by both, cancels out.
            assert ticks >= PROBES
            assert statistics.median(during) - statistics.median(alone) < DELAY_BOUND

            # KILL_OP: cancelling the task stops the aggregation; once the task is done, its
            # operation is no longer running.
            aggregation.cancel()
            with pytest.raises(asyncio.CancelledError):
                await aggregation
            assert await running(client, "big") == []
            assert await coll.count_documents({}) == 200  # the client goes on working
        finally:
            await client.close()

    asyncio.run(main())


def test_cancelling_a_task_stops_each_of_its_commands() -> None:
    # A cursor's getMores run as separate commands: cancelling the task while they run stops the
    # one running (or refuses the next); once the task is done, no getMore runs.
    async def main() -> None:
        client = foliodb.AsyncMongoClient(":memory:")
        try:
            coll = client.test.many
            await coll.insert_many([{"_id": i, "x": i} for i in range(200)])
            cursor = await coll.aggregate(LONG_PIPELINE[:2], batchSize=10)  # unwound: 4,000,000 documents
            assert len(await cursor.to_list(10)) == 10

            read = asyncio.ensure_future(cursor.to_list())  # getMore after getMore
            await until_listed_get_more(client)
            read.cancel()
            with pytest.raises(asyncio.CancelledError):
                await read
            ops = await client.admin.aggregate([{"$currentOp": {}}, {"$match": {"command.getMore": {"$exists": 1}}}])
            assert await ops.to_list() == []
            await cursor.close()
        finally:
            await client.close()

    asyncio.run(main())


async def until_listed_get_more(client: Any) -> None:
    while True:
        ops = await client.admin.aggregate([{"$currentOp": {}}, {"$match": {"command.getMore": {"$exists": 1}}}])
        if await ops.to_list():
            return
        await asyncio.sleep(0.005)


OWNER = """
import sys
import foliodb
client = foliodb.MongoClient(sys.argv[1])
client.test.big.insert_many([{"_id": i, "x": i} for i in range(200)])
print("ready", flush=True)
sys.stdin.read()
"""


def test_cancelling_stops_the_operation_in_the_process_owning_the_dbpath(tmp_path: Path) -> None:
    # KILL_OP through another process: the dbpath's owner runs an endless find; cancelling the task
    # closes its connection to the owner, which stops the operation as mongod does when its client
    # disconnects (ClientDisconnect). Before, the cancelled task waited for the find's end: never.
    path = str(tmp_path / "data")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, path], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline() == b"ready\n"

        async def finds(client: Any) -> list[dict[str, Any]]:
            cursor = await client.admin.aggregate([{"$currentOp": {}}, {"$match": {"command.find": "big"}}])
            return list(await cursor.to_list())

        async def main() -> None:
            client = foliodb.AsyncMongoClient(path)
            try:
                assert client._delegate._executor.remote is not None  # reached through the owner
                endless = asyncio.ensure_future(client.test.big.find({"$where": "while (true) {}"}).to_list())
                while not await finds(client):
                    await asyncio.sleep(0.005)
                endless.cancel()
                # Generous bounds for a loaded machine: they wait for an interruption, not for speed.
                done, _ = await asyncio.wait((endless,), timeout=STOP_BOUND)
                assert done == {endless} and endless.cancelled()
                deadline = time.monotonic() + STOP_BOUND
                while await finds(client) and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert await finds(client) == []
                assert await client.test.big.count_documents({}) == 200  # the client goes on working
            finally:
                await client.close()

        asyncio.run(main())
    finally:
        owner.stdin.close()  # type: ignore[union-attr]
        owner.wait(60)
