"""The schema-design advisor on the classic example systems: each rule fires
on the design the texts warn about, with the evidence the data shows, and
stays quiet on the design they recommend.

Systems and rules: EXAMPLES (the schema-design examples) and
https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId

import foliodb
from foliodb.advisor import Recommendation, advise
from foliodb.cli import main

T0 = datetime.datetime(2026, 1, 1)


@pytest.fixture
def db(client: Any) -> Any:
    return client.advice


def kinds(recs: list[Recommendation], collection: str) -> list[str]:
    return [r.kind for r in recs if r.collection == collection]


def only(recs: list[Recommendation], kind: str, collection: str) -> Recommendation:
    found = [r for r in recs if r.kind == kind and r.collection == collection]
    assert len(found) == 1, recs
    return found[0]


def test_embedded_comments_that_grow_should_be_bucketed(db: Any) -> None:
    # Blog design B: comments embedded in the post break past a few hundred.
    db.posts.insert_many(
        [{"title": f"p{n}", "comments": [{"author": "a", "body": "x" * 20} for _ in range(n * 100)]} for n in range(6)]
    )
    rec = only(advise(db), "bucket", "posts")
    assert rec.evidence["path"] == "comments" and rec.evidence["max_length"] == 500
    assert "$slice" in rec.message


def test_few_embedded_addresses_are_fine(db: Any) -> None:
    # People and addresses: one-to-few, embedded, is the recommended design.
    db.people.insert_many([{"name": f"n{i}", "addresses": [{"city": "c"}] * (i % 3)} for i in range(50)])
    assert advise(db) == []


def test_parent_reference_without_index(db: Any) -> None:
    # Hosts and log messages: one-to-squillions; the child's host reference needs an index.
    hosts = [ObjectId() for _ in range(3)]
    db.hosts.insert_many([{"_id": h, "name": f"h{i}", "ipaddr": f"10.0.0.{i}"} for i, h in enumerate(hosts)])
    db.logmsg.insert_many([{"time": T0, "message": "m", "host": hosts[i % 3]} for i in range(600)])
    recs = advise(db)
    rec = only(recs, "index", "logmsg")
    assert rec.action == 'db.logmsg.createIndex({"host": 1})'
    assert (rec.evidence["references"], rec.evidence["children_per_parent_max"]) == ("hosts", 200)
    assert "embed" not in kinds(recs, "logmsg")  # 200 per host is not one-to-few
    db.logmsg.create_index("host")
    assert "index" not in kinds(advise(db), "logmsg")


def test_few_small_children_could_be_embedded(db: Any) -> None:
    people = [ObjectId() for _ in range(20)]
    db.people.insert_many([{"_id": p, "name": "n"} for p in people])
    db.addresses.insert_many([{"person_id": p, "city": "c"} for p in people for _ in range(2)])
    db.addresses.create_index("person_id")
    rec = only(advise(db), "embed", "addresses")
    assert rec.evidence["children_per_parent_max"] == 2


def test_reference_arrays_past_a_thousand_should_move_to_the_child(db: Any) -> None:
    # Products and parts: an array of references suits one-to-many, not one-to-squillions.
    parts = [ObjectId() for _ in range(1500)]
    db.parts.insert_many([{"_id": p, "partno": str(i)} for i, p in enumerate(parts)])
    db.products.insert_many([{"name": "small", "parts": parts[:20]}, {"name": "huge", "parts": parts}])
    rec = only(advise(db), "reference", "products")
    assert rec.evidence["max_length"] == 1500
    db.products.delete_one({"name": "huge"})
    assert "reference" not in kinds(advise(db), "products")


def test_time_series_of_small_readings_should_be_bucketed(db: Any) -> None:
    # IoT telemetry: a document per reading -> a document per sensor per hour.
    db.readings.insert_many(
        [{"sensor": f"s{i % 4}", "ts": T0 + datetime.timedelta(minutes=i), "value": i * 0.5} for i in range(1200)]
    )
    rec = only(advise(db), "bucket", "readings")
    assert (rec.evidence["source"], rec.evidence["sources"], rec.evidence["time"]) == ("sensor", 4, "ts")


def test_denormalized_copies_report_how_many_are_stale(db: Any) -> None:
    # Blog design D: posts keep author_name beside author_id.
    users = [ObjectId() for _ in range(4)]
    db.users.insert_many([{"_id": u, "name": f"user{i}"} for i, u in enumerate(users)])
    db.posts.insert_many([{"author_id": users[i % 4], "author_name": f"user{i % 4}", "t": i} for i in range(40)])
    db.users.update_one({"_id": users[0]}, {"$set": {"name": "renamed"}})
    rec = only(advise(db), "denormalize", "posts")
    assert rec.evidence == {"copied": {"author_name": "name"}, "compared": 40, "stale": 10}
    # Orders with snapshots: item subdocuments {product_id, name, price} copy the product.
    products = [ObjectId() for _ in range(3)]
    db.products.insert_many([{"_id": p, "name": f"prod{i}", "price": 100} for i, p in enumerate(products)])
    db.orders.insert_many([{"items": [{"_id": p, "name": f"prod{i}", "price": 100}]} for i, p in enumerate(products)])
    db.products.update_many({}, {"$set": {"price": 120}})
    snapshot = only(advise(db), "denormalize", "orders")
    assert snapshot.evidence["stale"] == 3 and "snapshot" in snapshot.message


def test_prefix_index_is_redundant(db: Any) -> None:
    db.orders.insert_one({"user_id": 1, "created_at": T0})
    db.orders.create_index("user_id")
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    db.orders.create_index("created_at", expireAfterSeconds=60)  # a TTL index is never redundant
    rec = only(advise(db), "drop-index", "orders")
    assert rec.action == 'db.orders.dropIndex("user_id_1")'


def test_documents_near_the_16_mib_limit(db: Any) -> None:
    db.blobs.insert_one({"chunks": ["x" * 1024 * 1024] * 9})
    rec = only(advise(db), "limit", "blobs")
    assert rec.evidence["max_bytes"] > 9 * 2**20


@pytest.mark.parametrize(
    ("filter_spec", "sort", "action"),
    [
        ({"user_id": 7}, {"created_at": -1}, 'db.orders.createIndex({"user_id": 1, "created_at": -1})'),
        # ESR: equality (status), then sort (created_at), then range (total).
        (
            {"status": "pending", "total": {"$gt": 100}},
            {"created_at": 1},
            'db.orders.createIndex({"status": 1, "created_at": 1, "total": 1})',
        ),
        ({"status": {"$in": ["a", "b"]}}, None, 'db.orders.createIndex({"status": 1})'),
    ],
)
def test_workload_gets_indexes_in_esr_order(db: Any, filter_spec: Any, sort: Any, action: str) -> None:
    db.orders.insert_many([{"user_id": i % 50, "status": "pending", "total": i, "created_at": T0} for i in range(500)])
    rec = only(advise(db, queries=[("orders", filter_spec, sort)]), "index", "orders")
    assert rec.action == action


def test_profiler_entries_as_mongodb_writes_them(db: Any) -> None:
    # A system.profile entry of MongoDB 8 (database profiler output), trimmed to the fields read.
    db.orders.insert_many([{"user_id": i % 50, "created_at": T0} for i in range(500)])
    entry = {
        "op": "query",
        "ns": "advice.orders",
        "command": {"find": "orders", "filter": {"user_id": 7}, "sort": {"created_at": -1}, "$db": "advice"},
        "keysExamined": 0,
        "docsExamined": 500,
        "nreturned": 10,
        "millis": 3,
        "planSummary": "COLLSCAN",
        "ts": T0,
    }
    db["system.profile"].insert_many([dict(entry) for _ in range(5)])
    rec = only(advise(db), "index", "orders")
    assert (rec.evidence["runs"], rec.evidence["docs_examined"], rec.evidence["returned"]) == (5, 2500, 50)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with foliodb.MongoClient(str(tmp_path / "data")) as client:
        client.shop.posts.insert_many([{"comments": [{"b": 1}] * (n * 150)} for n in range(3)])
    assert main(["advise", "--dbpath", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("shop: 1 recommendation\n") and "[bucket] posts" in out
    assert main(["advise", "--dbpath", str(tmp_path / "data"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["kind"] for r in report["shop"]] == ["bucket"]
