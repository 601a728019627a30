"""``foliodb serve``: a listening socket, and connections served over one
shared executor.

A new plain connection waits for its requests in the server's loop
(foliodb/server/loop.py) from the start, where one thread serves whichever
connection is ready, and hands the loop on to another before any wait; one
with TLS gets a thread of its own for its handshake first. A message that
arrives in parts waits in the loop, holding only the bytes that came, within
the message budget (foliodb/server/budget.py). Commands run
concurrently, as in the embedded client (see foliodb/engine/storage.py).
Stopping closes the listener and every connection, waits for their threads,
then releases the engine (its last close checkpoints the WAL).

Availability invariants:

* at most ``max_conns`` connections (mongod's ``net.maxIncomingConnections``:
  1,000,000, and never more than 80% of the soft RLIMIT_NOFILE, so descriptors
  remain for files); one more is closed at once, with a log line;
* the listener never dies: an accept error (EMFILE when descriptors run out,
  ENOBUFS, a thread that cannot start...) is logged, backed off and retried,
  so the server accepts again once connections close;
* the per-connection time limits are :mod:`~foliodb.server.connection`'s.

Startup warnings (logged, and answered by ``getLog: "startupWarnings"``, which
mongosh prints on connecting): serving a non-loopback address without
``--auth``, or without TLS.

Manual: https://www.mongodb.com/docs/manual/reference/configuration-options/#mongodb-setting-net.maxIncomingConnections
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import gc
import ipaddress
import itertools
import json
import logging
import os
import resource
import socket
import sys
import threading
import time

from foliodb import threads
from foliodb.auth.redaction import install_log_filter
from foliodb.commands.executor import Executor
from foliodb.commands.replication import ReplicaSet
from foliodb.lane import Lane
from foliodb.server.budget import Budget
from foliodb.server.connection import Connection
from foliodb.server.loop import Loop
from foliodb.server.share import share
from foliodb.server.tls import TLSConfig

log = logging.getLogger("foliodb.server")

DEFAULT_PORT = 27017
MAX_INCOMING_CONNECTIONS = 1_000_000  # mongod's default net.maxIncomingConnections
HANDSHAKE_TIMEOUT = 30.0  # seconds from accept to the first complete message
FRAME_TIMEOUT = 30.0  # seconds for the rest of a message once it has begun, and for taking a reply
_BACKOFF_FIRST, _BACKOFF_MAX = 0.005, 1.0  # seconds between accept retries after an error


# The interpreter of a process that only serves (``foliodb serve``; not a share
# socket's, which lives in the user's process). A thread waiting for the
# interpreter lock gets it after SWITCH_SECONDS at most (CPython's default is
# 5 ms, paid at each of a point read's SQLite and socket calls beside a long
# command). The collector runs less often, and not over the modules loaded at
# startup: a full collection walks every object, tens of milliseconds that
# stop every thread while a large $group holds 200,000 documents.
SWITCH_SECONDS = 0.001
GC_THRESHOLDS = (50_000, 10, 10)  # CPython's default: (700, 10, 10)


def tune_interpreter_for_serving() -> None:
    sys.setswitchinterval(SWITCH_SECONDS)
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def default_max_connections(requested: int = MAX_INCOMING_CONNECTIONS) -> int:
    """``requested``, lowered to 80% of the soft RLIMIT_NOFILE as mongod lowers it."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return requested
    return max(1, min(requested, int(soft * 0.8)))


def _is_loopback_address(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _warning_line(message: str, warning_id: int) -> str:
    """A startup warning as mongod logs it: one line of its JSON log format."""
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
    entry = {
        "t": {"$date": now},
        "s": "W",
        "c": "CONTROL",
        "id": warning_id,
        "ctx": "initandlisten",
        "msg": message,
        "tags": ["startupWarnings"],
    }
    return json.dumps(entry, separators=(",", ":"))


def _advertised(host: str, port: int) -> str:
    """The host:port the replica set names itself by: what clients reach (a wildcard bind is the host's name)."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Server:
    def __init__(
        self,
        dbpath: str,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        auth: bool = False,
        *,
        tls_mode: str = "disabled",
        tls_certificate_key_file: str | None = None,
        tls_ca_file: str | None = None,
        tls_allow_connections_without_certificates: bool = False,
        max_conns: int | None = None,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
        frame_timeout: float = FRAME_TIMEOUT,
        replica_set: str | None = "rs0",
        oplog_size_mb: float | None = None,
        oplog_min_retention_hours: float | None = None,
        executor: Executor | None = None,
        unix_socket: str | None = None,
        javascript: bool = True,
    ) -> None:
        self.dbpath = dbpath
        # A Unix socket path: the dbpath's share socket (foliodb.server.share), not a TCP port.
        self.unix_socket = unix_socket
        self.host = host
        self.port = port
        self.auth = auth  # every command outside the handshake needs an authorized user
        self.tls = TLSConfig(
            tls_mode, tls_certificate_key_file, tls_ca_file, tls_allow_connections_without_certificates
        )
        self.tls_context = self.tls.context()  # TLSError before anything is opened
        self.max_conns = default_max_connections(max_conns if max_conns is not None else MAX_INCOMING_CONNECTIONS)
        self.handshake_timeout = handshake_timeout
        self.frame_timeout = frame_timeout
        self.startup_warnings: list[str] = []
        install_log_filter(logging.getLogger("foliodb"))  # the executor logs commands it failed on
        # The primary of a one-member replica set named replica_set (None: a standalone); or the
        # executor given, which this server uses and does not close (a share socket's).
        self._owns_executor = executor is None
        if executor is None:
            executor = Executor.open(
                dbpath, ReplicaSet(replica_set) if replica_set is not None else None, javascript=javascript
            )
        self.executor = executor
        oplog = self.executor.engine.storage.oplog
        if oplog_size_mb is not None:
            oplog.size_bytes = int(oplog_size_mb * 1024 * 1024)
        if oplog_min_retention_hours is not None:
            oplog.min_retention_hours = oplog_min_retention_hours
        self.lane = Lane()  # the connections' commands take turns (foliodb.lane)
        self.budget = Budget()  # bytes of messages being read, across connections
        self.loop = Loop()
        self.stopping = threading.Event()
        self.stopped = threading.Event()
        self._listener: socket.socket | None = None
        self._connections: dict[int, Connection] = {}  # open, by id
        self._threads: set[threading.Thread] = set()  # connections' own (until they join the loop)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._created = 0
        self._accept_thread: threading.Thread | None = None
        self.executor.connection_stats = self._connection_stats
        self.executor.connection_list = self._connection_list

    @classmethod
    def sharing(cls, executor: Executor, unix_socket: str) -> Server:
        """The server of a dbpath's share socket, over the owner's engine."""
        return cls(executor.engine.path, executor=executor, unix_socket=unix_socket)

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); with port 0, the port the system chose."""
        assert self._listener is not None, "start() first"
        host, port = self._listener.getsockname()[:2]
        return host, port

    def start(self) -> tuple[str, int]:
        """Bind, listen and accept connections on a background thread."""
        if self.unix_socket is not None:
            return self._start_unix(self.unix_socket)
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
        if self.executor.replica_set is not None:
            self.executor.replica_set.me = _advertised(*self.address)
        self._warn_at_startup()
        share(self.executor.engine)  # processes that open the dbpath itself reach it too
        self._accept_thread = threading.Thread(target=self._accept_loop, name="foliodb-accept", daemon=True)
        self._accept_thread.start()
        return self.address

    def _start_unix(self, path: str) -> tuple[str, int]:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            os.chmod(path, 0o600)  # the directory is the user's alone already; the socket too
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._accept_thread = threading.Thread(target=self._accept_loop, name="foliodb-share", daemon=True)
        self._accept_thread.start()
        return path, 0

    def _warn_at_startup(self) -> None:
        if _is_loopback_address(self.host):
            return
        warnings = []
        if not self.auth:
            warnings.append(
                (
                    "Access control is not enabled for the database. Read and write access to data and "
                    f"configuration is unrestricted, and the server listens on {self.host}: start it with --auth",
                    22120,
                )
            )
        if not self.tls.enabled:
            warnings.append(
                (
                    f"TLS is not enabled and the server listens on {self.host}: credentials exchanges and data "
                    "cross the network unencrypted; use --tlsMode requireTLS --tlsCertificateKeyFile",
                    22121,
                )
            )
        for message, warning_id in warnings:
            log.warning("** WARNING: %s", message)
            self.startup_warnings.append(_warning_line(message, warning_id))

    def serve_forever(self) -> None:
        """Block until :meth:`shutdown` (a signal handler or the shutdown command)."""
        self.stopped.wait()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        backoff = 0.0
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError as exc:
                if self.stopping.is_set():
                    return  # the listener was closed by shutdown()
                backoff = min(_BACKOFF_MAX, backoff * 2 or _BACKOFF_FIRST)
                if backoff == _BACKOFF_FIRST or exc.errno not in (errno.EMFILE, errno.ENFILE):
                    log.warning("accept failed (%s); retrying in %.3f s", exc, backoff)
                self.stopping.wait(backoff)
                continue
            backoff = 0.0
            self._admit(sock)

    def _admit(self, sock: socket.socket) -> None:
        """Start serving ``sock``, or close it: over the connection limit, or when it cannot start."""
        with self._lock:
            full = len(self._connections) >= self.max_conns
        if full:
            log.warning("connection refused because too many open connections: %d", self.max_conns)
            sock.close()
            return
        try:
            if sock.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection_id = next(self._ids)
            connection = Connection(self, sock, connection_id)
            if self.tls_context is None and self.loop.supported:
                with self._lock:
                    if self.stopping.is_set():
                        sock.close()
                        return
                    self._connections[connection_id] = connection
                    self._created += 1
                connection.enter_loop()
                return
            thread = threading.Thread(
                target=self._serve, args=(connection,), name=f"foliodb-conn{connection_id}", daemon=True
            )
            # Registered and started under the lock, so shutdown() sees every
            # connection thread started, and none registered after its snapshot.
            with self._lock:
                if self.stopping.is_set():
                    sock.close()
                    return
                self._connections[connection_id] = connection
                self._threads.add(thread)
                self._created += 1
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had: this connection waits for none
                    del self._connections[connection_id]
                    self._threads.discard(thread)
                    raise
        except (OSError, RuntimeError) as exc:
            log.warning("closing a new connection that cannot start: %s", exc)
            sock.close()
            time.sleep(_BACKOFF_FIRST)

    def _connection_stats(self) -> dict[str, int]:
        with self._lock:
            current = len(self._connections)
        return {"current": current, "available": self.max_conns - current, "totalCreated": self._created}

    def _connection_list(self) -> list[tuple[int, str, frozenset[tuple[str, str]]]]:
        with self._lock:
            return [(connection_id, c.peer, frozenset(c.auth.users)) for connection_id, c in self._connections.items()]

    def _serve(self, connection: Connection) -> None:
        try:
            connection.run()
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def forget(self, connection: Connection) -> None:
        """``connection`` has closed."""
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
            connection_threads = list(self._threads)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        for thread in connection_threads:
            threads.join(thread, timeout=10)
        self.loop.stop()
        if self._accept_thread is not None:
            threads.join(self._accept_thread, timeout=10)
        if self._owns_executor:
            self.executor.close()
        else:
            self.executor.cursors.kill_all()
        self.stopped.set()
        log.info("foliodb server stopped")
