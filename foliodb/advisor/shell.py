"""Values written as mongosh reads them, for the commands a finding proposes:
``db.orders.createIndex({ user_id: 1 })``, ``ObjectId("...")``, ``ISODate("...")``."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from bson.regex import Regex

_BARE_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def shell(value: Any) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(str(k))}: {shell(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shell(v) for v in value) + "]"
    if isinstance(value, ObjectId):
        return f'ObjectId("{value}")'
    if isinstance(value, datetime.datetime):
        return f'ISODate("{value.isoformat(timespec="milliseconds")}Z")'
    if isinstance(value, Regex):
        return f"/{value.pattern}/"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def call(collection: str, method: str, *args: Any) -> str:
    """``db.<collection>.<method>(<args>)``, each argument in shell syntax."""
    target = f"db.{collection}" if _BARE_KEY.match(collection) else f"db.getCollection({json.dumps(collection)})"
    return f"{target}.{method}({', '.join(shell(a) for a in args)})"


def count(n: float) -> str:
    """A number as a reader takes it in: 12,345; 0.4."""
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"


def size(n: float) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"
