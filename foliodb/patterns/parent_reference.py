"""One-to-squillions: the children (log messages of a host) are unbounded, so
neither embedding them nor an array of their ids fits in the parent's 16 MB.
Each child holds its parent's id instead, and a compound index on
``(parent, time)`` serves "the latest N of this parent" as one index range
read in order, with no sort.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import ASCENDING, DESCENDING

from foliodb.patterns._types import Coll, Session


def ensure_index(children: Coll, parent_field: str = "host", time_field: str = "time") -> str:
    """The index the latest-N read needs; returns its name."""
    return children.create_index([(parent_field, ASCENDING), (time_field, DESCENDING)])


def add(
    children: Coll, parent_id: Any, child: Mapping[str, Any], *, parent_field: str = "host", session: Session = None
) -> Any:
    """Insert ``child`` referencing ``parent_id``; returns its ``_id``."""
    return children.insert_one({**child, parent_field: parent_id}, session=session).inserted_id


def latest(
    children: Coll,
    parent_id: Any,
    n: int,
    *,
    parent_field: str = "host",
    time_field: str = "time",
    session: Session = None,
) -> list[dict[str, Any]]:
    """The ``n`` newest children of ``parent_id``, newest first."""
    cursor = children.find({parent_field: parent_id}, sort=[(time_field, -1)], limit=n, session=session)
    return list(cursor)
