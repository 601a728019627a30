"""The benchmark's documents: e-commerce orders with frozen item snapshots.

The shape is the "Orders with snapshots" system of the schema-design texts::

    {_id, user_id, items: [{product_id, sku, name, price, quantity}] (1-5),
     total, status, shipping_address: {street, city, state, zip, country},
     payment: {method, txn_id}, created_at, updated_at}

Two ways to pick ``user_id``:

* the default: one of ``USERS`` (5,000) customers, so a customer has ~N/5,000
  orders (the main benchmark's documents);
* ``blocks=True`` (the index benchmarks): documents ``[1000 b, 1000 b + 1000)``
  draw from their own ``BLOCK_USERS`` (250) customers, so every customer has
  ~4 orders (binomial, mean 4) at every collection size, and a query by
  ``user_id`` returns "a few" documents at 10k and at 1M alike.

Invariants:

* deterministic: ``orders(n, seed)`` returns the same documents on every
  machine and run, and its first ``k`` documents equal ``orders(k, seed)``;
  the same holds for ``iter_orders`` with ``blocks=True``;
* ``iter_orders`` yields one document at a time, so loading a million of them
  never holds more than a batch;
* every document carries its ``_id`` (so every contender stores the same ids
  and no client spends time generating them) and a unique ``payment.txn_id``;
* datetimes are whole milliseconds (BSON's precision) and naive UTC, so a
  round trip through any store returns equal values.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

SEED = 20240601
USERS = 5000
PRODUCTS = 1000
BASE_TIME = datetime(2024, 1, 1)
# ObjectId's 4-byte timestamp for BASE_TIME (seconds since the Unix epoch).
BASE_EPOCH = 1704067200

STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled")
STATUS_WEIGHTS = (20, 15, 30, 30, 5)
METHODS = ("card", "paypal", "bank_transfer", "gift_card")
CITIES = (
    ("Springfield", "IL", "627"),
    ("Portland", "OR", "972"),
    ("Austin", "TX", "787"),
    ("Madison", "WI", "537"),
    ("Burlington", "VT", "054"),
    ("Boulder", "CO", "803"),
    ("Savannah", "GA", "314"),
    ("Ithaca", "NY", "148"),
)
STREETS = ("Main", "Oak", "Maple", "Cedar", "Elm", "Pine", "Washington", "Lake", "Hill", "Park")
ADJECTIVES = ("Classic", "Deluxe", "Compact", "Wireless", "Organic", "Vintage", "Smart", "Rugged")
NOUNS = ("Kettle", "Backpack", "Lamp", "Headphones", "Notebook", "Blender", "Jacket", "Mug", "Charger")


def _object_id(seconds: int, rng: random.Random, counter: int) -> ObjectId:
    """An ObjectId laid out as MongoDB's: timestamp, 5 random bytes, 3-byte counter."""
    return ObjectId(struct.pack(">I", BASE_EPOCH + seconds) + rng.randbytes(5) + counter.to_bytes(3, "big"))


def _catalog(rng: random.Random) -> tuple[list[ObjectId], list[dict[str, Any]]]:
    users = [_object_id(i, rng, i) for i in range(USERS)]
    products = [
        {
            "product_id": _object_id(i, rng, i),
            "sku": f"SKU-{i:05d}",
            "name": f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}",
            "price": rng.randrange(199, 49999) / 100,
        }
        for i in range(PRODUCTS)
    ]
    return users, products


BLOCK = 1000
BLOCK_USERS = 250


def block_user_id(number: int) -> ObjectId:
    """Customer ``number``'s id in the block scheme (a timestamp, then the number)."""
    return ObjectId(struct.pack(">IQ", BASE_EPOCH + number, number))


def iter_orders(n: int, seed: int = SEED, blocks: bool = False) -> Iterator[dict[str, Any]]:
    """``n`` order documents, one at a time; ``blocks`` picks the per-block customers."""
    rng = random.Random(seed)
    users, products = _catalog(rng)
    for i in range(n):
        items = []
        for product in rng.sample(products, rng.randint(1, 5)):
            items.append({**product, "quantity": rng.randint(1, 5)})
        created = BASE_TIME + timedelta(milliseconds=rng.randrange(365 * 86_400_000))
        updated = created + timedelta(milliseconds=rng.randrange(7 * 86_400_000))
        city, state, zip_prefix = rng.choice(CITIES)
        _id = _object_id(i // 16, rng, i)
        if blocks:
            user_id = block_user_id(i // BLOCK * BLOCK_USERS + rng.randrange(BLOCK_USERS))
        else:
            user_id = rng.choice(users)
        yield {
            "_id": _id,
            "user_id": user_id,
            "items": items,
            "total": round(sum(item["price"] * item["quantity"] for item in items), 2),
            "status": rng.choices(STATUSES, STATUS_WEIGHTS)[0],
            "shipping_address": {
                "street": f"{rng.randint(1, 9999)} {rng.choice(STREETS)} St",
                "city": city,
                "state": state,
                "zip": f"{zip_prefix}{rng.randint(0, 99):02d}",
                "country": "US",
            },
            # The index makes the id unique; the random part makes it look real.
            "payment": {"method": rng.choice(METHODS), "txn_id": f"txn_{i:07d}{rng.getrandbits(40):010x}"},
            "created_at": created,
            "updated_at": updated,
        }


def orders(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` order documents, the same ones for the same ``n`` and ``seed``."""
    return list(iter_orders(n, seed))


def batches(docs: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """``docs`` in lists of ``size`` (the last one shorter)."""
    batch: list[dict[str, Any]] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


TIERS = ("basic", "silver", "gold", "platinum")


def customers(seed: int = SEED) -> list[dict[str, Any]]:
    """The ``USERS`` customers that ``orders(n, seed)`` refers to by ``user_id``.

    ``user_ref`` holds the same ObjectId as ``_id`` (a reference key kept
    from another system), so a ``$lookup`` on ``_id`` and one on
    ``user_ref`` join the same customer to every order.
    """
    users, _ = _catalog(random.Random(seed))
    rng = random.Random(seed + 1)
    return [
        {
            "_id": uid,
            "user_ref": uid,
            "name": f"Customer {i:05d}",
            "email": f"customer{i:05d}@example.com",
            "tier": rng.choice(TIERS),
            "joined_at": BASE_TIME - timedelta(milliseconds=rng.randrange(3 * 365 * 86_400_000)),
        }
        for i, uid in enumerate(users)
    ]
