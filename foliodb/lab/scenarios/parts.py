"""Products and parts (one-to-many) three ways: an array of part ids in the
product (the texts' choice), a product id in each part (parent reference), and
the parts embedded in the product.

The rule of thumb: embed when the N side is read with the parent and never
alone; reference when it stands alone (a part's cost changes; parts are
searched by themselves).
"""

from __future__ import annotations

import random
from typing import Any

from foliodb.lab.scenario import Db, Design, Question, Scenario


def generate(size: int, rng: random.Random) -> dict[str, Any]:
    """``size`` products of 5 to 20 parts each."""
    products: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for n in range(size):
        ids = []
        for _ in range(rng.randrange(5, 21)):
            part = {
                "_id": len(parts),
                "partno": f"P-{len(parts):06d}",
                "name": f"part {len(parts)}",
                "qty": rng.randrange(1, 9),
                "cost": rng.randrange(1, 5000),
            }
            parts.append(part)
            ids.append(part["_id"])
        products.append({"_id": n, "name": f"product {n}", "catalog_number": 10000 + n, "part_ids": ids})
    return {"products": products, "parts": parts}


def _product(data: dict[str, Any], rng: random.Random) -> int:
    return 10000 + rng.randrange(len(data["products"]))


def _cost_change(data: dict[str, Any], rng: random.Random) -> tuple[int, int]:
    return rng.randrange(len(data["parts"])), rng.randrange(1, 5000)


def _threshold(data: dict[str, Any], rng: random.Random) -> int:
    return rng.randrange(4900, 5000)


def _answer(product: dict[str, Any], parts: list[dict[str, Any]]) -> tuple[str, list[tuple[str, int, int]]]:
    return product["name"], sorted((p["partno"], p["qty"], p["cost"]) for p in parts)


# -- array of references in the product ----------------------------------------


def load_ids(db: Db, data: dict[str, Any]) -> None:
    db.parts.insert_many(data["parts"])
    db.products.insert_many(
        [{k: v for k, v in p.items() if k != "part_ids"} | {"parts": p["part_ids"]} for p in data["products"]]
    )
    db.products.create_index("catalog_number", unique=True)
    db.parts.create_index("cost")


def show_ids(db: Db, catalog_number: int) -> tuple[str, list[tuple[str, int, int]]]:
    product = db.products.find_one({"catalog_number": catalog_number})
    assert product is not None
    return _answer(product, list(db.parts.find({"_id": {"$in": product["parts"]}})))


def cost_ids(db: Db, change: tuple[int, int]) -> None:
    db.parts.update_one({"_id": change[0]}, {"$set": {"cost": change[1]}})


def costly_ids(db: Db, threshold: int) -> int:
    return db.parts.count_documents({"cost": {"$gt": threshold}})


# -- parent reference in each part ----------------------------------------------


def load_parent(db: Db, data: dict[str, Any]) -> None:
    owner = {pid: p["_id"] for p in data["products"] for pid in p["part_ids"]}
    db.parts.insert_many([{**part, "product_id": owner[part["_id"]]} for part in data["parts"]])
    db.products.insert_many([{k: v for k, v in p.items() if k != "part_ids"} for p in data["products"]])
    db.products.create_index("catalog_number", unique=True)
    db.parts.create_index("product_id")
    db.parts.create_index("cost")


def show_parent(db: Db, catalog_number: int) -> tuple[str, list[tuple[str, int, int]]]:
    product = db.products.find_one({"catalog_number": catalog_number})
    assert product is not None
    return _answer(product, list(db.parts.find({"product_id": product["_id"]})))


# -- parts embedded in the product ----------------------------------------------


def load_embedded(db: Db, data: dict[str, Any]) -> None:
    parts = {p["_id"]: p for p in data["parts"]}
    db.products.insert_many(
        [
            {k: v for k, v in p.items() if k != "part_ids"} | {"parts": [parts[i] for i in p["part_ids"]]}
            for p in data["products"]
        ]
    )
    db.products.create_index("catalog_number", unique=True)
    db.products.create_index("parts._id")
    db.products.create_index("parts.cost")


def show_embedded(db: Db, catalog_number: int) -> tuple[str, list[tuple[str, int, int]]]:
    product = db.products.find_one({"catalog_number": catalog_number})
    assert product is not None
    return _answer(product, product["parts"])


def cost_embedded(db: Db, change: tuple[int, int]) -> None:
    db.products.update_one({"parts._id": change[0]}, {"$set": {"parts.$.cost": change[1]}})


def costly_embedded(db: Db, threshold: int) -> int:
    pipeline: list[dict[str, Any]] = [
        {"$match": {"parts.cost": {"$gt": threshold}}},
        {"$unwind": "$parts"},
        {"$match": {"parts.cost": {"$gt": threshold}}},
        {"$count": "n"},
    ]
    found = list(db.products.aggregate(pipeline))
    return int(found[0]["n"]) if found else 0


_QUESTIONS = ("show a product with its parts", "change a part's cost", "count parts costing more than X")

SCENARIO = Scenario(
    name="parts",
    title="Products and parts: array of part ids, parent reference, embedded parts",
    claim="Parts that stand alone: reference them (an id array); embedding saves a query, hides the parts.",
    generate=generate,
    questions=(
        Question(_QUESTIONS[0], "read", 6, _product),
        Question(_QUESTIONS[1], "write", 2, _cost_change),
        Question(_QUESTIONS[2], "read", 1, _threshold),
    ),
    designs=(
        Design(
            "id array",
            "products.parts: [part ids]; parts apart",
            load_ids,
            dict(zip(_QUESTIONS, (show_ids, cost_ids, costly_ids), strict=True)),
        ),
        Design(
            "parent ref",
            "each part holds its product_id",
            load_parent,
            dict(zip(_QUESTIONS, (show_parent, cost_ids, costly_ids), strict=True)),
        ),
        Design(
            "embedded",
            "the parts inside the product",
            load_embedded,
            dict(zip(_QUESTIONS, (show_embedded, cost_embedded, costly_embedded), strict=True)),
        ),
    ),
)
