"""The document cache's memory bound at scale: ``python -m benchmarks.cache_bound [--docs 1000000] [--quick]``.

``--docs`` orders (default 1M, ~630 MB of BSON, ~5 GB decoded) are loaded
twice into one fresh dbpath: once as one collection, once spread over
``--collections`` collections (default 50, 20,000 orders each: ~100 MB of
cache an entry). Then, for each ``documentCacheSizeMB`` in ``--sizes``
(default 0, 64 and 256, the default), a fresh interpreter opens the dbpath
and runs, on each layout:

* **one collection**: ``find({total: {$gt: T}})`` and
  ``find().sort(total, -1).limit(10)`` three times each, scans that build a
  cache entry where one fits: 1M orders do not fit, so the first build gives
  up when it outgrows the cache and later scans read SQLite;
* **many collections**: the same two queries on every collection in turn,
  twice over: each collection's entry fits, but not all of them: the cache
  fills, then refuses the builds that would evict an entry scanned as often
  (``refusals``) rather than evicting each entry before its next use.

After every query the child reads ``serverStatus().documentCache`` and its
own ``VmRSS``; it reports the largest cache ``bytes`` seen against
``maxBytes``, builds, evictions, refusals, hits, its RSS before the queries and its
peak RSS (``getrusage``), the cyclic collector's full collections and their
seconds (each walks the cache's documents too), and the queries' rates. Every answer is checked
against the counts and top totals computed from the generated orders in
plain Python. The JSON goes to ``--out``; a Markdown table is printed.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run by path as a child
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from benchmarks import data
from benchmarks.sort_spill import current_rss_mb, peak_rss_mb

ROOT = Path(__file__).resolve().parent.parent
# find({total: {$gt: THRESHOLD}}): a number comparison, so no needle (a scan that builds); 0.07% of
# the orders match, so the scan's cost is the filter's, not handing documents on.
THRESHOLD = 8000.0
TOP = 10
ONE = "orders"
MANY = "orders_{:03d}"
REPEATS = 3  # queries of each kind on the one collection
ROUNDS = 2  # passes over the many collections
# --quick: 2,000 orders a collection (~11 MB of cache) fit two at a time in 24 MB; 8,000 in one do not.
QUICK = (8_000, 4, [0, 24])


def load(dbpath: str, docs: int, collections: int) -> dict[str, Any]:
    """Both layouts into ``dbpath``; per collection, the expected answers (computed here, in plain Python)."""
    import foliodb

    client = foliodb.MongoClient(dbpath)
    db = client.bench
    per = -(-docs // collections)
    expected: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for number, batch in enumerate(data.batches(data.iter_orders(docs), per)):
        name = MANY.format(number)
        db[ONE].insert_many(batch)
        db[name].insert_many(batch)
        totals = [doc["total"] for doc in batch]
        expected[name] = {"count": sum(t > THRESHOLD for t in totals), "top": heapq.nlargest(TOP, totals)}
        one = expected.setdefault(ONE, {"count": 0, "top": []})
        one["count"] += expected[name]["count"]
        one["top"] = heapq.nlargest(TOP, one["top"] + expected[name]["top"])
    client.close()
    return {"seconds": round(time.perf_counter() - started, 1), "expected": expected}


class FullCollections:
    """The cyclic collector's full (generation 2) collections while installed: how many, and
    their seconds. Each walks every tracked object, the cache's decoded documents among them."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._started


def measure(dbpath: str, size_mb: int, layout: str, expected: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One child's run (see the module docstring)."""
    import foliodb

    client = foliodb.MongoClient(dbpath)
    client.admin.command("setParameter", 1, documentCacheSizeMB=size_mb)
    db = client.bench
    names = [ONE] * REPEATS if layout == "one" else [n for n in expected if n != ONE] * ROUNDS
    for name in dict.fromkeys(names):
        db[name].find_one()  # imports and first-call paths, outside the measure
    before = current_rss_mb()
    collections = FullCollections()
    most_bytes = 0
    most_rss = before
    seconds = {"filter": 0.0, "sort_limit": 0.0}
    for name in names:
        coll = db[name]
        started = time.perf_counter()
        count = sum(1 for _ in coll.find({"total": {"$gt": THRESHOLD}}, {"_id": 1}))
        seconds["filter"] += time.perf_counter() - started
        started = time.perf_counter()
        top = [doc["total"] for doc in coll.find({}, {"total": 1}).sort("total", -1).limit(TOP)]
        seconds["sort_limit"] += time.perf_counter() - started
        if count != expected[name]["count"] or top != expected[name]["top"]:
            raise AssertionError(f"{name}: {count}, {top} where {expected[name]} was expected")
        status = client.admin.command("serverStatus")["documentCache"]
        most_bytes = max(most_bytes, status["bytes"])
        most_rss = max(most_rss, current_rss_mb())
    client.close()
    return {
        "size_mb": size_mb,
        "layout": layout,
        "queries": 2 * len(names),
        "max_bytes": status["maxBytes"],
        "most_cache_bytes": most_bytes,
        "within_bound": most_bytes <= status["maxBytes"],
        "builds": status["builds"],
        "evictions": status["evictions"],
        "refusals": status["refusals"],
        "hits": status["hits"],
        "rss_before_mb": round(before, 1),
        "most_rss_mb": round(most_rss, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "full_collections": collections.count,
        "full_collection_seconds": round(collections.seconds, 2),
        "filter_per_s": round(len(names) / seconds["filter"], 2),
        "sort_limit_per_s": round(len(names) / seconds["sort_limit"], 2),
    }


def _child(dbpath: str, size_mb: int, layout: str, expected_file: str) -> dict[str, Any]:
    """``measure`` in a fresh interpreter, so each run's peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.cache_bound", "--child", dbpath, str(size_mb), layout, expected_file],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def run(docs: int, collections: int, sizes: list[int], workdir: str) -> dict[str, Any]:
    dbpath = str(Path(workdir) / "db")
    loaded = load(dbpath, docs, collections)
    expected_file = str(Path(workdir) / "expected.json")
    Path(expected_file).write_text(json.dumps(loaded["expected"]))
    runs = [_child(dbpath, size_mb, layout, expected_file) for layout in ("one", "many") for size_mb in sizes]
    return {"docs": docs, "collections": collections, "load_seconds": loaded["seconds"], "runs": runs}


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['docs']:,} orders: one collection, and {result['collections']} collections",
        "",
        "| layout | documentCacheSizeMB | largest cache bytes (MB) | builds | evictions | refusals | hits | RSS before (MB) "
        "| peak RSS (MB) | full collections (s) | filter queries/s | sort_limit queries/s |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['layout']} | {r['size_mb']} | {r['most_cache_bytes'] / 2**20:.1f}"
            f"{'' if r['within_bound'] else ' (over!)'} | {r['builds']} | {r['evictions']} | {r['refusals']} | {r['hits']} "
            f"| {r['rss_before_mb']} | {r['peak_rss_mb']} | {r['full_collections']} ({r['full_collection_seconds']}) "
            f"| {r['filter_per_s']} | {r['sort_limit_per_s']} |"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        dbpath, size_mb, layout, expected_file = sys.argv[2:6]
        expected = json.loads(Path(expected_file).read_text())
        print(json.dumps(measure(dbpath, int(size_mb), layout, expected)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--collections", type=int, default=50)
    parser.add_argument("--sizes", default="0,64,256", help="documentCacheSizeMB values, comma-separated")
    parser.add_argument("--quick", action="store_true", help="8,000 orders over 4 collections, sizes 0 and 24")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "cache_bound.json"))
    args = parser.parse_args()
    docs, collections, sizes = args.docs, args.collections, [int(s) for s in args.sizes.split(",")]
    if args.quick:
        docs, collections, sizes = QUICK
    with tempfile.TemporaryDirectory(prefix="foliodb-cache-bound-") as workdir:
        result = run(docs, collections, sizes, workdir)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(table(result))
    print(f"\nJSON: {args.out}")


if __name__ == "__main__":
    main()
