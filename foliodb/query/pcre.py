"""MongoDB's regular expressions (PCRE syntax) on the ``regex`` engine, bounded in time.

MongoDB runs ``$regex``, ``$regexMatch``, ``$regexFind`` and ``$regexFindAll``
on PCRE. Python's ``re`` rejects much PCRE syntax (possessive quantifiers and
atomic groups before 3.11, ``\\p{...}``, POSIX classes, inline flags past the
start, ``\\h``, ``\\R``...) and cannot be stopped: one pattern with
catastrophic backtracking froze every thread. The ``regex`` package accepts
that syntax, releases the GIL while it matches, and takes a timeout.

Limits, as mongod's PCRE wrapper: a pattern of more than
:data:`MAX_PATTERN_BYTES` bytes (UTF-8) fails to compile (51091 in a query,
51111 in an expression); a search is bounded in time (below).

Where the time goes, and how each part is bounded:

* **matching**: every search of a :class:`Pattern` runs in slices
  (:data:`IN_LANE_SECONDS` in the server's lane, then slices that double from
  :data:`FIRST_SLICE_SECONDS`), the engine's timeout ending each; between
  slices the operation is checked, so ``killOp`` and ``maxTimeMS`` stop a
  match within one slice (MaxTimeMSExpired, 50; Interrupted, 11601), and
  after :data:`MATCH_TIME_LIMIT` in all the search fails with location error
  51156, as mongod's regex operators fail when PCRE gives up. A slice that
  times out starts over, so a search costs at most twice its real work;
* **the engine's own set-up**: before its first search, ``regex`` builds
  Boyer-Moore tables for the longest literal a pattern requires, in time
  cubic in that literal's length for repetitive ones (``"c" * 4000``: 18 s),
  holding the GIL and ignoring the timeout. So no literal run longer than
  :data:`LITERAL_CHUNK` characters reaches the engine: a longer run is cut
  into atomic groups ``(?>...)`` (which match exactly what the literal
  matches: a literal has one way to match), each cheap to prepare;
* **literal patterns** (no metacharacter, no ``i`` or ``x`` option) never
  reach the engine: a search is ``str.find``, linear in the subject; a
  pattern anchored at the start by a literal prefix (``^abc...``, without
  ``m``, ``i``, ``x`` or any ``|``) is first checked with ``str.startswith``.
  Both mirror the engine's answer (tests/property/test_regex_fast_paths.py).

PCRE syntax translated before compiling: ``\\z`` and ``\\Z`` (end, and end or
before a final newline), ``(?<name>...)``/``\\k<name>`` named groups,
``\\Q...\\E`` quoting, ``\\x{hhhh}`` code points, ``\\cX`` control characters,
and the start-of-pattern options PCRE2 takes (``(*UTF8)``, ``(*UTF)``,
``(*UCP)``, newline and limit settings): strings are Unicode and classes
Unicode-aware already, so they are accepted and change nothing.
"""

from __future__ import annotations

import functools
import re
import time
from typing import Any

import regex

from foliodb import interrupt, lane
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import regex_literals

OPTION_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE, "u": 0}
# mongod's limit on a pattern's length in bytes (jstests/core/regex_limit.js: 32,761 works, one more fails).
MAX_PATTERN_BYTES = 32761
# Seconds one search may take before it fails (mongod's PCRE match limit plays this part).
MATCH_TIME_LIMIT = 1.0
# A match still running after this long starts over outside the server's lane (foliodb/lane.py).
IN_LANE_SECONDS = 0.002
# The first slice outside the lane; each next one is twice as long (killOp is seen between slices).
FIRST_SLICE_SECONDS = 0.05
# The longest literal run the engine sees whole (see the module docstring): 64**3 steps at worst.
LITERAL_CHUNK = 64

_UNESCAPED = r"(?<!\\)((?:\\\\)*)"


class Pattern:
    """A compiled pattern whose searches stop at the operation's deadline and
    at MATCH_TIME_LIMIT; literal patterns and literal prefixes take fast paths."""

    __slots__ = ("_literal", "_prefix", "_search", "pattern")

    def __init__(self, search: Any, pattern: str, literal: str | None = None, prefix: str = "") -> None:
        self.pattern = pattern  # as the user wrote it
        self._search = search  # the compiled engine's search (unused for a literal pattern)
        self._literal = literal  # the text a literal pattern matches (None: not literal)
        self._prefix = prefix  # what every match at the start begins with (an anchored pattern)

    def search(self, text: str, pos: int = 0) -> Any:
        """The first match at or after ``pos`` (a ``regex`` match object, or one with the same
        ``group``/``groups``/``start``/``end`` for a literal pattern), or None."""
        literal = self._literal
        if literal is not None:
            found = text.find(literal, pos)
            return None if found < 0 else LiteralMatch(literal, found)
        if self._prefix and not text.startswith(self._prefix):
            return None  # anchored at the start: the prefix is needed at 0, whatever pos is
        return self._bounded(text, pos)

    def _bounded(self, text: str, pos: int) -> Any:
        op = interrupt.current()
        limit, by_deadline = MATCH_TIME_LIMIT, False
        if op is not None:
            op.check()
            remaining = op.remaining()
            if remaining is not None and remaining < limit:
                limit, by_deadline = remaining, True
        try:
            return self._search(text, pos, None, None, False, min(IN_LANE_SECONDS, limit))
        except TimeoutError:
            # A slow match: again, outside the server's lane (the engine lets go of the
            # interpreter lock while it matches, so others run; nothing waits in the lane).
            lane.leave()
        started = time.monotonic()
        spent, slice_seconds = IN_LANE_SECONDS, FIRST_SLICE_SECONDS
        while spent < limit:
            try:
                return self._search(text, pos, None, None, False, min(slice_seconds, limit - spent))
            except TimeoutError:
                if op is not None:
                    op.check()  # killOp, or the deadline: stop between slices
                spent = IN_LANE_SECONDS + time.monotonic() - started
                slice_seconds *= 2
        if by_deadline:
            raise CommandError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")
        raise location(
            51156,
            f"Error occurred while executing the regular expression /{self.pattern}/: "
            f"it ran past the match time limit of {int(MATCH_TIME_LIMIT * 1000)} ms",
        )


class LiteralMatch:
    """A literal pattern's match: what ``regex``'s match objects answer, for the callers' uses."""

    __slots__ = ("_end", "_start", "_text")

    def __init__(self, text: str, start: int) -> None:
        self._text, self._start, self._end = text, start, start + len(text)

    def group(self, index: int = 0) -> str:
        if index != 0:
            raise IndexError("no such group")
        return self._text

    def groups(self) -> tuple[str | None, ...]:
        return ()

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


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


# PCRE2's start-of-pattern options: (*UTF8) (PCRE1's spelling, still taken), (*UCP), newline and limit settings.
_START_OPTIONS = re.compile(
    r"\(\*(?:UTF8?|UCP|NO_AUTO_POSSESS|NO_DOTSTAR_ANCHOR|NO_JIT|NO_START_OPT|NOTEMPTY(?:_ATSTART)?"
    r"|CR|LF|CRLF|ANYCRLF|ANY|NUL|BSR_ANYCRLF|BSR_UNICODE|LIMIT_(?:MATCH|DEPTH|HEAP|RECURSION)=\d+)\)"
)


def _without_start_options(pattern: str) -> str:
    pos = 0
    while match := _START_OPTIONS.match(pattern, pos):
        pos = match.end()
    return pattern[pos:]


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str, options: str) -> Pattern:
    """The pattern of a MongoDB regex and its option letters."""
    flags = 0
    for letter in options:
        if letter not in OPTION_FLAGS:
            raise location(51108, f"invalid flag in regex options: {letter}")
        flags |= OPTION_FLAGS[letter]
    if len(pattern.encode()) > MAX_PATTERN_BYTES:
        raise location(
            51091, "Regular expression is invalid: pattern string is longer than the limit set by the application"
        )
    source = translate(_without_start_options(pattern))
    found = regex_literals.scan(source, "x" in options)
    literal = found.text if found.whole and "i" not in options and "x" not in options else None
    prefix = "" if "m" in options or "i" in options else regex_literals.anchored_prefix(source, found)
    if literal is not None:
        return Pattern(None, pattern, literal)  # a literal is valid, and str.find needs no engine
    try:
        compiled = regex.compile(regex_literals.chunked(source, found, LITERAL_CHUNK), flags)
    except (regex.error, ValueError, OverflowError) as exc:
        raise location(51091, f"Regular expression is invalid: {exc}") from None
    return Pattern(compiled.search, pattern, literal, prefix)


def from_python(value: re.Pattern[str]) -> Pattern:
    """A Python ``re`` pattern a caller passed as a filter value, as a bounded one."""
    letters = "".join(
        letter for letter, flag in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if value.flags & flag
    )
    if not isinstance(value.pattern, str):
        raise CommandError(ErrorCode.BadValue, "a regular expression pattern must be a string")
    return compile_regex(value.pattern, letters)
