"""Run a call on another thread and collect its result or its exception."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class Background:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.finished: float | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.result = fn()
        except BaseException as exc:
            self.error = exc
        finally:
            self.finished = time.monotonic()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float = 60.0) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the background call did not finish"
        return self.result

    @property
    def seconds(self) -> float:
        assert self.finished is not None
        return self.finished - self.started


def wait_for(condition: Callable[[], Any], timeout: float = 20.0, interval: float = 0.01) -> Any:
    """Poll until ``condition()`` is truthy; its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def pings_while(running: Background, client: Any) -> list[float]:
    """Seconds each ``ping`` of ``client`` took while ``running`` ran (one every 10 ms)."""
    pings = []
    while running.running:
        started = time.perf_counter()
        client.admin.command("ping")
        pings.append(time.perf_counter() - started)
        time.sleep(0.01)
    return pings
