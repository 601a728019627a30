"""The MongoDB wire-protocol server (``foliodb serve``): framing in
:mod:`~foliodb.server.wire`, one connection in :mod:`~foliodb.server.connection`,
authentication in :mod:`~foliodb.server.authentication`, TLS in
:mod:`~foliodb.server.tls`, the listener in :mod:`~foliodb.server.server`.
docs/security.md is the threat model."""

from foliodb.server.server import DEFAULT_PORT, Server

__all__ = ["DEFAULT_PORT", "Server"]
