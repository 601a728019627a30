"""The regex fast paths agree with the engine they stand in for.

:mod:`foliodb.query.pcre` answers a literal pattern with ``str.find``, rejects
subjects without an anchored pattern's literal prefix before matching, and
cuts long literal runs into atomic groups so that the engine's set-up stays
cheap (foliodb/query/regex_literals.py). On random patterns built from
literal characters, escapes, classes, groups and quantifiers, each answer
(the match's text, start, end and groups) must be the plain ``regex``
engine's on the pattern as written, whatever the chunk size.
"""

from __future__ import annotations

from typing import Any

import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from foliodb.errors import CommandError
from foliodb.query import regex_literals
from foliodb.query.pcre import compile_regex, translate

_PIECES = st.sampled_from(
    [
        "a",
        "b",
        "c",
        " ",
        "#",
        "\\.",
        "\\\\",
        ".",
        "a*",
        "b+?",
        "c{2}",
        "c{1,3}",
        "[ab]",
        "[]a]",
        "[^c]",
        "[[:alpha:]]",
        "(",
        ")",
        "(?:",
        "(?i:",
        "(?P<g>",
        "|",
        "^",
        "$",
        "\\d",
        "\\x61",
        "\\p{L}",
        "\\pL",
        "\\Qa.b\\E",
        "(?#note)",
        "(?=a)",
    ]
)
_SUBJECTS = st.text(alphabet="abc. #\\1\n", max_size=40)


def _answer(match: Any) -> Any:
    if match is None:
        return None
    return match.group(0), match.start(), match.end(), match.groups()


def _engine(pattern: str, options: str) -> Any:
    flags = 0
    for letter in options:
        flags |= {"i": regex.IGNORECASE, "m": regex.MULTILINE, "x": regex.VERBOSE}[letter]
    return regex.compile(translate(pattern), flags)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_PIECES, max_size=12), st.sampled_from(["", "i", "m", "x"]), st.lists(_SUBJECTS, min_size=1, max_size=4)
)
def test_the_fast_paths_answer_as_the_engine(pieces: list[str], options: str, subjects: list[str]) -> None:
    pattern = "".join(pieces)
    try:
        expected_engine = _engine(pattern, options)
    except regex.error:
        assume(False)
        return
    try:
        ours = compile_regex(pattern, options)
    except CommandError as exc:  # the engine took it: so must we
        raise AssertionError(f"{pattern!r} was refused: {exc}") from None
    for subject in subjects:
        assert _answer(ours.search(subject)) == _answer(expected_engine.search(subject)), (pattern, subject)
        if subject:
            assert _answer(ours.search(subject, 1)) == _answer(expected_engine.search(subject, 1)), (pattern, subject)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=16), st.sampled_from(["", "i", "x"]), _SUBJECTS, st.integers(1, 4))
def test_cutting_literal_runs_changes_no_answer(pieces: list[str], options: str, subject: str, size: int) -> None:
    source = translate("".join(pieces))
    try:
        expected = _engine("".join(pieces), options)
    except regex.error:
        assume(False)
        return
    cut = regex_literals.chunked(source, regex_literals.scan(source, "x" in options), size)
    flags = regex.IGNORECASE if "i" in options else regex.VERBOSE if "x" in options else 0
    assert _answer(regex.compile(cut, flags).search(subject)) == _answer(expected.search(subject)), (source, cut)


def test_literal_and_prefix_detection_by_hand() -> None:
    """Hand-checked cases: what is a literal, and what prefix an anchored pattern has."""
    cases = {
        "abc": ("abc", True),
        "a\\.b": ("a.b", True),
        "ab*": ("", False),  # the b is quantified
        "a|b": ("", False),
        "^abc\\d": ("", False),
    }
    for pattern, (text, whole) in cases.items():
        found = regex_literals.scan(pattern, False)
        assert (found.text, found.whole) == (text, whole), pattern
    assert regex_literals.anchored_prefix("^ab\\.c+", regex_literals.scan("^ab\\.c+", False)) == "ab."
    assert regex_literals.anchored_prefix("^ab|c", regex_literals.scan("^ab|c", False)) == ""
    assert regex_literals.anchored_prefix("a^b", regex_literals.scan("a^b", False)) == ""
