"""The commands a finding proposes, as data (:class:`Command`) and as mongosh
reads them: ``db.orders.createIndex({ user_id: 1 })``, ``ObjectId("...")``,
``ISODate("...")``.

A command whose arguments hold a placeholder (a string such as ``"<id>"``
or ``"<new value>"``) is a template of what the application writes from
now on, not something to run: :attr:`Command.template` says which, and the
proof (:mod:`foliodb.advisor.proof`) runs only the others.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bson import ObjectId, json_util
from bson.regex import Regex

_BARE_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PLACEHOLDER = re.compile(r"<[^<>]+>")


@dataclass(frozen=True)
class Command:
    """``db.<collection>.<method>(*args)`` (``db.runCommand(args[0])`` when ``collection`` is empty)."""

    collection: str
    method: str
    args: tuple[Any, ...]

    def shell(self) -> str:
        if not self.collection:
            return f"db.{self.method}({', '.join(shell(a) for a in self.args)})"
        target = (
            f"db.{self.collection}"
            if _BARE_KEY.match(self.collection)
            else f"db.getCollection({json.dumps(self.collection)})"
        )
        return f"{target}.{self.method}({', '.join(shell(a) for a in self.args)})"

    @property
    def template(self) -> bool:
        return _holds_placeholder(self.args)

    def as_json(self) -> dict[str, Any]:
        """Canonical Extended JSON, so a tool can run it with every BSON type intact."""
        return json.loads(
            json_util.dumps(
                {"collection": self.collection, "method": self.method, "args": list(self.args)},
                json_options=json_util.CANONICAL_JSON_OPTIONS,
            )
        )


def _holds_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_PLACEHOLDER.search(value))
    if isinstance(value, Mapping):
        return any(_holds_placeholder(k) or _holds_placeholder(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_placeholder(v) for v in value)
    return False


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


def call(collection: str, method: str, *args: Any) -> Command:
    """The command ``db.<collection>.<method>(<args>)``."""
    return Command(collection, method, args)


def run_command(document: Mapping[str, Any]) -> Command:
    """The command ``db.runCommand(<document>)``."""
    return Command("", "runCommand", (dict(document),))


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


def millis(n: float) -> str:
    """A duration in milliseconds as a reader takes it in: 850 ms, 3.9 s, 12 min."""
    if n < 1000:
        return f"{n:,.0f} ms"
    if n < 120_000:
        return f"{n / 1000:,.1f} s"
    return f"{n / 60_000:,.0f} min"
