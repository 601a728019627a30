"""The files and streams the tools read and write.

``-`` is standard input or output (never closed by the tools). Compressed
output is gzip as Go's ``compress/gzip`` writes it for mongodump: no file name
and a zero modification time in the header, so the same data always gives the
same bytes. Reading accepts any gzip stream; a damaged one (cut short, a
bad header, corrupt deflate data, a CRC or length mismatch) raises
:class:`DamagedInputError` naming the file, never a decoder's own exception.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from typing import IO, Any, cast

STDIO = "-"


class DamagedInputError(ValueError):
    """An input file that cannot be read to its end: the command's one-line error."""


class _GzipReader(io.RawIOBase):
    """A gzip stream whose damage is reported as :class:`DamagedInputError`."""

    def __init__(self, raw: IO[bytes], name: str, close_raw: bool) -> None:
        self._gzip = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw = raw if close_raw else None
        self._name = name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._gzip.read(len(buffer))
        except EOFError:
            raise DamagedInputError(f"{self._name}: the gzip data is cut short (the file is truncated)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise DamagedInputError(f"{self._name}: corrupt gzip data ({exc})") from None
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._gzip.close()
            if self._raw is not None:
                self._raw.close()
        finally:
            super().close()


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
    raw: IO[bytes] = sys.stdin.buffer if path == STDIO else open(path, "rb")  # noqa: SIM115 - the caller closes it
    if not compressed:
        return raw
    name = "standard input" if path == STDIO else path
    return cast(IO[bytes], io.BufferedReader(_GzipReader(raw, name, close_raw=path != STDIO), 1 << 16))
