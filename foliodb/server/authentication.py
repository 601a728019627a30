"""One connection's authentication state: its SASL conversations, the users it
has authenticated as, and whether a command is allowed.

As with mongod, authentication works whether or not ``--auth`` is on (a client
given credentials logs in if the user exists); ``--auth`` makes every command
outside the handshake require an authenticated user whose roles allow it. The
localhost exception: while no user exists, a client on the loopback address may
create the first user, in the ``admin`` database.

Manual: https://www.mongodb.com/docs/manual/core/localhost-exception/
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bson import json_util
from bson.binary import Binary

from foliodb.auth import roles, scram
from foliodb.commands.users import find_user, has_users
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.engine.engine import Engine

SASL_COMMANDS = frozenset({"saslStart", "saslContinue"})


def _failed() -> CommandError:
    return CommandError(ErrorCode.AuthenticationFailed, "Authentication failed.")


def _payload(value: Any) -> bytes:
    if isinstance(value, bytes):  # Binary is a bytes subclass
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise CommandError(ErrorCode.BadValue, "SASL payload must be binary data")


@dataclass
class _Exchange:
    conversation: scram.Conversation
    skip_empty: bool  # the client asked to end after the server-final message
    verified: bool = False  # the proof checked out; only the empty closing round is left


class Authenticator:
    def __init__(self, engine: Engine, enforce: bool, loopback: bool) -> None:
        self.engine = engine
        self.enforce = enforce
        self.loopback = loopback
        self.users: list[tuple[str, str]] = []  # (db, user) authenticated on this connection
        self._exchanges: dict[int, _Exchange] = {}
        self._next_id = 1

    # -- SASL ------------------------------------------------------------------------

    def sasl(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        try:
            if next(iter(cmd)) == "saslStart":
                return self.start(db, cmd)
            return self.proceed(cmd)
        except scram.ScramError:
            return _failed().to_reply()
        except CommandError as exc:
            return exc.to_reply()

    def start(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        mechanism = cmd.get("mechanism")
        if mechanism not in scram.MECHANISMS:
            raise CommandError(
                ErrorCode.MechanismUnavailable, f"Received authentication for mechanism {mechanism} which is unknown"
            )
        payload = _payload(cmd.get("payload"))
        name = scram.client_first_user(payload)
        with self.engine.reading():
            user = find_user(self.engine, db, name)
        if user is None or mechanism not in user["credentials"]:
            raise _failed()
        conversation = scram.Conversation(mechanism, name, db, user["credentials"][mechanism])
        server_first = conversation.start(payload)
        options = cmd.get("options")
        skip_empty = isinstance(options, Mapping) and bool(options.get("skipEmptyExchange"))
        conversation_id = self._next_id
        self._next_id += 1
        self._exchanges[conversation_id] = _Exchange(conversation, skip_empty)
        return {"conversationId": conversation_id, "done": False, "payload": Binary(server_first), "ok": 1.0}

    def proceed(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        conversation_id = cmd.get("conversationId")
        exchange = self._exchanges.get(conversation_id) if isinstance(conversation_id, int) else None
        if exchange is None or not isinstance(conversation_id, int):
            raise CommandError(ErrorCode.ProtocolError, "No SASL session state found")
        payload = _payload(cmd.get("payload"))
        if exchange.verified:  # the empty closing round of a client without skipEmptyExchange
            del self._exchanges[conversation_id]
            return {"conversationId": conversation_id, "done": True, "payload": Binary(b""), "ok": 1.0}
        conversation = exchange.conversation
        try:
            server_final = conversation.finish(payload)
        except scram.ScramError:
            del self._exchanges[conversation_id]
            raise
        self._login(conversation.db, conversation.user)
        if exchange.skip_empty:
            del self._exchanges[conversation_id]
        else:
            exchange.verified = True
        return {
            "conversationId": conversation_id,
            "done": exchange.skip_empty,
            "payload": Binary(server_final),
            "ok": 1.0,
        }

    def _login(self, db: str, user: str) -> None:
        if (db, user) not in self.users:
            self.users.append((db, user))

    def hello_fields(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        """``saslSupportedMechs`` and ``speculativeAuthenticate`` answers for a hello."""
        out: dict[str, Any] = {}
        wanted = cmd.get("saslSupportedMechs")
        if isinstance(wanted, str) and "." in wanted:
            db, _, name = wanted.partition(".")
            with self.engine.reading():
                user = find_user(self.engine, db, name)
            if user is not None:
                out["saslSupportedMechs"] = sorted(user["credentials"])
        speculative = cmd.get("speculativeAuthenticate")
        if isinstance(speculative, Mapping) and speculative.get("saslStart") and isinstance(speculative.get("db"), str):
            reply = self.sasl(speculative["db"], speculative)
            if reply.get("ok") == 1.0:
                out["speculativeAuthenticate"] = {k: v for k, v in reply.items() if k != "ok"}
        return out

    # -- authorization -----------------------------------------------------------------

    def refusal(self, db: str, cmd: Mapping[str, Any]) -> CommandError | None:
        """Why ``cmd`` may not run on this connection, or None."""
        name = next(iter(cmd))
        if not self.enforce or name in roles.UNAUTHENTICATED:
            return None
        if not self.users:
            if self.loopback and name == "createUser" and db == "admin":
                with self.engine.reading():
                    if not has_users(self.engine):
                        return None  # the localhost exception
            return CommandError(ErrorCode.Unauthorized, f"Command {name} requires authentication")
        needed = roles.required(db, cmd)
        if not needed:
            return None
        privileges: set[tuple[str, str]] = set()
        with self.engine.reading():
            for user_db, user_name in self.users:
                user = find_user(self.engine, user_db, user_name)
                if user is not None:  # a dropped user keeps nothing
                    privileges |= roles.granted(user["roles"])
        if roles.allows(privileges, needed):
            return None
        shown = json_util.dumps({k: v for k, v in cmd.items() if k not in ("lsid", "$clusterTime")})
        return CommandError(ErrorCode.Unauthorized, f"not authorized on {db} to execute command {shown}")
