"""What varies between runs of one compiled query: variables, the clock and
the collation.

A compiled filter, update or expression reads ``$$NOW``, ``let`` variables and
the like from a :class:`Context` instead of capturing them, so one compile can
serve a whole command. ``now`` is read from the clock on first use (most
commands never ask) and then fixed for the command, as ``$$NOW`` is.
``collator`` is the command's collation (None: simple, code-point order); the
operators that compare strings read it when they compile. ``text`` judges a ``$text``
clause (the engine's text matcher, set only where the query planned a text search).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from foliodb.query.collation import Collator


def _now() -> datetime.datetime:
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    # BSON dates hold milliseconds.
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class Context:
    __slots__ = ("_now", "collator", "text", "variables")

    def __init__(
        self,
        variables: dict[str, Any] | None = None,
        now: datetime.datetime | None = None,
        collator: Collator | None = None,
    ) -> None:
        self.variables: dict[str, Any] = {} if variables is None else variables
        self._now = now
        self.collator = collator
        self.text: Callable[[Any], bool] | None = None

    def with_text(self, text: Callable[[Any], bool]) -> Context:
        """This context, with ``text`` judging the filter's ``$text`` clause."""
        out = Context(self.variables, self._now, self.collator)
        out.text = text
        return out

    @property
    def now(self) -> datetime.datetime:
        if self._now is None:
            self._now = _now()
        return self._now

    def __repr__(self) -> str:
        return f"Context(variables={self.variables!r}, now={self._now!r}, collator={self.collator!r})"
