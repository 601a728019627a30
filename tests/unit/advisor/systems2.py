"""The advisor's second fixture set: systems the first (systems.py) lacks,
from MongoDB's pattern catalogue ("Building with Patterns") and the
schema-design texts' pitfalls, each built twice, as the design the
patterns warn about ("bad") and the one they recommend ("good"), then run
through a workload of concurrent requests with the profiler at level 2.

A system is ``build(db, good, rnd)`` (the data, from one thread) and
``serve(worker, good, rnd)`` (one request on one worker's database: the
test runs requests from several threads at once, embedded through one
client, over the wire through one connection per worker, as application
workers do). ``EXPECTED2[system]`` is what the advisor must say about the
bad design, written from the design by hand; a good design must draw
nothing.

Sources: https://www.mongodb.com/blog/post/building-with-patterns-a-summary
(attribute, polymorphic, subset, extended reference, computed, schema
versioning, archive), the manual's data-modeling pages, and the texts'
publishers and books (EXAMPLES.md).
"""

from __future__ import annotations

import datetime
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .systems import ids as _ids
from .systems import profiled

Key = tuple[str, str | None, str, str]
NOW = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
WORKERS = 4

EXPECTED2: dict[str, set[Key]] = {
    "attributes": {("products", "specs", "sparse-attributes", "attribute")},
    "polymorphic": {("cars", "owner_id", "split-collections", "polymorphic")},
    "versioned": {("customers", "address", "mixed-types", "schema-versioning")},
    "dashboard": {("orders", "customer_id", "join-on-read", "extended-reference")},
    "top_rated": {("reviews", "product_id", "recomputed-aggregate", "computed")},
    "publishers": {("books", "publisher", "repeated-subdocument", "parent-reference")},
    "subset": {("products", "reviews", "unread-array", "subset")},
    "archive": {("orders", "created_at", "cold-documents", "archive")},
    "sessions": {("users", "referral_code", "sparse-field-index", "partial-index")},
}


# -- attributes: products with category-specific specs --------------------------------------------

SPECS: dict[str, dict[str, Callable[[random.Random], Any]]] = {
    "laptop": {
        "ram_gb": lambda r: r.choice([8, 16, 32, 64]),
        "cpu": lambda r: r.choice(["i5", "i7", "m2", "ryzen7"]),
        "screen_in": lambda r: r.choice([13.3, 14.0, 15.6]),
        "ssd_gb": lambda r: r.choice([256, 512, 1024]),
    },
    "phone": {
        "storage_gb": lambda r: r.choice([64, 128, 256]),
        "screen_in": lambda r: r.choice([6.1, 6.7]),
        "camera_mp": lambda r: r.choice([12, 48, 50]),
        "color": lambda r: r.choice(["black", "white", "blue"]),
    },
    "tv": {
        "screen_in": lambda r: r.choice([43, 55, 65, 77]),
        "resolution": lambda r: r.choice(["4k", "8k"]),
        "hdr": lambda r: r.random() < 0.7,
        "refresh_hz": lambda r: r.choice([60, 120]),
    },
    "headphones": {
        "wireless": lambda r: r.random() < 0.8,
        "anc": lambda r: r.random() < 0.5,
        "battery_h": lambda r: r.choice([20, 30, 40]),
        "color": lambda r: r.choice(["black", "silver"]),
    },
    "camera": {
        "megapixels": lambda r: r.choice([24, 33, 45]),
        "sensor": lambda r: r.choice(["aps-c", "full frame"]),
        "mount": lambda r: r.choice(["E", "RF", "Z"]),
    },
}
SEARCHES: list[tuple[str, Any]] = [
    ("ram_gb", {"$gte": 16}),
    ("cpu", "i7"),
    ("ssd_gb", {"$gte": 512}),
    ("storage_gb", {"$gte": 128}),
    ("color", "blue"),
    ("screen_in", {"$gte": 55}),
    ("resolution", "8k"),
    ("wireless", True),
    ("anc", True),
    ("sensor", "full frame"),
]


def attributes_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Specs as category-specific fields, an index for each searched one, against [{k, v}] pairs under one index."""
    docs = []
    for i in range(3000):
        category = rnd.choice(list(SPECS))
        specs = {name: make(rnd) for name, make in SPECS[category].items()}
        doc: dict[str, Any] = {"name": f"{category} {i}", "category": category, "price": rnd.randint(50, 3000)}
        if good:
            doc["attrs"] = [{"k": k, "v": v} for k, v in specs.items()]
        else:
            doc["specs"] = specs
        docs.append(doc)
    db.products.insert_many(docs)
    db.products.create_index("category")
    if good:
        db.products.create_index([("attrs.k", 1), ("attrs.v", 1)])
    else:
        for name in dict.fromkeys(name for name, _ in SEARCHES):
            db.products.create_index(f"specs.{name}")


def attributes_serve(db: Any, good: bool, rnd: random.Random) -> None:
    if rnd.random() < 0.25:  # browse a category
        list(db.products.find({"category": rnd.choice(list(SPECS))}).limit(20))
        return
    name, test = rnd.choice(SEARCHES)
    if good:
        found = db.products.find({"attrs": {"$elemMatch": {"k": name, "v": test}}}).limit(20)
    else:
        found = db.products.find({f"specs.{name}": test}).limit(20)
    list(found)


# -- polymorphic: one kind of thing in three collections, read together --------------------------

VEHICLES = {
    "car": {"doors": lambda r: r.choice([3, 5]), "fuel": lambda r: r.choice(["petrol", "electric"])},
    "truck": {"capacity": lambda r: r.choice([3.5, 7.5, 18.0]), "axles": lambda r: r.choice([2, 3])},
    "motorcycle": {"capacity": lambda r: f"{r.choice([1, 2])} seats", "cc": lambda r: r.choice([125, 650, 1200])},
}
OWNERS = 600


def polymorphic_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Cars, trucks and motorcycles in a collection each, read together per owner, against one vehicles
    collection with a kind (truck capacity in tonnes, motorcycle capacity in seats: the kind says which)."""
    owners = [f"owner-{i}" for i in range(OWNERS)]
    db.owners.insert_many([{"_id": o, "name": f"owner {i}"} for i, o in enumerate(owners)])
    kinds: dict[str, list[dict[str, Any]]] = {}
    for n in range(3000):
        kind = rnd.choices(list(VEHICLES), [5, 2, 2])[0]
        doc: dict[str, Any] = {
            "owner_id": rnd.choice(owners),
            "make": rnd.choice(["Acme", "Globex", "Initech"]),
            "model": f"model {n % 40}",
            "year": rnd.randint(2000, 2025),
            "plate": f"P-{n:05}",
            **{name: make(rnd) for name, make in VEHICLES[kind].items()},
        }
        if good:
            kinds.setdefault("vehicles", []).append({"kind": kind, **doc})
        else:
            kinds.setdefault(f"{kind}s", []).append(doc)
    for name, docs in kinds.items():
        db[name].insert_many(docs)
        db[name].create_index("owner_id")
        db[name].create_index("plate", unique=True)


def polymorphic_serve(db: Any, good: bool, rnd: random.Random) -> None:
    """The owner's garage (the owner's id comes with the request), or a vehicle found by its plate."""
    names = ["vehicles"] if good else ["cars", "trucks", "motorcycles"]
    test = (
        {"owner_id": f"owner-{rnd.randrange(OWNERS)}"}
        if rnd.random() < 0.7
        else {"plate": f"P-{rnd.randrange(3000):05}"}
    )
    for name in names:
        list(db[name].find(test))


# -- versioned: customers mid-way from a string address to a structured one ----------------------


def versioned_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Addresses moving from a string to {street, city, zip}: schema_version says which (absent: the first),
    against the same mix with nothing to say which."""
    docs = []
    for i in range(4000):
        doc: dict[str, Any] = {"email": f"c{i}@example.com", "name": f"customer {i}"}
        street, city, zip_code = f"{i % 90 + 1} Main St", rnd.choice(["Springfield", "Shelbyville"]), f"{10000 + i}"
        if rnd.random() < 0.6:
            doc["address"] = {"street": street, "city": city, "zip": zip_code}
            if good:
                doc["schema_version"] = 2
        else:
            doc["address"] = f"{street}, {city} {zip_code}"
        docs.append(doc)
    db.customers.insert_many(docs)
    db.customers.create_index("email", unique=True)


def versioned_serve(db: Any, good: bool, rnd: random.Random) -> None:
    email = f"c{rnd.randrange(4000)}@example.com"
    customer = db.customers.find_one({"email": email})
    if rnd.random() < 0.3 and isinstance(customer["address"], str):
        street, _, rest = customer["address"].partition(", ")
        city, _, zip_code = rest.rpartition(" ")
        change: dict[str, Any] = {"address": {"street": street, "city": city, "zip": zip_code}}
        if good:
            change["schema_version"] = 2
        db.customers.update_one({"_id": customer["_id"]}, {"$set": change})


# -- dashboard: the latest open orders with their customer, by $lookup ----------------------------


def dashboard_build(db: Any, good: bool, rnd: random.Random) -> None:
    """A dashboard that $lookups customers on every read, against orders carrying the customer's name and tier."""
    customers = _ids(1000)
    tiers = {c: rnd.choice(["gold", "silver", "bronze"]) for c in customers}
    db.customers.insert_many(
        [{"_id": c, "name": f"customer {i}", "tier": tiers[c], "email": f"c{i}@x.com"} for i, c in enumerate(customers)]
    )
    orders = []
    for i in range(5000):
        c = rnd.choice(customers)
        order: dict[str, Any] = {
            "total": rnd.randint(10, 500),
            "status": "open" if rnd.random() < 0.2 else "closed",
            "created_at": NOW - datetime.timedelta(minutes=i),
        }
        if good:
            order["customer"] = {"_id": c, "name": f"customer {customers.index(c)}", "tier": tiers[c]}
        else:
            order["customer_id"] = c
        orders.append(order)
    db.orders.insert_many(orders)
    db.orders.create_index([("status", 1), ("created_at", -1)])
    db.customers.create_index("email", unique=True)
    if good:
        db.orders.create_index("customer._id")


def dashboard_serve(db: Any, good: bool, rnd: random.Random) -> None:
    head: list[dict[str, Any]] = [{"$match": {"status": "open"}}, {"$sort": {"created_at": -1}}, {"$limit": 50}]
    if good:
        list(db.orders.aggregate([*head, {"$project": {"total": 1, "created_at": 1, "customer": 1}}]))
    else:
        join = {"$lookup": {"from": "customers", "localField": "customer_id", "foreignField": "_id", "as": "customer"}}
        shown = {"$project": {"total": 1, "created_at": 1, "customer.name": 1, "customer.tier": 1}}
        list(db.orders.aggregate([*head, join, {"$unwind": "$customer"}, shown]))


def dashboard_chores(db: Any, good: bool, rnd: random.Random) -> None:
    """Two customers renamed in the window: customers are read-mostly."""
    for _ in range(2):
        c = db.customers.find_one({"email": f"c{rnd.randrange(1000)}@x.com"})
        name = f"renamed {rnd.randrange(10**6)}"
        db.customers.update_one({"_id": c["_id"]}, {"$set": {"name": name}})
        if good:
            db.orders.update_many({"customer._id": c["_id"]}, {"$set": {"customer.name": name}})


# -- top_rated: a $group over every review on every view -----------------------------------------


def top_rated_build(db: Any, good: bool, rnd: random.Random) -> None:
    """The top-rated page groups 20,000 reviews per view, against ratings kept in the products on write."""
    products = _ids(500)
    reviews = []
    sums = {p: [0, 0] for p in products}
    for i in range(5_000):
        p = rnd.choice(products)
        rating = rnd.randint(1, 5)
        sums[p][0] += rating
        sums[p][1] += 1
        reviews.append({"product_id": p, "rating": rating, "text": f"review {i}", "at": NOW})
    db.products.insert_many(
        [
            {"_id": p, "name": f"product {i}"}
            | (
                {"rating_sum": sums[p][0], "rating_count": sums[p][1], "rating": sums[p][0] / sums[p][1]}
                if good
                else {}
            )
            for i, p in enumerate(products)
        ]
    )
    db.reviews.insert_many(reviews)
    db.products.create_index("name", unique=True)
    db.reviews.create_index([("product_id", 1), ("at", -1)])
    if good:
        db.products.create_index([("rating", -1)])


def top_rated_serve(db: Any, good: bool, rnd: random.Random) -> None:
    roll = rnd.random()
    if roll < 0.3:
        if good:
            list(db.products.find({}, {"name": 1, "rating": 1}).sort("rating", -1).limit(10))
        else:
            list(
                db.reviews.aggregate(
                    [
                        {"$group": {"_id": "$product_id", "avg": {"$avg": "$rating"}, "n": {"$sum": 1}}},
                        {"$match": {"n": {"$gte": 5}}},
                        {"$sort": {"avg": -1}},
                        {"$limit": 10},
                    ]
                )
            )
    elif roll < 0.9:
        product = db.products.find_one({"name": f"product {rnd.randrange(500)}"})
        list(db.reviews.find({"product_id": product["_id"]}).sort("at", -1).limit(5))
    else:
        product = db.products.find_one({"name": f"product {rnd.randrange(500)}"})
        rating = rnd.randint(1, 5)
        db.reviews.insert_one({"product_id": product["_id"], "rating": rating, "text": "new", "at": NOW})
        if good:
            db.products.update_one(
                {"_id": product["_id"]},
                [
                    {
                        "$set": {
                            "rating_sum": {"$add": ["$rating_sum", rating]},
                            "rating_count": {"$add": ["$rating_count", 1]},
                        }
                    },
                    {"$set": {"rating": {"$divide": ["$rating_sum", "$rating_count"]}}},
                ],
            )


# -- publishers: the publisher repeated in every book ---------------------------------------------

PUBLISHERS = [
    {"name": f"Press {n}", "city": city, "country": "US", "founded": 1900 + n}
    for n, city in enumerate(["New York", "Boston", "Chicago", "Austin", "Denver"] * 5)
]


def publishers_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Each book embedding its publisher (90 copies already disagree) against books holding publisher_id."""
    ids = _ids(len(PUBLISHERS))
    if good:
        db.publishers.insert_many([{"_id": i, **p} for i, p in zip(ids, PUBLISHERS, strict=True)])
    books = []
    for n in range(6000):
        k = rnd.randrange(len(PUBLISHERS))
        book: dict[str, Any] = {"title": f"book {n}", "isbn": f"978-{n:07}", "year": rnd.randint(1950, 2025)}
        if good:
            book["publisher_id"] = ids[k]
        else:
            publisher = dict(PUBLISHERS[k])
            if n % 66 == 0:  # a move, or a typo, copied into some books only
                publisher["city"] = publisher["city"].upper()
            book["publisher"] = publisher
        books.append(book)
    db.books.insert_many(books)
    db.books.create_index("isbn", unique=True)
    db.books.create_index("publisher_id" if good else "publisher.name")


def publishers_serve(db: Any, good: bool, rnd: random.Random) -> None:
    book = db.books.find_one({"isbn": f"978-{rnd.randrange(6000):07}"})
    if good:
        db.publishers.find_one({"_id": book["publisher_id"]})
        list(db.books.find({"publisher_id": book["publisher_id"]}).sort("year", -1).limit(10))
    else:
        list(db.books.find({"publisher.name": book["publisher"]["name"]}).sort("year", -1).limit(10))


# -- subset: every review embedded, the page shows ten --------------------------------------------


def subset_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Products embedding every review while the page shows the latest ten, against the latest ten
    embedded ($push with $slice) and the rest in reviews."""
    products = _ids(300)
    docs, reviews = [], []
    for i, p in enumerate(products):
        mine = [
            {"by": f"reader {j % 50}", "rating": rnd.randint(1, 5), "text": "lorem ipsum dolor sit amet " * 8, "n": j}
            for j in range(rnd.randint(20, 160))
        ]
        doc: dict[str, Any] = {"_id": p, "name": f"product {i}", "price": rnd.randint(5, 500)}
        if good:
            doc["recent_reviews"] = mine[-10:]
            reviews += [{"product_id": p, **r} for r in mine]
        else:
            doc["reviews"] = mine
        docs.append(doc)
    db.products.insert_many(docs)
    db.products.create_index("name", unique=True)
    if good:
        db.reviews.insert_many(reviews)
        db.reviews.create_index([("product_id", 1), ("n", -1)])


def subset_serve(db: Any, good: bool, rnd: random.Random) -> None:
    product = db.products.find_one({"name": f"product {rnd.randrange(300)}"}, {"_id": 1})
    if rnd.random() < 0.85:
        if good:
            db.products.find_one({"_id": product["_id"]})
        else:
            db.products.find_one({"_id": product["_id"]}, {"name": 1, "price": 1, "reviews": {"$slice": -10}})
        return
    review = {"by": "reader 1", "rating": 5, "text": "new review", "n": 10_000}
    if good:
        db.reviews.insert_one({"product_id": product["_id"], **review})
        db.products.update_one(
            {"_id": product["_id"]}, {"$push": {"recent_reviews": {"$each": [review], "$slice": -10}}}
        )
    else:
        db.products.update_one({"_id": product["_id"]}, {"$push": {"reviews": review}})


# -- archive: five years of orders, the application reads the last six months ---------------------


def archive_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Five years of orders in one collection while every read asks for the last six months, against the
    orders older than 200 days moved to orders_archive."""
    users = _ids(400)
    orders = [
        {
            "user_id": rnd.choice(users),
            "total": rnd.randint(10, 900),
            "status": "delivered",
            "created_at": NOW - datetime.timedelta(days=rnd.uniform(0, 5 * 365)),
        }
        for _ in range(6_000)
    ]
    kept = NOW - datetime.timedelta(days=200)  # the good design archives what is older than this
    recent = [o for o in orders if o["created_at"] >= kept]
    db.users.insert_many([{"_id": u, "name": f"user {i}"} for i, u in enumerate(users)])
    db.users.create_index("name", unique=True)
    db.orders.insert_many(recent if good else orders)
    if good:
        db.orders_archive.insert_many([o for o in orders if o["created_at"] < kept])
        db.orders_archive.create_index([("user_id", 1), ("created_at", -1)])
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    db.orders.create_index([("created_at", -1)])


def archive_serve(db: Any, good: bool, rnd: random.Random) -> None:
    user = db.users.find_one({"name": f"user {rnd.randrange(400)}"})
    since = NOW - datetime.timedelta(days=180)
    if rnd.random() < 0.7:
        list(db.orders.find({"user_id": user["_id"], "created_at": {"$gte": since}}).sort("created_at", -1))
    else:
        list(
            db.orders.find({"created_at": {"$gte": NOW - datetime.timedelta(days=30)}}).sort("created_at", -1).limit(50)
        )


# -- sessions: a healthy application (TTL, partial indexes), and one index too many ---------------


def sessions_build(db: Any, good: bool, rnd: random.Random) -> None:
    """Users, sessions that expire (a TTL index with expireAfterSeconds 0), orders with a partial index for the
    pending queue; referral codes (5% of users) indexed partially, or (bad) by a full index."""
    users = _ids(3000)
    db.users.insert_many(
        [
            {"_id": u, "email": f"u{i}@example.com", "name": f"user {i}"}
            | ({"referral_code": f"REF{i:05}"} if i % 20 == 0 else {})
            for i, u in enumerate(users)
        ]
    )
    db.users.create_index("email", unique=True)
    if good:
        db.users.create_index("referral_code", partialFilterExpression={"referral_code": {"$exists": True}})
    else:
        db.users.create_index("referral_code")
    db.sessions.insert_many(
        [
            {
                "_id": f"s{n}",
                "user_id": rnd.choice(users),
                "expires_at": NOW + datetime.timedelta(hours=rnd.uniform(1, 48)),
            }
            for n in range(5000)
        ]
    )
    db.sessions.create_index("expires_at", expireAfterSeconds=0)
    db.orders.insert_many(
        [
            {
                "user_id": rnd.choice(users),
                "status": "pending" if i % 40 == 0 else "shipped",
                "total": rnd.randint(5, 500),
                "created_at": NOW - datetime.timedelta(minutes=7 * i),
            }
            for i in range(6000)
        ]
    )
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    db.orders.create_index([("created_at", 1)], partialFilterExpression={"status": "pending"})


def sessions_serve(db: Any, good: bool, rnd: random.Random) -> None:
    roll = rnd.random()
    if roll < 0.5:  # a page: the session, its user, the user's latest orders
        session = db.sessions.find_one({"_id": f"s{rnd.randrange(5000)}"})
        user = db.users.find_one({"_id": session["user_id"]})
        list(db.orders.find({"user_id": user["_id"]}).sort("created_at", -1).limit(10))
    elif roll < 0.7:
        db.users.find_one({"email": f"u{rnd.randrange(3000)}@example.com"})
    elif roll < 0.85:
        db.users.find_one({"referral_code": f"REF{20 * rnd.randrange(150):05}"})
    else:
        list(db.orders.find({"status": "pending"}).sort("created_at", 1).limit(20))


@dataclass
class System:
    build: Callable[[Any, bool, random.Random], None]
    serve: Callable[[Any, bool, random.Random], None]
    requests: int
    chores: Callable[[Any, bool, random.Random], None] | None = None  # once, by the first worker, after its requests


SYSTEMS2: dict[str, System] = {
    "attributes": System(attributes_build, attributes_serve, 200),
    "polymorphic": System(polymorphic_build, polymorphic_serve, 120),
    "versioned": System(versioned_build, versioned_serve, 200),
    "dashboard": System(dashboard_build, dashboard_serve, 120, dashboard_chores),
    "top_rated": System(top_rated_build, top_rated_serve, 80),
    "publishers": System(publishers_build, publishers_serve, 150),
    "subset": System(subset_build, subset_serve, 200),
    "archive": System(archive_build, archive_serve, 150),
    "sessions": System(sessions_build, sessions_serve, 300),
}


def build(db: Any, system: str, good: bool, workers: list[Any]) -> Any:
    """Build ``system`` in ``db``, then serve its requests from ``workers`` (a database handle each,
    each used by a thread of its own) with the profiler on; returns ``db``."""
    spec = SYSTEMS2[system]
    spec.build(db, good, random.Random(f"{system}-{good}"))
    with profiled(db):
        threads = [
            threading.Thread(target=_work, args=(spec, worker, good, random.Random(f"{system}-{good}-{n}"), n == 0))
            for n, worker in enumerate(workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return db


def _work(spec: System, db: Any, good: bool, rnd: random.Random, first: bool) -> None:
    for _ in range(spec.requests // WORKERS):
        spec.serve(db, good, rnd)
    if first and spec.chores is not None:
        spec.chores(db, good, rnd)
