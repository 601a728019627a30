"""The ``sleep`` test command, as mongod's (src/mongo/db/commands/sleep_command.cpp): an
operation that runs for as long as it is told, for tests of ``currentOp``, ``killOp``,
``maxTimeMS`` and of operations waiting behind a lock.

Only with test commands enabled (``foliodb serve --enableTestCommands``; otherwise
CommandNotFound, as in mongod), and on ``admin`` only. ``secs`` (or ``seconds``) and
``millis`` add up; neither sleeps 10 s. The sleep is interruptible (``maxTimeMS``,
``killOp``), and it checks once more at the end, as mongod does.

Locks: mongod's global S (``lock: "r"``, or no ``lock`` and ``w`` not true) and X (``"w"``,
``w: true``) both keep writers out; here both hold the writer for the sleep, so other writes
wait (``waitingForLock`` in ``currentOp``) while reads go on: readers never wait in FolioDB,
where under X they would in mongod. The intent modes (``"ir"``, ``"iw"``) and ``"none"`` hold
nothing, as ``lockTarget``'s ``ParallelBatchWriterMode`` and ``RSTL``; a ``lockTarget``
namespace does not narrow the writer to it (there is one for every collection).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bson import Decimal128

from foliodb import interrupt
from foliodb.commands import failpoints
from foliodb.commands.registry import COMMANDS
from foliodb.errors import location
from foliodb.query import compare as cmp

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

DEFAULT_MILLIS = 10_000  # mongod's sleep without secs, seconds or millis
_LOCKS = ("r", "ir", "w", "iw", "none")
_HOLDS_WRITER = ("r", "w")


def _number_long(value: Any) -> int:
    """``BSONElement::numberLong``: a number truncated towards zero (a non-finite one: 0)."""
    if isinstance(value, Decimal128):
        value = value.to_decimal()
        return int(value) if value.is_finite() else 0
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    return int(value)


def _millis(cmd: Mapping[str, Any]) -> int:
    if not any(name in cmd for name in ("secs", "seconds", "millis")):
        return DEFAULT_MILLIS
    if "secs" in cmd and "seconds" in cmd:
        raise location(51153, "Only one of 'secs' and 'seconds' may be specified")
    millis = 0
    for name, code in (("secs", 34344), ("seconds", 51154)):
        if name in cmd:
            value = cmd[name]
            if isinstance(value, bool) or not cmp.is_number(value):
                raise location(code, f"'{name}' must be a number.")
            millis += _number_long(value) * 1000
            break
    if "millis" in cmd:
        value = cmd["millis"]
        if isinstance(value, bool) or not cmp.is_number(value):
            raise location(34345, "'millis' must be a number.")
        millis += _number_long(value)
    return millis


def _lock(cmd: Mapping[str, Any]) -> str:
    if "lock" not in cmd:
        return "w" if cmd.get("w") is True else "r"
    if "w" in cmd:
        raise location(34346, "Only one of 'w' and 'lock' may be set.")
    lock = cmd["lock"]
    if lock not in _LOCKS:
        raise location(34347, "'lock' must be one of 'r', 'ir', 'w', 'iw', 'none'.")
    return str(lock)


@COMMANDS.register("sleep")
def cmd_sleep(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    failpoints.test_command(request)
    until = time.monotonic() + _millis(cmd) / 1000.0
    lock = _lock(cmd)
    target = cmd.get("lockTarget")
    if lock in _HOLDS_WRITER and target not in ("ParallelBatchWriterMode", "RSTL"):
        with request.engine.storage.write():
            interrupt.wait_until(until)
    else:
        interrupt.wait_until(until)
    interrupt.check()  # mongod's interrupt point at the end, "for testing (e.g. maxTimeMS)"
    return {"ok": 1.0}
