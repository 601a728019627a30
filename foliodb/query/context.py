"""What varies between runs of one compiled query: variables and the clock.

A compiled filter, update or expression reads ``$$NOW``, ``let`` variables and
the like from a :class:`Context` instead of capturing them, so one compile can
serve a whole command.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any


def _now() -> datetime.datetime:
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    # BSON dates hold milliseconds.
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


@dataclass
class Context:
    variables: dict[str, Any] = field(default_factory=dict)
    now: datetime.datetime = field(default_factory=_now)
