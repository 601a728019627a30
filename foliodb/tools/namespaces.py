"""mongorestore's namespace options: ``--nsInclude``, ``--nsExclude``,
``--nsFrom``/``--nsTo``, as mongo-tools' ``mongorestore/ns/ns.go`` defines them.

A pattern is a namespace ``db.collection`` where ``*`` matches any run of
characters (``\\*`` is a literal star, ``\\\\`` a backslash). In ``--nsFrom``
a ``$name$`` variable matches like ``*`` and ``--nsTo`` puts what it matched
back; without variables, the stars of ``--nsFrom`` and ``--nsTo`` pair up in
order. Matching is of the whole name; a later ``--nsFrom``/``--nsTo`` pair
wins over an earlier one.

Manual: https://www.mongodb.com/docs/database-tools/mongorestore/#std-option-mongorestore.--nsInclude
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WILDCARD = re.compile(r"^(|.*[^\\])\*(.*)$", re.DOTALL)
_VARIABLE = re.compile(r"^\$([^$]*)\$(.*)$", re.DOTALL)


def _unescape(text: str) -> str:
    # strings.NewReplacer(`\\`, `\`, `\*`, "*", `\`, ""): one left-to-right pass.
    return re.sub(r"\\(\\|\*)?", lambda m: m.group(1) or "", text)


def _stars_to_variables(text: str) -> str:
    count = 1
    while match := _WILDCARD.match(text):
        text = f"{match.group(1)}${count}${match.group(2)}"
        count += 1
    return _unescape(text)


def _compile(source: str, target: str) -> tuple[re.Pattern[str], str]:
    """A pattern and its replacement template (``\\g<n>`` groups)."""
    if "$" not in source:
        source, target = _stars_to_variables(source), _stars_to_variables(target)
    variables: dict[str, int] = {}
    pattern = ""
    while source:
        match = _VARIABLE.match(source)
        if match:
            if match.group(1) in variables:
                raise ValueError(f"variable name {match.group(1)!r} used more than once")
            variables[match.group(1)] = len(variables) + 1
            pattern += "(.*?)"
            source = match.group(2)
            continue
        if source[0] == "$":
            raise ValueError("extraneous '$'")
        pattern += re.escape(source[0])
        source = source[1:]
    template = ""
    while target:
        match = _VARIABLE.match(target)
        if match:
            if match.group(1) not in variables:
                raise ValueError(f"unknown variable {match.group(1)!r}")
            template += f"\\g<{variables[match.group(1)]}>"
            target = match.group(2)
            continue
        if target[0] == "$":
            raise ValueError("extraneous '$'")
        template += target[0].replace("\\", "\\\\")
        target = target[1:]
    return re.compile(f"^{pattern}$", re.DOTALL), template


class Matcher:
    """Does a namespace match any of the patterns (``--nsInclude``, ``--nsExclude``)?"""

    def __init__(self, patterns: Sequence[str]) -> None:
        for pattern in patterns:
            if "$" in pattern:
                raise ValueError(f"'$' is not allowed in include/exclude patterns: {pattern!r}")
        self.patterns = [_compile(p, p)[0] for p in patterns]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, namespace: str) -> bool:
        return any(p.match(namespace) for p in self.patterns)


class Renamer:
    """Where ``--nsFrom``/``--nsTo`` send a namespace (unchanged when no pair matches)."""

    def __init__(self, sources: Sequence[str], targets: Sequence[str]) -> None:
        if len(sources) != len(targets):
            raise ValueError("--nsFrom and --nsTo must come in pairs")
        self.rules: list[tuple[re.Pattern[str], str]] = []
        for source, target in reversed(list(zip(sources, targets, strict=True))):
            if "$" in source:
                if source.count("$") % 2 or target.count("$") % 2:
                    raise ValueError(f"odd number of dollar signs in --nsFrom {source!r} or --nsTo {target!r}")
            elif _stars(source) != _stars(target):
                raise ValueError(f"different number of asterisks in --nsFrom {source!r} and --nsTo {target!r}")
            self.rules.append(_compile(source, target))

    def rename(self, namespace: str) -> str:
        for pattern, template in self.rules:
            if pattern.match(namespace):
                return pattern.sub(template, namespace)
        return namespace


def _stars(text: str) -> int:
    return text.count("*") - text.count("\\*")


def split(namespace: str) -> tuple[str, str]:
    """``db.collection`` into its database and collection (a collection may hold dots)."""
    db, dot, collection = namespace.partition(".")
    if not dot or not db or not collection:
        raise ValueError(f"{namespace!r} is not a namespace (<database>.<collection>)")
    return db, collection
