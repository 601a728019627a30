"""Many processes, one dbpath: the owner shares its engine on a Unix socket.

A dbpath is opened by one process at a time (its ``flock``): that process owns
the engine, its caches and its single writer. So that a second process (a
reloader's child, a gunicorn worker, a notebook beside a running app, a
``fork()`` child) gets a working client rather than ``DBPathInUse``, the owner
serves the wire protocol on a Unix socket, and the other processes' clients
send their commands there (``foliodb.client.remote``): the same commands
through the same executor, so the same answers and errors.

The socket lives in a directory private to the user (0700) under the system's
temporary directory, named by a hash of the dbpath's real path, so every
process finds it from the dbpath alone and the path stays short (sockets
allow about 100 bytes). When the owner exits, a waiting client takes the lock
and becomes the owner (see the client side).

Invariant: a socket is served exactly while its process owns the dbpath's
engine: it starts when the engine is first opened and stops in the engine's
last release, before the storage closes.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading

from foliodb.commands import Executor
from foliodb.commands.replication import ReplicaSet
from foliodb.engine.engine import Engine

log = logging.getLogger("foliodb.share")

_SHARED: dict[int, object] = {}  # id(engine) -> its server, for the engines this process shares
_LOCK = threading.Lock()


def socket_path(dbpath: str) -> str:
    """Where the owner of ``dbpath`` listens."""
    directory = os.path.join(tempfile.gettempdir(), f"foliodb-{os.getuid()}")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    digest = hashlib.sha256(os.path.realpath(dbpath).encode()).hexdigest()[:32]
    return os.path.join(directory, f"{digest}.sock")


def share(engine: Engine) -> None:
    """Serve ``engine`` on its dbpath's socket (once per engine; not ``:memory:``)."""
    if engine.path == ":memory:":
        return
    from foliodb.server.server import Server

    with _LOCK:
        if id(engine) in _SHARED or engine.closed:
            return
        path = socket_path(engine.path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # left by an owner that was killed: this process holds the lock now
        # The engine's own executor, without a user count of its own: the engine's last
        # real user closes it, and the closing hook stops this server first.
        server = Server.sharing(Executor(engine, ReplicaSet()), path)
        try:
            server.start()
        except OSError as exc:  # no socket to be had: this process still works, alone
            log.warning("cannot share %s with other processes: %s", engine.path, exc)
            return
        _SHARED[id(engine)] = server

        def stop() -> None:
            with _LOCK:
                _SHARED.pop(id(engine), None)
            server.shutdown()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

        engine.closing_hooks.append(stop)
