"""The advisor at scale: ``python -m benchmarks.advisor [--dbpath DIR] [--documents N]``.

Builds (once; an existing ``--dbpath`` is reused) a database of ``N``
documents (default 1,000,000) with ``insert_many``, in the texts' shapes:

* ``events``: half of them, user activity at irregular times (must not be
  called a time series);
* ``readings``: 30%, one document per sensor reading every minute from 100
  sensors (a time series);
* ``users``: 10%, each following a few others, and one celebrity followed
  by three quarters of them (one extreme document among 100,000);
* ``orders``: 10%, frozen line items, indexed by user and date;

then a short profiled workload, and times ``advise`` on it (the figure the
docs quote: docs/advisor.md, "Speed"). Prints the seconds and the findings.
"""

from __future__ import annotations

import argparse
import datetime
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bson import ObjectId

import foliodb
from foliodb.advisor import advise

T0 = datetime.datetime(2026, 1, 1)
BATCH = 10_000


def build(db: Any, documents: int, rnd: random.Random) -> None:
    users = [ObjectId() for _ in range(documents // 10)]
    celebrity = users[0]
    for start in range(0, len(users), BATCH):
        db.users.insert_many(
            [
                {
                    "_id": u,
                    "name": f"user {start + i}",
                    "following": ([celebrity] if rnd.random() < 0.75 and u != celebrity else [])
                    + rnd.sample(users, rnd.randint(0, 3)),
                    "followers": []
                    if u != celebrity
                    else [v for v in users if v != celebrity][: int(0.75 * len(users))],
                }
                for i, u in enumerate(users[start : start + BATCH])
            ]
        )
    moment = T0
    total = documents // 2
    for start in range(0, total, BATCH):
        batch = []
        for _ in range(min(BATCH, total - start)):
            moment += datetime.timedelta(seconds=rnd.expovariate(1 / 2))
            batch.append({"user_id": rnd.choice(users), "type": rnd.choice(["view", "click", "buy"]), "at": moment})
        db.events.insert_many(batch)
    db.events.create_index([("user_id", 1), ("at", -1)])
    readings = documents * 3 // 10
    for start in range(0, readings, BATCH):
        db.readings.insert_many(
            [
                {"sensor": f"s{n % 100:03}", "ts": T0 + datetime.timedelta(minutes=n // 100), "value": rnd.random()}
                for n in range(start, min(readings, start + BATCH))
            ]
        )
    orders = documents - len(users) - total - readings
    for start in range(0, orders, BATCH):
        db.orders.insert_many(
            [
                {
                    "user_id": rnd.choice(users),
                    "items": [{"sku": f"SKU-{j}", "name": f"product {j}", "price": 100 + j, "quantity": 1}],
                    "status": "shipped",
                    "created_at": T0 + datetime.timedelta(minutes=start + i),
                }
                for i, j in enumerate(rnd.randrange(500) for _ in range(min(BATCH, orders - start)))
            ]
        )
    db.orders.create_index([("user_id", 1), ("created_at", -1)])
    db.command("profile", 2)
    for _ in range(200):
        user = rnd.choice(users)
        db.users.find_one({"_id": user})
        list(db.orders.find({"user_id": user}).sort("created_at", -1).limit(10))
        list(db.events.find({"user_id": user}).sort("at", -1).limit(20))
    db.command("profile", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dbpath", default=str(Path(tempfile.gettempdir()) / "foliodb-advisor-bench"))
    parser.add_argument("--documents", type=int, default=1_000_000)
    args = parser.parse_args()
    with foliodb.MongoClient(args.dbpath) as client:
        db = client.bench
        if "users" not in db.list_collection_names():
            started = time.perf_counter()
            build(db, args.documents, random.Random(1))
            print(f"built {args.documents:,} documents in {time.perf_counter() - started:.0f} s at {args.dbpath}")
        started = time.perf_counter()
        report = advise(db)
        seconds = time.perf_counter() - started
    print(f"advise: {seconds:.1f} s for {sum(c.documents for c in report.collections):,} documents")
    for finding in report.findings:
        print(
            f"  {finding.severity:8} {finding.collection}.{finding.path}: {finding.problem} -> {finding.recommendation}"
        )


if __name__ == "__main__":
    main()
