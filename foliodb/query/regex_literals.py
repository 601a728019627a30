"""The literal runs of a regular expression (PCRE syntax, after
:func:`foliodb.query.pcre.translate`), found by one left-to-right scan.

A *literal atom* is one character that matches itself: any character but
``\\ ^ $ . | ? * + ( ) [ ] { }`` (and, in a verbose pattern, but whitespace and
``#``), or a backslash before a character that is not a letter or digit
(``\\.``). A *run* is a sequence of literal atoms none of which a quantifier
follows (in ``abc*`` the run is ``ab``). Outside runs the scan only needs to
know where syntax ends, not what it means: a character class ``[...]`` (with
PCRE's rules: ``]`` first is literal, ``\\]`` escaped, ``[:name:]`` inside),
a group's opening (``(?P<name>``, ``(?#...)``, ``(?(cond)``, ``(*VERB)``), an
escape with a braced or bracketed argument (``\\p{...}``, ``\\k<name>``), a
counted quantifier ``{n,m}``.

Invariant: whenever the scan is unsure (a ``[`` in a verbose comment, say),
it counts the characters as not literal, so an answer is at worst a run left
whole, never syntax cut in two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_META = frozenset("\\^$.|?*+()[]{}")
_QUANTIFIER = re.compile(r"\{\d*,?\d*\}")
_VERBOSE = re.compile(r"\(\?[a-zA-Z^-]*x")  # an inline x flag anywhere
# Group openings whose text up to a closing character is a name, a comment or a condition.
_GROUP_HEADS = (
    ("(?#", ")"),
    ("(?P<", ">"),
    ("(?P=", ")"),
    ("(?P>", ")"),
    ("(?&", ")"),
    ("(?(", ")"),
    ("(?'", "'"),
    ("(*", ")"),
)
# The rest of a group's opening: flags and ':' or ')', a lookaround, atomic, branch reset, recursion.
_GROUP_OPENING = re.compile(r"\(\?(?:[a-zA-Z^-]*[:)]|[=!>|]|<[=!]|[+-]?\d+\)|C\d*\))")
# What follows an escape letter as part of it: \xhh, \uhhhh, \Uhhhhhhhh, \pL, \cX, \g-1, \123.
_TAILS = {"x": r"[0-9a-fA-F]{0,2}", "u": r"[0-9a-fA-F]{0,4}", "U": r"[0-9a-fA-F]{0,8}", "p": ".", "P": ".", "c": "."}
_TAILS |= {"g": r"-?\d*"} | {digit: r"\d*" for digit in "0123456789"}
_ESCAPE_TAILS = {letter: re.compile(tail, re.DOTALL) for letter, tail in _TAILS.items()}


@dataclass
class Runs:
    """What the scan found: each run as (start, end) offsets per atom, and whether the
    pattern is one run and nothing else (then ``text`` is what it matches)."""

    runs: list[list[tuple[int, int]]]
    whole: bool
    text: str


def _unescape(atom: str) -> str:
    return atom[1] if atom.startswith("\\") else atom


def scan(pattern: str, verbose: bool) -> Runs:
    verbose = verbose or bool(_VERBOSE.search(pattern))
    runs: list[list[tuple[int, int]]] = []
    run: list[tuple[int, int]] = []
    other = False  # anything but literal atoms seen
    n = len(pattern)
    i = 0

    def end_run() -> None:
        nonlocal run
        if run:
            runs.append(run)
            run = []

    while i < n:
        c = pattern[i]
        if c in "*+?" or (c == "{" and _QUANTIFIER.match(pattern, i)):
            # A quantifier: the atom before it is not part of any run; a lazy or possessive mark goes with it.
            other = True
            if run:
                run.pop()
            end_run()
            quantifier = _QUANTIFIER.match(pattern, i)
            i = quantifier.end() if quantifier else i + 1
            if i < n and pattern[i] in "?+":
                i += 1
            continue
        literal_end = _literal_atom(pattern, i, verbose)
        if literal_end:
            run.append((i, literal_end))
            i = literal_end
            continue
        other = True
        end_run()
        i = _skip_syntax(pattern, i)
    end_run()
    whole = not other and len(runs) <= 1
    text = "".join(_unescape(pattern[a:b]) for a, b in runs[0]) if whole and runs else ""
    return Runs(runs, whole, text)


def _literal_atom(pattern: str, i: int, verbose: bool) -> int:
    """The end of the literal atom at ``i``; 0 when there is none."""
    c = pattern[i]
    if c == "\\":
        if i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            return i + 2
        return 0
    if c in _META or (verbose and (c.isspace() or c == "#")):
        return 0
    return i + 1


def _skip_syntax(pattern: str, i: int) -> int:
    """Past the piece of syntax (not a literal atom, not a quantifier) at ``i``."""
    n = len(pattern)
    c = pattern[i]
    if c == "[":
        return _skip_class(pattern, i)
    if c == "(":
        for head, closer in _GROUP_HEADS:
            if pattern.startswith(head, i):
                end = pattern.find(closer, i + len(head))
                return n if end < 0 else end + 1
        if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            end = pattern.find(">", i + 3)
            return n if end < 0 else end + 1
        opening = _GROUP_OPENING.match(pattern, i)
        if opening:
            return opening.end()
        return i + 2 if pattern.startswith("(?", i) else i + 1
    if c == "\\" and i + 1 < n:
        letter, j = pattern[i + 1], i + 2
        if j < n and pattern[j] in "{<'" and letter in "pPNxkgou":
            closer = {"{": "}", "<": ">", "'": "'"}[pattern[j]]
            end = pattern.find(closer, j + 1)
            return n if end < 0 else end + 1
        tail = _ESCAPE_TAILS.get(letter)
        match = tail.match(pattern, j) if tail is not None else None
        return match.end() if match else j
    return i + 1


def _skip_class(pattern: str, i: int) -> int:
    """Past the character class opening at ``i`` (PCRE's rules)."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1  # a ] first is a literal member
    while j < n:
        c = pattern[j]
        if c == "\\":
            j += 2
        elif c == "[" and j + 1 < n and pattern[j + 1] in ":.=":
            end = pattern.find(pattern[j + 1] + "]", j + 2)
            j = n if end < 0 else end + 2
        elif c == "]":
            return j + 1
        else:
            j += 1
    return n


def chunked(pattern: str, found: Runs, size: int) -> str:
    """``pattern`` with each run longer than ``size`` atoms cut into atomic groups of ``size``."""
    cuts: list[tuple[int, int]] = []
    for run in found.runs:
        if len(run) > size:
            cuts.extend((run[k][0], run[min(k + size, len(run)) - 1][1]) for k in range(0, len(run), size))
    if not cuts:
        return pattern
    out, last = [], 0
    for start, end in cuts:
        out.append(pattern[last:start])
        out.append(f"(?>{pattern[start:end]})")
        last = end
    out.append(pattern[last:])
    return "".join(out)


def anchored_prefix(pattern: str, found: Runs) -> str:
    """The literal text every match begins with, when the pattern starts with ``^`` (or
    ``\\A``) and a run, and has no ``|`` (which could leave the anchor to one branch)."""
    if "|" in pattern:
        return ""
    head = 1 if pattern.startswith("^") else 2 if pattern.startswith("\\A") else 0
    if not head or not found.runs or found.runs[0][0][0] != head:
        return ""
    return "".join(_unescape(pattern[a:b]) for a, b in found.runs[0])
