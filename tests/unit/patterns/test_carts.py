"""TTL carts with positional item updates."""

from __future__ import annotations

from typing import Any

from foliodb.patterns import carts


def test_cart_items_and_quantities(db: Any) -> None:
    name = carts.ensure_ttl(db.carts, 1800)
    index = db.carts.index_information()[name]
    assert index["expireAfterSeconds"] == 1800 and index["key"] == [("last_modified", 1)]
    carts.add_item(db.carts, "c1", {"itemId": 4567, "name": "bread", "price": 300, "quantity": 1})
    carts.add_item(db.carts, "c1", {"itemId": 8910, "name": "milk", "price": 120, "quantity": 2})
    carts.add_item(db.carts, "c2", {"itemId": 8910, "name": "milk", "price": 120, "quantity": 3})
    assert carts.set_quantity(db.carts, "c1", 4567, 5)
    assert not carts.set_quantity(db.carts, "c1", 1111, 5)
    cart = db.carts.find_one({"_id": "c1"})
    assert cart["status"] == "active" and cart["last_modified"] is not None
    assert [(i["itemId"], i["quantity"]) for i in cart["items"]] == [(4567, 5), (8910, 2)]
    assert carts.quantity_in_carts(db.carts, 8910) == 5
    assert carts.remove_item(db.carts, "c1", 8910)
    assert carts.quantity_in_carts(db.carts, 8910) == 3
    assert carts.quantity_in_carts(db.carts, 42) == 0
