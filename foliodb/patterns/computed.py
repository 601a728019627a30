"""Computed pattern: values that reads would otherwise compute (a post's
``comment_count``, a product's ``average_review``) kept up to date on write.

:func:`add_rating` maintains a count, a sum and their average in one pipeline
update, atomic because it is one document. :func:`add_child` inserts a child and
increments its parent's counter: two documents, exact only in a transaction
(``session`` with a transaction started, or :func:`add_child_atomically`);
:func:`recount` repairs a counter that drifted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo.client_session import ClientSession
from pymongo.mongo_client import MongoClient

from foliodb.patterns._types import Coll, Session


def add_rating(
    products: Coll,
    product_filter: Mapping[str, Any],
    rating: float,
    *,
    count_field: str = "total_reviews",
    sum_field: str = "rating_sum",
    average_field: str = "average_review",
    session: Session = None,
) -> bool:
    """Count ``rating`` into the document's count, sum and average at once.
    Returns whether a document matched."""
    count = {"$add": [{"$ifNull": [f"${count_field}", 0]}, 1]}
    total = {"$add": [{"$ifNull": [f"${sum_field}", 0]}, rating]}
    result = products.update_one(
        product_filter,
        [
            {"$set": {count_field: count, sum_field: total}},
            {"$set": {average_field: {"$divide": [f"${sum_field}", f"${count_field}"]}}},
        ],
        session=session,
    )
    return result.matched_count == 1


def add_child(
    children: Coll,
    parents: Coll,
    child: Mapping[str, Any],
    parent_filter: Mapping[str, Any],
    counter: str,
    *,
    session: Session = None,
) -> Any:
    """Insert ``child`` and ``$inc`` the parent's ``counter``; returns the child's
    ``_id``. Without a transaction a crash between the writes leaves the counter
    one short (repair with :func:`recount`)."""
    inserted = children.insert_one(dict(child), session=session).inserted_id
    parents.update_one(parent_filter, {"$inc": {counter: 1}}, session=session)
    return inserted


def add_child_atomically(
    client: MongoClient[Any],
    children: Coll,
    parents: Coll,
    child: Mapping[str, Any],
    parent_filter: Mapping[str, Any],
    counter: str,
) -> Any:
    """:func:`add_child` in a transaction, retried by ``with_transaction`` on a
    transient error: the child and the count commit together or not at all."""

    def both(session: ClientSession) -> Any:
        return add_child(children, parents, child, parent_filter, counter, session=session)

    with client.start_session() as session:
        return session.with_transaction(both)


def recount(
    children: Coll,
    parents: Coll,
    parent_id: Any,
    *,
    child_field: str,
    counter: str,
    session: Session = None,
) -> int:
    """Set the parent's ``counter`` to the true number of children whose
    ``child_field`` is ``parent_id``; returns it."""
    count = children.count_documents({child_field: parent_id}, session=session)
    parents.update_one({"_id": parent_id}, {"$set": {counter: count}}, session=session)
    return count
