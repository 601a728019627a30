"""The lane (foliodb/lane.py): one thread at a time in it, and no one kept out long.

Each test runs real threads against a real Lane and checks the module's
invariants: mutual exclusion; a slice that ends at the next interrupt check;
a holder that blocks without leaving delays the others by about
HOLDER_SECONDS, never more; leaving twice, or a turn inside a turn, is harmless.
"""

from __future__ import annotations

import threading
import time

import pytest

from foliodb import interrupt, lane


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits for a turn that never give up on a slow holder: what the test sees is the lane's doing,
    not a busy machine's."""
    monkeypatch.setattr(lane, "HOLDER_SECONDS", 5.0)
    monkeypatch.setattr(lane, "WAIT_SECONDS", 30.0)


def _in_thread(target: object) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def test_one_thread_at_a_time(patient: None) -> None:
    road = lane.Lane()
    inside = 0
    most = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        for _ in range(200):
            with road.turn():
                with guard:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0)  # let go of the interpreter lock inside the turn, as SQLite calls do
                with guard:
                    inside -= 1

    threads = [_in_thread(work) for _ in range(8)]
    for thread in threads:
        thread.join(timeout=60)
    assert most == 1


def test_a_long_command_leaves_at_its_first_check_after_the_slice(patient: None) -> None:
    road = lane.Lane()
    entered = threading.Event()
    stop = threading.Event()

    def long_command() -> None:
        op = interrupt.Operation(1, "test", {"aggregate": 1})
        previous = interrupt.bind(op)
        try:
            with road.turn():
                entered.set()
                while not stop.is_set():
                    interrupt.check()  # what every long loop does every few milliseconds
                    time.sleep(0.0005)
        finally:
            interrupt.bind(previous)

    thread = _in_thread(long_command)
    assert entered.wait(10)
    started = time.monotonic()
    with road.turn():
        waited = time.monotonic() - started
        assert lane.in_lane()  # in the lane: the long command left it
    stop.set()
    thread.join(timeout=10)
    assert waited < lane.HOLDER_SECONDS  # in the lane: the command left it, it was not overtaken after 5 s


def test_a_holder_that_blocks_delays_the_others_briefly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lane, "HOLDER_SECONDS", 0.05)
    road = lane.Lane()
    entered, release = threading.Event(), threading.Event()

    def blocked_holder() -> None:
        with road.turn():
            entered.set()
            release.wait(10)  # a wait that forgot to leave the lane

    thread = _in_thread(blocked_holder)
    assert entered.wait(10)
    time.sleep(lane.HOLDER_SECONDS)  # the holder has had the lane this long already
    started = time.monotonic()
    with road.turn():
        waited = time.monotonic() - started
        assert not lane.in_lane()  # beside the lane: the holder still has it
    release.set()
    thread.join(timeout=10)
    assert waited < 5.0  # about HOLDER_SECONDS, however loaded the machine: half the 10 s the holder keeps the lane


def test_leave_ends_the_turn_early_and_twice_is_harmless(patient: None) -> None:
    road = lane.Lane()
    with road.turn():
        lane.leave()
        lane.leave()
        other_got_in = threading.Event()

        def other() -> None:
            with road.turn():
                if lane.in_lane():
                    other_got_in.set()

        _in_thread(other).join(timeout=10)
        assert other_got_in.is_set()
    assert not lane.in_lane()


def test_a_turn_inside_a_turn_runs_in_the_outer_one() -> None:
    road = lane.Lane()
    with road.turn():
        with road.turn():  # a command that runs a command (no deadlock)
            assert lane.in_lane()
        assert lane.in_lane()  # the inner block does not end the outer turn
    assert not lane.in_lane()


def test_on_wait_runs_once_at_a_leave_or_a_wait_for_a_turn_never_at_a_turns_end(patient: None) -> None:
    road = lane.Lane()
    calls: list[str] = []
    lane.on_wait(lambda: calls.append("leave"))
    with road.turn():
        pass  # a turn that ends: the thread hands nothing on
    assert calls == []
    with road.turn():
        lane.leave()
        lane.leave()
    assert calls == ["leave"]  # once: it is cleared when it runs
    # A thread with something to hand on does not wait for a busy lane: it hands it on, runs beside.
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with road.turn():
            taken.set()
            release.wait(10)

    holder = _in_thread(hold)
    assert taken.wait(10)
    lane.on_wait(lambda: calls.append("wait"))
    started = time.monotonic()
    with road.turn():
        assert not lane.in_lane()
    assert time.monotonic() - started < lane.HOLDER_SECONDS  # it did not wait for the patient holder
    assert calls == ["leave", "wait"]
    release.set()
    holder.join(timeout=10)
    lane.on_wait(None)
