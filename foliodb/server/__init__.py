"""The MongoDB wire-protocol server (``foliodb serve``): framing in
:mod:`~foliodb.server.wire`, one connection in :mod:`~foliodb.server.connection`,
the listener in :mod:`~foliodb.server.server`."""

from foliodb.server.server import DEFAULT_PORT, Server

__all__ = ["DEFAULT_PORT", "Server"]
