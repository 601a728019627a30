"""String expressions: $concat $strcasecmp $toLower $toUpper $substr
$substrBytes $substrCP $strLenBytes $strLenCP $indexOfBytes $indexOfCP
$trim $ltrim $rtrim $split $replaceOne $replaceAll.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#string-expression-operators

"Bytes" operators count UTF-8 bytes and refuse to cut a character; "CP"
operators count code points. Case mapping and $strcasecmp touch ASCII
letters only, as MongoDB's do. $toLower, $toUpper, $strcasecmp and the
$substr family first turn numbers, dates and timestamps into strings
(:func:`coerce_to_string`), null and missing into "".
Regular expressions ($regexFind...) are in :mod:`foliodb.query.expr.regex`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from bson import Code, Timestamp

from foliodb.errors import location
from foliodb.query.expr.array import position_argument
from foliodb.query.expr.core import (
    EXPR_OPS,
    Expr,
    Scope,
    compile_expression,
    is_string,
    nullish,
    operands,
    show,
    type_of,
)
from foliodb.query.expr.date_format import ISO_FORMAT_Z, format_date
from foliodb.query.expr.numeric import integral, is_number, kind, show_double, to_long
from foliodb.query.expr.timezones import UTC, date_ms, is_date

_ASCII_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_WHITESPACE = frozenset(
    "\x00 \t\n\x0b\x0c\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
)


def coerce_to_string(value: Any) -> str:
    """``Value::coerceToString``."""
    if is_string(value):
        return value
    if nullish(value):
        return ""
    if isinstance(value, Code) and value.scope is None:
        return str(value)
    k = kind(value)
    if k is not None:
        return show_double(value) if isinstance(value, float) else str(value)
    if is_date(value):
        return format_date(date_ms(value), ISO_FORMAT_Z, UTC, context="failed while coercing date to string")
    if isinstance(value, Timestamp):  # C's ctime() without the weekday and year
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=value.time)
        return f"{moment:%b} {moment.day:2d} {moment:%H:%M:%S}:{value.inc}"
    raise location(16007, f"can't convert from BSON type {type_of(value)} to String")


@EXPR_OPS.register("$concat")
def expr_concat(arg: Any, scope: Scope) -> Expr:
    items = operands(arg, "$concat", 0, None, scope)

    def concat(doc: Any, vars: dict[str, Any]) -> Any:
        parts = []
        for item in items:
            v = item(doc, vars)
            if nullish(v):
                return None
            if not is_string(v):
                raise location(16702, f"$concat only supports strings, not {type_of(v)}")
            parts.append(v)
        return "".join(parts)

    return concat


@EXPR_OPS.register("$strcasecmp")
def expr_strcasecmp(arg: Any, scope: Scope) -> Expr:
    left, right = operands(arg, "$strcasecmp", 2, 2, scope)

    def strcasecmp(doc: Any, vars: dict[str, Any]) -> Any:
        a = coerce_to_string(left(doc, vars)).translate(_ASCII_UPPER).encode()
        b = coerce_to_string(right(doc, vars)).translate(_ASCII_UPPER).encode()
        return (a > b) - (a < b)

    return strcasecmp


def _case(name: str, table: dict[int, int]) -> None:
    def compile_case(arg: Any, scope: Scope) -> Expr:
        (operand,) = operands(arg, name, 1, 1, scope)
        return lambda doc, vars: coerce_to_string(operand(doc, vars)).translate(table)

    compile_case.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_case)


_case("$toLower", _ASCII_LOWER)
_case("$toUpper", _ASCII_UPPER)


def _continuation(b: bytes, i: int) -> bool:
    return i < len(b) and b[i] & 0xC0 == 0x80


@EXPR_OPS.register("$substrBytes", "$substr")
def expr_substrBytes(arg: Any, scope: Scope) -> Expr:
    text, start, length = operands(arg, "$substrBytes", 3, 3, scope)
    name = "$substrBytes"

    def substr_bytes(doc: Any, vars: dict[str, Any]) -> Any:
        data = coerce_to_string(text(doc, vars)).encode()
        lower_value, length_value = start(doc, vars), length(doc, vars)
        if not is_number(lower_value):
            raise location(
                16034, f"{name}:  starting index must be a numeric type (is BSON type {type_of(lower_value)})"
            )
        if not is_number(length_value):
            raise location(16035, f"{name}:  length must be a numeric type (is BSON type {type_of(length_value)})")
        lower = to_long(lower_value)
        if lower < 0:
            raise location(50752, f"{name}:  starting index must be non-negative (got: {lower})")
        count = to_long(length_value)
        count = len(data) if count < 0 else count
        if _continuation(data, lower):
            raise location(28656, f"{name}:  Invalid range, starting index is a UTF-8 continuation byte.")
        if _continuation(data, lower + count):
            raise location(28657, f"{name}:  Invalid range, ending index is in the middle of a UTF-8 character.")
        return data[lower : lower + count].decode()

    return substr_bytes


@EXPR_OPS.register("$substrCP")
def expr_substrCP(arg: Any, scope: Scope) -> Expr:
    text, start, length = operands(arg, "$substrCP", 3, 3, scope)

    def substr_cp(doc: Any, vars: dict[str, Any]) -> Any:
        s = coerce_to_string(text(doc, vars))
        lower, count = start(doc, vars), length(doc, vars)
        if not is_number(lower):
            raise location(34450, f"$substrCP: starting index must be a numeric type (is BSON type {type_of(lower)})")
        if not integral(lower):
            raise location(
                34451, f"$substrCP: starting index cannot be represented as a 32-bit integral value: {show(lower)}"
            )
        if not is_number(count):
            raise location(34452, f"$substrCP: length must be a numeric type (is BSON type {type_of(count)})")
        if not integral(count):
            raise location(34453, f"$substrCP: length cannot be represented as a 32-bit integral value: {show(count)}")
        i, n = to_long(lower), to_long(count)
        if n < 0:
            raise location(34454, "$substrCP: length must be a nonnegative integer.")
        if i < 0:
            raise location(34455, "$substrCP: the starting index must be nonnegative integer.")
        return s[i : i + n]

    return substr_cp


def _str_len(name: str, code: int, length: Callable[[str], int]) -> None:
    def compile_str_len(arg: Any, scope: Scope) -> Expr:
        (operand,) = operands(arg, name, 1, 1, scope)

        def str_len(doc: Any, vars: dict[str, Any]) -> Any:
            v = operand(doc, vars)
            if not is_string(v):
                raise location(code, f"{name} requires a string argument, found: {type_of(v)}")
            return length(v)

        return str_len

    compile_str_len.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_str_len)


_str_len("$strLenBytes", 34473, lambda s: len(s.encode()))
_str_len("$strLenCP", 34471, len)


def _index_of(name: str, codes: tuple[int, int], by_bytes: bool) -> None:
    def compile_index_of(arg: Any, scope: Scope) -> Expr:
        items = operands(arg, name, 2, 4, scope)

        def index_of(doc: Any, vars: dict[str, Any]) -> Any:
            text = items[0](doc, vars)
            if nullish(text):
                return None
            if not is_string(text):
                raise location(codes[0], f"{name} requires a string as the first argument, found: {type_of(text)}")
            token = items[1](doc, vars)
            if not is_string(token):
                raise location(codes[1], f"{name} requires a string as the second argument, found: {type_of(token)}")
            start, end = 0, len(text.encode()) if by_bytes else len(text)
            if len(items) > 2:
                start = position_argument(name, items[2](doc, vars), "starting index")
            if len(items) > 3:
                end = min(end, position_argument(name, items[3](doc, vars), "ending index"))
            if end < start:
                return -1
            if by_bytes:  # the token must lie wholly before the end index
                return text.encode().find(token.encode(), start, end)
            if start == 0 and not text and not token:
                return 0
            # A match may start before the end index and run past it.
            return next((i for i in range(start, end) if text.startswith(token, i)), -1)

        return index_of

    compile_index_of.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_index_of)


_index_of("$indexOfBytes", (40091, 40092), by_bytes=True)
_index_of("$indexOfCP", (40093, 40094), by_bytes=False)


def _trim(name: str, left: bool, right: bool) -> None:
    def compile_trim(arg: Any, scope: Scope) -> Expr:
        if not isinstance(arg, Mapping):
            raise location(50696, f"{name} only supports an object as an argument, found {type_of(arg)}")
        for key in arg:
            if key not in ("input", "chars"):
                raise location(50694, f"{name} found an unknown argument: {key}")
        if "input" not in arg:
            raise location(50695, f"{name} requires an 'input' field")
        source = compile_expression(arg["input"], scope)
        chars = compile_expression(arg["chars"], scope) if "chars" in arg else None

        def trim(doc: Any, vars: dict[str, Any]) -> Any:
            text = source(doc, vars)
            if nullish(text):
                return None
            if not is_string(text):
                raise location(
                    50699,
                    f"{name} requires its input to be a string, got {show(text)} (of type {type_of(text)}) instead.",
                )
            strip: frozenset[str] = _WHITESPACE
            if chars is not None:
                c = chars(doc, vars)
                if nullish(c):
                    return None
                if not is_string(c):
                    raise location(
                        50700, f"{name} requires 'chars' to be a string, got {show(c)} (of type {type_of(c)}) instead."
                    )
                strip = frozenset(c)
            begin, end = 0, len(text)
            while left and begin < end and text[begin] in strip:
                begin += 1
            while right and end > begin and text[end - 1] in strip:
                end -= 1
            return text[begin:end]

        return trim

    compile_trim.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_trim)


_trim("$trim", True, True)
_trim("$ltrim", True, False)
_trim("$rtrim", False, True)


@EXPR_OPS.register("$split")
def expr_split(arg: Any, scope: Scope) -> Expr:
    text, separator = operands(arg, "$split", 2, 2, scope)

    def split(doc: Any, vars: dict[str, Any]) -> Any:
        s, sep = text(doc, vars), separator(doc, vars)
        if nullish(s) or nullish(sep):
            return None
        if not is_string(s):
            raise location(
                40085,
                f"$split requires an expression that evaluates to a string as a first argument, found: {type_of(s)}",
            )
        if not is_string(sep):
            raise location(
                40086,
                f"$split requires an expression that evaluates to a string as a second argument, found: {type_of(sep)}",
            )
        if not sep:
            raise location(40087, "$split requires a non-empty separator")
        return s.split(sep)

    return split


def _replace(name: str, replace_all: bool) -> None:
    def compile_replace(arg: Any, scope: Scope) -> Expr:
        if not isinstance(arg, Mapping):
            raise location(51751, f"{name} requires an object as an argument, found: {type_of(arg)}")
        parts: dict[str, Expr] = {}
        for key, value in arg.items():
            if key not in ("input", "find", "replacement"):
                raise location(51750, f"{name} found an unknown argument: {key}")
            parts[key] = compile_expression(value, scope)
        for code, key in ((51749, "input"), (51748, "find"), (51747, "replacement")):
            if key not in parts:
                raise location(code, f"{name} requires '{key}' to be specified")
        fields = [(key, parts[key], code) for key, code in (("input", 51746), ("find", 51745), ("replacement", 51744))]

        def replace(doc: Any, vars: dict[str, Any]) -> Any:
            values = []
            for key, fn, code in fields:
                v = fn(doc, vars)
                if not (is_string(v) or nullish(v)):
                    raise location(code, f"{name} requires that '{key}' be a string, found: {show(v)}")
                values.append(v)
            if any(nullish(v) for v in values):
                return None
            text, find, replacement = values
            # An empty 'find' matches before every character and at the end.
            return text.replace(find, replacement, -1 if replace_all else 1)

        return replace

    compile_replace.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_replace)


_replace("$replaceOne", False)
_replace("$replaceAll", True)
