"""Extended reference pattern: next to a reference's ``_id``, a copy of the few
fields every read shows (an author's name next to a post, a product's name and
price next to an order line), so the read needs no second query.

The cost is the update fan-out when the source changes: every copy must be
rewritten. :func:`refresh` does it in one ``update_many`` per collection and
returns how many documents it touched, the number the texts weigh against the
reads saved. Copies are refreshed one document at a time (MongoDB's atomicity
is per document): a reader can see some copies renamed and others not until the
call returns; run it in a transaction (``session``) when that matters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from foliodb.patterns._types import Coll, Session


def copy_of(source: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """The embedded reference: ``_id`` and the chosen top-level ``fields`` of
    ``source`` (those it has)."""
    reference = {"_id": source["_id"]}
    reference.update({name: source[name] for name in fields if name in source})
    return reference


def refresh(
    copies: Coll,
    path: str,
    source_id: Any,
    values: Mapping[str, Any],
    *,
    in_array: bool = False,
    session: Session = None,
) -> int:
    """Rewrite ``values`` in every copy of the reference at ``path`` whose ``_id`` is
    ``source_id``; ``in_array`` when ``path`` is an array of references (comments
    with their author), which updates every matching element. Returns the number
    of documents modified."""
    if in_array:
        update = {"$set": {f"{path}.$[ref].{name}": value for name, value in values.items()}}
        result = copies.update_many(
            {f"{path}._id": source_id},
            update,
            array_filters=[{"ref._id": source_id}],
            session=session,
        )
    else:
        update = {"$set": {f"{path}.{name}": value for name, value in values.items()}}
        result = copies.update_many({f"{path}._id": source_id}, update, session=session)
    return result.modified_count


def refresh_fields(
    copies: Coll,
    id_field: str,
    source_id: Any,
    values: Mapping[str, Any],
    *,
    session: Session = None,
) -> int:
    """The flat form (``{author_id, author_name}`` side by side): set ``values``
    (copy field -> new value) in every document whose ``id_field`` is
    ``source_id``. Returns the number of documents modified."""
    result = copies.update_many({id_field: source_id}, {"$set": dict(values)}, session=session)
    return result.modified_count
