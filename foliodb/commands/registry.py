"""The command registry: MongoDB command name -> handler.

A handler is ``handler(request, command) -> reply``; ``command`` is the command
document (its first key names the command), ``request`` the
:class:`foliodb.commands.executor.Request` it runs under. Handlers raise
:class:`foliodb.errors.CommandError`; the executor turns it into the error reply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from foliodb.errors import CommandError, ErrorCode
from foliodb.query.registry import Registry

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

Handler = Callable[["Request", Mapping[str, Any]], dict[str, Any]]


def _unknown(name: str) -> CommandError:
    return CommandError(ErrorCode.CommandNotFound, f"no such command: '{name}'")


COMMANDS: Registry[Handler] = Registry(
    "command",
    _unknown,
    unbuilt=(
        "shardCollection",
        "saslStart",
        "saslContinue",
        "authenticate",
        "logout",
        "compact",
        "reIndex",
        "setQuerySettings",
        "removeQuerySettings",
    ),
)
