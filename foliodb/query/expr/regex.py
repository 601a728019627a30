"""Regular-expression expressions: $regexFind $regexFindAll $regexMatch.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/regexFind/
(and regexFindAll/, regexMatch/)

``regex`` is a string or a BSON regex; ``options`` letters are i, m, s, x
(u is accepted and changes nothing: strings are Unicode already). Patterns
compile with :func:`foliodb.query.pcre.compile_regex` (bounded in time); a
constant pattern compiles, and fails, at compile time. A match reports its
text, its code-point index and its groups (null for a group that did not
take part). $regexFindAll reports non-overlapping matches left to right and,
after an empty match, moves on one character; a null or missing input or
regex finds nothing (null, [] or false).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import CommandError, location
from foliodb.query.compare import regex_parts
from foliodb.query.expr.core import (
    EXPR_OPS,
    NOT_CONSTANT,
    Expr,
    Scope,
    compile_expression,
    constant_of,
    is_string,
    nullish,
    type_of,
)
from foliodb.query.pcre import Pattern, compile_regex

_OPTION_LETTERS = frozenset("imsxu")


def _is_regex(value: Any) -> bool:
    return type_of(value) == "regex"


def pattern_of(name: str, regex: Any, options: Any) -> Pattern | None:
    """The compiled pattern of a regex and options argument; None when the
    regex is null or missing."""
    if not (nullish(regex) or is_string(regex) or _is_regex(regex)):
        raise location(51105, f"{name} needs 'regex' to be of type string or regex")
    if not (nullish(options) or is_string(options)):
        raise location(51106, f"{name} needs 'options' to be of type string")
    pattern, flags = None, ""
    if _is_regex(regex):
        pattern, flags = regex_parts(regex)
        if flags and not nullish(options):
            raise location(51107, f"{name}: found regex option(s) specified in both 'regex' and 'option' fields")
    elif is_string(regex):
        pattern = regex
    if not nullish(options):
        flags = options
    if pattern is not None and "\x00" in pattern:
        raise location(51109, f"{name}: regular expression cannot contain an embedded null byte")
    if "\x00" in flags:
        raise location(51110, f"{name}: regular expression options cannot contain an embedded null byte")
    for letter in flags:
        if letter not in _OPTION_LETTERS:
            raise location(51108, f"{name} invalid flag in regex options: {letter}")
    if pattern is None:
        return None
    try:
        return compile_regex(pattern, flags)
    except CommandError as exc:
        raise location(51111, f"Invalid Regex in {name}: {exc.errmsg}") from None


def _match_document(m: Any) -> dict[str, Any]:
    return {"match": m.group(0), "idx": m.start(), "captures": list(m.groups())}


def find_all(regex: Pattern, text: str) -> list[dict[str, Any]]:
    out = []
    pos = 0
    while True:
        m = regex.search(text, pos)
        if m is None:
            break
        out.append(_match_document(m))
        pos = m.end() if m.end() > m.start() else m.start() + 1
        if pos >= len(text):
            break
    return out


def _regex_operator(name: str, run: Any, empty: Any) -> None:
    """Register an operator answering ``run(regex, text)``, or ``empty()``
    when the input or the regex is null."""

    def compile_regex_operator(arg: Any, scope: Scope) -> Expr:
        if not isinstance(arg, Mapping):
            raise location(51103, f"{name} expects an object of named arguments but found: {type_of(arg)}")
        for key in arg:
            if key not in ("input", "regex", "options"):
                raise location(31024, f"{name} found an unknown argument: {key}")
        if "input" not in arg:
            raise location(31022, f"{name} requires 'input' parameter")
        if "regex" not in arg:
            raise location(31023, f"{name} requires 'regex' parameter")
        source = compile_expression(arg["input"], scope)
        regex_spec, options_spec = arg["regex"], arg.get("options")
        constant_regex, constant_options = constant_of(regex_spec), constant_of(options_spec)
        if constant_regex is not NOT_CONSTANT and constant_options is not NOT_CONSTANT:
            compiled = pattern_of(name, constant_regex, constant_options)

            def pattern(doc: Any, vars: dict[str, Any]) -> Pattern | None:
                return compiled
        else:
            regex_expr = compile_expression(regex_spec, scope)
            options_expr = compile_expression(options_spec, scope)

            def pattern(doc: Any, vars: dict[str, Any]) -> Pattern | None:
                return pattern_of(name, regex_expr(doc, vars), options_expr(doc, vars))

        def regex_operator(doc: Any, vars: dict[str, Any]) -> Any:
            text = source(doc, vars)
            regex = pattern(doc, vars)
            if not (nullish(text) or is_string(text)):
                raise location(51104, f"{name} needs 'input' to be of type string")
            if regex is None or nullish(text):
                return empty()
            return run(regex, text)

        return regex_operator

    compile_regex_operator.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_regex_operator)


def _find(regex: Pattern, text: str) -> Any:
    m = regex.search(text)
    return None if m is None else _match_document(m)


_regex_operator("$regexFind", _find, lambda: None)
_regex_operator("$regexFindAll", find_all, list)
_regex_operator("$regexMatch", lambda regex, text: regex.search(text) is not None, lambda: False)
