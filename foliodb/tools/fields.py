"""Field lists and typed columns, as mongoimport and mongoexport read them.

- ``--fields a,b.c`` splits on commas outside parentheses (so a typed column
  ``when.date(2006-01-02, 15:04)`` stays whole); ``--fieldFile`` holds one
  field a line. A dotted field ``b.c`` is the field ``c`` of the embedded
  document ``b``.
- ``--columnsHaveTypes`` columns are ``<name>.<type>(<arg>)``, with
  mongoimport's types (``mongoimport/typed_fields.go``): ``auto``,
  ``binary(base64|base32|hex)``, ``boolean``, ``date(<Go layout>)``,
  ``date_go(<Go layout>)``, ``date_ms(<.NET layout>)``,
  ``date_oracle(<Oracle layout>)``, ``decimal``, ``double``, ``int32``,
  ``int64``, ``string``. In an argument ``\\(``, ``\\)`` and ``\\\\`` are
  literal. Untyped columns are ``auto``: an integer (int32 when it fits, else
  int64), else a double, else the string.
- A date layout is Go's reference time ``Mon Jan 2 15:04:05 -0700 MST 2006``;
  the .NET and Oracle layouts are first rewritten to it by mongo-tools'
  tables (``mongoimport/dateconv``). Dates without a zone are UTC.

Manual: https://www.mongodb.com/docs/database-tools/mongoimport/#std-option-mongoimport.--columnsHaveTypes
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bson import Decimal128, Int64
from bson.binary import Binary

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_TYPED = re.compile(r"^(.*)\.(\w+)\((.*)\)$", re.DOTALL)
_ARG_ESCAPES = re.compile(r"\\(\\|\(|\))?")
_INTEGER = re.compile(r"[+-]?[0-9]+")


class CoercionError(ValueError):
    """A value that does not parse as its column's type."""


def split_fields(text: str) -> list[str]:
    """``--fields``: commas split, except inside parentheses."""
    fields, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")" and depth > 0:
            depth -= 1
        if char == "," and depth == 0:
            fields.append(current)
            current = ""
        else:
            current += char
    fields.append(current)
    return fields


def read_field_file(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [line.rstrip("\r\n") for line in fh]


def check_fields(fields: list[str]) -> None:
    """mongoimport's validateFields: no empty parts, no ``$`` start, no field both a value and a document."""
    seen: set[str] = set()
    for name in fields:
        if name.startswith(".") or name.endswith("."):
            raise ValueError(f"field {name!r} cannot start or end with a '.'")
        if name.startswith("$"):
            raise ValueError(f"field {name!r} cannot start with a '$'")
        if ".." in name:
            raise ValueError(f"field {name!r} cannot contain consecutive '.' characters")
        if name in seen:
            raise ValueError(f"fields cannot be identical: {name!r} and {name!r}")
        seen.add(name)
    for name in fields:
        parts = name.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in seen:
                raise ValueError(f"fields {prefix!r} and {name!r} are incompatible")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    parse: Callable[[str], Any]

    @property
    def parts(self) -> list[str]:
        return self.name.split(".")


def auto(text: str) -> Any:
    """mongoimport's autoParse: an integer, else a double, else the text."""
    if _INTEGER.fullmatch(text):
        value = int(text)
        if INT32_MIN <= value <= INT32_MAX:
            return value
        if -(2**63) <= value < 2**63:
            return Int64(value)
    try:
        return _go_float(text)
    except CoercionError:
        return text


def _go_float(text: str) -> float:
    """Go's strconv.ParseFloat: Python's float() without its whitespace and underscores."""
    if "_" not in text and text.strip() == text:
        try:
            return float(text)
        except ValueError:
            pass
    raise CoercionError(f"not a double: {text!r}")


def untyped_columns(fields: list[str]) -> list[Column]:
    return [Column(name, "auto", auto) for name in fields]


def typed_columns(fields: list[str]) -> list[Column]:
    columns = []
    for header in fields:
        match = _TYPED.match(header)
        if match is None:
            raise ValueError(f"could not parse type from header {header!r}")
        name, type_name, arg = (
            match.group(1),
            match.group(2),
            _ARG_ESCAPES.sub(lambda m: m.group(1) or "", match.group(3)),
        )
        columns.append(Column(name, type_name, _parser(type_name, arg, header)))
    return columns


def _parser(type_name: str, arg: str, header: str) -> Callable[[str], Any]:
    if type_name in ("date", "date_go", "date_ms", "date_oracle"):
        layout = {"date_ms": from_dotnet, "date_oracle": from_oracle}.get(type_name, lambda s: s)(arg)
        return _date_parser(layout)
    if type_name == "binary":
        decoders: dict[str, Callable[[str], bytes]] = {
            "base64": base64.b64decode,
            "base32": base64.b32decode,
            "hex": binascii.unhexlify,
        }
        if arg not in decoders:
            raise ValueError(f"invalid binary encoding: {arg!r}")
        decode = decoders[arg]
        return lambda text: Binary(_strict(decode, text))
    simple: dict[str, Callable[[str], Any]] = {
        "auto": auto,
        "boolean": _boolean,
        "decimal": _decimal,
        "double": _double,
        "int32": _int32,
        "int64": _int64,
        "string": str,
    }
    if type_name not in simple:
        raise ValueError(f"invalid type {type_name!r} in header {header!r}")
    if arg:
        raise ValueError(f"type {type_name} does not support arguments")
    return simple[type_name]


def _strict(decode: Callable[[str], bytes], text: str) -> bytes:
    try:
        return decode(text)
    except (ValueError, binascii.Error) as exc:
        raise CoercionError(str(exc)) from None


def _boolean(text: str) -> bool:
    if text.lower() == "true" or text == "1":
        return True
    if text.lower() == "false" or text == "0":
        return False
    raise CoercionError(f"failed to parse boolean: {text}")


def _int32(text: str) -> int:
    if not _INTEGER.fullmatch(text) or not INT32_MIN <= int(text) <= INT32_MAX:
        raise CoercionError(f"not an int32: {text!r}")
    return int(text)


def _int64(text: str) -> Int64:
    if not _INTEGER.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        raise CoercionError(f"not an int64: {text!r}")
    return Int64(int(text))


def _double(text: str) -> float:
    return _go_float(text)


def _decimal(text: str) -> Decimal128:
    try:
        return Decimal128(text)
    except Exception:  # bson raises decimal's InvalidOperation or ValueError
        raise CoercionError(f"not a decimal: {text!r}") from None


# -- dates -----------------------------------------------------------------------------

# mongo-tools' dateconv tables: each is a strings.Replacer, so at every position the
# first listed token that matches wins.
_DOTNET = [
    ("dddd", "Monday"), ("ddd", "Mon"), ("dd", "02"), ("d", "2"), ("MMMM", "January"), ("MMM", "Jan"),
    ("MM", "01"), ("M", "1"), ("hh", "03"), ("h", "3"), ("HH", "15"), ("H", "15"), ("mm", "04"), ("m", "4"),
    ("ss", "05"), ("s", "5"), ("tt", "PM"), ("yyyy", "2006"), ("yyy", "2006"), ("yy", "06"), ("zzz", "-07:00"),
    ("zz", "-07"),
]  # fmt: skip
_ORACLE = [
    ("AM", "PM"), ("DAY", "Monday"), ("DY", "Mon"), ("DD", "02"), ("HH12", "03"), ("HH24", "15"), ("HH", "03"),
    ("MI", "04"), ("MONTH", "January"), ("MON", "Jan"), ("MM", "01"), ("SS", "05"), ("TZD", "MST"),
    ("TZH:TZM", "-07:00"), ("TZH", "-07"), ("YYYY", "2006"), ("YY", "06"),
]  # fmt: skip

# Go layout tokens, longest first where one is a prefix of another, to strptime.
_GO = [
    ("January", "%B"), ("Jan", "%b"), ("Monday", "%A"), ("Mon", "%a"), ("MST", "%Z"), ("2006", "%Y"),
    ("Z07:00", "%z"), ("Z0700", "%z"), ("-07:00", "%z"), ("-0700", "%z"), ("-07", "%z"), ("01", "%m"),
    ("02", "%d"), ("03", "%I"), ("04", "%M"), ("05", "%S"), ("06", "%y"), ("15", "%H"), ("_2", "%d"),
    ("1", "%m"), ("2", "%d"), ("3", "%I"), ("4", "%M"), ("5", "%S"), ("PM", "%p"), ("pm", "%p"),
]  # fmt: skip
_FRACTION = re.compile(r"[.,](0+|9+)")


def _replace(layout: str, table: list[tuple[str, str]]) -> str:
    out, i = "", 0
    while i < len(layout):
        for old, new in table:
            if layout.startswith(old, i):
                out += new
                i += len(old)
                break
        else:
            out += layout[i]
            i += 1
    return out


def from_dotnet(layout: str) -> str:
    return _replace(layout, _DOTNET)


def from_oracle(layout: str) -> str:
    return _replace(layout.upper(), _ORACLE)


def go_layout_to_strptime(layout: str) -> str:
    out, i = "", 0
    while i < len(layout):
        fraction = _FRACTION.match(layout, i)
        if fraction and not layout[fraction.end() : fraction.end() + 1].isdigit():
            out += layout[i] + "%f"  # Go's .000 / .999: fractional seconds
            i = fraction.end()
            continue
        for token, directive in _GO:
            if layout.startswith(token, i):
                out += directive
                i += len(token)
                break
        else:
            out += "%%" if layout[i] == "%" else layout[i]
            i += 1
    return out


def _date_parser(layout: str) -> Callable[[str], datetime.datetime]:
    pattern = go_layout_to_strptime(layout)
    zone = "%z" in pattern or "%Z" in pattern

    def parse(text: str) -> datetime.datetime:
        try:
            value = datetime.datetime.strptime(text, pattern)
        except ValueError as exc:
            raise CoercionError(str(exc)) from None
        if zone and value.tzinfo is not None:
            value = value.astimezone(datetime.UTC).replace(tzinfo=None)
        return value.replace(microsecond=value.microsecond // 1000 * 1000)

    return parse


# -- documents ------------------------------------------------------------------------------


def set_path(document: dict[str, Any], parts: list[str], value: Any) -> None:
    """Put ``value`` at a dotted path, making the embedded documents on the way."""
    for part in parts[:-1]:
        child = document.get(part)
        if not isinstance(child, dict):
            child = document[part] = {}
        document = child
    document[parts[-1]] = value


MISSING = object()


def get_path(document: Any, name: str) -> Any:
    """The value at a dotted path (array elements by index), or :data:`MISSING`."""
    value = document
    for part in name.split("."):
        if isinstance(value, dict):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value
