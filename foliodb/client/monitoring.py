"""pymongo's command monitoring for the embedded client: each command is
announced to the client's ``CommandListener``s as started, then succeeded or
failed, with pymongo's own event classes, so APM and logging built on
``pymongo.monitoring`` work unchanged.

A listener that raises is logged and ignored, as pymongo does.
"""

from __future__ import annotations

import datetime
import itertools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from pymongo.monitoring import CommandFailedEvent, CommandListener, CommandStartedEvent, CommandSucceededEvent

from foliodb.commands.failpoints import closes_connection

log = logging.getLogger("foliodb")

ADDRESS = ("foliodb", 0)  # the events' connection_id: an embedded engine has no server address
CONNECTION_CLOSED = f"{ADDRESS[0]}:{ADDRESS[1]}: connection closed"  # pymongo's message, for a fail point's
_request_ids = itertools.count(1)


def publish_command_events(
    listeners: list[CommandListener],
    run: Callable[[str, Mapping[str, Any]], dict[str, Any]],
    db: str,
    cmd: Mapping[str, Any],
) -> dict[str, Any]:
    """``run(db, cmd)``'s reply, announced to ``listeners``."""
    request_id = next(_request_ids)
    name = next(iter(cmd))
    _notify(listeners, "started", CommandStartedEvent({**cmd, "$db": db}, db, request_id, ADDRESS, request_id))
    started = time.perf_counter()
    reply = run(db, cmd)
    duration = datetime.timedelta(seconds=time.perf_counter() - started)
    if closes_connection(reply):
        # What pymongo reports when the connection drops: the client's error, no server reply.
        failure = {"errmsg": CONNECTION_CLOSED, "errtype": "AutoReconnect"}
        event: Any = CommandFailedEvent(duration, failure, name, request_id, ADDRESS, request_id, database_name=db)
        _notify(listeners, "failed", event)
    elif reply.get("ok") == 1.0:
        event = CommandSucceededEvent(duration, reply, name, request_id, ADDRESS, request_id, database_name=db)
        _notify(listeners, "succeeded", event)
    else:
        event = CommandFailedEvent(duration, reply, name, request_id, ADDRESS, request_id, database_name=db)
        _notify(listeners, "failed", event)
    return reply


def _notify(listeners: list[CommandListener], method: str, event: Any) -> None:
    for listener in listeners:
        try:
            getattr(listener, method)(event)
        except Exception:
            log.exception("command listener %r raised", listener)
