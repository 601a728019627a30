"""SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB uses them:
stored credentials, and the server's side of the conversation.

MongoDB's two quirks: SCRAM-SHA-1 salts not the password but
``md5("<user>:mongo:<password>")`` in hex, and SCRAM-SHA-256 runs the password
through SASLprep (pymongo's own implementation is used, so both sides prepare
a password identically).

The conversation (saslStart, then saslContinue)::

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 proof>
    server-final   v=<base64 server signature>

Manual: https://www.mongodb.com/docs/manual/core/security-scram/
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any

from pymongo.saslprep import saslprep

MECHANISMS = ("SCRAM-SHA-1", "SCRAM-SHA-256")
# MongoDB's defaults (scramIterationCount, scramSHA256IterationCount).
ITERATIONS = {"SCRAM-SHA-1": 10000, "SCRAM-SHA-256": 15000}
_DIGESTS = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256"}
_SALT_BYTES = {"SCRAM-SHA-1": 16, "SCRAM-SHA-256": 28}


class ScramError(Exception):
    """The client's messages do not make a valid conversation, or its proof is wrong."""


def _b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode()


def _hmac(key: bytes, message: bytes, digest: str) -> bytes:
    return hmac.new(key, message, digest).digest()


def prepared_password(mechanism: str, user: str, password: str) -> bytes:
    if mechanism == "SCRAM-SHA-1":
        return hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest().encode()
    return saslprep(password).encode()


def credentials(user: str, password: str, mechanisms: tuple[str, ...] = MECHANISMS) -> dict[str, Any]:
    """The ``credentials`` field of an ``admin.system.users`` document."""
    out: dict[str, Any] = {}
    for mechanism in mechanisms:
        digest = _DIGESTS[mechanism]
        salt = os.urandom(_SALT_BYTES[mechanism])
        iterations = ITERATIONS[mechanism]
        salted = hashlib.pbkdf2_hmac(digest, prepared_password(mechanism, user, password), salt, iterations)
        client_key = _hmac(salted, b"Client Key", digest)
        out[mechanism] = {
            "iterationCount": iterations,
            "salt": _b64(salt),
            "storedKey": _b64(hashlib.new(digest, client_key).digest()),
            "serverKey": _b64(_hmac(salted, b"Server Key", digest)),
        }
    return out


def _fields(message: bytes) -> dict[str, str]:
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise ScramError("a SCRAM message must be UTF-8") from None
    fields: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed SCRAM attribute {part!r}")
        fields[part[0]] = part[2:]
    return fields


def client_first_user(payload: bytes) -> str:
    """The user a client-first message names (``=2C`` and ``=3D`` unescaped)."""
    if not payload.startswith(b"n,"):
        raise ScramError("SCRAM channel binding is not supported; the message must start with 'n,'")
    _gs2, _, bare = payload[2:].partition(b",")
    name = _fields(bare).get("n")
    if not name:
        raise ScramError("the client-first message names no user")
    return name.replace("=2C", ",").replace("=3D", "=")


@dataclass
class Conversation:
    """One SCRAM exchange, server side, against one stored credential."""

    mechanism: str
    user: str
    db: str
    stored: dict[str, Any]  # the credential for this mechanism, as :func:`credentials` makes it
    client_first_bare: bytes = b""
    server_first: bytes = b""
    nonce: str = ""

    def start(self, payload: bytes) -> bytes:
        """The server-first message for the client-first ``payload``."""
        bare = payload.split(b",", 2)[2]
        client_nonce = _fields(bare).get("r")
        if not client_nonce:
            raise ScramError("the client-first message has no nonce")
        self.client_first_bare = bare
        self.nonce = client_nonce + _b64(os.urandom(24))
        self.server_first = f"r={self.nonce},s={self.stored['salt']},i={self.stored['iterationCount']}".encode()
        return self.server_first

    def finish(self, payload: bytes) -> bytes:
        """Check the client's proof; the server-final message (its signature)."""
        fields = _fields(payload)
        if fields.get("r") != self.nonce or "p" not in fields or b",p=" not in payload:
            raise ScramError("the client-final message does not continue this conversation")
        without_proof = payload[: payload.rindex(b",p=")]
        auth_message = b",".join((self.client_first_bare, self.server_first, without_proof))
        digest = _DIGESTS[self.mechanism]
        stored_key = base64.standard_b64decode(self.stored["storedKey"])
        signature = _hmac(stored_key, auth_message, digest)
        try:
            proof = base64.standard_b64decode(fields["p"])
        except ValueError:  # binascii.Error
            raise ScramError("the client's proof is not base64") from None
        if len(proof) != len(signature):
            raise ScramError("the client's proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(digest, client_key).digest(), stored_key):
            raise ScramError("the client's proof does not match the stored key")
        server_key = base64.standard_b64decode(self.stored["serverKey"])
        return b"v=" + _b64(_hmac(server_key, auth_message, digest)).encode()
