"""Orders with line snapshots (name and price frozen at purchase) against
orders that reference products and look the current price up.

What goes wrong with references: after a price change, an old order shows
today's price and a total nobody paid. The lab shows it as differing answers
to "show an order": expected, and the reason for the snapshot.
"""

from __future__ import annotations

import random
from typing import Any

from pymongo.client_session import ClientSession

from foliodb.lab.scenario import Db, Design, Question, Scenario
from foliodb.patterns import snapshot


def generate(size: int, rng: random.Random) -> dict[str, Any]:
    """``size // 10`` products (at least 20) and ``size`` orders of one to five lines."""
    products = [
        {"_id": n, "sku": f"SKU-{n:05d}", "name": f"product {n}", "price": rng.randrange(100, 10000), "stock": 10**9}
        for n in range(max(20, size // 10))
    ]
    orders = []
    for n in range(size):
        lines = [
            {"product_id": p, "quantity": rng.randrange(1, 4)}
            for p in rng.sample(range(len(products)), rng.randrange(1, 6))
        ]
        orders.append({"_id": n, "user_id": rng.randrange(1000), "lines": lines})
    return {"products": products, "orders": orders, "next": [size]}


def _order(data: dict[str, Any], rng: random.Random) -> int:
    return rng.randrange(len(data["orders"]))


def _new_order(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    data["next"][0] += 1
    lines = [
        {"product_id": p, "quantity": rng.randrange(1, 4)}
        for p in rng.sample(range(len(data["products"])), rng.randrange(1, 6))
    ]
    return {"user_id": rng.randrange(1000), "lines": lines}


def _price_change(data: dict[str, Any], rng: random.Random) -> tuple[int, int]:
    return rng.randrange(len(data["products"])), rng.randrange(100, 10000)


def _shown(lines: list[tuple[str, int, int]]) -> dict[str, Any]:
    return {"lines": lines, "total": sum(price * quantity for _, price, quantity in lines)}


# -- snapshots ------------------------------------------------------------------


def load_snapshot(db: Db, data: dict[str, Any]) -> None:
    db.products.insert_many(data["products"])
    prices = {p["_id"]: p for p in data["products"]}
    docs = []
    for order in data["orders"]:
        lines = [
            {
                "product_id": line["product_id"],
                **{k: prices[line["product_id"]][k] for k in snapshot.LINE_FIELDS},
                "quantity": line["quantity"],
            }
            for line in order["lines"]
        ]
        docs.append(
            {
                "_id": order["_id"],
                "user_id": order["user_id"],
                "items": lines,
                "total": sum(line["price"] * line["quantity"] for line in lines),
            }
        )
    db.orders.insert_many(docs)


def show_snapshot(db: Db, order_id: int) -> dict[str, Any]:
    order = db.orders.find_one({"_id": order_id})
    assert order is not None
    return _shown([(i["sku"], i["price"], i["quantity"]) for i in order["items"]])


def place_snapshot(db: Db, order: dict[str, Any]) -> None:
    snapshot.place_order(db.client, db.orders, db.products, order["user_id"], order["lines"])


def reprice(db: Db, change: tuple[int, int]) -> None:
    db.products.update_one({"_id": change[0]}, {"$set": {"price": change[1]}})


# -- references to current prices ----------------------------------------------


def load_reference(db: Db, data: dict[str, Any]) -> None:
    db.products.insert_many(data["products"])
    db.orders.insert_many([{"_id": o["_id"], "user_id": o["user_id"], "items": o["lines"]} for o in data["orders"]])


def show_reference(db: Db, order_id: int) -> dict[str, Any]:
    order = db.orders.find_one({"_id": order_id})
    assert order is not None
    products = {p["_id"]: p for p in db.products.find({"_id": {"$in": [i["product_id"] for i in order["items"]]}})}
    return _shown(
        [(products[i["product_id"]]["sku"], products[i["product_id"]]["price"], i["quantity"]) for i in order["items"]]
    )


def place_reference(db: Db, order: dict[str, Any]) -> None:
    def write(session: ClientSession) -> None:
        for line in order["lines"]:
            db.products.update_one({"_id": line["product_id"]}, {"$inc": {"stock": -line["quantity"]}}, session=session)
        db.orders.insert_one({"user_id": order["user_id"], "items": order["lines"]}, session=session)

    with db.client.start_session() as session:
        session.with_transaction(write)


_QUESTIONS = ("show an order", "place an order", "change a price")

SCENARIO = Scenario(
    name="orders",
    title="Orders: line snapshots at purchase against references to current prices",
    claim="An order keeps the name and price paid; a reference to the product shows today's price instead.",
    generate=generate,
    questions=(
        Question(
            _QUESTIONS[0],
            "read",
            6,
            _order,
            same_answer=False,
            note="after a price change, references show today's price, not the price paid",
        ),
        Question(_QUESTIONS[1], "write", 2, _new_order),
        Question(_QUESTIONS[2], "write", 1, _price_change),
    ),
    designs=(
        Design(
            "snapshot",
            "order lines with sku, name and price copied at purchase",
            load_snapshot,
            dict(zip(_QUESTIONS, (show_snapshot, place_snapshot, reprice), strict=True)),
        ),
        Design(
            "reference",
            "order lines with product_id and quantity only",
            load_reference,
            dict(zip(_QUESTIONS, (show_reference, place_reference, reprice), strict=True)),
        ),
    ),
)
