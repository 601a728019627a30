"""Pausing the cyclic garbage collector while FolioDB builds many objects at once.

Gathering a batch of documents (a cursor's batch, a document cache entry, a
restore's insert batch) makes thousands of new containers that hold no
reference cycles. Each 700 new containers start a collection of the youngest
generation, every tenth of those one of the middle generation, and every
tenth of those (once enough objects have survived) a full collection, which
walks every tracked object of the process: with tens of thousands of
documents held (the document cache, the caller's own results) those full
collections cost more than the decoding itself (returning two cached
20,000-order collections three times: 3.9 s, 1.7 s with batches taken paused,
1.0 s with no collector at all). Paused, the batch's objects are examined
once, by the first collection after.

Invariants: a pause starts when a thread enters :data:`PAUSED` with none
inside, and ends when the last one leaves; the collector is off from its start
(if it was on) and on again at its end. Pauses of threads that overlap one
another are one pause, so under steady concurrent reads it might never end: a
thread that enters a pause older than ``max_seconds`` (1 s) switches the
collector back on for the rest of it, and the program's cycles are collected
as usual meanwhile. Cycles made during a pause are collected after it, not lost.
A ``gc.disable()`` by the program during a pause is undone when it ends.
"""

from __future__ import annotations

import gc
import threading
import time


class _Pause:
    """A context manager (see the module docstring); reentrant and shared by threads."""

    __slots__ = ("_holders", "_lock", "_resume", "_started", "max_seconds")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0  # threads (and nested uses) inside the pause
        self._resume = False  # enable the collector when the last one leaves
        self._started = 0.0  # time.monotonic() when the pause began
        self.max_seconds = 1.0  # a pause older than this when another thread enters it is over

    def __enter__(self) -> None:
        with self._lock:
            if not self._holders:
                self._resume = gc.isenabled()
                self._started = time.monotonic()
                gc.disable()
            elif self._resume and time.monotonic() - self._started > self.max_seconds:
                gc.enable()  # overlapping pauses kept it off long enough: on until they all end
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if not self._holders and self._resume:
                gc.enable()


PAUSED = _Pause()
