"""Many processes, one dbpath: a second process's operations, which travel to
the owner over its share socket, against the owner's own, in one run:
``python -m benchmarks.processes``.

The owner (this process) loads N orders and then answers; a child process
opens the same dbpath (so it is a client of the owner) and times its
operations; then the owner times the same operations on its own client. Each
measurement is the best of ``--repeat`` rounds of ``--seconds`` seconds.

    python -m benchmarks.processes                   # 20,000 documents, 3 s, best of 3
    python -m benchmarks.processes --docs 5000 --seconds 1 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("find_one", "insert_one", "update_one")


def measure(client: Any, docs: int, seconds: float, tag: str) -> dict[str, float]:
    """Operations per second of each workload on ``client`` (ids ``tag``-prefixed for its inserts)."""
    orders = client.bench.orders
    rates: dict[str, float] = {}
    for name in WORKLOADS:
        n, deadline = 0, time.perf_counter() + seconds
        started = time.perf_counter()
        while time.perf_counter() < deadline:
            for _ in range(100):
                key = (n * 7919) % docs
                if name == "find_one":
                    orders.find_one({"_id": key})
                elif name == "insert_one":
                    orders.insert_one({"_id": f"{tag}-{n}", "user_id": n})
                else:
                    orders.update_one({"_id": key}, {"$inc": {"touched": 1}})
                n += 1
        rates[name] = n / (time.perf_counter() - started)
    return rates


def child(dbpath: str, docs: int, seconds: float, tag: str) -> None:
    import foliodb

    with foliodb.MongoClient(dbpath) as client:
        assert getattr(client._executor, "remote", None) is not None, "the child must be a client of the owner"
        print(json.dumps(measure(client, docs, seconds, tag)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("DBPATH", "TAG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.docs, args.seconds, args.child[1])
        return
    import foliodb
    from benchmarks.data import orders

    with tempfile.TemporaryDirectory() as tmp:
        dbpath = os.path.join(tmp, "data")
        best: dict[str, dict[str, float]] = {"owner": {}, "second process": {}}
        with foliodb.MongoClient(dbpath) as client:
            client.bench.orders.insert_many(orders(args.docs))
            for round_ in range(args.repeat):
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "benchmarks.processes",
                        "--docs",
                        str(args.docs),
                        "--seconds",
                        str(args.seconds),
                        "--child",
                        dbpath,
                        f"c{round_}",
                    ],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                for who, rates in (
                    ("second process", json.loads(out)),
                    ("owner", measure(client, args.docs, args.seconds, f"o{round_}")),
                ):
                    for name, rate in rates.items():
                        best[who][name] = max(best[who].get(name, 0.0), rate)
    print(f"{args.docs:,} documents, best of {args.repeat} x {args.seconds:g} s, operations per second")
    print("| client | " + " | ".join(WORKLOADS) + " |")
    print("|---|" + "--:|" * len(WORKLOADS))
    for who, rates in best.items():
        print(f"| {who} | " + " | ".join(f"{rates[name]:,.0f}" for name in WORKLOADS) + " |")
    print(
        "| second / owner | "
        + " | ".join(f"{best['second process'][n] / best['owner'][n]:.2f}" for n in WORKLOADS)
        + " |"
    )


if __name__ == "__main__":
    main()
