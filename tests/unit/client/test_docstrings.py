"""Every public method and property of the embedded facade has a docstring
(issue 14), so ``help(collection.find_one)`` and IDEs explain it: what it
does and the MongoDB manual or pymongo page it follows."""

from __future__ import annotations

import pytest

from foliodb.client import Collection, CommandCursor, Cursor, Database, MongoClient
from foliodb.client.command_cursor import RawBatchCommandCursor
from foliodb.client.cursor import RawBatchCursor
from foliodb.client.session import ClientSession

FACADE = [
    MongoClient,
    Database,
    Collection,
    Cursor,
    CommandCursor,
    RawBatchCursor,
    RawBatchCommandCursor,
    ClientSession,
]


def public_members(cls: type) -> list[tuple[str, object]]:
    """The public names a user reaches on ``cls`` that FolioDB defines (pymongo's own kept
    accessors carry pymongo's docstrings)."""
    members = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next(klass for klass in cls.__mro__ if name in vars(klass))
        if owner.__module__.startswith("foliodb"):
            members.append((name, vars(owner)[name]))
    return members


@pytest.mark.parametrize("cls", FACADE, ids=[cls.__name__ for cls in FACADE])
def test_every_public_member_has_a_docstring(cls: type) -> None:
    assert (vars(cls).get("__doc__") or "").strip(), f"{cls.__name__} has no class docstring of its own"
    undocumented = []
    for name, member in public_members(cls):
        if isinstance(member, (int, str)):  # class constants (HOST, PORT)
            continue
        target = member.fget if isinstance(member, property) else member
        if not (getattr(target, "__doc__", None) or "").strip():
            undocumented.append(name)
    assert undocumented == []
