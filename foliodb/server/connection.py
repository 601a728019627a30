"""One client connection: read a request, run its command through the shared
executor, write the reply, until the peer goes away.

The executor is the embedded client's own (one command path); this layer adds
only what belongs to a connection: TLS, the handshake's negotiation
(``helloOk``, compression), awaitable ``hello`` for drivers' monitors,
``moreToCome`` (no reply for unacknowledged writes; exhaust cursors, whose
getMore batches stream as replies the client did not ask for one by one),
authentication and authorization (:mod:`~foliodb.server.authentication`),
and the refusals of a standalone server (transaction numbers, legacy opcodes).

Time limits, so a client cannot hold a thread by sending nothing useful:
until its first complete message (the TLS handshake included) a connection
has ``handshake_timeout`` seconds; once a message's first byte arrives, the
rest must arrive within ``frame_timeout`` seconds; a reply must be taken
within ``frame_timeout`` too. A connection idle between messages may stay
(drivers pool idle connections). A timed-out, malformed or broken connection
is closed alone, logged in one line; a traceback in the log means a bug.
"""

from __future__ import annotations

import itertools
import logging
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from foliodb import lane
from foliodb.auth.caller import CALLER, running_as
from foliodb.commands import Request, failpoints
from foliodb.errors import CommandError, ErrorCode
from foliodb.server import budget, wire
from foliodb.server.authentication import SASL_COMMANDS, Authenticator
from foliodb.server.tls import looks_like_tls, subject_name

if TYPE_CHECKING:
    from foliodb.server.server import Server

log = logging.getLogger("foliodb.server")

_CHUNK = 1 << 16  # bytes read from the socket at a time
# The longest message before authentication under --auth: hello with its client metadata (512 bytes
# at most, by the handshake spec), speculative authentication, saslStart/saslContinue and
# X.509's authenticate fit in a few KiB; mongod takes 48 MB from anyone, FolioDB not.
PRE_AUTH_MAX_MESSAGE = 1 << 16
# A read or send that takes what the socket has and never waits (the loop's: see loop.SUPPORTED).
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)
_IDLE_POLL = 60.0  # seconds between checks for shutdown while an established connection idles

_HELLO = frozenset({"hello", "ismaster", "isMaster"})
# Short commands of in-memory state that drivers and tools rely on answering at once, busy or
# not: run beside the lane, never waiting for a turn (the monitoring spec's heartbeats,
# killOp of what holds everything, authentication of a new connection).
_ANSWER_AT_ONCE = _HELLO | frozenset(
    {
        "ping",
        "buildInfo",
        "buildinfo",
        "currentOp",
        "killOp",
        "killCursors",
        "endSessions",
        "serverStatus",
        "saslStart",
        "saslContinue",
        "authenticate",
    }
)
# Commands whose replies drivers must not receive compressed (the compression spec).
_NEVER_COMPRESSED = frozenset(
    {
        "hello",
        "ismaster",
        "isMaster",
        "saslStart",
        "saslContinue",
        "getnonce",
        "authenticate",
        "createUser",
        "updateUser",
    }
)
_request_ids = itertools.count(1)


class _Scratch(threading.local):
    view: memoryview | None = None


_scratch_of_thread = _Scratch()


def _scratch() -> memoryview:
    """What this thread's recv calls read into: one chunk a thread, not one a connection."""
    view = _scratch_of_thread.view
    if view is None:
        view = _scratch_of_thread.view = memoryview(bytearray(_CHUNK))
    return view


class _TimeLimitError(Exception):
    """The peer ran out of time (see the module docstring)."""


class _FailPointClosedError(Exception):
    """A fail point answered the command by closing the connection (foliodb.commands.failpoints)."""


class Connection:
    def __init__(self, server: Server, sock: socket.socket, connection_id: int) -> None:
        self.server = server
        self.sock = sock
        self.id = connection_id
        self.peer = _peer(sock)
        self.auth = Authenticator(server.executor.engine, server.auth, _is_loopback(self.peer))
        self.accepted = time.monotonic()
        self.established = False  # a complete message has arrived
        self._buffer = bytearray()  # bytes read and not yet taken as a message: only what arrived
        self._charged = 0  # bytes taken from the server's message budget (foliodb/server/budget.py)
        self._awaiting_budget = False  # out of the loop until the budget has room
        self.busy = False  # a thread serves it (the loop's sweep leaves it alone)
        self._message_started: float | None = None  # when the first byte of the message being read arrived
        self.app_name: str | None = None  # client.application.name of the handshake (fail points match it)
        self._kernel_timeouts = False  # see _use_kernel_timeouts
        self._recv_seconds = 0.0  # the SO_RCVTIMEO set (0: none)
        self.fd = sock.fileno()  # the loop's key, still known once the socket is closed
        self._closed = False

    def run(self) -> None:
        """A connection's own thread, for what cannot wait in the server's loop: its TLS
        handshake; then the connection waits in the loop whenever no byte is left unread (at
        once, unless the handshake brought a message along). Without the loop (no epoll) the
        thread serves the connection until the peer closes, the stream breaks, time runs out
        or the server stops."""
        try:
            if self._start_tls():
                self._use_kernel_timeouts()
                while not self.server.stopping.is_set():
                    if not self._buffer and not self._tls_pending() and self.server.loop.park(self):
                        return
                    frame = self._read_message()
                    if frame is None:
                        break  # the peer closed
                    self._answer(frame)
        except Exception as exc:
            self._failed(exc)
        self.close()

    def enter_loop(self) -> None:
        """A plain connection just accepted waits in the server's loop from the start (no thread of its own)."""
        self._use_kernel_timeouts()
        if not self.server.loop.park(self):
            self.close()

    def serve_ready(self) -> bool:
        """The loop's part (foliodb/server/loop.py), with the socket readable: read what it
        has, without waiting, and answer each whole message buffered; a message that came in
        part waits in the loop for the rest. True when the connection goes back to the loop;
        False when it closed, or waits out of it for the message budget (which puts it back)."""
        try:
            while True:
                count = self._read_ready()
                if count == 0:
                    return self.close()  # the peer closed
                if count is None and self._awaiting_budget:
                    return False
                while (frame := self._next_frame()) is not None:
                    self._answer(frame)
                    if self._charged:  # the message was past FREE_BYTES: give its bytes back
                        self._settle_budget()
                    if self.server.stopping.is_set():
                        return self.close()
                if not self._tls_pending():
                    return True
        except Exception as exc:
            self._failed(exc)
        return self.close()

    def disconnected(self) -> None:
        """The peer closed while a command of this connection runs (the loop watches for it):
        its operations stop with ClientDisconnect (279), as mongod's, and the log says so."""
        executor = self.server.executor
        for opid in executor.kill_operations(ErrorCode.ClientDisconnect, connection_id=self.id):
            log.info("connection %d from %s closed: killed its op %d (ClientDisconnect)", self.id, self.peer, opid)

    def expired(self, now: float) -> bool:
        """Has the connection run out of time (see the module docstring)?"""
        deadline = self._deadline()
        return deadline is not None and now > deadline

    def time_out(self) -> None:
        """Close it for running out of time (the loop's sweep)."""
        stage = "a message stalled mid-frame" if self._message_started is not None else "sent nothing"
        log.info("closing connection %d from %s: %s within the time limit", self.id, self.peer, stage)
        self.close()

    def _read_ready(self) -> int | None:
        """Into the buffer, what the socket has now, without waiting: the bytes read, 0 at
        the end of the stream, None when it had nothing or the budget has no room
        (``_awaiting_budget``: the budget puts the connection back in the loop)."""
        want = self._want()
        self._awaiting_budget = False
        need = self._budget_needed(want)
        if need and not self.server.budget.take_or_notify(need, self._budget_freed):
            self._awaiting_budget = True
            return None
        self._charged += need
        scratch = _scratch()[:want]
        sock = self.sock
        try:
            if isinstance(sock, ssl.SSLSocket):
                sock.settimeout(0.0)
                count = sock.recv_into(scratch, want)
            else:
                count = sock.recv_into(scratch, want, _DONTWAIT)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            self._settle_budget()
            return None
        self._append(scratch[:count])
        return count

    def _budget_freed(self) -> None:
        self.server.loop.rearm(self)

    def _tls_pending(self) -> bool:
        """Decrypted bytes held in TLS's own buffer: the socket shows them no more, so the
        loop would not hear of them (they are read before the connection waits in it)."""
        return isinstance(self.sock, ssl.SSLSocket) and self.sock.pending() > 0

    def _failed(self, exc: Exception) -> None:
        """Log why serving stopped, called while ``exc`` is handled (the caller then closes the
        connection; the server goes on): a broken, timed-out or malformed connection in one line,
        a FolioDB bug with its traceback. A plain try/except, not a context manager: it wraps
        every request, and a generator-based one cost two frames and four calls each."""
        if isinstance(exc, wire.ProtocolError | _TimeLimitError | _FailPointClosedError):
            log.info("closing connection %d from %s: %s", self.id, self.peer, exc)
        elif not isinstance(exc, OSError):  # OSError: reset by the peer, or closed by shutdown()
            log.exception("closing connection %d from %s after an internal error", self.id, self.peer)

    def close(self) -> bool:
        """Close the connection (idempotent); False, for the callers that return it."""
        if not self._closed:
            self._closed = True
            self.server.loop.forget(self, self.fd)
            self.sock.close()
            self._buffer = bytearray()
            self._settle_budget()
            self.server.forget(self)
        return False

    def _answer(self, frame: tuple[int, int, bytes]) -> None:
        """Run the message's command and send its reply: none when none is wanted, a stream of
        them for an exhaust getMore."""
        message = wire.decode(*frame, self._message_limit())
        self.established = True
        reply, name = self._reply(message)
        if message.more_to_come:
            return
        if message.op_code == wire.OP_QUERY:
            self._send(self._encoded(lambda body, rid: wire.encode_op_reply(message.request_id, body, rid), reply)[0])
            return
        compressor = None
        if message.compressor is not None and name not in _NEVER_COMPRESSED:
            compressor = message.compressor
        if message.exhaust_allowed and name == "getMore":
            self._stream(message, reply, compressor)
            return
        to = message.request_id
        self._send(self._encoded(lambda body, rid: wire.encode_op_msg(to, body, rid, compressor), reply)[0])

    # -- bytes in and out ----------------------------------------------------------------

    def _start_tls(self) -> bool:
        """Wrap the socket in TLS as the server's mode says; False when the connection must close."""
        context, mode = self.server.tls_context, self.server.tls.mode
        if context is None:
            return True
        deadline = self.accepted + self.server.handshake_timeout
        if mode != "requireTLS":
            is_tls = looks_like_tls(self.sock, deadline)
            if is_tls is None:
                log.info("closing connection %d from %s: sent nothing in time", self.id, self.peer)
                return False
            if not is_tls:
                return True
        self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            self.sock = context.wrap_socket(self.sock, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            log.info("closing connection %d from %s: TLS handshake failed: %s", self.id, self.peer, exc)
            return False
        certificate = self.sock.getpeercert() if isinstance(self.sock, ssl.SSLSocket) else None
        if certificate:
            self.auth.certificate_subject = subject_name(certificate)
        return True

    def _deadline(self) -> float | None:
        limits = []
        if not self.established:
            limits.append(self.accepted + self.server.handshake_timeout)
        if self._message_started is not None:
            limits.append(self._message_started + self.server.frame_timeout)
        return min(limits) if limits else None

    def _recv_into(self, view: memoryview) -> int:
        """Read into ``view``; 0 at end of stream. Waits for the deadline, or forever between messages."""
        while True:
            deadline = self._deadline()
            if deadline is None:
                self._recv_timeout(_IDLE_POLL)
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stage = "a message stalled mid-frame" if self._message_started is not None else "sent nothing"
                    raise _TimeLimitError(f"{stage} within the time limit")
                self._recv_timeout(remaining)
            try:
                count = self.sock.recv_into(view)
            except (TimeoutError, BlockingIOError):  # Python's timeout, or the kernel's (SO_RCVTIMEO)
                if self.server.stopping.is_set():
                    return 0
                continue
            return count

    def _use_kernel_timeouts(self) -> None:
        """A plain socket blocks, and the kernel enforces its time limits
        (SO_RCVTIMEO, SO_SNDTIMEO): a request then costs one recv and one send.
        Python's own timeouts poll() before each recv and send, and switch the
        socket's mode (an ioctl) at each change of timeout: four more system
        calls a request, each letting go of the interpreter lock, which other
        connections' threads then take. TLS sockets keep Python's timeouts."""
        if isinstance(self.sock, ssl.SSLSocket):
            return
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(self.server.frame_timeout))
        self._kernel_timeouts = True

    def _recv_timeout(self, seconds: float) -> None:
        if not self._kernel_timeouts:
            self.sock.settimeout(seconds)
        elif seconds != self._recv_seconds:  # between messages it stays _IDLE_POLL: no call
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(seconds))
            self._recv_seconds = seconds

    def _message_limit(self) -> int:
        """The longest message this connection may send now: mongod's 48 MB, or, under
        ``--auth`` before any user has authenticated on it, what the handshake and SASL need."""
        if self.server.auth and not self.auth.users:
            return PRE_AUTH_MAX_MESSAGE
        return wire.MAX_MESSAGE_SIZE

    def _want(self) -> int:
        """How many bytes to read next: a chunk, or less when the message being read ends sooner."""
        buffer = self._buffer
        if len(buffer) >= wire.HEADER.size:
            length = wire.read_header(buffer[: wire.HEADER.size], self._message_limit())[0]
            if length > len(buffer):
                return min(_CHUNK, length - len(buffer))
        return _CHUNK

    def _budget_needed(self, want: int) -> int:
        """The bytes to take from the server's message budget before reading ``want`` more
        (foliodb/server/budget.py: the first FREE_BYTES buffered need none)."""
        return max(0, len(self._buffer) + want - budget.FREE_BYTES - self._charged)

    def _settle_budget(self) -> None:
        """Give back what the budget lent for bytes no longer buffered."""
        excess = self._charged - max(0, len(self._buffer) - budget.FREE_BYTES)
        if excess > 0:
            self._charged -= excess
            self.server.budget.give(excess)

    def _append(self, data: memoryview) -> None:
        if data and not self._buffer:
            self._message_started = time.monotonic()
        self._buffer += data
        if self._charged:
            self._settle_budget()

    def _next_frame(self) -> tuple[int, int, bytes] | None:
        """(requestID, opCode, the bytes after the header) of the next whole message
        buffered, taken out of the buffer; None while it has not all arrived."""
        buffer = self._buffer
        if len(buffer) < wire.HEADER.size:
            return None
        length, request_id, _response_to, op_code = wire.read_header(buffer[: wire.HEADER.size], self._message_limit())
        if len(buffer) < length:
            return None
        with memoryview(buffer) as view:
            payload = bytes(view[wire.HEADER.size : length])
        if length == len(buffer):
            self._buffer = bytearray()  # a new one: a large message's memory goes back at once
        else:
            del buffer[:length]
        self._message_started = time.monotonic() if self._buffer else None
        return request_id, op_code, payload

    def _read_message(self) -> tuple[int, int, bytes] | None:
        """The next message (as :meth:`_next_frame`), waiting for its bytes on this thread; None
        at end of stream. Memory grows with the bytes that arrive, not with a declared length."""
        while (frame := self._next_frame()) is None:
            want = self._want()
            need = self._budget_needed(want)
            if need:
                if not self.server.budget.wait(need, self._deadline()):
                    raise _TimeLimitError("waited past the time limit for memory to read a message into")
                self._charged += need
            scratch = _scratch()[:want]
            count = self._recv_into(scratch)
            if not count:
                return None
            self._append(scratch[:count])
        return frame

    def _send(self, data: bytes) -> None:
        """Send at once what the socket takes; for the rest, wait beside the loop (a TLS write
        that could not finish is retried with the same bytes from the start, as OpenSSL asks)."""
        tls = isinstance(self.sock, ssl.SSLSocket)
        try:
            if tls:
                self.sock.settimeout(0.0)
                sent = self.sock.send(data)
            else:
                sent = self.sock.send(data, _DONTWAIT)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            sent = 0
        if sent == len(data):
            return
        lane.leave()  # the peer is slow to take it: wait beside the loop
        rest = memoryview(data)[sent:]
        if not self._kernel_timeouts:
            self.sock.settimeout(self.server.frame_timeout)
        try:
            self.sock.sendall(rest)
        except (TimeoutError, BlockingIOError):
            raise _TimeLimitError("did not take its reply within the time limit") from None

    # -- requests --------------------------------------------------------------------------

    def _reply(self, message: wire.Message) -> tuple[dict[str, Any], str | None]:
        """The reply to ``message``'s command, and the command's name."""
        command = message.command
        name = next(iter(command), None) if command else None
        if command is None:
            reply = (message.error or CommandError(ErrorCode.InvalidBSON, "invalid command")).to_reply()
        elif name in _ANSWER_AT_ONCE:
            # Short commands of in-memory state take no turn in the lane (foliodb/lane.py): they wait for nobody.
            reply = self.run_command(message)
        else:
            road = self.server.lane
            taken = road.take_turn()  # not lane.turn(): a generator context manager costs more, every request
            try:
                reply = self.run_command(message)
            finally:
                if taken:
                    road.end_turn()
        if failpoints.closes_connection(reply):
            raise _FailPointClosedError("a fail point closes it instead of replying")
        return reply, name

    def _stream(self, message: wire.Message, reply: dict[str, Any], compressor: int | None) -> None:
        """An exhaust getMore's replies: each next batch answers the reply before it, until the
        cursor is done; the stream runs beside the server's loop (not holding its lead for the
        whole cursor)."""
        response_to = message.request_id
        while True:
            cursor = reply.get("cursor")
            more = bool(reply.get("ok") == 1.0 and isinstance(cursor, Mapping) and cursor.get("id"))
            flags = wire.MORE_TO_COME if more else 0
            to = response_to
            frame, request_id = self._encoded(
                lambda body, rid: wire.encode_op_msg(to, body, rid, compressor, flags), reply
            )
            self._send(frame)
            if not more or self.server.stopping.is_set():
                return
            lane.leave()
            response_to = request_id
            with self.server.lane.turn():  # a getMore
                reply = self.run_command(message)
            if failpoints.closes_connection(reply):
                raise _FailPointClosedError("a fail point closes it instead of replying")

    def _encoded(self, encode: Callable[[dict[str, Any], int], bytes], reply: dict[str, Any]) -> tuple[bytes, int]:
        """(the frame, its requestID); a reply FolioDB cannot encode (a bug) becomes an InternalError."""
        request_id = next(_request_ids)
        try:
            return encode(reply, request_id), request_id
        except Exception as exc:
            log.exception("cannot encode a reply on connection %d", self.id)
            error = CommandError(ErrorCode.InternalError, f"internal error: cannot encode the reply: {exc}")
            return encode(error.to_reply(), request_id), request_id

    def run_command(self, message: wire.Message) -> dict[str, Any]:
        cmd = message.command
        assert cmd is not None and message.db is not None
        if not cmd:
            return CommandError(ErrorCode.FailedToParse, "Empty command").to_reply()
        name = next(iter(cmd))
        if message.op_code == wire.OP_QUERY and name not in _HELLO:
            return wire.unsupported_op_query(name).to_reply()
        if name in _HELLO:
            return self.hello(message.db, cmd)
        if name in SASL_COMMANDS or name == "authenticate":
            # Answered here, not by the executor; mongod's failCommand fails them too (drivers' handshake tests).
            db = message.db
            answer = self.auth.sasl if name in SASL_COMMANDS else self.auth.authenticate
            extra = {"connection_id": self.id, "app_name": self.app_name}
            request = Request(self.server.executor, db, name, extra=extra)
            return failpoints.run(request, cmd, lambda: answer(db, cmd))
        try:
            refusal, caller = self.auth.authorize(message.db, cmd)
        except Exception as exc:  # a FolioDB bug; the command does not run
            log.exception("cannot authorize a %s command on connection %d", name, self.id)
            return CommandError(ErrorCode.InternalError, f"internal error: {type(exc).__name__}").to_reply()
        if refusal is not None:
            return refusal.to_reply()
        if name == "shutdown":
            return self.shutdown(cmd)
        if caller is None and CALLER.get() is None:  # without access control: no context to set
            return self._execute(message.db, cmd)
        with running_as(caller):
            return self._execute(message.db, cmd)

    def _execute(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        return self.server.executor.execute(
            db,
            cmd,
            connection_id=self.id,
            peer=self.peer,
            app_name=self.app_name,
            users=list(self.auth.users),
            startup_warnings=self.server.startup_warnings,
        )

    def hello(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        waited = cmd.get("topologyVersion")
        max_await = cmd.get("maxAwaitTimeMS")
        # Awaitable hello (the server monitoring spec): answer when the topology
        # changes or after maxAwaitTimeMS. A standalone's topology changes only when it stops.
        if (
            isinstance(waited, Mapping)
            and isinstance(max_await, int)
            and max_await >= 0
            and waited.get("processId") == self.server.executor.process_id
        ):
            lane.leave()  # hello takes no turn, but the server loop's leader hands on its lead
            self.server.stopping.wait(max_await / 1000.0)
        if self.app_name is None:
            self.app_name = _app_name(cmd.get("client"))
        reply = self.server.executor.execute(db, cmd, connection_id=self.id, peer=self.peer, app_name=self.app_name)
        if reply.get("ok") != 1.0:
            return reply
        if cmd.get("helloOk"):
            reply["helloOk"] = True
        reply.update(self.auth.hello_fields(cmd))
        offered = cmd.get("compression")
        if isinstance(offered, list):
            # The client may then compress its requests with any of these; replies
            # use the compressor of the request they answer.
            reply["compression"] = [name for name in offered if isinstance(name, str) and name in wire.COMPRESSORS]
        return reply

    def shutdown(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        if not self.server.auth and not _is_loopback(self.peer):
            return CommandError(ErrorCode.Unauthorized, "shutdown must run from localhost").to_reply()
        # As mongod: the server goes away; the caller sees its connection close.
        threading.Thread(target=self.server.shutdown, name="foliodb-shutdown", daemon=True).start()
        return {"ok": 1.0}


def _timeval(seconds: float) -> bytes:
    """A ``struct timeval`` for SO_RCVTIMEO/SO_SNDTIMEO (at least 1 µs: zero means no limit)."""
    micros = max(int(seconds * 1_000_000), 1)
    return struct.pack("@ll", micros // 1_000_000, micros % 1_000_000)


def _app_name(metadata: Any) -> str | None:
    """``client.application.name`` of a handshake's client metadata."""
    application = metadata.get("application") if isinstance(metadata, Mapping) else None
    name = application.get("name") if isinstance(application, Mapping) else None
    return name if isinstance(name, str) else None


UNIX_PEER = "unix"  # how currentOp and the log name a share socket's client


def _peer(sock: socket.socket) -> str:
    if sock.family == socket.AF_UNIX:
        return UNIX_PEER
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"


def _is_loopback(peer: str) -> bool:
    if peer == UNIX_PEER:
        return True  # another process of this user on this machine (the share socket)
    host = peer.rsplit(":", 1)[0]
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")
