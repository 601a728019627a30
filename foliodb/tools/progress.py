"""What the tools say while they work, on stderr (stdout may carry data).

Three modes, chosen once per command: on a terminal each task is a tqdm
progress bar and notes are lines above the bars; anywhere else (a pipe, a
file, CI) tasks and notes are plain log lines, a timestamp then a tab then
the text, as mongo-tools writes them, with a task's line repeated at most
once a second; with ``quiet`` only problems the user must see (bad input lines) are
said. Library calls default to :data:`SILENT`, which says nothing.
"""

from __future__ import annotations

import datetime
import sys
import time
from typing import IO, Any

from tqdm import tqdm

LOG_INTERVAL = 1.0  # seconds between two log lines of one task


def _stamp() -> str:
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + time.strftime("%z")


class Task:
    """One unit of work with a count: documents of a namespace, bytes of a file."""

    def __init__(self, reporter: Reporter, label: str, total: int | None, unit: str) -> None:
        self.reporter, self.label, self.total, self.unit = reporter, label, total, unit
        self.done = 0
        self.detail = ""  # a changing remark after the count (a sync's lag)
        self._bar: Any = None
        self._last_log = time.monotonic()
        if reporter.mode == "bar":
            in_bytes = unit == "bytes"
            self._bar = tqdm(
                total=total,
                desc=label,
                unit="B" if in_bytes else f" {unit}",
                unit_scale=in_bytes,
                unit_divisor=1024,
                file=reporter.stream,
                dynamic_ncols=True,
            )

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.reporter.mode == "log" and time.monotonic() - self._last_log >= LOG_INTERVAL:
            self._last_log = time.monotonic()
            self.reporter.log(self._progress())

    def describe(self, detail: str) -> None:
        """Set the remark shown after the count (on the bar at once, in the next log line)."""
        self.detail = detail
        if self._bar is not None:
            self._bar.set_postfix_str(detail, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _progress(self) -> str:
        if self.total:
            text = f"{self.label}  {self.done}/{self.total} {self.unit}  ({100 * self.done / self.total:.1f}%)"
        else:
            text = f"{self.label}  {self.done} {self.unit}"
        return f"{text}  {self.detail}" if self.detail else text

    def __enter__(self) -> Task:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Reporter:
    """Where a command's progress and notes go."""

    def __init__(self, quiet: bool = False, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode = "quiet" if quiet else "bar" if self.stream.isatty() else "log"

    def task(self, label: str, total: int | None = None, unit: str = "documents") -> Task:
        return Task(self, label, total, unit)

    def note(self, text: str) -> None:
        """A line worth keeping: what was dumped, restored, skipped."""
        if self.mode == "bar":
            tqdm.write(text, file=self.stream)
        elif self.mode == "log":
            self.log(text)

    def warn(self, text: str) -> None:
        """A problem the user must see (a bad input line): said even when quiet."""
        if self.mode == "bar":
            tqdm.write(text, file=self.stream)
        elif self.mode == "log":
            self.log(text)
        elif self.mode == "quiet":
            print(text, file=self.stream, flush=True)

    def log(self, text: str) -> None:
        print(f"{_stamp()}\t{text}", file=self.stream, flush=True)


SILENT = Reporter(quiet=True)
SILENT.mode = "silent"
"""For library calls: the functions report nothing, not even problems (they return
them), unless given a reporter."""
