"""Nothing long holds what a point read, ``hello`` or ``currentOp`` needs.

MongoDB runs operations concurrently and always answers ``hello`` (drivers
drop a server that does not: the server monitoring spec's heartbeats). Here a
long ``$group`` reads its own snapshot while point reads and ``hello`` answer
beside it, and a long write holds only the writer: reads and ``currentOp``
go on, and a second writer waits (shown as ``waitingForLock``) until its
``maxTimeMS``. Latency is checked against the long command's own run, so that
a loaded machine, which slows both, cannot fail it: at least 10 answers while
it ran, 95% of them within a tenth of its run and none within half of it (the
old behaviour was to wait out the whole command); what must not wait for a
command is checked to finish while it still runs. The benchmark
(``python -m benchmarks.concurrency``) reports the percentiles.

Manual: https://www.mongodb.com/docs/manual/faq/concurrency/
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pymongo.errors import ExecutionTimeout

from tests.concurrency.background import Background, wait_for
from tests.concurrency.conftest import Deployment

GROUP_DOCS = 100_000


def _fill(client: Any, n: int = GROUP_DOCS) -> None:
    coll = client.test.big
    for start in range(0, n, 20_000):
        coll.insert_many([{"_id": i, "k": i % 40_000, "v": i, "s": "x" * 40} for i in range(start, start + 20_000)])


def _latencies(call: Any, while_running: Background, pause: float = 0.005) -> tuple[list[float], float]:
    """The calls' latencies while the long command runs, and how long it ran meanwhile."""
    samples = []
    began = time.perf_counter()
    while while_running.running:
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
        time.sleep(pause)
    return samples, time.perf_counter() - began


def _check(measured: tuple[list[float], float], what: str) -> None:
    samples, span = measured
    assert len(samples) >= 10, f"too few {what} samples while the long command ran: {len(samples)}"
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    assert p95 < span / 10, f"{what}: 95th percentile {p95 * 1000:.1f} ms of a {span * 1000:.0f} ms run"
    assert ordered[-1] < span / 2, f"{what}: slowest {ordered[-1] * 1000:.1f} ms of a {span * 1000:.0f} ms run"


def test_point_reads_and_hello_answer_during_a_long_group(deployment: Deployment) -> None:
    loader = deployment.connect()
    _fill(loader)
    worker, prober = deployment.connect(), deployment.connect()
    prober.test.big.find_one({"_id": 1})  # connected and warm

    def group() -> int:
        pipeline = [{"$group": {"_id": "$k", "total": {"$sum": "$v"}}}, {"$count": "groups"}]
        return int(next(worker.test.big.aggregate(pipeline))["groups"])

    long = Background(group)
    reads = _latencies(lambda: prober.test.big.find_one({"_id": 77}), long)
    long.join()
    assert long.error is None and long.result == 40_000
    _check(reads, "find_one by _id")
    long = Background(group)
    hellos = _latencies(lambda: prober.admin.command("hello"), long)
    long.join()
    _check(hellos, "hello")


def test_a_long_write_blocks_only_other_writers(deployment: Deployment) -> None:
    loader = deployment.connect()
    _fill(loader, 60_000)
    writer, other, admin = deployment.connect(), deployment.connect(), deployment.connect()
    other.test.big.find_one({"_id": 1})
    admin.admin.command("ping")
    # A multi-document update is one write transaction: it holds the writer for its whole run.
    long = Background(lambda: writer.test.big.update_many({}, {"$inc": {"v": 1}, "$set": {"s": "y" * 40}}))
    wait_for(lambda: any(op.get("op") == "update" for op in admin.admin.command("currentOp")["inprog"]))
    assert other.test.big.find_one({"_id": 5})["v"] in (5, 6)  # the snapshot before or after, never a mix
    assert admin.admin.command("hello")["isWritablePrimary"] is True
    assert long.running  # they answered without waiting for the write
    waiting = Background(lambda: other.test.small.insert_one({"_id": 1}))
    seen = wait_for(
        lambda: [
            op
            for op in admin.admin.command("currentOp")["inprog"]
            if op.get("op") == "insert" and op.get("waitingForLock")
        ]
    )
    assert seen[0]["ns"] == "test.small" and long.running
    waiting.join()
    assert waiting.error is None
    long.join()
    assert long.error is None and long.result.modified_count == 60_000
    assert other.test.small.find_one({"_id": 1}) == {"_id": 1}


def test_a_writer_waiting_for_the_writer_stops_at_max_time_ms(deployment: Deployment) -> None:
    loader = deployment.connect()
    _fill(loader, 60_000)
    writer, other, admin = deployment.connect(), deployment.connect(), deployment.connect()
    long = Background(lambda: writer.test.big.update_many({}, {"$inc": {"v": 1}}))
    wait_for(lambda: any(op.get("op") == "update" for op in admin.admin.command("currentOp")["inprog"]))
    with pytest.raises(ExecutionTimeout) as info:
        other.test.command({"insert": "small", "documents": [{"_id": 1}], "maxTimeMS": 100})
    assert info.value.code == 50
    assert long.running  # it timed out while the long write still held the writer
    long.join()
    assert other.test.small.find_one({"_id": 1}) is None  # the timed-out insert wrote nothing
