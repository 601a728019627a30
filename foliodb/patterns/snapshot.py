"""Snapshot at order time: an order line keeps the product's name and price as
they were at purchase (an invoice must not change when the catalogue does),
instead of a reference to the current price.

Placing an order writes the order and decrements the stock of each product:
several documents that must change together, so :func:`place_order` runs them
in one transaction (``with_transaction`` retries a transient error), and refuses
the whole order when any product lacks stock.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from pymongo.client_session import ClientSession
from pymongo.mongo_client import MongoClient

from foliodb.patterns._types import Coll, Session

LINE_FIELDS = ("sku", "name", "price")


class OutOfStockError(Exception):
    """A product of the order has less stock than the quantity asked for."""

    def __init__(self, product_id: Any) -> None:
        super().__init__(f"not enough stock for product {product_id!r}")
        self.product_id = product_id


def snapshot_lines(
    products: Coll, wanted: Sequence[Mapping[str, Any]], *, session: Session = None
) -> list[dict[str, Any]]:
    """``[{product_id, quantity}]`` -> order lines with the products' current
    ``sku``, ``name`` and ``price`` copied in."""
    ids = [line["product_id"] for line in wanted]
    found = {product["_id"]: product for product in products.find({"_id": {"$in": ids}}, session=session)}
    lines = []
    for line in wanted:
        product = found.get(line["product_id"])
        if product is None:
            raise KeyError(f"no product with _id {line['product_id']!r}")
        copied = {name: product[name] for name in LINE_FIELDS if name in product}
        lines.append({"product_id": line["product_id"], **copied, "quantity": line["quantity"]})
    return lines


def place_order(
    client: MongoClient[Any],
    orders: Coll,
    products: Coll,
    user_id: Any,
    wanted: Sequence[Mapping[str, Any]],
    *,
    stock_field: str = "stock",
    now: datetime.datetime | None = None,
) -> Any:
    """Insert the order with snapshotted lines and its ``total``, and ``$inc`` each
    product's stock by minus the quantity, all or nothing. Raises
    :class:`OutOfStockError` (nothing written) when a product has too little."""

    def write(session: ClientSession) -> Any:
        lines = snapshot_lines(products, wanted, session=session)
        for line in lines:
            taken = products.update_one(
                {"_id": line["product_id"], stock_field: {"$gte": line["quantity"]}},
                {"$inc": {stock_field: -line["quantity"]}},
                session=session,
            )
            if taken.modified_count == 0:
                raise OutOfStockError(line["product_id"])
        created = now or datetime.datetime.now(datetime.UTC)
        order = {
            "user_id": user_id,
            "items": lines,
            "total": sum(line["price"] * line["quantity"] for line in lines),
            "status": "pending",
            "created_at": created,
            "updated_at": created,
        }
        return orders.insert_one(order, session=session).inserted_id

    with client.start_session() as session:
        return session.with_transaction(write)
