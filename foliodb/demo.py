"""``foliodb demo``: the e-commerce catalogue of the schema-design texts.

Loads products, categories, users, orders and reviews (document shapes from
the classic MongoDB schema-design examples) into an embedded database and
runs the queries people run on them. Every document has a fixed ``_id`` and
is written with an upsert, so running the demo twice changes nothing.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING

from foliodb.client import MongoClient


def _oid(n: int) -> ObjectId:
    return ObjectId(f"{n:024x}")


CAT_GARDENING = _oid(0x100)
CAT_OUTDOORS = _oid(0x101)
CAT_SEEDS = _oid(0x102)
PRODUCT_SHEARS = _oid(0x200)
PRODUCT_HOSE = _oid(0x201)
PRODUCT_SEEDS = _oid(0x202)
USER_KYLE = _oid(0x300)
USER_ANA = _oid(0x301)
ORDER_1 = _oid(0x400)
ORDER_2 = _oid(0x401)


def catalogue() -> dict[str, list[dict[str, Any]]]:
    """The demo documents, by collection."""
    day = datetime.datetime(2026, 3, 1)
    categories: list[dict[str, Any]] = [
        {
            "_id": CAT_OUTDOORS,
            "slug": "outdoors",
            "name": "Outdoors",
            "description": "Everything outside",
            "parent_id": None,
            "ancestors": [],
        },
        {
            "_id": CAT_GARDENING,
            "slug": "gardening-tools",
            "name": "Gardening Tools",
            "description": "Gardening gadgets galore!",
            "parent_id": CAT_OUTDOORS,
            "ancestors": [{"_id": CAT_OUTDOORS, "name": "Outdoors", "slug": "outdoors"}],
        },
        {
            "_id": CAT_SEEDS,
            "slug": "seeds",
            "name": "Seeds",
            "description": "Grow your own",
            "parent_id": CAT_GARDENING,
            "ancestors": [
                {"_id": CAT_OUTDOORS, "name": "Outdoors", "slug": "outdoors"},
                {"_id": CAT_GARDENING, "name": "Gardening Tools", "slug": "gardening-tools"},
            ],
        },
    ]
    products: list[dict[str, Any]] = [
        {
            "_id": PRODUCT_SHEARS,
            "slug": "wheelbarrow-9092",
            "sku": "9092",
            "name": "Extra Large Wheelbarrow",
            "description": "Heavy duty wheelbarrow...",
            "details": {
                "weight": 47,
                "weight_units": "lbs",
                "model_num": 4039283402,
                "manufacturer": "Acme",
                "color": "Green",
            },
            "total_reviews": 2,
            "average_review": 4.5,
            "pricing": {"retail": 589700, "sale": 489700},
            "price_history": [
                {
                    "retail": 529700,
                    "sale": 429700,
                    "start": day - datetime.timedelta(days=90),
                    "end": day - datetime.timedelta(days=30),
                }
            ],
            "category_ids": [CAT_GARDENING, CAT_OUTDOORS],
            "main_cat_id": CAT_GARDENING,
            "tags": ["tools", "gardening", "soil"],
        },
        {
            "_id": PRODUCT_HOSE,
            "slug": "garden-hose-50",
            "sku": "4512",
            "name": "Garden Hose, 50 ft",
            "description": "Kink-free hose",
            "details": {
                "weight": 6,
                "weight_units": "lbs",
                "model_num": 1200455,
                "manufacturer": "Flowline",
                "color": "Blue",
            },
            "total_reviews": 1,
            "average_review": 4.0,
            "pricing": {"retail": 3999, "sale": 2999},
            "price_history": [],
            "category_ids": [CAT_GARDENING],
            "main_cat_id": CAT_GARDENING,
            "tags": ["watering", "gardening"],
        },
        {
            "_id": PRODUCT_SEEDS,
            "slug": "heirloom-tomato-seeds",
            "sku": "7781",
            "name": "Heirloom Tomato Seeds",
            "description": "Twenty varieties",
            "details": {
                "weight": 0.1,
                "weight_units": "lbs",
                "model_num": 77810,
                "manufacturer": "Seedsavers",
                "color": "Mixed",
            },
            "total_reviews": 0,
            "average_review": None,
            "pricing": {"retail": 499, "sale": 499},
            "price_history": [],
            "category_ids": [CAT_SEEDS, CAT_GARDENING],
            "main_cat_id": CAT_SEEDS,
            "tags": ["seeds", "vegetables"],
        },
    ]
    users: list[dict[str, Any]] = [
        {
            "_id": USER_KYLE,
            "username": "kbanker",
            "email": "kylebanker@gmail.com",
            "first_name": "Kyle",
            "last_name": "Banker",
            "hashed_password": "bd1cfa194c3a603e7186780824b04419",
            "addresses": [
                {"name": "home", "street": "588 5th Street", "city": "Brooklyn", "state": "NY", "zip": 11215},
                {"name": "work", "street": "1 E. 23rd Street", "city": "New York", "state": "NY", "zip": 10010},
            ],
            "payment_methods": [
                {
                    "name": "VISA",
                    "last_four": 2127,
                    "crypted_number": "43f6ba1dfda6b8106dc7",
                    "expiration_date": datetime.datetime(2028, 5, 1),
                }
            ],
        },
        {
            "_id": USER_ANA,
            "username": "ana",
            "email": "ana@example.org",
            "first_name": "Ana",
            "last_name": "Lima",
            "hashed_password": "5f4dcc3b5aa765d61d8327deb882cf99",
            "addresses": [{"name": "home", "street": "12 Rua Augusta", "city": "Lisbon", "state": "LX", "zip": 1100}],
            "payment_methods": [],
        },
    ]

    def line(product: dict[str, Any], quantity: int) -> dict[str, Any]:
        return {
            "_id": product["_id"],
            "sku": product["sku"],
            "name": product["name"],
            "quantity": quantity,
            "pricing": dict(product["pricing"]),
        }

    orders: list[dict[str, Any]] = [
        {
            "_id": ORDER_1,
            "user_id": USER_KYLE,
            "state": "CART",
            "purchase_data": day,
            "line_items": [line(products[0], 1), line(products[1], 2)],
            "shipping_address": dict(users[0]["addresses"][0]),
            "sub_total": products[0]["pricing"]["sale"] + 2 * products[1]["pricing"]["sale"],
        },
        {
            "_id": ORDER_2,
            "user_id": USER_ANA,
            "state": "PAID",
            "purchase_data": day + datetime.timedelta(days=2),
            "line_items": [line(products[2], 5)],
            "shipping_address": dict(users[1]["addresses"][0]),
            "sub_total": 5 * products[2]["pricing"]["sale"],
        },
    ]
    reviews: list[dict[str, Any]] = [
        {
            "_id": _oid(0x500),
            "product_id": PRODUCT_SHEARS,
            "date": day,
            "title": "Amazing",
            "text": "Has a squeaky wheel, but still a darn good wheelbarrow.",
            "rating": 4,
            "user_id": USER_KYLE,
            "username": "kbanker",
            "helpful_votes": 3,
            "voter_ids": [USER_ANA, _oid(0x302), _oid(0x303)],
        },
        {
            "_id": _oid(0x501),
            "product_id": PRODUCT_SHEARS,
            "date": day,
            "title": "Sturdy",
            "text": "Carried a tonne of soil.",
            "rating": 5,
            "user_id": USER_ANA,
            "username": "ana",
            "helpful_votes": 7,
            "voter_ids": [USER_KYLE, _oid(0x304), _oid(0x305), _oid(0x306), _oid(0x307), _oid(0x308), _oid(0x309)],
        },
        {
            "_id": _oid(0x502),
            "product_id": PRODUCT_HOSE,
            "date": day,
            "title": "Fine",
            "text": "Does not kink.",
            "rating": 4,
            "user_id": USER_ANA,
            "username": "ana",
            "helpful_votes": 0,
            "voter_ids": [],
        },
    ]
    return {"categories": categories, "products": products, "users": users, "orders": orders, "reviews": reviews}


def load(db: Any) -> dict[str, int]:
    """Upsert the catalogue; returns how many documents each collection holds."""
    counts = {}
    for name, docs in catalogue().items():
        for doc in docs:
            db[name].replace_one({"_id": doc["_id"]}, doc, upsert=True)
        counts[name] = db[name].count_documents({})
    db.products.create_index("slug", unique=True)
    db.users.create_index("username", unique=True)
    db.reviews.create_index([("product_id", 1), ("helpful_votes", DESCENDING)])
    db.orders.create_index("user_id")
    return counts


def queries(db: Any) -> list[tuple[str, Callable[[], Any]]]:
    """The questions people ask of the catalogue, as pymongo calls."""
    product = db.products.find_one({"slug": "wheelbarrow-9092"})
    order = db.orders.find_one({"_id": ORDER_1})
    return [
        (
            "products of the category 'gardening-tools'",
            lambda: [p["name"] for p in db.products.find({"category_ids": CAT_GARDENING}).sort("name", 1)],
        ),
        (
            "categories of the wheelbarrow ($in on its category_ids)",
            lambda: [c["name"] for c in db.categories.find({"_id": {"$in": product["category_ids"]}}).sort("name", 1)],
        ),
        (
            "orders of user kbanker",
            lambda: [(o["state"], o["sub_total"]) for o in db.orders.find({"user_id": USER_KYLE})],
        ),
        (
            "the user of order 1",
            lambda: db.users.find_one({"_id": order["user_id"]}, {"username": 1, "email": 1, "_id": 0}),
        ),
        (
            "reviews of the wheelbarrow by helpfulness",
            lambda: [
                (r["title"], r["helpful_votes"])
                for r in db.reviews.find({"product_id": PRODUCT_SHEARS}).sort("helpful_votes", DESCENDING)
            ],
        ),
        (
            "the breadcrumb of 'seeds' (ancestors)",
            lambda: [a["name"] for a in db.categories.find_one({"slug": "seeds"})["ancestors"]],
        ),
        (
            "users with a home address in NY",
            lambda: [
                u["username"] for u in db.users.find({"addresses": {"$elemMatch": {"name": "home", "state": "NY"}}})
            ],
        ),
    ]


def run(path: str, out: Callable[[str], None] = print) -> None:
    with MongoClient(path) as client:
        db = client.catalogue
        counts = load(db)
        out(f"FolioDB demo: e-commerce catalogue in {path}")
        out("  " + ", ".join(f"{n} {name}" for name, n in counts.items()))
        for title, query in queries(db):
            out(f"\n{title}:")
            out(f"  {query()}")
