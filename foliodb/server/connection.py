"""One client connection: read a request, run its command through the shared
executor, write the reply, until the peer goes away.

The executor is the embedded client's own (one command path); this layer adds
only what belongs to a connection: the handshake's negotiation (``helloOk``,
compression), awaitable ``hello`` for drivers' monitors, ``moreToCome``
(no reply for unacknowledged writes), and the refusals of a standalone server
(transaction numbers, legacy opcodes).
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foliodb.errors import CommandError, ErrorCode
from foliodb.server import wire
from foliodb.server.authentication import SASL_COMMANDS, Authenticator

if TYPE_CHECKING:
    from foliodb.server.server import Server

log = logging.getLogger("foliodb.server")

_HELLO = frozenset({"hello", "ismaster", "isMaster"})
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


class Connection:
    def __init__(self, server: Server, sock: socket.socket, connection_id: int) -> None:
        self.server = server
        self.sock = sock
        self.id = connection_id
        self.peer = _peer(sock)
        self.auth = Authenticator(server.executor.engine, server.auth, _is_loopback(self.peer))

    def run(self) -> None:
        """Serve requests until the peer closes, the stream breaks or the server stops."""
        reader = self.sock.makefile("rb")
        try:
            while not self.server.stopping.is_set():
                header = reader.read(wire.HEADER.size)
                if len(header) < wire.HEADER.size:
                    return  # the peer closed
                length, request_id, _response_to, op_code = wire.read_header(header)
                payload = reader.read(length - wire.HEADER.size)
                if len(payload) < length - wire.HEADER.size:
                    return
                message = wire.decode(request_id, op_code, payload)
                reply = self.handle(message)
                if reply is not None:
                    self.sock.sendall(reply)
        except wire.ProtocolError as exc:
            log.info("closing connection %d from %s: %s", self.id, self.peer, exc)
        except OSError:
            pass  # reset by the peer, or closed by shutdown()
        finally:
            reader.close()
            self.sock.close()

    def handle(self, message: wire.Message) -> bytes | None:
        """The encoded reply to ``message``, or None when none is wanted."""
        if message.command is None:
            reply = (message.error or CommandError(ErrorCode.InvalidBSON, "invalid command")).to_reply()
        else:
            reply = self.run_command(message)
        if message.more_to_come:
            return None
        request_id = next(_request_ids)
        if message.op_code == wire.OP_QUERY:
            return wire.encode_op_reply(message.request_id, reply, request_id)
        compressor = None
        if message.compressor is not None and message.command and next(iter(message.command)) not in _NEVER_COMPRESSED:
            compressor = message.compressor
        return wire.encode_op_msg(message.request_id, reply, request_id, compressor)

    def run_command(self, message: wire.Message) -> dict[str, Any]:
        cmd = message.command
        assert cmd is not None and message.db is not None
        if not cmd:
            return CommandError(ErrorCode.FailedToParse, "Empty command").to_reply()
        name = next(iter(cmd))
        if message.op_code == wire.OP_QUERY and name not in _HELLO:
            return wire.unsupported_op_query(name).to_reply()
        if "txnNumber" in cmd:
            # A standalone mongod's answer to retryable writes and transactions.
            return CommandError(
                ErrorCode.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos"
            ).to_reply()
        if name in _HELLO:
            return self.hello(message.db, cmd)
        if name in SASL_COMMANDS:
            return self.auth.sasl(message.db, cmd)
        refusal = self.auth.refusal(message.db, cmd)
        if refusal is not None:
            return refusal.to_reply()
        if name == "shutdown":
            return self.shutdown(cmd)
        return self.server.executor.execute(
            message.db, cmd, connection_id=self.id, peer=self.peer, users=list(self.auth.users)
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
            self.server.stopping.wait(max_await / 1000.0)
        reply = self.server.executor.execute(db, cmd, connection_id=self.id, peer=self.peer)
        if reply.get("ok") != 1.0:
            return reply
        if cmd.get("helloOk"):
            reply["helloOk"] = True
        reply.update(self.auth.hello_fields(cmd))
        offered = cmd.get("compression")
        if isinstance(offered, list):
            # The client may then compress its requests with any of these; replies
            # use the compressor of the request they answer.
            reply["compression"] = [name for name in offered if name in wire.COMPRESSORS]
        return reply

    def shutdown(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        if not self.server.auth and not _is_loopback(self.peer):
            return CommandError(ErrorCode.Unauthorized, "shutdown must run from localhost").to_reply()
        # As mongod: the server goes away; the caller sees its connection close.
        threading.Thread(target=self.server.shutdown, name="foliodb-shutdown", daemon=True).start()
        return {"ok": 1.0}


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"


def _is_loopback(peer: str) -> bool:
    host = peer.rsplit(":", 1)[0]
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")
