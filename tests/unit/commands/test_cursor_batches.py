"""Gathering a cursor's batch is a long loop too: up to 16 MiB of documents
(a $group's 100,000 results, say) encoded one by one after the stage that made
them has finished checking. It stops at killOp and maxTimeMS like any other,
and so leaves the server's lane after its slice (foliodb/lane.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from foliodb import interrupt
from foliodb.commands.cursors import Lookahead, take_batch
from foliodb.errors import CommandError, ErrorCode


def _results(op: interrupt.Operation, kill_after: int) -> Iterator[dict[str, Any]]:
    """A stage's output that checks nothing itself; killOp arrives after ``kill_after`` documents."""
    for i in range(100_000):
        if i == kill_after:
            op.killed = True
        yield {"_id": i, "n": i}


@pytest.mark.parametrize("measure", [True, False], ids=["over the wire", "in process"])
@pytest.mark.parametrize("size", [None, 50_000], ids=["to the size limit", "a batchSize"])
def test_killop_stops_a_batch_being_gathered(measure: bool, size: int | None) -> None:
    op = interrupt.Operation(1, "test", {"getMore": 1})
    previous = interrupt.bind(op)
    try:
        with pytest.raises(CommandError) as raised:
            take_batch(Lookahead(_results(op, 1_000)), size, measure=measure)
    finally:
        interrupt.bind(previous)
    assert raised.value.code == ErrorCode.Interrupted


def test_maxtimems_stops_a_batch_being_gathered() -> None:
    op = interrupt.Operation(1, "test", {"getMore": 1}, deadline=time.monotonic() + 0.05)

    def slow() -> Iterator[dict[str, Any]]:
        for i in range(100_000):
            if i == 1_000:
                time.sleep(0.1)  # the deadline passes here
            yield {"_id": i}

    previous = interrupt.bind(op)
    try:
        with pytest.raises(CommandError) as raised:
            take_batch(Lookahead(slow()), None, measure=True)
    finally:
        interrupt.bind(previous)
    assert raised.value.code == ErrorCode.MaxTimeMSExpired


def test_a_batch_gathered_without_interruption_is_whole() -> None:
    op = interrupt.Operation(1, "test", {"getMore": 1})
    previous = interrupt.bind(op)
    try:
        batch, done = take_batch(Lookahead(iter([{"_id": i} for i in range(3_000)])), None, measure=False)
    finally:
        interrupt.bind(previous)
    assert [doc["_id"] for doc in batch] == list(range(3_000)) and done
