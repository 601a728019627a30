"""Shopping carts that expire: a TTL index on ``last_modified`` removes a cart
nobody touched for ``seconds`` (the TTL monitor runs about once a minute, so
removal is that much late, as in MongoDB). Every change sets ``last_modified``
in the same update, so an active cart never expires; item changes are
positional updates of one element of ``items``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from foliodb.patterns._types import Coll, Session


def ensure_ttl(carts: Coll, seconds: int) -> str:
    """The TTL index; returns its name."""
    return carts.create_index("last_modified", expireAfterSeconds=seconds)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def add_item(carts: Coll, cart_id: Any, item: Mapping[str, Any], *, session: Session = None) -> None:
    """Push ``item`` ({itemId, name, price, quantity}) into the cart, creating an
    active cart when there is none."""
    carts.update_one(
        {"_id": cart_id},
        {"$push": {"items": dict(item)}, "$set": {"last_modified": _now()}, "$setOnInsert": {"status": "active"}},
        upsert=True,
        session=session,
    )


def set_quantity(carts: Coll, cart_id: Any, item_id: Any, quantity: int, *, session: Session = None) -> bool:
    """Set the quantity of one item of the cart (the ``$`` positional operator).
    Returns whether the cart holds that item."""
    result = carts.update_one(
        {"_id": cart_id, "items.itemId": item_id},
        {"$set": {"items.$.quantity": quantity, "last_modified": _now()}},
        session=session,
    )
    return result.matched_count == 1


def remove_item(carts: Coll, cart_id: Any, item_id: Any, *, session: Session = None) -> bool:
    """Take an item out of the cart; returns whether it was there."""
    result = carts.update_one(
        {"_id": cart_id, "items.itemId": item_id},
        {"$pull": {"items": {"itemId": item_id}}, "$set": {"last_modified": _now()}},
        session=session,
    )
    return result.modified_count == 1


def quantity_in_carts(carts: Coll, item_id: Any, *, status: str = "active", session: Session = None) -> int:
    """The total quantity of ``item_id`` across carts of ``status`` (stock held
    in carts): ``$match``, ``$unwind``, ``$match``, ``$group`` as the texts write it."""
    pipeline: list[dict[str, Any]] = [
        {"$match": {"status": status, "items.itemId": item_id}},
        {"$unwind": "$items"},
        {"$match": {"items.itemId": item_id}},
        {"$group": {"_id": None, "quantity": {"$sum": "$items.quantity"}}},
    ]
    result = list(carts.aggregate(pipeline, session=session))
    return int(result[0]["quantity"]) if result else 0
