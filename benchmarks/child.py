"""Child processes for the index and aggregation benchmarks.

Every measurement runs in a fresh interpreter (``python -m <module> --worker
...``), so no store's memory, caches or garbage slows the next one, a store
that hangs can be stopped, and a child's peak RSS is its own.

Invariants:

* a child writes its results to a JSON file after every step, atomically (a
  temporary file, then a rename), so a child that crashes or is stopped at its
  time limit still hands back every step it finished;
* :func:`run` never raises for a failed child: it returns what the child
  wrote and, when the child did not end normally, why.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class Results:
    """A child's results, rewritten to ``path`` on every :meth:`save`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {}

    def save(self, key: str, value: Any) -> None:
        self.data[key] = value
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(self.data, fh, default=str)
        os.replace(tmp, self.path)


def run(module: str, args: list[str], limit: float) -> tuple[dict[str, Any], str | None]:
    """Run ``python -m module --worker ... --result FILE``; return its results and why it stopped early, if it did."""
    fd, result_file = tempfile.mkstemp(prefix="bench-result-", suffix=".json")
    os.close(fd)
    command = [sys.executable, "-m", module, *args, "--result", result_file]
    failure: str | None = None
    try:
        done = subprocess.run(command, cwd=ROOT, timeout=limit, capture_output=True, text=True)
        if done.returncode != 0:
            failure = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        failure = f"stopped after {limit:.0f} s"
    try:
        with open(result_file) as fh:
            text = fh.read()
        results: dict[str, Any] = json.loads(text) if text else {}
    finally:
        os.unlink(result_file)
    return results, failure


class OverBudget(Exception):
    """Raised in the main thread when a :func:`deadline` passes."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Interrupt the body after ``seconds`` (at the next Python bytecode) with :class:`OverBudget`."""

    def expire(signum: int, frame: Any) -> None:
        raise OverBudget(f"over the {seconds:g} s budget")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def peak_rss() -> int:
    """This process's peak resident set size so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss() -> int:
    """This process's resident set size now, in bytes."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")
