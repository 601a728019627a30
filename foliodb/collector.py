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

Invariants: the collector is disabled while any thread is inside
:data:`PAUSED`; when the last one leaves it is enabled again if it was enabled
when the first one entered. Cycles made meanwhile (by anyone in the process)
are collected after, not lost. A ``gc.disable()`` by the program while a pause
is held is undone when the pause ends.
"""

from __future__ import annotations

import gc
import threading


class _Pause:
    """A context manager (see the module docstring); reentrant and shared by threads."""

    __slots__ = ("_holders", "_lock", "_resume")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0  # threads (and nested uses) inside the pause
        self._resume = False  # enable the collector when the last one leaves

    def __enter__(self) -> None:
        with self._lock:
            if not self._holders:
                self._resume = gc.isenabled()
                gc.disable()
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if not self._holders and self._resume:
                gc.enable()


PAUSED = _Pause()
