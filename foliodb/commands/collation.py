"""Which collation an operation runs under.

Manual: https://www.mongodb.com/docs/manual/reference/collation/#behavior

An operation's own ``collation`` wins; without one it takes its collection's
default (the ``create`` option), and a collection without one compares by
code point (no collator). A view has its collation fixed at creation: an
operation on it may name only that same collation (OptionNotSupportedOnView,
167), and a view on a view must agree with the view beneath it. An empty
collation document is no collation, as mongod's ``getCollation().isEmpty()``
tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.commands.executor import Request
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import collation
from foliodb.query.collation import Collator


def given(cmd: Mapping[str, Any], where: str) -> Collator | None:
    """The collator ``cmd`` names (None when it names none or ``simple``),
    raising mongod's errors for a bad collation document."""
    value = cmd.get("collation")
    if value is None or _empty(value):
        return None
    return collation.parse(value, f"{where}.collation")


def _empty(value: Any) -> bool:
    return isinstance(value, Mapping) and not value


def default_of(request: Request, name: str, db: str | None = None) -> Collator | None:
    """A collection's (or view's) default collator."""
    info = request.engine.catalog.get(db or request.db, name)
    if info is None:
        return None
    spec = info.options.get("collation")
    return None if spec is None else collation.parse(spec)


def resolve(request: Request, name: str, value: Any, where: str, db: str | None = None) -> Collator | None:
    """The collator an operation on ``name`` runs under, given the
    operation's own ``collation`` field (None when it has none)."""
    if value is None or _empty(value):
        return default_of(request, name, db)
    own = collation.parse(value, f"{where}.collation")
    info = request.engine.catalog.get(db or request.db, name)
    if info is not None and info.is_view and not collation.same(own, default_of(request, name, db)):
        raise CommandError(ErrorCode.OptionNotSupportedOnView, "Cannot override a view's default collation")
    return own
