"""The transactions benchmark: ``python -m benchmarks.transactions [--seconds S]``.

In one run, embedded and over the wire (pymongo to a ``foliodb serve``
child process on the same machine):

* ``pair``: an ``insert_one`` and an ``update_one`` (the order and the stock
  decrement of the schema-design examples), as two plain writes;
* ``pair in a transaction``: the same two writes in one multi-document
  transaction (``start_transaction`` ... ``commit_transaction``);
* ``insert_one`` and ``update_one`` alone with ``retryWrites`` off and on
  (over the wire, on is pymongo's default: each write carries an lsid and a
  txnNumber and the server stores its reply in the write's own SQLite
  transaction).

Rates are operations (or pairs, or transactions) per second, best of
``--repeat`` runs of ``--seconds`` each. The JSON goes to ``--out`` (default:
the temporary directory).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymongo

import foliodb

ROOT = Path(__file__).resolve().parent.parent


def _rate(step: Callable[[int], None], seconds: float) -> float:
    done = 0
    started = time.perf_counter()
    end = started + seconds
    while time.perf_counter() < end:
        step(done)
        done += 1
    return done / (time.perf_counter() - started)


def workloads(client: Any, seconds: float) -> dict[str, float]:
    db = client.bench
    db.drop_collection("orders")
    db.drop_collection("stock")
    db.stock.insert_one({"_id": "sku", "qty": 10**9})
    out: dict[str, float] = {}
    base = [0]

    def pair(i: int) -> None:
        db.orders.insert_one({"_id": f"p-{base[0]}-{i}", "sku": "sku"})
        db.stock.update_one({"_id": "sku"}, {"$inc": {"qty": -1}})

    out["pair"] = _rate(pair, seconds)
    base[0] += 1
    session = client.start_session()

    def pair_in_transaction(i: int) -> None:
        session.start_transaction()
        db.orders.insert_one({"_id": f"t-{base[0]}-{i}", "sku": "sku"}, session=session)
        db.stock.update_one({"_id": "sku"}, {"$inc": {"qty": -1}}, session=session)
        session.commit_transaction()

    out["pair in a transaction"] = _rate(pair_in_transaction, seconds)
    session.end_session()
    return out


def retryable(make: Callable[[bool], Any], seconds: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for retry in (False, True):
        client = make(retry)
        coll = client.bench.retry
        coll.drop()
        coll.insert_one({"_id": "u", "n": 0})
        tag = "on" if retry else "off"

        def insert(i: int, c: Any = coll, t: str = tag) -> None:
            c.insert_one({"_id": f"{t}-{i}"})

        def update(i: int, c: Any = coll) -> None:
            c.update_one({"_id": "u"}, {"$inc": {"n": 1}})

        out[f"insert_one, retryWrites {tag}"] = _rate(insert, seconds)
        out[f"update_one, retryWrites {tag}"] = _rate(update, seconds)
        client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {"embedded": {}, "wire": {}}
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [sys.executable, "-m", "foliodb", "serve", "--dbpath", f"{tmp}/served", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        assert server.stdout is not None
        port = int(server.stdout.readline().split(" on ", 1)[1].split(" ", 1)[0].rsplit(":", 1)[1])
        try:
            for _ in range(args.repeat):
                runs = {
                    "embedded": workloads(foliodb.MongoClient(f"{tmp}/embedded"), args.seconds),
                    "wire": workloads(pymongo.MongoClient("127.0.0.1", port), args.seconds),
                }
                runs["embedded"].update(
                    retryable(lambda r: foliodb.MongoClient(f"{tmp}/embedded", retryWrites=r), args.seconds)
                )
                runs["wire"].update(
                    retryable(lambda r: pymongo.MongoClient("127.0.0.1", port, retryWrites=r), args.seconds)
                )
                for target, rates in runs.items():
                    for name, rate in rates.items():
                        results[target][name] = max(rate, results[target].get(name, 0.0))
        finally:
            server.terminate()
            server.wait(timeout=30)
    names = list(results["wire"])
    print("| workload | embedded /s | over the wire /s |\n|---|--:|--:|")
    for name in names:
        print(f"| {name} | {results['embedded'].get(name, 0):,.0f} | {results['wire'][name]:,.0f} |")
    out = args.out or Path(tempfile.gettempdir()) / f"foliodb-transactions-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
