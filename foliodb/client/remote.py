"""The embedded client of a dbpath another process owns: commands over the
owner's share socket (foliodb.server.share), answered by the owner's executor.

:class:`SharedExecutor` is what a file-backed client runs its commands on:
the process's own executor when this process owns the dbpath, else the
owner's, reached through its socket, with the same ``execute(db, command)``
as the local one, so every layer above is the same code. It also covers the
two ways ownership moves:

* after ``fork()``, a child's client cannot use the parent's engine (its
  connections and lock are the parent's): its commands go to the parent's
  socket instead;
* when the owner exits, the next command of another process takes the lock
  and becomes the owner (the first to get it; the others find its socket), so
  a worker outlives the process that opened the dbpath.

A command cut off by the owner's death is sent again to the next owner when
doing so cannot apply it twice: reads, and writes made retryable here (an
``lsid`` and ``txnNumber`` of this client's own, whose result the engine keeps
with the write). Anything else raises pymongo's ``AutoReconnect``, as a
dropped connection does. Open cursors and transactions of a dead owner are
gone, as after a mongod restart.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import bson
from bson.binary import Binary, UuidRepresentation
from pymongo.errors import AutoReconnect

from foliodb.commands import Executor
from foliodb.commands.executor import PointHandler
from foliodb.commands.replication import ReplicaSet
from foliodb.engine.catalog import CODEC  # the engine's own: replies decode as its documents do
from foliodb.errors import CommandError, ErrorCode
from foliodb.server.share import share, socket_path

_HEADER = struct.Struct("<iiii")
OP_MSG = 2013
TAKEOVER_SECONDS = 10.0  # how long a client waits for a new owner's socket
_RETRYABLE_WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify"})
_READS = frozenset(
    {
        "find",
        "count",
        "distinct",
        "listCollections",
        "listIndexes",
        "listDatabases",
        "hello",
        "isMaster",
        "ismaster",
        "ping",
        "buildInfo",
        "buildinfo",
        "dbStats",
        "collStats",
        "serverStatus",
        "getParameter",
    }
)


class RemoteExecutor:
    """Commands sent to the owner of ``path`` over its socket, one connection per concurrent command."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.socket = socket_path(path)
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._flying: dict[int, socket.socket] = {}  # id(command) -> its connection, until answered
        self._cut: set[int] = set()  # ids of flying commands whose connection abandon() shut
        # This client's own session, for the writes it makes retryable (see the module docstring).
        self._lsid = {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}
        self._txn_numbers = itertools.count(1)
        self._give(self._connect())  # fails now, as DBPathInUse would, when no owner answers

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.socket)
        except OSError:
            sock.close()
            raise
        return sock

    def _take(self) -> socket.socket:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _give(self, sock: socket.socket) -> None:
        with self._lock:
            self._idle.append(sock)

    def round_trip(self, db: str, command: Mapping[str, Any], key: object = None) -> dict[str, Any]:
        """Send one command, return its reply; OSError when the owner is gone, AutoReconnect when
        :meth:`abandon` cut it off. ``key``: the object :meth:`abandon` names it by (``command``)."""
        key_id = id(command if key is None else key)
        body = struct.pack("<I", 0) + b"\x00" + bson.encode({**command, "$db": db}, codec_options=CODEC)
        sock = self._take()
        with self._lock:
            self._flying[key_id] = sock
        try:
            sock.sendall(_HEADER.pack(_HEADER.size + len(body), next(self._ids), 0, OP_MSG) + body)
            length = _HEADER.unpack(_read(sock, _HEADER.size))[0]
            payload = _read(sock, length - _HEADER.size)
        except BaseException:
            sock.close()
            if self._landed(key_id):
                # Not the owner's death: never sent again, to this owner or the next.
                raise AutoReconnect("the command was abandoned: its connection to the owner was closed") from None
            raise
        if self._landed(key_id):
            sock.close()  # answered, but shut meanwhile: not reusable
        else:
            self._give(sock)
        # flags (4 bytes), section kind 0 (1 byte), the reply document
        return bson.decode(payload[5:], CODEC)

    def retryable(self, command: Mapping[str, Any]) -> dict[str, Any] | None:
        """``command`` with this client's lsid and the next txnNumber, when it is a write
        that can be made retryable (not in a session of its own, acknowledged); else None."""
        name = next(iter(command), "")
        if name not in _RETRYABLE_WRITES or "lsid" in command:
            return None
        concern = command.get("writeConcern")
        if isinstance(concern, Mapping) and concern.get("w") == 0:
            return None
        return {**command, "lsid": self._lsid, "txnNumber": bson.Int64(next(self._txn_numbers))}

    def _landed(self, key_id: int) -> bool:
        """A command's round trip is over: whether :meth:`abandon` cut its connection."""
        with self._lock:
            self._flying.pop(key_id, None)
            if key_id in self._cut:
                self._cut.discard(key_id)
                return True
            return False

    def abandon(self, command: object) -> None:
        """Cut off ``command`` (the object sent, or its round trip's ``key``) if it is waiting for
        its answer: its connection closes, and the owner stops its operation as a server stops a
        disconnected client's (ClientDisconnect, 279)."""
        with self._lock:
            sock = self._flying.get(id(command))
            if sock is None:
                return
            self._cut.add(id(command))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()


def _read(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionResetError("the dbpath's owner closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class SharedExecutor:
    """A dbpath's executor for a client: this process's own when it owns the
    dbpath, else the owner's over its socket; see the module docstring."""

    def __init__(self, path: str, read_only: bool = False, javascript: bool = True) -> None:
        self.path = path
        self.read_only = read_only  # a read-only client opens the files itself: no owner, no sharing
        # Server-side JavaScript for this process's own executor; through an owner, the owner's setting holds.
        self.javascript = javascript
        self.local: Executor | None = None
        self.remote: RemoteExecutor | None = None
        self._open()

    def _open(self) -> None:
        if self.read_only:
            self.local = Executor.open(self.path, ReplicaSet(), javascript=self.javascript, read_only=True)
            return
        refused = self._own()
        if refused is None:
            return
        try:
            self.remote = RemoteExecutor(self.path)
        except OSError:
            raise refused from None  # the owner shares nothing (an older FolioDB): its error stands

    def _own(self) -> CommandError | None:
        """Open the dbpath as its owner, sharing it; the DBPathInUse error when another process owns it."""
        try:
            self.local = Executor.open(self.path, ReplicaSet(), javascript=self.javascript)
        except CommandError as exc:
            if exc.code != ErrorCode.DBPathInUse:
                raise
            return exc
        self.remote = None
        share(self.local.engine)
        return None

    @property
    def engine(self) -> Any:
        """What two clients of one dbpath in this process share: the engine, or the owner's socket."""
        return self.local.engine if self.local is not None else ("shared", self.remote.socket if self.remote else "")

    def execute(self, db: str, command: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
        local = self.local
        if local is not None:
            if not local.engine.storage.forked:  # set in a fork child (storage's at-fork hook)
                return local.execute(db, command, **extra)
            self._forked()
        return self._remote_execute(db, command)

    def point(
        self,
        db: str,
        command: dict[str, Any],
        handler: PointHandler,
        owner: int | None = None,
        general: Callable[[], Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """:meth:`Executor.point` on this process's own executor; through an owner, the
        command (``general``'s, when given) goes as any other."""
        local = self.local
        if local is not None and not local.engine.storage.forked:
            return local.point(db, command, handler, owner, general)
        return self.execute(db, command if general is None else general(), owner=owner)

    def abandon(self, command: Mapping[str, Any]) -> None:
        """Stop ``command`` if it runs at the dbpath's owner (see RemoteExecutor.abandon); a command
        this process runs itself is stopped with killOp instead."""
        if self.remote is not None:
            self.remote.abandon(command)

    def kill_operations(self, code: int, *, owner: int) -> list[int]:
        """Stop the running operations of one client of this process (see Executor.kill_operations)."""
        return self.local.kill_operations(code, owner=owner) if self.local is not None else []

    def _forked(self) -> None:
        """In a child after fork(): the parent's engine is the parent's; reach it through its socket."""
        self.local = None
        self.remote = RemoteExecutor(self.path)

    def _remote_execute(self, db: str, command: Mapping[str, Any]) -> dict[str, Any]:
        remote = self.remote
        assert remote is not None
        retry = remote.retryable(command)
        sent = retry if retry is not None else command
        deadline = time.monotonic() + TAKEOVER_SECONDS
        while True:
            try:
                reply = remote.round_trip(db, sent, key=command)
                break
            except OSError as exc:
                # A dying owner may still accept a connection and then reset it: try again until
                # this process owns the dbpath or a new owner answers.
                self._reconnect()
                if retry is None and next(iter(command), "") not in _READS:
                    raise AutoReconnect(f"the process owning {self.path} went away: {exc}") from exc
                if self.local is not None:
                    reply = self.local.execute(db, sent)
                    break
                if time.monotonic() > deadline:
                    raise AutoReconnect(f"the process owning {self.path} went away: {exc}") from exc
                assert self.remote is not None
                remote = self.remote
        if "lsid" not in command:
            # As the local executor: cluster times only for commands of a session.
            reply.pop("$clusterTime", None)
            reply.pop("operationTime", None)
        return reply

    def _reconnect(self) -> None:
        """After the owner's death: become the owner, or find the one who did."""
        if self.remote is not None:
            self.remote.close()
        deadline = time.monotonic() + TAKEOVER_SECONDS
        while True:
            if self._own() is None:
                return
            try:
                self.remote = RemoteExecutor(self.path)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise AutoReconnect(f"no process owns {self.path} and it cannot be opened") from None
                time.sleep(0.05)

    def close(self) -> None:
        if self.local is not None:
            self.local.close()
        if self.remote is not None:
            self.remote.close()
