"""The advisor's fixture systems: the schema-design texts' example systems
(the schema-design texts' EXAMPLES.md, "Systems"), each built twice, as the design the
texts warn about ("bad") and the one they recommend ("good"), then run
through a realistic workload with the profiler at level 2 so
``system.profile`` holds what the application did.

``EXPECTED[system]`` is what the advisor must say about the bad design,
written from the design by hand: ``(collection, path, problem,
recommendation)``. A good design, and the healthy system, must draw
nothing. Sizes are scaled to keep the suite fast while keeping outliers
rare (one celebrity among 20,000 users).
"""

from __future__ import annotations

import contextlib
import datetime
import random
from collections.abc import Callable, Iterator
from typing import Any

from bson import ObjectId

T0 = datetime.datetime(2026, 3, 2)
Key = tuple[str, str | None, str, str]

EXPECTED: dict[str, set[Key]] = {
    "blog_comments": {("posts", "comments", "unbounded-array", "bucket")},
    "blog_post_list": {("posts", "author_id", "join-on-read", "extended-reference")},
    "iot": {("readings", "ts", "one-document-per-event", "bucket")},
    "social": {("users", "followers", "huge-reference-array", "parent-reference")},
    "carts": {("carts", "last_modified", "missing-ttl", "ttl-index")},
    "order_prices": {("orders", "items.product_id", "join-on-read", "extended-reference")},
    "parts": {("products", "parts", "join-on-read", "reference-array")},
    "counters": {("posts", "comment_count", "drifting-counter", "computed-field")},
    "stale_copies": {("posts", "author_name", "stale-copy", "extended-reference")},
    "mixed_types": {
        ("orders", "user_id", "mixed-types", "normalize-type"),
        ("orders", "coupon", "mixed-types", "normalize-type"),
    },
    "indexes": {
        ("orders", "user_id", "redundant-index", "drop-index"),
        ("orders", "shipping.city", "unused-index", "drop-index"),
    },
    "categories": {("categories", "parent_id", "join-on-read", "tree-ancestors")},
    "order_status": {("orders", "status", "collection-scan", "partial-index")},
    "word_search": {("articles", "title", "regex-word-search", "text-index")},
    "large_documents": {("reports", None, "large-document", "separate-collection")},
    "addresses": {("addresses", "person_id", "join-on-read", "embed")},
    "host_logs": {("logmsg", "host", "in-memory-sort", "compound-index")},
    "healthy": set(),
}


@contextlib.contextmanager
def profiled(db: Any) -> Iterator[None]:
    db.command("profile", 2)
    try:
        yield
    finally:
        db.command("profile", 0)


def ids(n: int) -> list[ObjectId]:
    return [ObjectId() for _ in range(n)]


def _users(db: Any, rnd: random.Random, n: int) -> list[ObjectId]:
    users = ids(n)
    db.users.insert_many([{"_id": u, "name": f"user {i}", "email": f"u{i}@example.com"} for i, u in enumerate(users)])
    return users


# -- the systems: build(db, good) ------------------------------------------------------------


def blog_comments(db: Any, good: bool, rnd: random.Random) -> None:
    """Blog design B (comments embedded, breaking past a few hundred) against design C (buckets of 100)."""
    sizes = [rnd.randint(0, 30) for _ in range(297)] + [1500, 2200, 3000]
    posts = ids(len(sizes))

    def comment(i: int) -> dict[str, Any]:
        return {"by": f"reader {i % 97}", "text": f"comment {i} on the post", "at": T0 + datetime.timedelta(minutes=i)}

    if not good:
        db.posts.insert_many(
            [
                {"_id": p, "title": f"post {i}", "comments": [comment(j) for j in range(n)]}
                for i, (p, n) in enumerate(zip(posts, sizes, strict=True))
            ]
        )
    else:
        db.posts.insert_many(
            [
                {"_id": p, "title": f"post {i}", "comment_count": n}
                for i, (p, n) in enumerate(zip(posts, sizes, strict=True))
            ]
        )
        buckets = []
        for p, n in zip(posts, sizes, strict=True):
            for b in range(0, n, 100):
                part = [comment(j) for j in range(b, min(n, b + 100))]
                buckets.append({"post_id": p, "bucket": b // 100, "count": len(part), "comments": part})
        db.comment_buckets.insert_many(buckets)
        db.comment_buckets.create_index([("post_id", 1), ("bucket", -1)])
    with profiled(db):
        for _ in range(200):
            post = rnd.choice(posts)
            db.posts.find_one({"_id": post})
            if good:
                db.comment_buckets.find_one({"post_id": post}, sort=[("bucket", -1)])
        for _ in range(100):
            post = rnd.choice(posts[-3:])
            if good:
                db.comment_buckets.update_one(
                    {"post_id": post, "count": {"$lt": 100}},
                    {"$push": {"comments": comment(0)}, "$inc": {"count": 1}, "$setOnInsert": {"bucket": 99}},
                    upsert=True,
                )
                db.posts.update_one({"_id": post}, {"$inc": {"comment_count": 1}})
            else:
                db.posts.update_one({"_id": post}, {"$push": {"comments": comment(0)}})


def blog_post_list(db: Any, good: bool, rnd: random.Random) -> None:
    """A post list that joins users on every read against posts carrying author_name (design D)."""
    users = _users(db, rnd, 500)
    posts = []
    for i in range(3000):
        author = rnd.choice(users)
        post = {
            "title": f"post {i}",
            "body": "text " * 40,
            "author_id": author,
            "created_at": T0 + datetime.timedelta(minutes=i),
        }
        if good:
            post["author_name"] = f"user {users.index(author)}"
        posts.append(post)
    db.posts.insert_many(posts)
    db.posts.create_index([("created_at", -1)])
    with profiled(db):
        for n in range(150):
            page = list(db.posts.find().sort("created_at", -1).skip(20 * (n % 5)).limit(20))
            if not good:
                list(db.users.find({"_id": {"$in": list({p["author_id"] for p in page})}}, {"name": 1}))
            if n % 50 == 0:  # a rename now and then: users are read-mostly
                user = rnd.choice(users)
                db.users.update_one({"_id": user}, {"$set": {"name": f"renamed {n}"}})
                if good:
                    db.posts.update_many({"author_id": user}, {"$set": {"author_name": f"renamed {n}"}})


def iot(db: Any, good: bool, rnd: random.Random) -> None:
    """One document per reading against hourly buckets with pre-computed sums (IoT telemetry)."""
    sensors = [f"s{n:02}" for n in range(10)]
    if not good:
        db.readings.insert_many(
            [
                {
                    "sensor_id": s,
                    "ts": T0 + datetime.timedelta(minutes=m, seconds=rnd.uniform(-3, 3)),
                    "temperature": 20 + rnd.random() * 5,
                    "humidity": 40 + rnd.random() * 10,
                }
                for m in range(1440)
                for s in sensors
            ]
        )
        db.readings.create_index([("sensor_id", 1), ("ts", 1)])
    else:
        buckets = []
        for h in range(24):
            for s in sensors:
                values = {str(m): 20 + rnd.random() * 5 for m in range(60)}
                total = sum(values.values())
                buckets.append(
                    {
                        "sensor_id": s,
                        "hour": T0 + datetime.timedelta(hours=h),
                        "values": values,
                        "count": 60,
                        "sum": total,
                        "avg": total / 60,
                    }
                )
        db.readings_hourly.insert_many(buckets)
        db.readings_hourly.create_index([("sensor_id", 1), ("hour", 1)], unique=True)
    with profiled(db):
        for _ in range(50):
            s = rnd.choice(sensors)
            start = T0 + datetime.timedelta(hours=rnd.randint(0, 20))
            if good:
                list(
                    db.readings_hourly.find(
                        {"sensor_id": s, "hour": {"$gte": start, "$lt": start + datetime.timedelta(hours=3)}}
                    )
                )
            else:
                list(
                    db.readings.find(
                        {"sensor_id": s, "ts": {"$gte": start, "$lt": start + datetime.timedelta(hours=3)}}
                    )
                )


def social(db: Any, good: bool, rnd: random.Random) -> None:
    """A celebrity's followers in one array (one of 20,000 users) against a follows collection with counts."""
    users = ids(20_000)
    celebrity = users[7]
    follows = [(u, celebrity) for u in users[:15_000] if u != celebrity]
    follows += [(rnd.choice(users), rnd.choice(users)) for _ in range(5_000)]
    follows = list(dict.fromkeys((a, b) for a, b in follows if a != b))
    followers: dict[ObjectId, list[ObjectId]] = {u: [] for u in users}
    following: dict[ObjectId, list[ObjectId]] = {u: [] for u in users}
    for a, b in follows:
        following[a].append(b)
        followers[b].append(a)
    if not good:
        db.users.insert_many(
            [
                {"_id": u, "name": f"user {i}", "followers": followers[u], "following": following[u]}
                for i, u in enumerate(users)
            ]
        )
    else:
        db.users.insert_many(
            [
                {
                    "_id": u,
                    "name": f"user {i}",
                    "followers_count": len(followers[u]),
                    "following_count": len(following[u]),
                }
                for i, u in enumerate(users)
            ]
        )
        db.follows.insert_many([{"follower": a, "followee": b} for a, b in follows])
        db.follows.create_index([("followee", 1), ("follower", 1)])
        db.follows.create_index([("follower", 1), ("followee", 1)])
    with profiled(db):
        for _ in range(100):
            user = rnd.choice(users)
            db.users.find_one({"_id": user})
            if good:
                list(db.follows.find({"followee": user}).limit(50))
                list(db.follows.find({"follower": user}).limit(50))
        for _ in range(20):
            a, b = rnd.choice(users), celebrity
            if good:
                db.follows.insert_one({"follower": a, "followee": b})
                db.users.update_one({"_id": a}, {"$inc": {"following_count": 1}})
                db.users.update_one({"_id": b}, {"$inc": {"followers_count": 1}})
            else:
                db.users.update_one({"_id": a}, {"$addToSet": {"following": b}})
                db.users.update_one({"_id": b}, {"$addToSet": {"followers": a}})


def carts(db: Any, good: bool, rnd: random.Random) -> None:
    """Shopping carts with no TTL index against carts expired by one on last_modified."""
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    ids = list(range(2000))
    db.carts.insert_many(
        [
            {
                "_id": i,
                "last_modified": now - datetime.timedelta(days=rnd.uniform(0, 180) if i < 1800 else rnd.uniform(0, 2)),
                "status": "active",
                "items": [
                    {"itemId": 1000 + j, "name": f"item {j}", "price": 100 + j, "quantity": 1}
                    for j in range(rnd.randint(1, 8))
                ],
            }
            for i in ids
        ]
    )
    if good:
        db.carts.create_index("last_modified", expireAfterSeconds=30 * 24 * 3600)
    with profiled(db):
        for _ in range(100):
            cart = rnd.choice(ids[1800:])
            db.carts.find_one({"_id": cart})
            db.carts.update_one(
                {"_id": cart},
                {
                    "$push": {"items": {"itemId": 5000, "name": "bread", "price": 250, "quantity": 1}},
                    "$set": {"last_modified": now},
                },
            )
            db.carts.update_one(
                {"_id": cart, "items.itemId": 5000}, {"$set": {"items.$.quantity": 2, "last_modified": now}}
            )


def order_prices(db: Any, good: bool, rnd: random.Random) -> None:
    """Orders whose line items reference current prices against line items frozen at purchase."""
    users = _users(db, rnd, 300)
    products = ids(200)
    db.products.insert_many(
        [{"_id": p, "sku": f"SKU-{i}", "name": f"product {i}", "price": 1000 + i} for i, p in enumerate(products)]
    )
    orders = []
    for i in range(3000):
        chosen = rnd.sample(range(200), rnd.randint(1, 4))
        if good:
            items = [
                {"product_id": products[j], "sku": f"SKU-{j}", "name": f"product {j}", "price": 900 + j, "quantity": 1}
                for j in chosen
            ]
        else:
            items = [{"product_id": products[j], "quantity": rnd.randint(1, 3)} for j in chosen]
        orders.append(
            {
                "user_id": rnd.choice(users),
                "items": items,
                "status": "shipped",
                "created_at": T0 + datetime.timedelta(hours=i),
            }
        )
    db.orders.insert_many(orders)
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    with profiled(db):
        for n in range(150):
            mine = list(db.orders.find({"user_id": rnd.choice(users)}).sort("created_at", -1).limit(10))
            if not good:
                wanted = list({item["product_id"] for order in mine for item in order["items"]})
                list(db.products.find({"_id": {"$in": wanted}}, {"name": 1, "price": 1}))
            if n % 50 == 0:
                db.products.update_one({"_id": rnd.choice(products)}, {"$inc": {"price": 50}})


def parts(db: Any, good: bool, rnd: random.Random) -> None:
    """A product's hundreds of parts read one by one against one $in over the array of references."""
    part_ids = ids(3000)
    db.parts.insert_many(
        [
            {"_id": p, "partno": f"P-{i}", "name": f"part {i}", "qty": 1, "cost": 10 + i % 7, "price": 20 + i % 9}
            for i, p in enumerate(part_ids)
        ]
    )
    db.products.insert_many(
        [
            {
                "name": f"product {i}",
                "manufacturer": "Acme",
                "catalog_number": 1000 + i,
                "parts": rnd.sample(part_ids, rnd.randint(120, 250)),
            }
            for i in range(100)
        ]
    )
    db.products.create_index("catalog_number", unique=True)
    with profiled(db):
        for _ in range(12 if not good else 40):
            product = db.products.find_one({"catalog_number": 1000 + rnd.randrange(100)})
            if good:
                list(db.parts.find({"_id": {"$in": product["parts"]}}))
            else:
                for part in product["parts"]:
                    db.parts.find_one({"_id": part})


def counters(db: Any, good: bool, rnd: random.Random) -> None:
    """comment_count kept beside the comments (blog design D), drifting in the bad design."""
    posts = ids(500)
    sizes = [rnd.choice([0, 1, 2, 3, 5, 8, 13, 40, 80]) for _ in posts]
    drift = [0 if good or rnd.random() > 0.3 else rnd.randint(1, 5) for _ in posts]
    db.posts.insert_many(
        [
            {"_id": p, "title": f"post {i}", "comment_count": n + d}
            for i, (p, n, d) in enumerate(zip(posts, sizes, drift, strict=True))
        ]
    )
    db.comments.insert_many(
        [
            {"post_id": p, "body": f"comment {j}", "created_at": T0 + datetime.timedelta(minutes=j)}
            for p, n in zip(posts, sizes, strict=True)
            for j in range(n)
        ]
    )
    db.comments.create_index("post_id")
    with profiled(db):
        for _ in range(100):
            post = rnd.choice(posts)
            db.posts.find_one({"_id": post})
            list(db.comments.find({"post_id": post}).sort("created_at", -1).limit(10))


def stale_copies(db: Any, good: bool, rnd: random.Random) -> None:
    """author_name copied beside author_id: kept up to date, or left behind by renames."""
    users = _users(db, rnd, 300)
    authors = [rnd.choice(users) for _ in range(2000)]
    db.posts.insert_many(
        [
            {
                "title": f"post {i}",
                "author_id": a,
                "author_name": f"user {users.index(a)}",
                "created_at": T0 + datetime.timedelta(minutes=i),
            }
            for i, a in enumerate(authors)
        ]
    )
    db.posts.create_index([("created_at", -1)])
    if good:
        db.posts.create_index("author_id")  # the fan-out of a rename finds the copies by index
    with profiled(db):
        for n, user in enumerate(rnd.sample(users, 60)):
            db.users.update_one({"_id": user}, {"$set": {"name": f"renamed {n}"}})
            if good:
                db.posts.update_many({"author_id": user}, {"$set": {"author_name": f"renamed {n}"}})
        for _ in range(100):
            list(db.posts.find().sort("created_at", -1).limit(20))


def mixed_types(db: Any, good: bool, rnd: random.Random) -> None:
    """Ids stored as strings beside ObjectIds, and null beside missing, against one type each."""
    users = _users(db, rnd, 400)
    orders = []
    for i in range(2000):
        user = rnd.choice(users)
        order: dict[str, Any] = {"user_id": user if good or i % 4 else str(user), "total": 100 + i}
        roll = rnd.random()
        if roll < 0.3:
            order["coupon"] = "SAVE10"
        elif roll < 0.5 and not good:
            order["coupon"] = None
        orders.append(order)
    db.orders.insert_many(orders)


def indexes(db: Any, good: bool, rnd: random.Random) -> None:
    """An unused index and a redundant prefix index against the one index the queries use."""
    users = ids(300)
    db.orders.insert_many(
        [
            {
                "user_id": rnd.choice(users),
                "created_at": T0 + datetime.timedelta(hours=i),
                "total": i,
                "shipping": {"city": f"city {i % 40}"},
            }
            for i in range(3000)
        ]
    )
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    if not good:
        db.orders.create_index("user_id")
        db.orders.create_index("shipping.city")
    with profiled(db):
        for _ in range(100):
            list(db.orders.find({"user_id": rnd.choice(users)}).sort("created_at", -1).limit(10))


def categories(db: Any, good: bool, rnd: random.Random) -> None:
    """A category tree walked one level a query for breadcrumbs against an array of ancestors."""
    nodes: list[dict[str, Any]] = []

    def add(parent: dict[str, Any] | None, depth: int, n: int) -> None:
        node: dict[str, Any] = {"_id": ObjectId(), "name": f"category {len(nodes)}", "slug": f"c{len(nodes)}"}
        node["parent_id"] = parent["_id"] if parent else None
        if good:
            above = (
                (parent["ancestors"] + [{"_id": parent["_id"], "name": parent["name"], "slug": parent["slug"]}])
                if parent
                else []
            )
            node["ancestors"] = above
        nodes.append(node)
        if depth < 3:
            for _ in range(n):
                add(node, depth + 1, n)

    for _ in range(5):
        add(None, 0, 4)
    for node in nodes:
        if node["parent_id"] is None:
            del node["parent_id"]  # roots have no parent (not a null one)
    db.categories.insert_many(nodes)
    db.categories.create_index("slug", unique=True)
    if good:
        db.categories.create_index("ancestors._id")
    by_id = {n["_id"]: n for n in nodes}
    leaves = [n for n in nodes if len(n.get("ancestors", [])) == 3 or ("ancestors" not in n and _depth(n, by_id) == 3)]
    with profiled(db):
        for _ in range(60):
            node = db.categories.find_one({"slug": rnd.choice(leaves)["slug"]})
            if good:
                list(db.categories.find({"ancestors._id": node["ancestors"][0]["_id"]}).limit(20))
            else:
                while node.get("parent_id") is not None:
                    node = db.categories.find_one({"_id": node["parent_id"]})


def _depth(node: dict[str, Any], by_id: dict[Any, dict[str, Any]]) -> int:
    depth = 0
    while node.get("parent_id") is not None:
        node = by_id[node["parent_id"]]
        depth += 1
    return depth


def order_status(db: Any, good: bool, rnd: random.Random) -> None:
    """The pending orders queue: a scan of every order against a partial index on status (the texts' orders)."""
    users = ids(500)
    db.orders.insert_many(
        [
            {
                "user_id": rnd.choice(users),
                "status": "pending" if i % 50 == 0 else "processing" if i % 50 == 1 else "shipped",
                "total": 100 + i % 900,
                "created_at": T0 + datetime.timedelta(minutes=i),
            }
            for i in range(10_000)
        ]
    )
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    if good:
        db.orders.create_index("created_at", partialFilterExpression={"status": {"$in": ["pending", "processing"]}})
    with profiled(db):
        for _ in range(30):
            list(db.orders.find({"status": {"$in": ["pending", "processing"]}}).sort("created_at", 1).limit(50))
        for _ in range(50):
            list(db.orders.find({"user_id": rnd.choice(users)}).sort("created_at", -1).limit(10))


WORDS = ["mongodb", "schema", "index", "bucket", "design", "query", "shard", "replica", "aggregation", "document"]


def word_search(db: Any, good: bool, rnd: random.Random) -> None:
    """Blog search by $regex over title and body against a text index and $text."""
    db.articles.insert_many(
        [
            {
                "title": " ".join(rnd.sample(WORDS, 3)),
                "body": " ".join(rnd.choice(WORDS) for _ in range(30)),
                "views": i,
            }
            for i in range(1200)
        ]
    )
    if good:
        db.articles.create_index([("title", "text"), ("body", "text")])
    with profiled(db):
        for _ in range(30):
            word = rnd.choice(WORDS)
            if good:
                list(db.articles.find({"$text": {"$search": word}}).limit(20))
            else:
                list(
                    db.articles.find(
                        {
                            "$or": [
                                {"title": {"$regex": word, "$options": "i"}},
                                {"body": {"$regex": word, "$options": "i"}},
                            ]
                        }
                    ).limit(20)
                )


def large_documents(db: Any, good: bool, rnd: random.Random) -> None:
    """A report holding its 9 MiB rendering inline against the rendering in 255 KiB chunks of its own."""
    reports = ids(20)
    blob = bytes(rnd.getrandbits(8) for _ in range(9 * 1024 * 1024)) if not good else b""
    small = b"x" * 10_000
    if not good:
        db.reports.insert_many(
            [{"_id": r, "title": f"report {i}", "pdf": blob if i == 3 else small} for i, r in enumerate(reports)]
        )
    else:
        db.reports.insert_many([{"_id": r, "title": f"report {i}"} for i, r in enumerate(reports)])
        db.reports_pdf.insert_many(
            [{"reports_id": r, "n": n, "data": b"x" * 255 * 1024} for r in reports[:4] for n in range(4)]
        )
        db.reports_pdf.create_index([("reports_id", 1), ("n", 1)])
    with profiled(db):
        for _ in range(20):
            report = rnd.choice(reports)
            db.reports.find_one({"_id": report}, {"title": 1})
            if good:
                list(db.reports_pdf.find({"reports_id": report}).sort("n", 1))


def addresses(db: Any, good: bool, rnd: random.Random) -> None:
    """People and addresses: one-to-few kept apart and joined on every read, against embedded addresses."""
    people = ids(500)
    per = {
        p: [
            {"street": f"{rnd.randint(1, 99)} Main St", "city": "Springfield", "cc": "US"}
            for _ in range(rnd.randint(1, 3))
        ]
        for p in people
    }
    if good:
        db.people.insert_many(
            [{"_id": p, "name": f"person {i}", "ssn": f"000-{i:04}", "addresses": per[p]} for i, p in enumerate(people)]
        )
    else:
        db.people.insert_many([{"_id": p, "name": f"person {i}", "ssn": f"000-{i:04}"} for i, p in enumerate(people)])
        db.addresses.insert_many([{"person_id": p, **a} for p in people for a in per[p]])
        db.addresses.create_index("person_id")
    with profiled(db):
        for _ in range(100):
            person = rnd.choice(people)
            db.people.find_one({"_id": person})
            if not good:
                list(db.addresses.find({"person_id": person}))


def host_logs(db: Any, good: bool, rnd: random.Random) -> None:
    """Hosts and log messages: the latest messages of a host sorted in memory, against an index in ESR order."""
    hosts = ids(10)
    db.hosts.insert_many([{"_id": h, "name": f"host{i}", "ipaddr": f"10.0.0.{i}"} for i, h in enumerate(hosts)])
    db.hosts.create_index("ipaddr", unique=True)
    moment = T0
    messages = []
    for i in range(15_000):
        moment += datetime.timedelta(seconds=rnd.expovariate(1 / 7))  # log lines come when something happens
        messages.append({"time": moment, "message": f"event {i}", "host": rnd.choice(hosts)})
    db.logmsg.insert_many(messages)
    db.logmsg.create_index([("host", 1), ("time", -1)] if good else [("host", 1)])
    with profiled(db):
        for _ in range(30):
            n = rnd.randrange(10)
            host = db.hosts.find_one({"ipaddr": f"10.0.0.{n}"})
            list(db.logmsg.find({"host": host["_id"]}).sort("time", -1).limit(100))


def healthy(db: Any, good: bool, rnd: random.Random) -> None:
    """Ordinary users, orders and events, designed and indexed as the texts say: nothing to flag."""
    users = ids(2000)
    db.users.insert_many(
        [
            {
                "_id": u,
                "username": f"user{i}",
                "email": f"user{i}@example.com",
                "addresses": [{"city": "Springfield", "zip": f"{10000 + i}"}] * rnd.randint(1, 2),
                "created_at": T0 - datetime.timedelta(days=rnd.randint(1, 900)),
            }
            for i, u in enumerate(users)
        ]
    )
    db.users.create_index("username", unique=True)
    db.orders.insert_many(
        [
            {
                "user_id": rnd.choice(users),
                "items": [
                    {"sku": f"SKU-{j}", "name": f"product {j}", "price": 100 + j, "quantity": 1}
                    for j in rnd.sample(range(50), 2)
                ],
                "total": 500,
                "status": rnd.choice(["shipped", "shipped", "shipped", "delivered", "cancelled"]),
                "created_at": T0 - datetime.timedelta(minutes=rnd.randint(0, 300_000)),
            }
            for _ in range(5000)
        ]
    )
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    moment = T0 - datetime.timedelta(days=7)
    events = []
    for _ in range(20_000):
        moment += datetime.timedelta(seconds=rnd.expovariate(1 / 30))
        events.append(
            {"user_id": rnd.choice(users), "type": rnd.choice(["view", "click", "search", "cart", "buy"]), "at": moment}
        )
    db.events.insert_many(events)
    db.events.create_index([("user_id", 1), ("at", -1)])
    with profiled(db):
        for _ in range(100):
            i = rnd.randrange(2000)
            user = db.users.find_one({"username": f"user{i}"})
            list(db.orders.find({"user_id": user["_id"]}).sort("created_at", -1).limit(10))
            list(db.events.find({"user_id": user["_id"]}).sort("at", -1).limit(20))
            db.events.insert_one({"user_id": user["_id"], "type": "view", "at": moment})


SYSTEMS: dict[str, Callable[[Any, bool, random.Random], None]] = {
    "blog_comments": blog_comments,
    "blog_post_list": blog_post_list,
    "iot": iot,
    "social": social,
    "carts": carts,
    "order_prices": order_prices,
    "parts": parts,
    "counters": counters,
    "stale_copies": stale_copies,
    "mixed_types": mixed_types,
    "indexes": indexes,
    "categories": categories,
    "order_status": order_status,
    "word_search": word_search,
    "large_documents": large_documents,
    "addresses": addresses,
    "host_logs": host_logs,
    "healthy": healthy,
}


def build(client: Any, system: str, good: bool) -> Any:
    db = client[f"{system}_{'good' if good else 'bad'}"]
    SYSTEMS[system](db, good, random.Random(f"{system}-{good}"))
    return db
