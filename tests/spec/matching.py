"""The unified test format's "Evaluating Matches" rules, and the exact
comparison it asks for when checking a test's ``outcome``.

Spec: https://github.com/mongodb/specifications/blob/master/source/unified-test-format/unified-test-format.md#evaluating-matches

* An expected document whose first and only key starts with ``$$`` is a
  special operator (``$$exists``, ``$$type``, ``$$unsetOrMatches``,
  ``$$matchesEntity``, ``$$matchesHexBytes``, ``$$lte``, ``$$matchAsDocument``,
  ``$$matchAsRoot``, ``$$sessionLsid``: the lsid a session entity had when created).
* A root-level actual document may carry fields the expected one lacks; a
  nested one may not. Arrays must have the same length.
* Numbers compare by value across int32, int64 and double (not Decimal128,
  and never against booleans).

Type names are BSON's, as ``$type`` spells them; they are computed here from
the Python value, independently of FolioDB's own ``bsontypes``.
"""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Mapping
from typing import Any

from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class MatchError(AssertionError):
    pass


def type_name(value: Any) -> str:
    """The BSON type name of a decoded value (``$type``'s aliases)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if INT32_MIN <= value <= INT32_MAX else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal128):
        return "decimal"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (DBRef, Mapping)):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, (bytes, Binary, uuid.UUID)):
        return "binData"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, (datetime.datetime, DatetimeMS)):
        return "date"
    if isinstance(value, (Regex, re.Pattern)):
        return "regex"
    if isinstance(value, Code):
        return "javascript" if value.scope is None else "javascriptWithScope"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    raise TypeError(f"no BSON type for {type(value).__name__}")


_ALIASES = {"number": ("int", "long", "double", "decimal")}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_operator(expected: Any) -> bool:
    return isinstance(expected, Mapping) and len(expected) == 1 and next(iter(expected)).startswith("$$")


class Matcher:
    """Matches expected values against actual ones; ``entities`` resolves
    ``$$matchesEntity``, ``lsids`` (session entity -> its lsid) ``$$sessionLsid``."""

    def __init__(self, entities: Mapping[str, Any] | None = None, lsids: Mapping[str, Any] | None = None) -> None:
        self.entities = entities or {}
        self.lsids = lsids if lsids is not None else {}

    def match(self, expected: Any, actual: Any, root: bool = True, path: str = "") -> None:
        if isinstance(expected, Mapping):
            if _is_operator(expected):
                self._operator(expected, actual, root, path)
                return
            if not isinstance(actual, Mapping):
                raise MatchError(f"{path or '<root>'}: expected a document, got {actual!r}")
            for key, value in expected.items():
                sub = f"{path}.{key}" if path else key
                got = actual.get(key, MISSING)
                if _is_operator(value):
                    self._operator(value, got, False, sub)
                    continue
                if got is MISSING:
                    raise MatchError(f"{sub}: missing (expected {value!r})")
                self.match(value, got, False, sub)
            if not root:
                extra = [key for key in actual if key not in expected]
                if extra:
                    raise MatchError(f"{path}: unexpected fields {extra} in {actual!r}")
            return
        if isinstance(expected, list):
            if not isinstance(actual, (list, tuple)):
                raise MatchError(f"{path or '<root>'}: expected an array, got {actual!r}")
            if len(actual) != len(expected):
                raise MatchError(
                    f"{path or '<root>'}: expected {len(expected)} elements, got {len(actual)}: {actual!r}"
                )
            for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
                self.match(want, got, False, f"{path}.{i}" if path else str(i))
            return
        if not _scalar_equal(expected, actual):
            raise MatchError(f"{path or '<root>'}: expected {expected!r}, got {actual!r}")

    def match_root_list(self, expected: list[Any], actual: list[Any]) -> None:
        """An iterable result: the same length, each element matched as a
        root-level document."""
        if not isinstance(actual, list) or len(actual) != len(expected):
            raise MatchError(f"expected {len(expected)} documents, got {actual!r}")
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            self.match(want, got, True, str(i))

    def _operator(self, spec: Mapping[str, Any], actual: Any, root: bool, path: str) -> None:
        ((op, arg),) = spec.items()
        where = path or "<root>"
        if op == "$$exists":
            if bool(arg) != (actual is not MISSING):
                raise MatchError(f"{where}: expected {'presence' if arg else 'absence'}, got {actual!r}")
        elif op == "$$type":
            names = [arg] if isinstance(arg, str) else list(arg)
            wanted = {alias for name in names for alias in _ALIASES.get(name, (name,))}
            if actual is MISSING or type_name(actual) not in wanted:
                raise MatchError(f"{where}: expected type {names}, got {actual!r}")
        elif op == "$$unsetOrMatches":
            if actual is not MISSING:
                self.match(arg, actual, root, path)
        elif op == "$$matchesEntity":
            if arg not in self.entities:
                raise KeyError(f"$$matchesEntity: no entity {arg!r}")
            self.match(self.entities[arg], actual, root, path)
        elif op == "$$matchesHexBytes":
            if not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", arg):
                raise ValueError(f"$$matchesHexBytes: malformed {arg!r}")
            if actual is MISSING or bytes(actual) != bytes.fromhex(arg):
                raise MatchError(f"{where}: expected bytes {arg}, got {actual!r}")
        elif op == "$$lte":
            if not (_is_number(actual) and actual <= arg):
                raise MatchError(f"{where}: expected a number <= {arg!r}, got {actual!r}")
        elif op == "$$matchAsDocument":
            if not isinstance(actual, str):
                raise MatchError(f"{where}: expected an extended JSON string, got {actual!r}")
            self.match(arg, json_util.loads(actual), False, path)
        elif op == "$$matchAsRoot":
            self.match(arg, actual, True, path)
        elif op == "$$sessionLsid":
            if arg not in self.lsids:
                raise KeyError(f"$$sessionLsid: no session entity {arg!r}")
            if actual is MISSING:
                raise MatchError(f"{where}: expected the lsid of {arg}, got nothing")
            self.match(self.lsids[arg], actual, False, path)
        else:
            raise NotImplementedError(f"special operator {op} is not supported by this runner")


def _scalar_equal(expected: Any, actual: Any) -> bool:
    if _is_number(expected) and _is_number(actual):
        return expected == actual
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if type_name(expected) != type_name(actual):
        return False
    return bool(expected == actual)


def exactly_equal(expected: Any, actual: Any) -> bool:
    """Collection contents as ``outcome`` wants them: the same fields and
    values at every level (key order aside), numbers by value only within
    int32/int64 and only double with double."""
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and set(expected) == set(actual)
            and all(exactly_equal(expected[key], actual[key]) for key in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(exactly_equal(a, b) for a, b in zip(expected, actual, strict=True))
        )
    kinds = {type_name(expected), type_name(actual)}
    if kinds <= {"int", "long"}:
        return bool(expected == actual)
    if len(kinds) != 1:
        return False
    if isinstance(expected, float) and expected != expected:
        return actual != actual
    return bool(expected == actual)
