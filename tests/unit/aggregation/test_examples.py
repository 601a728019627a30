"""The schema-design pipelines of the schema-design texts' EXAMPLES.md on generated data,
end to end through ``foliodb.MongoClient``, against answers computed in
plain Python.

Manual: https://www.mongodb.com/docs/manual/core/aggregation-pipeline/
"""

from __future__ import annotations

import datetime
import random
from collections import defaultdict
from fractions import Fraction
from typing import Any

STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]


def generate_orders(n: int) -> list[dict[str, Any]]:
    rng = random.Random(2024)
    skus = [f"SKU-{i:03d}" for i in range(60)]
    price = {sku: rng.randrange(199, 9999) / 100 for sku in skus}
    orders = []
    for i in range(n):
        items = []
        for sku in rng.sample(skus, rng.randrange(1, 6)):
            items.append(
                {
                    "product_id": i * 10 + len(items),
                    "sku": sku,
                    "name": sku.lower(),
                    "price": price[sku],
                    "quantity": rng.randrange(1, 8),
                }
            )
        orders.append(
            {
                "_id": i,
                "user_id": rng.randrange(300),
                "items": items,
                "status": rng.choice(STATUSES),
                "total": sum(it["price"] * it["quantity"] for it in items),
                "created_at": datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=17 * i),
            }
        )
    return orders


def test_revenue_by_sku(db: Any) -> None:
    """EXAMPLES.md "Orders with snapshots": revenue by SKU, top 10."""
    orders = generate_orders(1500)
    db.orders.insert_many(orders)
    db.orders.create_index([("status", 1)])
    out = list(
        db.orders.aggregate(
            [
                {"$match": {"status": "shipped"}},
                {"$unwind": "$items"},
                {
                    "$group": {
                        "_id": "$items.sku",
                        "revenue": {"$sum": {"$multiply": ["$items.price", "$items.quantity"]}},
                        "count": {"$sum": "$items.quantity"},
                    }
                },
                {"$sort": {"revenue": -1}},
                {"$limit": 10},
            ]
        )
    )
    revenue: dict[str, Fraction] = defaultdict(Fraction)
    count: dict[str, int] = defaultdict(int)
    for order in orders:
        if order["status"] == "shipped":
            for item in order["items"]:
                revenue[item["sku"]] += Fraction(item["price"] * item["quantity"])
                count[item["sku"]] += item["quantity"]
    ranked = sorted(revenue, key=lambda sku: -revenue[sku])
    assert len({revenue[s] for s in ranked[:11]}) == 11  # no ties at the cut
    assert out == [{"_id": sku, "revenue": float(revenue[sku]), "count": count[sku]} for sku in ranked[:10]]


def test_total_quantity_of_an_item_across_carts(db: Any) -> None:
    """EXAMPLES.md "Shopping cart": total quantity of item 8910 across carts."""
    rng = random.Random(8910)
    carts = []
    for i in range(400):
        items = [
            {
                "itemId": rng.choice([8910, 4567, 1234, 5555]),
                "name": "x",
                "price": 1.5,
                "quantity": rng.randrange(1, 10),
            }
            for _ in range(rng.randrange(0, 6))
        ]
        carts.append({"_id": i, "last_modified": datetime.datetime(2024, 5, 1), "status": "active", "items": items})
    db.carts.insert_many(carts)
    out = list(
        db.carts.aggregate(
            [
                {"$match": {"items.itemId": 8910}},
                {"$unwind": "$items"},
                {"$match": {"items.itemId": 8910}},
                {"$group": {"_id": None, "total": {"$sum": "$items.quantity"}}},
            ]
        )
    )
    expected = sum(it["quantity"] for c in carts for it in c["items"] if it["itemId"] == 8910)
    assert out == [{"_id": None, "total": expected}]


def test_hourly_bucket_average(db: Any) -> None:
    """EXAMPLES.md "IoT / flight telemetry": hourly buckets with sum/count/avg;
    the average per flight over all its hours, and the mean of hourly averages."""
    rng = random.Random(60)
    buckets = []
    for flight in ("AA100", "BA200", "CX300"):
        for hour in range(12):
            minutes = rng.sample(range(60), rng.randrange(20, 61))
            values = {str(m): round(rng.uniform(400, 900), 2) for m in sorted(minutes)}
            total = sum(values.values())
            buckets.append(
                {
                    "flight": flight,
                    "metric": "speed",
                    "hour": datetime.datetime(2024, 5, 1, hour),
                    "values": values,
                    "sum": total,
                    "count": len(values),
                    "avg": total / len(values),
                }
            )
    db.telemetry.insert_many(buckets)
    out = list(
        db.telemetry.aggregate(
            [
                {"$match": {"metric": "speed"}},
                {
                    "$group": {
                        "_id": "$flight",
                        "total": {"$sum": "$sum"},
                        "n": {"$sum": "$count"},
                        "hourly": {"$avg": "$avg"},
                    }
                },
                {"$project": {"avg": {"$divide": ["$total", "$n"]}, "hourly": 1}},
                {"$sort": {"_id": 1}},
            ]
        )
    )
    expected = []
    for flight in ("AA100", "BA200", "CX300"):
        mine = [b for b in buckets if b["flight"] == flight]
        total = float(sum(Fraction(b["sum"]) for b in mine))
        n = sum(b["count"] for b in mine)
        hourly = float(sum(Fraction(b["avg"]) for b in mine)) / len(mine)
        expected.append({"_id": flight, "hourly": hourly, "avg": total / n})
    assert out == expected
