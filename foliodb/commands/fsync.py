"""``fsync`` and ``fsyncUnlock``, as mongod's (src/mongo/db/commands/fsync.cpp).

``{fsync: 1}`` makes every committed write durable (the log synced to disk) and answers
``numFiles: 1`` (a field mongod keeps for compatibility). ``{fsync: 1, lock: true}``
(``db.fsyncLock()``) also holds the writer until as many ``fsyncUnlock`` commands: writes
wait, shown in ``currentOp`` as ``waitingForLock``, and stop at their ``maxTimeMS``; reads go
on, each on its snapshot. The first lock checkpoints the log into the database file. Locks
nest (``lockCount``); the lock belongs to the server, not the connection that took it, and
it is let go when the engine closes (mongod: at shutdown). Manual:
https://www.mongodb.com/docs/manual/reference/command/fsync/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bson import Int64

from foliodb.commands import params
from foliodb.commands.registry import COMMANDS
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

SEE_ALSO = "http://dochub.mongodb.org/core/fsynccommand"


@COMMANDS.register("fsync")
def cmd_fsync(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    params.admin_only(request.db, request.command_name)
    storage = request.engine.storage
    if not cmd.get("lock"):
        storage.sync()
        return {"numFiles": 1, "ok": 1.0}
    count = storage.fsync_lock()
    return {
        "info": "now locked against writes, use db.fsyncUnlock() to unlock",
        "lockCount": Int64(count),
        "seeAlso": SEE_ALSO,
        "ok": 1.0,
    }


@COMMANDS.register("fsyncUnlock")
def cmd_fsyncUnlock(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    params.admin_only(request.db, request.command_name)
    count = request.engine.storage.fsync_unlock()
    if count is None:
        raise CommandError(ErrorCode.IllegalOperation, "fsyncUnlock called when not locked")
    return {"info": "fsyncUnlock completed", "lockCount": Int64(count), "ok": 1.0}
