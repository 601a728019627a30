"""BSON values to and from the tagged JSON of :mod:`foliodb.javascript.shell`.

``to_json(value)`` returns the JSON text and whether it holds any tag (the
JavaScript side skips its reviver when none does); ``from_json(text)``
rebuilds BSON values from what the JavaScript side's ``__dump`` wrote.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS

from foliodb.errors import CommandError, ErrorCode

_EPOCH = datetime.datetime(1970, 1, 1)
_TAG = "\x00"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Encoder:
    """One conversion; ``tagged`` records whether a tag was written."""

    __slots__ = ("tagged",)

    def __init__(self) -> None:
        self.tagged = False

    def plain(self, v: Any) -> Any:
        cls = v.__class__
        if cls is str or cls is bool or v is None or cls is int:
            return v
        if cls is float:
            if math.isfinite(v):
                return v
            return self.tag("f", "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
        if cls is dict or isinstance(v, Mapping):
            return {k: self.plain(x) for k, x in v.items()}
        if cls is list or cls is tuple:
            return [self.plain(x) for x in v]
        convert = _CONVERT.get(cls)
        if convert is not None:
            self.tagged = True
            return convert(v)
        if isinstance(v, DBRef):
            return self.plain(v.as_doc())
        if isinstance(v, re.Pattern):
            self.tagged = True
            return _regex(Regex.from_native(v))
        if isinstance(v, int):  # an int subclass other than Int64 (a bool was caught above)
            return int(v)
        raise CommandError(ErrorCode.JSInterpreterFailure, f"cannot pass a {cls.__name__} value to JavaScript")

    def tag(self, kind: str, value: Any) -> dict[str, Any]:
        self.tagged = True
        return {_TAG: kind, "v": value}


def _date(v: datetime.datetime) -> dict[str, Any]:
    if v.tzinfo is not None:
        v = v.astimezone(datetime.UTC).replace(tzinfo=None)
    delta = v - _EPOCH
    return {_TAG: "D", "v": (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000}


def _binary(v: bytes) -> dict[str, Any]:
    subtype = v.subtype if isinstance(v, Binary) else 0
    return {_TAG: "b", "v": base64.b64encode(bytes(v)).decode(), "s": subtype}


_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.LOCALE, "l"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))


def _regex(v: Regex[Any]) -> dict[str, Any]:
    flags = v.flags if isinstance(v.flags, str) else "".join(ch for bit, ch in _FLAG_LETTERS if v.flags & bit)
    return {_TAG: "r", "v": v.pattern, "f": flags}


_CONVERT: dict[type, Callable[[Any], dict[str, Any]]] = {
    Int64: lambda v: {_TAG: "l", "v": str(int(v))},
    datetime.datetime: _date,
    DatetimeMS: lambda v: {_TAG: "D", "v": int(v)},
    ObjectId: lambda v: {_TAG: "o", "v": str(v)},
    Decimal128: lambda v: {_TAG: "m", "v": str(v)},
    bytes: _binary,
    Binary: _binary,
    uuid.UUID: lambda v: _binary(Binary.from_uuid(v)),
    Regex: _regex,
    Timestamp: lambda v: {_TAG: "t", "v": v.time, "i": v.inc},
    MinKey: lambda v: {_TAG: "n"},
    MaxKey: lambda v: {_TAG: "x"},
    Code: lambda v: {_TAG: "c", "v": str(v)},
}


# Made once: json.dumps and json.loads with options build a new coder on every call.
_DUMPS = json.JSONEncoder(check_circular=False, allow_nan=False).encode


def to_json(value: Any) -> tuple[str, bool]:
    encoder = _Encoder()
    plain = encoder.plain(value)
    return _DUMPS(plain), encoder.tagged


def _ms_date(ms: float) -> datetime.datetime | DatetimeMS:
    if ms != ms:  # an invalid Date: mongod stores it as the smallest date
        return DatetimeMS(_INT64_MIN)
    try:
        return _EPOCH + datetime.timedelta(milliseconds=int(ms))
    except OverflowError:  # beyond what Python's datetime holds
        return DatetimeMS(int(ms))


def _long(text: str) -> Int64:
    n = int(text)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise CommandError(ErrorCode.JSInterpreterFailure, f"NumberLong {text} is out of range")
    return Int64(n)


def _regex_back(pattern: str, flags: str) -> Regex[Any]:
    return Regex(pattern, "".join(ch for ch in flags if ch in "imsux"))


_REBUILD: dict[str, Callable[[dict[str, Any]], Any]] = {
    "D": lambda d: _ms_date(d["v"]),
    "l": lambda d: _long(d["v"]),
    "i": lambda d: int(d["v"]),
    "f": lambda d: float(d["v"]),
    "o": lambda d: ObjectId(d["v"]),
    "m": lambda d: Decimal128(d["v"]),
    "b": lambda d: Binary(base64.b64decode(d["v"]), int(d["s"])) if int(d["s"]) else base64.b64decode(d["v"]),
    "r": lambda d: _regex_back(d["v"], d["f"]),
    "t": lambda d: Timestamp(int(d["v"]), int(d["i"])),
    "n": lambda d: MinKey(),
    "x": lambda d: MaxKey(),
    "c": lambda d: Code(d["v"]),
}


def _untag(d: dict[str, Any]) -> Any:
    kind = d.get(_TAG)
    return d if kind is None else _REBUILD[kind](d)


# Every plain JavaScript number is a double in BSON, integral or not.
_LOADS = json.JSONDecoder(parse_int=float, object_hook=_untag).decode


def from_json(text: str) -> Any:
    return _LOADS(text)
