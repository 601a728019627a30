"""BSON type numbers and aliases, as ``$type``, ``$jsonSchema`` and ``$convert``
name them, and the type of a decoded Python value.

pymongo decodes int32 to ``int``, int64 to ``bson.Int64`` and encodes an
``int`` outside the int32 range as int64, so a Python ``int`` is "int" when it
fits in 32 bits and "long" otherwise.
"""

from __future__ import annotations

import datetime
import re
import uuid
from typing import Any, TypeGuard

from bson import Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

TYPE_NUMBERS: dict[str, int] = {
    "double": 1,
    "string": 2,
    "object": 3,
    "array": 4,
    "binData": 5,
    "undefined": 6,
    "objectId": 7,
    "bool": 8,
    "date": 9,
    "null": 10,
    "regex": 11,
    "dbPointer": 12,
    "javascript": 13,
    "symbol": 14,
    "javascriptWithScope": 15,
    "int": 16,
    "timestamp": 17,
    "long": 18,
    "decimal": 19,
    "minKey": -1,
    "maxKey": 127,
}
TYPE_NAMES: dict[int, str] = {number: name for name, number in TYPE_NUMBERS.items()}

_BY_CLASS: dict[type, str] = {
    type(None): "null",
    bool: "bool",
    Int64: "long",
    float: "double",
    Decimal128: "decimal",
    str: "string",
    dict: "object",
    DBRef: "object",
    list: "array",
    tuple: "array",
    bytes: "binData",
    Binary: "binData",
    uuid.UUID: "binData",
    ObjectId: "objectId",
    datetime.datetime: "date",
    DatetimeMS: "date",
    Regex: "regex",
    re.Pattern: "regex",
    Timestamp: "timestamp",
    MinKey: "minKey",
    MaxKey: "maxKey",
}


def type_name(value: Any) -> str:
    """The BSON type alias of a decoded value ("int", "long", "string"...)."""
    cls = value.__class__
    if cls is int:
        return "int" if INT32_MIN <= value <= INT32_MAX else "long"
    name = _BY_CLASS.get(cls)
    if name is not None:
        return name
    if isinstance(value, Code):
        return "javascriptWithScope" if value.scope is not None else "javascript"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if INT32_MIN <= value <= INT32_MAX else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, datetime.datetime):
        return "date"
    if isinstance(value, (bytes, Binary)):
        return "binData"
    if hasattr(value, "keys"):
        return "object"
    for base in cls.__mro__[1:]:  # a subclass of another BSON class (an ODM's ObjectId)
        found = _BY_CLASS.get(base)
        if found is not None:
            return found
    raise TypeError(f"not a BSON value: {cls.__name__}")


NUMERIC_TYPES = frozenset({"int", "long", "double", "decimal"})


def is_string(value: Any) -> TypeGuard[str]:
    """A BSON string: ``bson.Code`` subclasses str but is JavaScript (and unhashable)."""
    return isinstance(value, str) and not isinstance(value, Code)
