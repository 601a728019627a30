"""One connection's authentication state: its SASL conversation, the users it
has authenticated as, and whether a command is allowed.

As with mongod, authentication works whether or not ``--auth`` is on (a client
given credentials logs in if the user exists); ``--auth`` makes every command
outside the handshake require an authenticated user whose privileges allow it
(:mod:`foliodb.auth.command_table`). The localhost exception: while no user
exists, a client on the loopback address may create the first user, in the
``admin`` database.

Mechanisms: SCRAM-SHA-1 and SCRAM-SHA-256 (saslStart/saslContinue), and
MONGODB-X509 (``authenticate`` in ``$external``) on a TLS connection whose
client certificate was verified against --tlsCAFile: the user is the
certificate's subject, and must exist in ``$external``.

A connection holds at most one SASL conversation, as mongod's: a new
saslStart abandons the previous one, so a client cannot pile up state.

Manual: https://www.mongodb.com/docs/manual/core/localhost-exception/,
https://www.mongodb.com/docs/manual/core/security-x.509/
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bson.binary import Binary

from foliodb.auth import scram
from foliodb.auth.caller import Caller
from foliodb.auth.command_table import OPEN, RULES
from foliodb.commands.access import decide, subject_of
from foliodb.commands.registry import COMMANDS
from foliodb.commands.users import EXTERNAL_DB, find_user, has_users
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.engine.engine import Engine

SASL_COMMANDS = frozenset({"saslStart", "saslContinue"})
X509 = "MONGODB-X509"


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
        self.certificate_subject: str | None = None  # a verified TLS client certificate's subject
        self._exchange: tuple[int, _Exchange] | None = None  # the one SASL conversation in progress
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
        self._exchange = (conversation_id, _Exchange(conversation, skip_empty))
        return {"conversationId": conversation_id, "done": False, "payload": Binary(server_first), "ok": 1.0}

    def proceed(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        conversation_id = cmd.get("conversationId")
        if self._exchange is None or self._exchange[0] != conversation_id or isinstance(conversation_id, bool):
            raise CommandError(ErrorCode.ProtocolError, "No SASL session state found")
        exchange = self._exchange[1]
        payload = _payload(cmd.get("payload"))
        if exchange.verified:  # the empty closing round of a client without skipEmptyExchange
            self._exchange = None
            return {"conversationId": conversation_id, "done": True, "payload": Binary(b""), "ok": 1.0}
        conversation = exchange.conversation
        try:
            server_final = conversation.finish(payload)
        except scram.ScramError:
            self._exchange = None
            raise
        self._login(conversation.db, conversation.user)
        if exchange.skip_empty:
            self._exchange = None
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

    def authenticate(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        """The ``authenticate`` command: MONGODB-X509, the only mechanism it takes."""
        try:
            mechanism = cmd.get("mechanism")
            if mechanism != X509:
                raise CommandError(
                    ErrorCode.MechanismUnavailable,
                    f"Received authentication for mechanism {mechanism} which is unknown or not enabled",
                )
            if db != EXTERNAL_DB:
                raise CommandError(ErrorCode.BadValue, "X.509 authentication must always use the $external database.")
            subject = self.certificate_subject
            if subject is None:
                raise CommandError(ErrorCode.AuthenticationFailed, "No verified subject name available from client")
            named = cmd.get("user")
            if named is not None and named != subject:
                raise CommandError(
                    ErrorCode.AuthenticationFailed, "There is no x.509 client certificate matching the user."
                )
            with self.engine.reading():
                user = find_user(self.engine, EXTERNAL_DB, subject)
            if user is None:
                raise _failed()
        except CommandError as exc:
            return exc.to_reply()
        self._login(EXTERNAL_DB, subject)
        return {"dbname": EXTERNAL_DB, "user": subject, "ok": 1.0}

    def hello_fields(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        """``saslSupportedMechs`` and ``speculativeAuthenticate`` answers for a hello."""
        out: dict[str, Any] = {}
        wanted = cmd.get("saslSupportedMechs")
        if isinstance(wanted, str) and "." in wanted:
            db, _, name = wanted.partition(".")
            with self.engine.reading():
                user = find_user(self.engine, db, name)
            if user is not None:
                out["saslSupportedMechs"] = sorted(m for m in user["credentials"] if m in scram.MECHANISMS)
        speculative = cmd.get("speculativeAuthenticate")
        if isinstance(speculative, Mapping) and speculative and isinstance(speculative.get("db"), str):
            first = next(iter(speculative))
            reply: dict[str, Any] = {}
            if first == "saslStart":
                reply = self.sasl(speculative["db"], speculative)
            elif first == "authenticate":
                reply = self.authenticate(speculative["db"], speculative)
            if reply.get("ok") == 1.0:
                out["speculativeAuthenticate"] = {k: v for k, v in reply.items() if k != "ok"}
        return out

    # -- authorization -----------------------------------------------------------------

    def authorize(self, db: str, cmd: Mapping[str, Any]) -> tuple[CommandError | None, Caller | None]:
        """Why ``cmd`` may not run on this connection (or None), and who runs it (None: unrestricted)."""
        name = next(iter(cmd))
        if not self.enforce or name in OPEN:
            return None, None
        if name not in COMMANDS and name not in RULES:
            return None, None  # unknown or unbuilt: the executor answers CommandNotFound / NotImplemented
        if not self.users:
            if self.loopback and name == "createUser" and db == "admin":
                with self.engine.reading():
                    if not has_users(self.engine):
                        return None, None  # the localhost exception
            return CommandError(ErrorCode.Unauthorized, f"Command {name} requires authentication"), None
        with self.engine.reading():
            subject = subject_of(self.engine, self.users)
            decision = decide(self.engine, subject, db, cmd)
        return decision.refusal, Caller(subject, tuple(decision.privileges))
