"""What server-side JavaScript costs per document: ``python -m benchmarks.javascript [--docs N] [--rounds R]``.

Each pair answers the same question two ways over the same in-memory
collection of ``--docs`` small order documents (no index, so every document
is examined), and the best of ``--rounds`` runs is divided by the number of
documents:

    where       find({$where: "this.qty > 50"})         vs find({$expr: {$gt: ["$qty", 50]}})
    function    $project {r: {$function: qty * price}}  vs $project {r: {$multiply: ["$qty", "$price"]}}
    mapReduce   mapReduce sum of price by cust_id       vs $group {_id: "$cust_id", value: {$sum: "$price"}}

Every pair's answers are checked equal before anything is reported. The
engine line times one call into each installed engine with a small document
(the measurement behind choosing QuickJS over mini_racer; mini_racer is not a
dependency and is skipped when absent).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import foliodb


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, answer = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        answer = fn()
        best = min(best, time.perf_counter() - started)
    return best, answer


def _engines(calls: int) -> dict[str, float]:
    """Microseconds per call of ``f(doc)`` with a small document, per engine."""
    doc = {"_id": 1, "cust_id": "c1", "qty": 7, "price": 2.5, "status": "A"}
    out: dict[str, float] = {}
    from foliodb.javascript.runtime import Runtime

    js = Runtime(64)
    fn = js.function("function() { return this.qty > 5 }")
    started = time.perf_counter()
    for _ in range(calls):
        js.where(fn, doc)
    out["quickjs"] = (time.perf_counter() - started) / calls * 1e6
    try:
        from py_mini_racer import MiniRacer
    except ImportError:
        return out
    racer = MiniRacer()
    racer.eval("function f(d) { return d.qty > 5 }")
    started = time.perf_counter()
    for _ in range(calls // 10):
        racer.call("f", doc)
    out["mini_racer"] = (time.perf_counter() - started) / (calls // 10) * 1e6
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", help="also write the numbers as JSON here")
    args = parser.parse_args(argv)
    n = args.docs
    client = foliodb.MongoClient(":memory:")
    coll = client.bench.orders
    coll.insert_many(
        {"_id": i, "cust_id": f"c{i % 100}", "qty": i % 101, "price": 0.5 + i % 7, "status": "AB"[i % 2]}
        for i in range(n)
    )
    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "where": (
            lambda: sorted(d["_id"] for d in coll.find({"$where": "this.qty > 50"}, {"_id": 1})),
            lambda: sorted(d["_id"] for d in coll.find({"$expr": {"$gt": ["$qty", 50]}}, {"_id": 1})),
        ),
        "function": (
            lambda: [
                d["r"]
                for d in coll.aggregate(
                    [{"$project": {"r": {"$function": {"body": "function(q, p) { return q * p }", "args": ["$qty", "$price"], "lang": "js"}}}}]
                )
            ],
            lambda: [float(d["r"]) for d in coll.aggregate([{"$project": {"r": {"$multiply": ["$qty", "$price"]}}}])],
        ),
        "mapReduce": (
            lambda: sorted(
                (d["_id"], d["value"])
                for d in client.bench.command(
                    "mapReduce", "orders", map="function() { emit(this.cust_id, this.price) }",
                    reduce="function(k, v) { return Array.sum(v) }", out={"inline": 1},
                )["results"]
            ),
            lambda: sorted(
                (d["_id"], d["value"]) for d in coll.aggregate([{"$group": {"_id": "$cust_id", "value": {"$sum": "$price"}}}])
            ),
        ),
    }  # fmt: skip
    report: dict[str, Any] = {"docs": n, "rounds": args.rounds, "per_document_us": {}}
    print(f"{n} documents, best of {args.rounds} runs, microseconds per document")
    for name, (javascript, native) in pairs.items():
        js_seconds, js_answer = _best(javascript, args.rounds)
        native_seconds, native_answer = _best(native, args.rounds)
        if js_answer != native_answer:
            print(f"FAIL {name}: the JavaScript and native answers differ")
            return 1
        js_us, native_us = js_seconds / n * 1e6, native_seconds / n * 1e6
        report["per_document_us"][name] = {"javascript": js_us, "native": native_us}
        print(f"{name:10} javascript {js_us:7.2f}   native {native_us:7.2f}   ratio {js_us / native_us:5.1f}x")
    report["engine_call_us"] = _engines(20_000)
    print(
        "one call with a small document: " + ", ".join(f"{k} {v:.1f} us" for k, v in report["engine_call_us"].items())
    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
    client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
