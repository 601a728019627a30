"""The storage's writer lock (foliodb/engine/storage.py, WriterLock): one holder at a time,
handed over in arrival order, and no thread left waiting for a free lock.

Its free path is one non-blocking acquire and one release of its lock; a thread that joins
the line tries the lock again after joining, so a holder letting go at that moment cannot
leave it waiting. Real threads; each wait for an ordering is an event or a poll of the line,
so what is checked is the order of turns, not how fast the machine runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from foliodb.engine.writer_lock import WriterLock


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_one_holder_at_a_time_and_every_thread_gets_its_turns() -> None:
    lock = WriterLock()
    inside = [0]
    most = [0]
    turns = [0]

    def writer() -> None:
        for i in range(300):
            lock.acquire()
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            if i % 7 == 0:
                time.sleep(0)  # let others run, and join the line, while this one holds it
            inside[0] -= 1
            turns[0] += 1
            lock.release()

    threads = [threading.Thread(target=writer, daemon=True) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)  # generous: a loaded machine; a thread left waiting for a free lock never ends
    assert not any(thread.is_alive() for thread in threads)
    assert most[0] == 1
    assert turns[0] == 6 * 300


def test_a_waiting_thread_goes_before_the_holder_takes_it_again() -> None:
    lock = WriterLock()
    order: list[str] = []
    lock.acquire()

    def waiter() -> None:
        lock.acquire()
        order.append("waiter")
        lock.release()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    _until(lambda: len(lock._waiters) == 1)
    lock.release()
    lock.acquire()  # at once, as a thread writing in a loop does: the waiter came first
    order.append("holder")
    lock.release()
    thread.join(10)
    assert order == ["waiter", "holder"]


def test_a_free_lock_is_taken_at_once_again_and_again() -> None:
    lock = WriterLock()
    for _ in range(1000):
        lock.acquire()
        lock.release()
    done = threading.Event()

    def other() -> None:
        lock.acquire()
        lock.release()
        done.set()

    threading.Thread(target=other, daemon=True).start()
    assert done.wait(10)
