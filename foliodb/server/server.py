"""``foliodb serve``: a listening socket and a thread per connection over one
shared executor.

A thread per connection suits an engine whose storage calls block (SQLite);
commands run concurrently, as in the embedded client (see foliodb/engine/storage.py).
Stopping closes the listener and every connection, waits for their threads,
then releases the engine (its last close checkpoints the WAL).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading

from foliodb.commands.executor import Executor
from foliodb.server.connection import Connection

log = logging.getLogger("foliodb.server")

DEFAULT_PORT = 27017
MAX_CONNECTIONS = 1_000_000  # what serverStatus reports as available, as mongod's default limit


class Server:
    def __init__(self, dbpath: str, host: str = "127.0.0.1", port: int = DEFAULT_PORT, auth: bool = False) -> None:
        self.dbpath = dbpath
        self.host = host
        self.port = port
        self.auth = auth  # every command outside the handshake needs an authorized user
        self.executor = Executor.open(dbpath)
        self.stopping = threading.Event()
        self.stopped = threading.Event()
        self._listener: socket.socket | None = None
        self._connections: dict[int, tuple[socket.socket, threading.Thread, str]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._created = 0
        self._accept_thread: threading.Thread | None = None
        self.executor.connection_stats = self._connection_stats
        self.executor.connection_list = self._connection_list

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); with port 0, the port the system chose."""
        assert self._listener is not None, "start() first"
        host, port = self._listener.getsockname()[:2]
        return host, port

    def start(self) -> tuple[str, int]:
        """Bind, listen and accept connections on a background thread."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
            listener.listen(128)
        except OSError:
            listener.close()
            self.executor.close()
            raise
        self._listener = listener
        self._accept_thread = threading.Thread(target=self._accept_loop, name="foliodb-accept", daemon=True)
        self._accept_thread.start()
        return self.address

    def serve_forever(self) -> None:
        """Block until :meth:`shutdown` (a signal handler or the shutdown command)."""
        self.stopped.wait()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed by shutdown()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection_id = next(self._ids)
            connection = Connection(self, sock, connection_id)
            thread = threading.Thread(
                target=self._serve, args=(connection,), name=f"foliodb-conn{connection_id}", daemon=True
            )
            # Registered and started under the lock, so shutdown() sees every
            # connection thread started, and none registered after its snapshot.
            with self._lock:
                if self.stopping.is_set():
                    sock.close()
                    return
                self._connections[connection_id] = (sock, thread, connection.peer)
                self._created += 1
                thread.start()

    def _connection_stats(self) -> dict[str, int]:
        with self._lock:
            current = len(self._connections)
        return {"current": current, "available": MAX_CONNECTIONS - current, "totalCreated": self._created}

    def _connection_list(self) -> list[tuple[int, str]]:
        with self._lock:
            return [(connection_id, peer) for connection_id, (_, _, peer) in self._connections.items()]

    def _serve(self, connection: Connection) -> None:
        try:
            connection.run()
        finally:
            with self._lock:
                self._connections.pop(connection.id, None)

    def shutdown(self) -> None:
        """Stop accepting, close every connection, release the engine. Idempotent."""
        with self._lock:
            if self.stopping.is_set():
                return
            self.stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
            self._listener.close()
        with self._lock:
            connections = list(self._connections.values())
        for sock, _thread, _peer in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for _sock, thread, _peer in connections:
            if thread is not threading.current_thread():
                thread.join(timeout=10)
        if self._accept_thread is not None and self._accept_thread is not threading.current_thread():
            self._accept_thread.join(timeout=10)
        self.executor.close()
        self.stopped.set()
        log.info("foliodb server stopped")
