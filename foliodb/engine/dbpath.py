"""A dbpath directory: its files, its lock, and the private file of a ``:memory:`` database.

Layout of a dbpath directory (created 0700, its files 0600)::

    foliodb.sqlite      the data: catalog tables, a record table ``c<N>`` per
                        collection, an index table ``i<N>`` per index
    foliodb.sqlite-wal  SQLite's write-ahead log
    foliodb.lock        holds an exclusive ``flock`` while a process has the
                        dbpath open, and names that process

``:memory:`` is the same file layout in a private temporary file (in
``/dev/shm`` where it exists), deleted at close: SQLite's in-memory databases
allow one connection only, and snapshot isolation needs several.

The lock is a kernel ``flock``, which dies with its process, so a lock left by
a killed process is simply taken over by the next opener; the lock file names
the process holding it, for the DBPathInUse error another opener gets. A
``:memory:`` database's file is removed when its storage goes; files left by
dead processes are removed when the next one is made.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
import sys
import tempfile
import urllib.parse
import uuid

from foliodb.errors import CommandError, ErrorCode

DATA_FILE = "foliodb.sqlite"
LOCK_FILE = "foliodb.lock"
_MEMORY_PREFIX = "foliodb-memory-"


class DBPathLock:
    """An exclusive, process-owned lock on a dbpath directory."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, LOCK_FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 4096).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise CommandError(
                ErrorCode.DBPathInUse,
                f"Unable to lock the dbpath {directory!r}: it is in use by {owner}. "
                "Only one process can open a FolioDB dbpath at a time; close the other client first.",
            ) from None
        owner = f"pid {os.getpid()} on {socket.gethostname()} ({' '.join(sys.argv)[:200]})"
        os.ftruncate(fd, 0)
        os.pwrite(fd, owner.encode(), 0)
        self._fd: int | None = fd

    def release(self, forked: bool = False) -> None:
        if self._fd is not None:
            if not forked:  # a child shares the parent's lock: unlocking would free the parent's dbpath
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def read_only_uri(file: str) -> str:
    """``mode=ro``, or ``immutable=1`` when even a read-only open cannot lock the file (read-only
    media: no -shm can be made beside it); immutable assumes nobody writes it meanwhile."""
    uri = f"file:{urllib.parse.quote(file)}?mode=ro"
    try:
        probe = sqlite3.connect(uri, uri=True)
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            probe.close()
    except sqlite3.OperationalError:
        return f"file:{urllib.parse.quote(file)}?immutable=1"
    return uri


def memory_file() -> str:
    """A new private file for a ``:memory:`` database, after removing those of dead processes."""
    directory = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if name.startswith(_MEMORY_PREFIX) and name.endswith(".sqlite"):
                pid = name[len(_MEMORY_PREFIX) :].split("-", 1)[0]
                if pid.isdigit() and not _alive(int(pid)):
                    remove_files(os.path.join(directory, name))
    return os.path.join(directory, f"{_MEMORY_PREFIX}{os.getpid()}-{uuid.uuid4().hex}.sqlite")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_files(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + suffix)
