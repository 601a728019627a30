"""The schema-design systems of the schema-design texts' EXAMPLES.md, end to end.

Each test builds one system through ``foliodb.MongoClient(":memory:")`` (the
``client`` fixture), runs the operations the schema-design texts run, and
checks the results they promise. Expected values are written out by hand;
each test cites the manual pages of the operations it relies on.
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any

import pytest
from bson import ObjectId
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

MANUAL = "https://www.mongodb.com/docs/manual/"
NULL = MANUAL + "tutorial/query-for-null-fields/"
EXISTS = MANUAL + "reference/operator/query/exists/"
PUSH = MANUAL + "reference/operator/update/push/"
SLICE = MANUAL + "reference/operator/update/slice/"
POSITIONAL = MANUAL + "reference/operator/update/positional/"
NE = MANUAL + "reference/operator/query/ne/"
IN = MANUAL + "reference/operator/query/in/"
ARRAYS = MANUAL + "tutorial/query-arrays/"
ARRAY_DOCS = MANUAL + "tutorial/query-array-of-documents/"
SET = MANUAL + "reference/operator/update/set/"
INC = MANUAL + "reference/operator/update/inc/"
UPSERT = MANUAL + "reference/method/db.collection.updateOne/#upsert"
UNIQUE = MANUAL + "core/index-unique/"
SPARSE = MANUAL + "core/index-sparse/"
SORT_LIMIT = MANUAL + "reference/method/cursor.sort/"
UPDATE_MANY = MANUAL + "reference/method/db.collection.updateMany/"
OBJECTID = MANUAL + "reference/bson-types/#objectid"
UNWIND = MANUAL + "reference/operator/aggregation/unwind/"
GROUP = MANUAL + "reference/operator/aggregation/group/"
TEXT = MANUAL + "reference/operator/query/text/"


# Pitfalls users hit.


def test_null_matches_null_and_missing_and_exists_tells_them_apart(db: Any) -> None:
    db.things.insert_many([{"_id": 1, "foo": None}, {"_id": 2}, {"_id": 3, "foo": 0}])
    assert sorted(d["_id"] for d in db.things.find({"foo": None})) == [1, 2], NULL
    assert [d["_id"] for d in db.things.find({"foo": {"$exists": True}}).sort("_id")] == [1, 3], EXISTS
    assert [d["_id"] for d in db.things.find({"foo": {"$exists": False}})] == [2], EXISTS
    assert [d["_id"] for d in db.things.find({"foo": {"$type": "null"}})] == [1], NULL
    assert db.things.count_documents({"foo": {"$ne": None}}) == 1, NULL


def test_a_string_id_never_matches_an_objectid(db: Any) -> None:
    oid = ObjectId()
    db.users.insert_one({"_id": oid, "name": "ann"})
    assert db.users.find_one({"_id": str(oid)}) is None, OBJECTID
    assert db.users.find_one({"_id": oid})["name"] == "ann", OBJECTID
    assert db.users.find_one({"_id": ObjectId(str(oid))})["name"] == "ann", OBJECTID
    assert db.users.count_documents({"_id": {"$in": [str(oid)]}}) == 0, IN


def test_after_a_schema_change_update_many_adds_a_default(db: Any) -> None:
    db.accounts.insert_many([{"_id": n, "name": f"old{n}"} for n in range(5)])
    # The application now writes a "plan"; old documents lack it until a migration.
    db.accounts.insert_many([{"_id": n, "name": f"new{n}", "plan": "pro"} for n in range(5, 8)])
    assert db.accounts.count_documents({"plan": "free"}) == 0
    result = db.accounts.update_many({"plan": {"$exists": False}}, {"$set": {"plan": "free"}})
    assert (result.matched_count, result.modified_count) == (5, 5), UPDATE_MANY
    assert db.accounts.count_documents({"plan": "free"}) == 5, UPDATE_MANY
    assert db.accounts.count_documents({"plan": "pro"}) == 3, UPDATE_MANY
    assert db.accounts.update_many({"plan": {"$exists": False}}, {"$set": {"plan": "free"}}).matched_count == 0


# People and addresses: one-to-few, embedded.


def test_people_with_embedded_addresses(db: Any) -> None:
    db.person.insert_many([
        {"_id": 1, "name": "Kate Monster", "ssn": "123-456-7890", "addresses": [
            {"street": "123 Sesame St", "city": "Anytown", "cc": "USA"},
            {"street": "123 Avenue Q", "city": "New York", "cc": "USA"},
        ]},
        {"_id": 2, "name": "Rod", "ssn": "555-555-5555", "addresses": [{"street": "1 Main", "city": "Anytown", "cc": "CAN"}]},
    ])  # fmt: skip
    assert [p["_id"] for p in db.person.find({"addresses.city": "Anytown"}).sort("_id")] == [1, 2], ARRAY_DOCS
    assert [p["_id"] for p in db.person.find({"addresses": {"$elemMatch": {"city": "Anytown", "cc": "USA"}}})] == [1]
    assert [p["_id"] for p in db.person.find({"addresses.city": "New York", "addresses.cc": "CAN"})] == [], ARRAY_DOCS
    assert [p["_id"] for p in db.person.find({"addresses.1.city": "New York"})] == [1], ARRAY_DOCS


# Products and parts: one-to-many, an array of references.


def test_products_and_parts_application_join(db: Any) -> None:
    parts = [
        {"_id": ObjectId(), "partno": f"123-aff-{n}", "name": f"#{n} grommet", "qty": 94, "cost": 0.94, "price": 3.99}
        for n in range(4)
    ]
    db.parts.insert_many(parts)
    db.products.create_index("catalog_number")
    db.products.insert_one(
        {
            "name": "left-handed smoke shifter",
            "manufacturer": "Acme Corp",
            "catalog_number": 1234,
            "parts": [parts[0]["_id"], parts[2]["_id"]],
        }
    )
    product = db.products.find_one({"catalog_number": 1234})
    found = db.parts.find({"_id": {"$in": product["parts"]}}).sort("partno")
    assert [p["partno"] for p in found] == ["123-aff-0", "123-aff-2"], IN
    # Which products use part 2? The array of references answers by equality.
    assert db.products.count_documents({"parts": parts[2]["_id"]}) == 1, ARRAYS


# Hosts and log messages: one-to-squillions, a parent reference.


def test_hosts_and_latest_log_messages_through_an_index(db: Any) -> None:
    db.hosts.create_index("ipaddr", unique=True)
    goofy = db.hosts.insert_one({"name": "goofy.example.com", "ipaddr": "127.66.66.66"}).inserted_id
    other = db.hosts.insert_one({"name": "other.example.com", "ipaddr": "127.0.0.2"}).inserted_id
    with pytest.raises(DuplicateKeyError):
        db.hosts.insert_one({"name": "copy", "ipaddr": "127.66.66.66"})
    start = datetime.datetime(2024, 1, 1)
    db.logmsg.insert_many(
        {
            "time": start + datetime.timedelta(seconds=n),
            "message": f"cpu is on fire {n}",
            "host": goofy if n % 4 else other,
        }
        for n in range(7000)
    )
    db.logmsg.create_index([("host", ASCENDING), ("time", DESCENDING)])
    latest = list(db.logmsg.find({"host": goofy}).sort("time", DESCENDING).limit(5000))
    expected_times = [start + datetime.timedelta(seconds=n) for n in range(6999, -1, -1) if n % 4][:5000]
    assert [m["time"] for m in latest] == expected_times, SORT_LIMIT
    assert all(m["host"] == goofy for m in latest)
    plan = db.logmsg.find({"host": goofy}).sort("time", DESCENDING).limit(5000).explain()
    assert "IXSCAN" in repr(plan["queryPlanner"]["winningPlan"]), SORT_LIMIT


# Blog: comments bounded with $push + $each + $slice, and text search.


def test_blog_keeps_the_last_100_comments(db: Any) -> None:
    post = db.posts.insert_one(
        {"title": "Schema design", "body": "...", "comments": [], "comment_count": 0}
    ).inserted_id
    for n in range(150):
        comment = {"author": {"_id": n % 7, "name": f"user{n % 7}"}, "body": f"comment {n}"}
        db.posts.update_one(
            {"_id": post},
            {"$push": {"comments": {"$each": [comment], "$slice": -100}}, "$inc": {"comment_count": 1}},
        )
    doc = db.posts.find_one({"_id": post})
    assert len(doc["comments"]) == 100, SLICE
    assert [c["body"] for c in doc["comments"]] == [f"comment {n}" for n in range(50, 150)], SLICE
    assert doc["comment_count"] == 150, INC


def test_blog_comment_buckets_and_text_search(db: Any) -> None:
    post = db.posts.insert_one(
        {"title": "MongoDB schema design", "body": "embed or reference", "comment_count": 0}
    ).inserted_id
    db.posts.insert_one({"title": "Cooking", "body": "pasta and sauce", "comment_count": 0})
    db.posts.create_index([("title", "text"), ("body", "text")])
    for n in range(250):
        bucket = n // 100
        db.comment_buckets.update_one(
            {"post_id": post, "bucket_index": bucket},
            {"$push": {"comments": {"body": f"c{n}"}}},
            upsert=True,
        )
        db.posts.update_one({"_id": post}, {"$inc": {"comment_count": 1}})
    sizes = {b["bucket_index"]: len(b["comments"]) for b in db.comment_buckets.find({"post_id": post})}
    assert sizes == {0: 100, 1: 100, 2: 50}, UPSERT
    found = [p["title"] for p in db.posts.find({"$text": {"$search": "mongodb schema"}})]
    assert found == ["MongoDB schema design"], TEXT


# Orders with snapshots: positional update of a line item, revenue by SKU.


def test_orders_positional_update_changes_only_the_matched_item(db: Any) -> None:
    db.orders.insert_one({"_id": 1, "user_id": 7, "status": "pending", "items": [
        {"product_id": 10, "sku": "A-1", "name": "Pen", "price": 150, "quantity": 1},
        {"product_id": 11, "sku": "B-2", "name": "Ink", "price": 900, "quantity": 2},
        {"product_id": 12, "sku": "C-3", "name": "Pad", "price": 300, "quantity": 3},
    ]})  # fmt: skip
    result = db.orders.update_one({"_id": 1, "items.sku": "B-2"}, {"$set": {"items.$.quantity": 5}})
    assert (result.matched_count, result.modified_count) == (1, 1), POSITIONAL
    items = db.orders.find_one({"_id": 1})["items"]
    assert [i["quantity"] for i in items] == [1, 5, 3], POSITIONAL
    assert [i["sku"] for i in items] == ["A-1", "B-2", "C-3"]
    assert db.orders.update_one({"_id": 1, "items.sku": "Z-9"}, {"$set": {"items.$.quantity": 9}}).matched_count == 0


def test_orders_revenue_by_sku(db: Any) -> None:
    db.orders.insert_many([
        {"status": "shipped", "items": [{"sku": "A", "price": 100, "quantity": 2}, {"sku": "B", "price": 50, "quantity": 1}]},
        {"status": "shipped", "items": [{"sku": "A", "price": 100, "quantity": 1}]},
        {"status": "pending", "items": [{"sku": "B", "price": 50, "quantity": 10}]},
    ])  # fmt: skip
    revenue = list(db.orders.aggregate([
        {"$match": {"status": "shipped"}},
        {"$unwind": "$items"},
        {"$group": {"_id": "$items.sku", "revenue": {"$sum": {"$multiply": ["$items.price", "$items.quantity"]}}, "count": {"$sum": "$items.quantity"}}},
        {"$sort": {"revenue": -1}},
        {"$limit": 10},
    ]))  # fmt: skip
    assert revenue == [{"_id": "A", "revenue": 300, "count": 3}, {"_id": "B", "revenue": 50, "count": 1}], GROUP


# Shopping cart: positional update by itemId, total quantity across carts.


def test_cart_positional_update_and_total_quantity(db: Any) -> None:
    db.carts.create_index("last_modified", expireAfterSeconds=3600)
    now = datetime.datetime(2024, 6, 1)
    db.carts.insert_many([
        {"_id": "c1", "last_modified": now, "status": "active", "items": [
            {"itemId": 4567, "name": "milk", "price": 199, "quantity": 1},
            {"itemId": 8910, "name": "eggs", "price": 299, "quantity": 2},
        ]},
        {"_id": "c2", "last_modified": now, "status": "active", "items": [{"itemId": 8910, "name": "eggs", "price": 299, "quantity": 3}]},
    ])  # fmt: skip
    db.carts.update_one(
        {"_id": "c1"}, {"$push": {"items": {"itemId": 1111, "name": "bread", "price": 250, "quantity": 1}}}
    )
    db.carts.update_one({"_id": "c1", "items.itemId": 4567}, {"$set": {"items.$.quantity": 5, "last_modified": now}})
    assert [(i["itemId"], i["quantity"]) for i in db.carts.find_one({"_id": "c1"})["items"]] == [
        (4567, 5),
        (8910, 2),
        (1111, 1),
    ], POSITIONAL
    total = list(db.carts.aggregate([
        {"$match": {"items.itemId": 8910}},
        {"$unwind": "$items"},
        {"$match": {"items.itemId": 8910}},
        {"$group": {"_id": None, "total": {"$sum": "$items.quantity"}}},
    ]))  # fmt: skip
    assert total == [{"_id": None, "total": 5}], UNWIND


# Social network: a follows collection with counters, timelines by fan-out on write.


def test_follows_with_counters(db: Any) -> None:
    db.users.insert_many([{"_id": u, "following_count": 0, "followers_count": 0} for u in ("ann", "bob", "cy")])
    for follower, followee in [("ann", "bob"), ("cy", "bob"), ("bob", "ann")]:
        db.follows.insert_one({"follower": follower, "followee": followee})
        db.users.update_one({"_id": follower}, {"$inc": {"following_count": 1}})
        db.users.update_one({"_id": followee}, {"$inc": {"followers_count": 1}})
    counts = {u["_id"]: (u["following_count"], u["followers_count"]) for u in db.users.find()}
    assert counts == {"ann": (1, 1), "bob": (1, 2), "cy": (1, 0)}, INC
    assert sorted(f["follower"] for f in db.follows.find({"followee": "bob"})) == ["ann", "cy"]


def test_timeline_fan_out_on_write_in_buckets_of_1000(db: Any) -> None:
    db.timeline.create_index([("owner", ASCENDING), ("count", ASCENDING)])
    buckets = itertools.count()
    for n in range(2001):
        result = db.timeline.update_one(
            {"owner": "ann", "count": {"$lt": 1000}},
            {"$push": {"posts": {"post_id": n}}, "$inc": {"count": 1}},
            upsert=True,
        )
        if result.upserted_id is not None:
            # The equality on owner seeds the new bucket; count starts from $inc.
            db.timeline.update_one({"_id": result.upserted_id}, {"$set": {"bucket": next(buckets)}})
    found = sorted((b["bucket"], b["count"], len(b["posts"])) for b in db.timeline.find({"owner": "ann"}))
    assert found == [(0, 1000, 1000), (1, 1000, 1000), (2, 1, 1)], UPSERT
    last = db.timeline.find_one({"owner": "ann", "bucket": 2})
    assert last["posts"] == [{"post_id": 2000}]


# IoT / telemetry: heterogeneous readings, a sparse index, hourly buckets.


def test_heterogeneous_readings_and_a_sparse_index(db: Any) -> None:
    db.readings.insert_many([
        {"_id": 1, "flight": "LH1", "location": [8.5, 50.0]},
        {"_id": 2, "flight": "LH1", "engine": {"rpm": 9000}},
        {"_id": 3, "flight": "LH1", "speed": 840},
        {"_id": 4, "flight": "LH1", "speed": 850, "elevation": 11000},  # a new field, no migration
    ])  # fmt: skip
    db.readings.create_index("location", sparse=True)
    assert [r["_id"] for r in db.readings.find({"location": {"$exists": True}})] == [1], SPARSE
    assert [r["_id"] for r in db.readings.find({"elevation": {"$gt": 10000}})] == [4]
    assert [r["_id"] for r in db.readings.find({"speed": {"$gte": 840}}).sort("_id")] == [3, 4]


def test_hourly_bucket_set_on_the_minute_and_inc(db: Any) -> None:
    hour = datetime.datetime(2024, 6, 1, 13)
    key = {"flight": "LH1", "metric": "speed", "hour": hour}
    readings = {0: 840, 1: 845, 2: 850, 59: 805}
    for minute, value in readings.items():
        db.telemetry.update_one(
            key, {"$set": {f"values.{minute}": value}, "$inc": {"sum": value, "count": 1}}, upsert=True
        )
    db.telemetry.update_one(key, [{"$set": {"avg": {"$divide": ["$sum", "$count"]}}}])
    doc = db.telemetry.find_one(key, {"_id": 0})
    assert doc == {**key, "values": {"0": 840, "1": 845, "2": 850, "59": 805}, "sum": 3340, "count": 4, "avg": 835.0}, (
        SET
    )


# Catalogue: products, categories, reviews, unique slugs.


def test_catalogue_categories_reviews_and_slugs(db: Any) -> None:
    gardening, tools, kitchen = ObjectId(), ObjectId(), ObjectId()
    db.categories.insert_many([
        {"_id": gardening, "slug": "gardening", "name": "Gardening", "parent_id": None, "ancestors": []},
        {"_id": tools, "slug": "gardening-tools", "name": "Gardening Tools", "parent_id": gardening, "ancestors": [{"_id": gardening, "name": "Gardening", "slug": "gardening"}]},
        {"_id": kitchen, "slug": "kitchen", "name": "Kitchen", "parent_id": None, "ancestors": []},
    ])  # fmt: skip
    db.products.create_index("slug", unique=True)
    wheelbarrow = db.products.insert_one({
        "slug": "wheelbarrow-9092", "sku": "9092", "name": "Extra Large Wheelbarrow",
        "details": {"weight": 47, "weight_units": "lbs", "model_num": 4039283402, "manufacturer": "Acme", "color": "Green"},
        "pricing": {"retail": 589700, "sale": 489700}, "total_reviews": 0, "average_review": 0,
        "category_ids": [gardening, tools], "main_cat_id": tools, "tags": ["tools", "gardening", "soil"],
    }).inserted_id  # fmt: skip
    db.products.insert_one({"slug": "spade", "name": "Spade", "category_ids": [tools], "main_cat_id": tools})
    db.products.insert_one({"slug": "pan", "name": "Pan", "category_ids": [kitchen], "main_cat_id": kitchen})

    # Products of a category; categories of a product.
    assert sorted(p["slug"] for p in db.products.find({"category_ids": tools})) == ["spade", "wheelbarrow-9092"], ARRAYS
    product = db.products.find_one({"_id": wheelbarrow})
    names = sorted(c["name"] for c in db.categories.find({"_id": {"$in": product["category_ids"]}}))
    assert names == ["Gardening", "Gardening Tools"], IN
    assert [c["slug"] for c in db.categories.find({"ancestors._id": gardening})] == ["gardening-tools"], ARRAY_DOCS

    # A duplicate slug fails; the application retries with another.
    with pytest.raises(DuplicateKeyError) as info:
        db.products.insert_one({"slug": "wheelbarrow-9092", "name": "Another Wheelbarrow"})
    assert info.value.code == 11000, UNIQUE
    retry = db.products.insert_one({"slug": "wheelbarrow-9092-2", "name": "Another Wheelbarrow"})
    assert db.products.find_one({"_id": retry.inserted_id})["slug"] == "wheelbarrow-9092-2", UNIQUE

    # A user votes a review helpful at most once.
    review = db.reviews.insert_one(
        {"product_id": wheelbarrow, "title": "Amazing", "rating": 4, "helpful_votes": 0, "voter_ids": []}
    ).inserted_id
    voter = ObjectId()
    vote = {"$push": {"voter_ids": voter}, "$inc": {"helpful_votes": 1}}
    first = db.reviews.update_one({"_id": review, "voter_ids": {"$ne": voter}}, vote)
    second = db.reviews.update_one({"_id": review, "voter_ids": {"$ne": voter}}, vote)
    assert (first.matched_count, second.matched_count, second.modified_count) == (1, 0, 0), NE
    other = db.reviews.update_one({"_id": review, "voter_ids": {"$ne": ObjectId()}}, {"$inc": {"helpful_votes": 1}})
    assert other.matched_count == 1, NE
    doc = db.reviews.find_one({"_id": review})
    assert (doc["helpful_votes"], doc["voter_ids"]) == (2, [voter]), NE


# Publishers and books: the book holds the publisher's id.


def test_publishers_and_books_by_parent_reference(db: Any) -> None:
    oreilly = db.publishers.insert_one(
        {"_id": "oreilly", "name": "O'Reilly Media", "founded": 1980, "location": "CA"}
    ).inserted_id
    db.publishers.insert_one({"_id": "manning", "name": "Manning", "founded": 1990, "location": "NY"})
    db.books.create_index("publisher_id")
    db.books.insert_many([
        {"_id": 123456789, "title": "MongoDB: The Definitive Guide", "author": ["Kristina Chodorow", "Mike Dirolf"], "published_date": datetime.datetime(2010, 9, 24), "pages": 216, "language": "English", "publisher_id": oreilly},
        {"_id": 234567890, "title": "50 Tips and Tricks for MongoDB Developer", "author": "Kristina Chodorow", "published_date": datetime.datetime(2011, 5, 6), "pages": 68, "language": "English", "publisher_id": oreilly},
        {"_id": 345678901, "title": "MongoDB in Action", "author": ["Kyle Banker"], "pages": 312, "publisher_id": "manning"},
    ])  # fmt: skip
    titles = sorted(b["title"] for b in db.books.find({"publisher_id": oreilly}))
    assert titles == ["50 Tips and Tricks for MongoDB Developer", "MongoDB: The Definitive Guide"]
    book = db.books.find_one({"title": "MongoDB in Action"})
    assert db.publishers.find_one({"_id": book["publisher_id"]})["name"] == "Manning"
    assert sorted(b["_id"] for b in db.books.find({"author": "Kristina Chodorow"})) == [123456789, 234567890], ARRAYS
