"""MongoDB's regular expressions (PCRE syntax) on the ``regex`` engine, bounded in time.

MongoDB runs ``$regex``, ``$regexMatch``, ``$regexFind`` and ``$regexFindAll``
on PCRE. Python's ``re`` rejects much PCRE syntax (possessive quantifiers and
atomic groups before 3.11, ``\\p{...}``, POSIX classes, inline flags past the
start, ``\\h``, ``\\R``...) and cannot be stopped: one pattern with
catastrophic backtracking froze every thread. The ``regex`` package accepts
that syntax, releases the GIL while it matches, and takes a timeout.
A match that runs past :data:`IN_LANE_SECONDS` starts over outside the
server's lane, so it holds back no one's turn.

Every search of a :class:`Pattern` is bounded by the running operation's
deadline (MaxTimeMSExpired, 50) and by :data:`MATCH_TIME_LIMIT` for one match
(mongod bounds PCRE by its match limit; a search past this one fails with
location error 51156, as mongod's regex operators fail when PCRE gives up).
``killOp`` takes effect at the end of the current match, within that limit.

PCRE syntax translated before compiling: ``\\z`` and ``\\Z`` (end, and end or
before a final newline), ``(?<name>...)``/``\\k<name>`` named groups,
``\\Q...\\E`` quoting, ``\\x{hhhh}`` code points and ``\\cX`` control characters.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import regex

from foliodb import interrupt, lane
from foliodb.errors import CommandError, ErrorCode, location

OPTION_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE, "u": 0}
# Seconds one search may take before it fails (mongod's PCRE match limit plays this part).
MATCH_TIME_LIMIT = 1.0
# A match still running after this long starts over outside the server's lane (foliodb/lane.py).
IN_LANE_SECONDS = 0.002

_UNESCAPED = r"(?<!\\)((?:\\\\)*)"


class Pattern:
    """A compiled pattern whose searches stop at the operation's deadline and
    at MATCH_TIME_LIMIT."""

    __slots__ = ("_search", "compiled", "pattern")

    def __init__(self, compiled: Any, pattern: str) -> None:
        self.compiled = compiled
        self.pattern = pattern  # as the user wrote it
        self._search = compiled.search

    def search(self, text: str, pos: int = 0) -> Any:
        """The first match at or after ``pos`` (a ``regex`` match object), or None."""
        limit = MATCH_TIME_LIMIT
        op = interrupt.current()
        by_deadline = False
        if op is not None:
            op.check()
            remaining = op.remaining()
            if remaining is not None and remaining < limit:
                limit, by_deadline = remaining, True
        try:
            if limit > IN_LANE_SECONDS:
                try:
                    return self._search(text, pos, None, None, False, IN_LANE_SECONDS)
                except TimeoutError:
                    # A slow match: again, outside the server's lane (the engine lets go of the
                    # interpreter lock while it matches, so others can run; nothing waits in the lane).
                    lane.leave()
                    limit -= IN_LANE_SECONDS
            return self._search(text, pos, None, None, False, limit)
        except TimeoutError:
            if by_deadline:
                raise CommandError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit") from None
            raise location(
                51156,
                f"Error occurred while executing the regular expression /{self.pattern}/: "
                f"it ran past the match time limit of {int(MATCH_TIME_LIMIT * 1000)} ms",
            ) from None


def _quote(match: re.Match[str]) -> str:
    return match.group(1) + regex.escape(match.group(2))


def _code_point(match: re.Match[str]) -> str:
    return f"{match.group(1)}\\U{int(match.group(2), 16):08x}"


def _control(match: re.Match[str]) -> str:
    return f"{match.group(1)}\\x{ord(match.group(2).upper()) ^ 0x40:02x}"


def translate(pattern: str) -> str:
    """PCRE syntax the ``regex`` engine spells differently (see the module docstring)."""
    out = re.sub(_UNESCAPED + r"\\Q(.*?)(?:\\E|\Z)", _quote, pattern, flags=re.DOTALL)
    out = re.sub(_UNESCAPED + r"\\x\{([0-9A-Fa-f]{1,8})\}", _code_point, out)
    out = re.sub(_UNESCAPED + r"\\c([@-_a-z])", _control, out)
    # PCRE's \z is Python's \Z; PCRE's \Z (end or before a final newline) is (?=\n?\Z).
    out = re.sub(_UNESCAPED + r"\\Z", r"\1(?=\\n?\\Z)", out)
    out = re.sub(_UNESCAPED + r"\\z", r"\1\\Z", out)
    # PCRE's named groups (?<name>...) and \k<name> are (?P<name>...) and (?P=name);
    # lookbehinds (?<= and (?<! stay as they are.
    out = re.sub(_UNESCAPED + r"\(\?<(?![=!])", r"\1(?P<", out)
    return re.sub(_UNESCAPED + r"\\k<(\w+)>", r"\1(?P=\2)", out)


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str, options: str) -> Pattern:
    """The pattern of a MongoDB regex and its option letters."""
    flags = 0
    for letter in options:
        if letter not in OPTION_FLAGS:
            raise location(51108, f"invalid flag in regex options: {letter}")
        flags |= OPTION_FLAGS[letter]
    try:
        return Pattern(regex.compile(translate(pattern), flags), pattern)
    except (regex.error, ValueError, OverflowError) as exc:
        raise location(51091, f"Regular expression is invalid: {exc}") from None


def from_python(value: re.Pattern[str]) -> Pattern:
    """A Python ``re`` pattern a caller passed as a filter value, as a bounded one."""
    letters = "".join(
        letter for letter, flag in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if value.flags & flag
    )
    if not isinstance(value.pattern, str):
        raise CommandError(ErrorCode.BadValue, "a regular expression pattern must be a string")
    return compile_regex(value.pattern, letters)
