"""Subset pattern: the most recent N items embedded in the parent, for the page
that shows them in one read; every item also in a side collection, for the rest.

The embedded array is kept bounded by ``$push`` with ``$each`` and ``$slice``, so
the parent never grows past ``keep`` items (and so never towards 16 MB).

The side collection is the source of truth and is written first: without a
session, a failure between the two writes leaves an item in the history that the
parent does not show, never the reverse. With a ``session`` in a transaction the
two writes commit together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.patterns._types import Coll, Session


def push(
    parents: Coll,
    parent_filter: Mapping[str, Any],
    field: str,
    item: Mapping[str, Any],
    *,
    keep: int,
    history: Coll | None = None,
    history_fields: Mapping[str, Any] | None = None,
    sort: Mapping[str, int] | None = None,
    session: Session = None,
) -> bool:
    """Add ``item`` to ``field`` of the parent, keeping the last ``keep`` (or, with
    ``sort``, the first ``keep`` in that order); insert it, with
    ``history_fields`` such as the parent's id, into ``history`` first.
    Returns whether a parent matched."""
    if keep < 1:
        raise ValueError("keep must be at least 1")
    if history is not None:
        history.insert_one({**item, **(history_fields or {})}, session=session)
    each: dict[str, Any] = {"$each": [dict(item)]}
    if sort is not None:
        each["$sort"] = dict(sort)
        each["$slice"] = keep
    else:
        each["$slice"] = -keep
    result = parents.update_one(parent_filter, {"$push": {field: each}}, session=session)
    return result.matched_count == 1


def older(
    history: Coll,
    history_filter: Mapping[str, Any],
    *,
    sort: list[tuple[str, int]],
    skip: int,
    limit: int,
    session: Session = None,
) -> list[dict[str, Any]]:
    """A page of the items past the embedded ones: ``skip`` is how many the parent
    shows (its ``keep``), so the first page continues where the parent stops."""
    cursor = history.find(history_filter, sort=sort, skip=skip, limit=limit, session=session)
    return list(cursor)
