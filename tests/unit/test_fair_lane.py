"""The embedded engine's lane (foliodb/lane.py, FairLane): turns in arrival order, a long
command hands its turn on after its slice and waits for the next, and short commands keep
a share of the lane beside long ones.

Real threads on a real FairLane; every wait for an ordering is an event, so what is
checked is the order of turns, not how fast the machine runs. Regression: the embedded
executor ran commands with no lane at all, and 8 writer threads beside 2 scanning readers
waited up to 5 ms for the interpreter at each SQLite call (a few hundred writes a second).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import foliodb
from foliodb import interrupt, lane


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiters never give up on a slow holder: the order seen is the lane's, not a busy machine's."""
    monkeypatch.setattr(lane, "HOLDER_SECONDS", 5.0)
    monkeypatch.setattr(lane, "WAIT_SECONDS", 30.0)


def _in_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_turns_go_in_arrival_order(patient: None) -> None:
    road = lane.FairLane()
    order: list[int] = []
    assert road.take()
    threads = []
    for i in range(5):

        def command(i: int = i) -> None:
            assert road.take()
            order.append(i)
            road.done()

        threads.append(_in_thread(command))
        _until(lambda i=i: len(road._waiting) == i + 1)  # queued before the next one starts
    road.done()
    for thread in threads:
        thread.join(timeout=10)
    assert order == [0, 1, 2, 3, 4]


def test_a_long_command_hands_its_turn_on_at_its_first_check_after_the_slice(patient: None) -> None:
    road = lane.FairLane()
    entered, short_done, stop = threading.Event(), threading.Event(), threading.Event()
    checks_while_short_ran: list[bool] = []

    def long_command() -> None:
        op = interrupt.Operation(1, "test", {"aggregate": 1})
        previous = interrupt.bind(op)
        assert road.take()
        try:
            entered.set()
            while not stop.is_set():
                interrupt.check()
                checks_while_short_ran.append(short_done.is_set())
                time.sleep(0.0005)
        finally:
            road.done()
            interrupt.bind(previous)

    thread = _in_thread(long_command)
    assert entered.wait(10)
    assert road.take()
    assert lane.in_lane()  # the turn, not beside: the long command handed it on
    road.done()
    short_done.set()
    _until(lambda: bool(checks_while_short_ran) and checks_while_short_ran[-1])
    stop.set()
    thread.join(timeout=10)
    # The long command went on after the short one, in the lane again.
    assert checks_while_short_ran[-1]


def test_a_command_beside_the_lane_asks_for_a_turn_again_after_its_slice(patient: None) -> None:
    road = lane.FairLane()
    assert road.take()
    lane.leave()  # about to wait (the writer lock, say): beside the lane now
    assert not lane.in_lane()
    time.sleep(lane.SLICE_SECONDS * 2)
    lane.leave_if_overdue()  # its next interrupt check
    assert lane.in_lane()
    road.done()
    assert not lane.in_lane()


def test_a_command_inside_a_command_takes_no_second_turn(patient: None) -> None:
    road = lane.FairLane()
    assert road.take()
    assert not road.take()  # nested: runs in the outer command's turn
    assert lane.in_lane()
    road.done()
    assert not lane.in_lane()
    assert road.take()  # the lane is free again
    road.done()


def test_short_commands_keep_a_share_beside_long_ones(patient: None) -> None:
    """A long command that has had the lane for a while waits behind a short command that came
    after it: the short ones' share of the lane comes first."""
    road = lane.FairLane()
    order: list[str] = []
    s1_in = threading.Event()

    def long_command() -> None:
        op = interrupt.Operation(1, "test", {"aggregate": 1})
        previous = interrupt.bind(op)
        assert road.take()
        try:
            order.append("long")
            time.sleep(lane.SLICE_SECONDS * 10)  # more of the lane than the balance remembers
            _until(lambda: len(road._waiting) == 1)  # s1 waits
            interrupt.check()  # hands the turn to s1, queues behind it
            order.append("long again")
        finally:
            road.done()
            interrupt.bind(previous)

    def s1() -> None:
        assert road.take()
        order.append("s1")
        s1_in.set()
        _until(lambda: len(road._waiting) == 2)  # the long command, then s2, wait
        road.done()

    def s2() -> None:
        assert road.take()
        order.append("s2")
        road.done()

    long_thread = _in_thread(long_command)
    _until(lambda: order == ["long"])
    first = _in_thread(s1)
    assert s1_in.wait(10)
    _until(lambda: len(road._waiting) == 1)  # the long command, queued
    second = _in_thread(s2)
    for thread in (first, second, long_thread):
        thread.join(timeout=10)
    assert order == ["long", "s1", "s2", "long again"]


def test_embedded_commands_take_turns_in_the_engines_lane() -> None:
    client = foliodb.MongoClient(":memory:")
    try:
        road = client._executor.engine.lane
        assert isinstance(road, lane.FairLane)
        seen: list[bool] = []
        original = road.done

        def spy() -> None:
            seen.append(lane.in_lane())  # the command ends in its turn
            original()

        road.done = spy  # type: ignore[method-assign]
        client.db.c.insert_one({"_id": 1})
        assert client.db.c.find_one({"_id": 1}) == {"_id": 1}
        assert seen == [True, True]
        assert not lane.in_lane()  # each command's turn ended with it
    finally:
        client.close()


def test_a_writer_beside_two_scanning_readers_waits_behind_few_reader_slices(tmp_path: Path, patient: None) -> None:
    """An embedded client, two threads scanning a collection back to back (long commands,
    each handing its turn on after every slice) and inserts from this thread: each insert
    that has to wait gets its turn behind at most four reader slices (the lane's balance of
    long against short commands is bounded by four slices), counted turn by turn."""
    client = foliodb.MongoClient(str(tmp_path))
    # Scans long enough to outlast a slice on any machine: read from SQLite (no document cache,
    # which scans 1,000 documents within one slice), 4,000 documents of about 250 bytes.
    client.admin.command("setParameter", 1, documentCacheSizeMB=0)
    coll = client.db.orders
    coll.insert_many([{"i": i, "total": i % 97, "pad": "x" * 200} for i in range(4000)])
    road = client._executor.engine.lane
    given: list[bool] = []  # each turn handed over: True for a long command's
    hand_over = road._hand_over

    def spy() -> None:
        line = list(road._waiting)
        hand_over()
        given.extend(long for entry in line if entry not in road._waiting for long in (entry[1],))

    road._hand_over = spy  # type: ignore[method-assign]
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            list(coll.find({"total": {"$lt": 0}}))  # matches nothing: every document read

    readers = [_in_thread(reader) for _ in range(2)]
    try:
        _until(lambda: given.count(True) >= 4)  # both scanning, turns handed between them
        behind: list[int] = []  # per insert that waited: the reader slices before its turn
        for k in range(40):
            mark = len(given)
            coll.insert_one({"k": k})
            turns = given[mark:]
            if False in turns:  # it waited and was handed its turn (a short command's)
                behind.append(turns[: turns.index(False)].count(True))
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=30)
        client.close()
    assert behind, "no insert waited: the readers were not running"
    assert max(behind) <= 4, behind
