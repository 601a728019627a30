"""Query shapes that once cost far more than their work: ``python -m benchmarks.query_shapes [--baseline DIR]``.

Embedded, on a file of ``--orders`` orders (20,000) and the 5,000 or so users they
reference, each shape timed in a fresh interpreter, best of ``--repeat`` runs:

* ``in_unindexed``: ``list(find({user_id: {$in: [476 ObjectIds]}}))``, no index on ``user_id``;
* ``in_indexed``: the same with an index;
* ``or_same_field``: ``$or`` of 100 equalities on ``payment.txn_id`` (unindexed);
* ``or_mixed``: ``$or`` of 50 equalities on ``user_id`` (indexed) and 50 on ``payment.txn_id``;
* ``lookup_unindexed``: every user ``$lookup``'s its orders by ``user_id``, no index there;
* ``count_all``: ``count_documents({})``, the document cache warm;
* ``return_all``: ``list(find({}))`` three times, the caller keeping each result until the next
  (the cyclic collector running, as in any program);
* ``push_large_array``: 300 ``$push`` to an array that holds 2,000 subdocuments;
* ``regex_indexed``: ``list(find({status: /^SHIP/i}))`` with an index on ``{status, total}``;
* ``lookup_let``: 1,000 orders ``$lookup`` their user with ``let`` and a ``pipeline`` matching
  ``$expr: {$eq: ["$_id", "$$u"]}``;
* ``project_sum``: ``$project`` of ``{$sum: "$items.price"}`` over every order;
* ``find_projected``: ``list(find({}, {total: 1, status: 1}))``, the document cache warm;
* ``update_unindexed``: 100 ``update_one({total: t}, {$inc: {total: 0.5}})``, no index on ``total``
  (each write scans until its first match);
* ``scan_after_write``: 50 times an ``update_one`` by ``_id`` and then ``count_documents`` of a
  range on the unindexed ``total`` (the collection scanned once before).

Every answer is checked against plain Python over the same documents; a wrong one fails the run.
With ``--baseline DIR`` (another FolioDB checkout) each shape also runs there, alternating with
this checkout, and the table shows both and this checkout's speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run by path as a child: the checkout on PYTHONPATH gives foliodb
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    sys.path.append(sys.path.pop(0))

from benchmarks import data

ROOT = Path(__file__).resolve().parent.parent
SHAPES = (
    "in_unindexed",
    "in_indexed",
    "or_same_field",
    "or_mixed",
    "lookup_unindexed",
    "count_all",
    "return_all",
    "push_large_array",
    "regex_indexed",
    "lookup_let",
    "project_sum",
    "find_projected",
    "update_unindexed",
    "scan_after_write",
)
QUICK_ORDERS = 2000


def _shape(workdir: str, shape: str, orders: int) -> float:
    """Seconds the shape takes (after its setup), its answer checked."""
    import foliodb

    client = foliodb.MongoClient(tempfile.mkdtemp(dir=workdir, prefix="shape-"))
    coll = client.bench.orders
    docs = data.orders(orders)
    coll.insert_many([dict(doc) for doc in docs])
    users = sorted({doc["user_id"] for doc in docs})
    run: Callable[[], Any]
    if shape in ("in_unindexed", "in_indexed"):
        wanted = users[: max(1, len(users) // 10)]
        if shape == "in_indexed":
            coll.create_index("user_id")
        expected = sum(1 for doc in docs if doc["user_id"] in set(wanted))

        def run() -> Any:
            return len(list(coll.find({"user_id": {"$in": wanted}})))

    elif shape == "or_same_field":
        ids = [doc["payment"]["txn_id"] for doc in docs[:100]]
        expected = 100

        def run() -> Any:
            return len(list(coll.find({"$or": [{"payment.txn_id": txn} for txn in ids]})))

    elif shape == "or_mixed":
        coll.create_index("user_id")
        some_users, txns = users[:50], [doc["payment"]["txn_id"] for doc in docs[-50:]]
        expected = sum(1 for doc in docs if doc["user_id"] in set(some_users) or doc["payment"]["txn_id"] in set(txns))
        branches = [{"user_id": u} for u in some_users] + [{"payment.txn_id": t} for t in txns]

        def run() -> Any:
            return len(list(coll.find({"$or": branches})))

    elif shape == "lookup_unindexed":
        client.bench.users.insert_many([{"_id": u} for u in users])
        expected = orders
        pipeline = [{"$lookup": {"from": "orders", "localField": "_id", "foreignField": "user_id", "as": "o"}}]

        def run() -> Any:
            return sum(len(user["o"]) for user in client.bench.users.aggregate(pipeline))

    elif shape == "count_all":
        coll.count_documents({})  # the cache built
        expected = orders

        def run() -> Any:
            return coll.count_documents({})

    elif shape == "return_all":
        list(coll.find({"total": {"$lt": 0}}))  # the cache built
        expected = orders

        def run() -> Any:
            kept: list[Any] = []
            for _ in range(3):
                kept = list(coll.find({}))
            return len(kept)

    elif shape == "push_large_array":
        client.bench.arrays.insert_one({"_id": 1, "a": [{"v": i} for i in range(2000)]})
        expected = 2300

        def run() -> Any:
            for i in range(300):
                client.bench.arrays.update_one({"_id": 1}, {"$push": {"a": {"v": i}}})
            found = client.bench.arrays.find_one({"_id": 1})
            return len(found["a"]) if found else 0

    elif shape == "regex_indexed":
        coll.create_index([("status", 1), ("total", -1)])
        expected = sum(1 for doc in docs if doc["status"].lower().startswith("ship"))

        def run() -> Any:
            return len(list(coll.find({"status": {"$regex": "^SHIP", "$options": "i"}})))

    elif shape == "lookup_let":
        client.bench.users.insert_many([{"_id": u} for u in users])
        expected = 1000
        pipeline = [
            {"$limit": 1000},
            {
                "$lookup": {
                    "from": "users",
                    "let": {"u": "$user_id"},
                    "pipeline": [{"$match": {"$expr": {"$eq": ["$_id", "$$u"]}}}],
                    "as": "user",
                }
            },
        ]

        def run() -> Any:
            return sum(len(order["user"]) for order in coll.aggregate(pipeline))

    elif shape == "project_sum":
        expected = round(sum(item["price"] for doc in docs for item in doc["items"]), 2)

        def run() -> Any:
            found = coll.aggregate([{"$project": {"s": {"$sum": "$items.price"}}}])
            return round(sum(doc["s"] for doc in found), 2)

    elif shape == "find_projected":
        list(coll.find({"total": {"$lt": 0}}))  # the cache built
        expected = orders

        def run() -> Any:
            return sum(1 for doc in coll.find({}, {"total": 1, "status": 1}) if len(doc) == 3)

    elif shape == "update_unindexed":
        totals = [doc["total"] for doc in docs[-100:]]
        expected = 100

        def run() -> Any:
            return sum(coll.update_one({"total": t}, {"$inc": {"total": 0.5}}).modified_count for t in totals)

    elif shape == "scan_after_write":
        coll.count_documents({"total": {"$gt": 100}})
        expected = 50 * sum(1 for doc in docs if doc["total"] > 100)
        ids = [doc["_id"] for doc in docs[:50]]

        def run() -> Any:
            counted = 0
            for _id in ids:
                coll.update_one({"_id": _id}, {"$set": {"status": "shipped"}})
                counted += coll.count_documents({"total": {"$gt": 100}})
            return counted

    else:
        raise SystemExit(f"unknown shape {shape!r}")
    started = time.perf_counter()
    answer = run()
    seconds = time.perf_counter() - started
    client.close()
    if answer != expected:
        raise SystemExit(f"{shape}: answered {answer}, expected {expected}")
    return seconds


def _child(checkout: Path, workdir: str, shape: str, orders: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", workdir, shape, str(orders)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{shape} failed in {checkout.name}: {done.stderr[-2000:]}")
    return float(done.stdout.splitlines()[-1])


def run(
    workdir: str, orders: int, repeat: int, baseline: Path | None, shapes: tuple[str, ...] = SHAPES
) -> dict[str, Any]:
    """Best seconds per (checkout, shape): this checkout as ``current``, ``baseline`` when given."""
    checkouts = [("current", ROOT)] + ([("baseline", baseline.resolve())] if baseline is not None else [])
    best: dict[str, dict[str, float]] = {}
    for round_ in range(repeat):
        for label, checkout in checkouts if round_ % 2 == 0 else checkouts[::-1]:
            for shape in shapes:
                seconds = _child(checkout, workdir, shape, orders)
                mine = best.setdefault(label, {})
                mine[shape] = min(seconds, mine.get(shape, seconds))
                print(f"[{label} round {round_ + 1}] {shape}: {seconds:.3f} s", flush=True)
    return {"orders": orders, "repeat": repeat, "best_seconds": best}


def table(result: dict[str, Any]) -> str:
    best = result["best_seconds"]
    baseline = best.get("baseline")
    head = "| shape | this checkout |" + (" baseline | speed-up |" if baseline else "")
    lines = [head, "|---|--:|" + ("--:|--:|" if baseline else "")]
    for shape, seconds in best["current"].items():
        row = f"| {shape} | {seconds:.3f} s |"
        if baseline:
            row += f" {baseline[shape]:.3f} s | {baseline[shape] / seconds:.1f}x |"
        lines.append(row)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--baseline", type=Path, help="another FolioDB checkout, measured in the same run")
    parser.add_argument("--orders", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each shape, the best kept (default 3)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ORDERS:,} orders, one run")
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "query_shapes.json")
    parser.add_argument("--only", help="comma-separated shapes to run (default: all)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workdir, shape, orders = args.child
        print(_shape(workdir, shape, int(orders)))
        return
    orders, repeat = (QUICK_ORDERS, 1) if args.quick else (args.orders, args.repeat)
    shapes = SHAPES if args.only is None else tuple(args.only.split(","))
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        parser.error(f"unknown shapes: {', '.join(sorted(unknown))}")
    result = run(args.workdir, orders, repeat, args.baseline, shapes)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{orders:,} orders, best of {repeat}\n\n{table(result)}\n\nwritten {args.out}")


if __name__ == "__main__":
    main()
