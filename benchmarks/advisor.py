"""The advisor at scale: ``python -m benchmarks.advisor [--sizes 1000000,10000000] [--dir DIR] [--exact]``.

Builds once per size (an existing database under ``--dir`` is reused) a
database of ``N`` documents with ``insert_many``, in the texts' shapes:

* ``events``: 45%, user activity at irregular times (must not be called a
  time series);
* ``readings``: 30%, one document per sensor reading every minute from 100
  sensors (a time series: one-document-per-event);
* ``users``: 10%, each following a few others, and one celebrity followed
  by three quarters of them, at most 500,000 (one extreme document:
  huge-reference-array);
* ``orders``: 10%, frozen line items, indexed by user and date;
* ``sessions``: 5%, expiring by a TTL index with ``expireAfterSeconds: 0``
  (never to be called unused);

then a profiled workload, and times ``advise`` on it. Prints a markdown
table (docs/benchmarks.md, "The schema-design advisor") of the seconds and
the findings per size; ``--exact`` advises each database again with every
pass exact (no sampling bound, no probes) and says whether the findings are
the same; ``--out FILE`` writes the JSON (default
``benchmark-results/advisor.json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bson import ObjectId

import foliodb
from foliodb.advisor import advise, sampling

T0 = datetime.datetime(2026, 1, 1)
BATCH = 10_000
MAX_FOLLOWERS = 500_000  # the celebrity's array stays well under 16 MiB at every size
EXPIRY = datetime.datetime(2099, 1, 1)


def build(db: Any, documents: int, rnd: random.Random) -> None:
    users = [ObjectId() for _ in range(documents // 10)]
    celebrity = users[0]
    followers = [v for v in users if v != celebrity][: min(int(0.75 * len(users)), MAX_FOLLOWERS)]
    follows = set(followers)
    for start in range(0, len(users), BATCH):
        db.users.insert_many(
            [
                {
                    "_id": u,
                    "name": f"user {start + i}",
                    "following": ([celebrity] if u in follows else []) + rnd.sample(users, rnd.randint(0, 3)),
                    "followers": [] if u != celebrity else followers,
                }
                for i, u in enumerate(users[start : start + BATCH])
            ]
        )
    moment = T0
    total = documents * 45 // 100
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
    sessions = documents // 20
    build_sessions(db, sessions, users, rnd)
    orders = documents - len(users) - total - readings - sessions
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
        db.sessions.find_one({"_id": f"s{rnd.randrange(sessions)}"})
        db.users.find_one({"_id": user})
        list(db.orders.find({"user_id": user}).sort("created_at", -1).limit(10))
        list(db.events.find({"user_id": user}).sort("at", -1).limit(20))
    db.command("profile", 0)


def build_sessions(db: Any, sessions: int, users: list[ObjectId], rnd: random.Random) -> None:
    """Sessions expiring by a TTL index with expireAfterSeconds 0, at dates far enough ahead that the
    monitor leaves them while the database is kept for later runs."""
    for start in range(0, sessions, BATCH):
        db.sessions.insert_many(
            [
                {"_id": f"s{n}", "user_id": rnd.choice(users), "expires_at": EXPIRY + datetime.timedelta(hours=n % 48)}
                for n in range(start, min(sessions, start + BATCH))
            ]
        )
    db.sessions.create_index("expires_at", expireAfterSeconds=0)


def measure(db: Any) -> dict[str, Any]:
    started = time.perf_counter()
    report = advise(db)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "documents": sum(c.documents for c in report.collections),
        "findings": [
            f"{f.severity} {f.collection}.{f.path}: {f.problem} -> {f.recommendation}" for f in report.findings
        ],
    }


def exact(db: Any) -> dict[str, Any]:
    """The same advice with every pass exact: no sampling bound, no probes (the advisor before bounds)."""
    saved = (sampling.EXACT_SCAN_DOCS, sampling.SAMPLE_SCAN_DOCS)
    sampling.EXACT_SCAN_DOCS = sampling.SAMPLE_SCAN_DOCS = 1 << 62
    try:
        return measure(db)
    finally:
        sampling.EXACT_SCAN_DOCS, sampling.SAMPLE_SCAN_DOCS = saved


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        "| documents | advise (s) | findings | every pass exact (s) | same findings |",
        "|--:|--:|---|--:|---|",
    ]
    for run in doc["runs"]:
        found = "<br>".join(f"`{f}`" for f in run["findings"]) or "none"
        exact_run = run.get("exact")
        lines.append(
            f"| {run['documents']:,} | {run['seconds']:.1f} | {found} | "
            + (
                f"{exact_run['seconds']:.1f} | {'yes' if exact_run['findings'] == run['findings'] else 'no'} |"
                if exact_run
                else "— | — |"
            )
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="documents per database, comma-separated")
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "foliodb-advisor-bench"))
    parser.add_argument("--exact", action="store_true", help="advise again with every pass exact, and compare")
    parser.add_argument("--out", default="benchmark-results/advisor.json")
    args = parser.parse_args()
    runs = []
    for size in (int(s) for s in args.sizes.split(",")):
        path = Path(args.dir) / f"{size}"
        with foliodb.MongoClient(str(path)) as client:
            db = client.bench
            if "users" not in db.list_collection_names():
                started = time.perf_counter()
                build(db, size, random.Random(1))
                print(f"built {size:,} documents in {time.perf_counter() - started:.0f} s at {path}", flush=True)
            run = measure(db)
            print(f"{size:,}: advise {run['seconds']:.1f} s", flush=True)
            if args.exact:
                run["exact"] = exact(db)
                print(f"{size:,}: every pass exact {run['exact']['seconds']:.1f} s", flush=True)
            runs.append(run)
    doc = {"date": datetime.date.today().isoformat(), "machine": platform.platform(), "runs": runs}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(markdown(doc))


if __name__ == "__main__":
    main()
