"""Orders with snapshots, placed in a transaction."""

from __future__ import annotations

from typing import Any

import pytest

from foliodb.patterns import snapshot


def _catalogue(db: Any) -> None:
    db.products.insert_many(
        [
            {"_id": 1, "sku": "A-1", "name": "Lamp", "price": 2500, "stock": 3},
            {"_id": 2, "sku": "B-2", "name": "Bulb", "price": 300, "stock": 10},
        ]
    )


def test_order_freezes_prices_and_takes_stock(client: Any, db: Any) -> None:
    _catalogue(db)
    order_id = snapshot.place_order(
        client, db.orders, db.products, 7, [{"product_id": 1, "quantity": 2}, {"product_id": 2, "quantity": 4}]
    )
    order = db.orders.find_one({"_id": order_id})
    assert order["total"] == 2 * 2500 + 4 * 300
    assert [(i["sku"], i["price"], i["quantity"]) for i in order["items"]] == [("A-1", 2500, 2), ("B-2", 300, 4)]
    assert {p["_id"]: p["stock"] for p in db.products.find()} == {1: 1, 2: 6}
    # The catalogue's price changes; the order keeps what was paid (the snapshot's point).
    db.products.update_one({"_id": 1}, {"$set": {"price": 9900}})
    assert db.orders.find_one({"_id": order_id})["items"][0]["price"] == 2500


def test_out_of_stock_writes_nothing(client: Any, db: Any) -> None:
    _catalogue(db)
    with pytest.raises(snapshot.OutOfStockError):
        # The bulbs are available and would be taken first; the lamps are not.
        snapshot.place_order(
            client, db.orders, db.products, 7, [{"product_id": 2, "quantity": 4}, {"product_id": 1, "quantity": 5}]
        )
    assert db.orders.count_documents({}) == 0
    assert {p["_id"]: p["stock"] for p in db.products.find()} == {1: 3, 2: 10}
