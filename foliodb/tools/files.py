"""The files and streams the tools read and write.

``-`` is standard input or output (never closed by the tools). Compressed
output is gzip as Go's ``compress/gzip`` writes it for mongodump: no file name
and a zero modification time in the header, so the same data always gives the
same bytes. Reading accepts any gzip stream.
"""

from __future__ import annotations

import gzip
import io
import sys
from typing import IO, Any, cast

STDIO = "-"


class _GzipWriter(gzip.GzipFile):
    def __init__(self, raw: IO[bytes], close_raw: bool) -> None:
        super().__init__(filename="", mode="wb", fileobj=raw, mtime=0)
        self._raw = raw if close_raw else None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._raw is not None:
                self._raw.close()
                self._raw = None


class _Unclosed(io.BufferedWriter):
    """stdout's buffer, flushed but left open when the tool is done with it."""

    def close(self) -> None:
        self.flush()


def open_write(path: str, compress: bool = False) -> IO[bytes]:
    raw: IO[bytes]
    if path == STDIO:
        raw = cast(IO[bytes], _Unclosed(cast(Any, sys.stdout.buffer)))
    else:
        raw = open(path, "wb")  # noqa: SIM115 - the caller closes what this returns
    return cast(IO[bytes], _GzipWriter(raw, close_raw=True)) if compress else raw


def open_read(path: str, compressed: bool = False) -> IO[bytes]:
    if path == STDIO:
        stdin = sys.stdin.buffer
        return cast(IO[bytes], gzip.GzipFile(fileobj=stdin, mode="rb")) if compressed else stdin
    return cast(IO[bytes], gzip.open(path, "rb")) if compressed else open(path, "rb")
