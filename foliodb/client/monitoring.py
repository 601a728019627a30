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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pymongo.monitoring import CommandFailedEvent, CommandListener, CommandStartedEvent, CommandSucceededEvent

if TYPE_CHECKING:
    from foliodb.client.remote import SharedExecutor
    from foliodb.commands import Executor

log = logging.getLogger("foliodb")

ADDRESS = ("foliodb", 0)  # the events' connection_id: an embedded engine has no server address
_request_ids = itertools.count(1)


def publish_command_events(
    listeners: list[CommandListener], executor: Executor | SharedExecutor, db: str, cmd: Mapping[str, Any]
) -> dict[str, Any]:
    request_id = next(_request_ids)
    name = next(iter(cmd))
    _notify(listeners, "started", CommandStartedEvent({**cmd, "$db": db}, db, request_id, ADDRESS, request_id))
    started = time.perf_counter()
    reply = executor.execute(db, cmd)
    duration = datetime.timedelta(seconds=time.perf_counter() - started)
    if reply.get("ok") == 1.0:
        event: Any = CommandSucceededEvent(duration, reply, name, request_id, ADDRESS, request_id, database_name=db)
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
