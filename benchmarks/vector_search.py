"""$vectorSearch at scale: FolioDB beside its floor, usearch used directly.

    python -m benchmarks.vector_search                 # 100,000 x 384 (about 15 minutes on 2 cores)
    python -m benchmarks.vector_search --n 5000 --dims 64 --queries 50   # a smoke run

The vectors are embedding-like: a random 48-dimensional signal lifted to ``--dims`` by a fixed
random matrix, plus 10% noise, normalised (cosine). Queries are fresh vectors of the same
distribution. Measured, in one process:

* floor: usearch's HNSW (connectivity 16, expansion 100, what FolioDB uses) built from all the
  vectors in one call, then searched at ``ef = numCandidates``;
* FolioDB (a dbpath on disk): ``insert_many`` of the documents without an index and with one
  (the index defined first, on the empty collection); the time the background thread then takes
  to absorb them into its graph; an index built over the existing collection (time to READY,
  time until its graph holds every vector); the first search after 1,000 more inserts (its
  catch-up); query latency p50/p99 at ``limit`` 10 and ``numCandidates`` 100; recall@10 against
  an exact numpy ranking for several ``numCandidates``; ``exact: true``.

It writes JSON (``--out``, default ``benchmark-results/vector-search-<n>.json``) and prints the
table docs/benchmarks.md shows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from pymongo.operations import SearchIndexModel
from usearch.index import Index

import foliodb

CANDIDATES = (10, 20, 50, 100, 200)


def vectors(n: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lift = np.random.default_rng(1234).standard_normal((48, dims)).astype(np.float32)
    rows = rng.standard_normal((n, 48)).astype(np.float32) @ lift
    rows += 0.1 * np.linalg.norm(rows, axis=1, keepdims=True) / np.sqrt(dims) * rng.standard_normal((n, dims))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def truth(data: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    return np.argsort(-(queries @ data.T), axis=1)[:, :k]


def recall(found: list[list[int]], expected: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(e.tolist())) / len(e) for f, e in zip(found, expected, strict=True)]))


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def floor(data: np.ndarray, queries: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    index = Index(ndim=data.shape[1], metric="ip", dtype="f32", connectivity=16, expansion_add=100)
    start = time.perf_counter()
    index.add(np.arange(len(data), dtype=np.uint64), data)
    out: dict[str, Any] = {"build_s": time.perf_counter() - start, "recall": {}}
    for candidates in CANDIDATES:
        index.expansion_search = candidates
        found, times = [], []
        for q in queries:
            t = time.perf_counter()
            matches = index.search(q, candidates, threads=1)
            times.append(time.perf_counter() - t)
            found.append([int(k) for k in matches.keys[:10]])
        out["recall"][candidates] = recall(found, expected)
        if candidates == 100:
            out["p50_ms"], out["p99_ms"] = percentiles(times)
    return out


def _insert(coll: Any, docs: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for i in range(0, len(docs), 1000):
        coll.insert_many(docs[i : i + 1000])
    return time.perf_counter() - start


def _wait(client: Any, coll: Any) -> float:
    start = time.perf_counter()
    while next(iter(coll.list_search_indexes()))["status"] != "READY":
        time.sleep(0.01)
    return time.perf_counter() - start


def _search(coll: Any, q: np.ndarray, **options: Any) -> list[int]:
    stage = {"index": "vec", "path": "v", "queryVector": q.tolist(), "limit": 10, **options}
    return [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}, {"$project": {"_id": 1}}])]


def foliodb_runs(data: np.ndarray, queries: np.ndarray, expected: np.ndarray, workdir: str) -> dict[str, Any]:
    dims = data.shape[1]
    definition = {"fields": [{"type": "vector", "path": "v", "numDimensions": dims, "similarity": "cosine"}]}
    model = SearchIndexModel(definition=definition, name="vec", type="vectorSearch")
    docs = [{"_id": i, "v": row.tolist()} for i, row in enumerate(data)]
    out: dict[str, Any] = {}
    with foliodb.MongoClient(os.path.join(workdir, "plain")) as client:
        out["insert_plain_s"] = _insert(client.bench.docs, [dict(d) for d in docs])
        coll = client.bench.docs
        start = time.perf_counter()
        coll.create_search_index(model)
        out["build_ready_s"] = _wait(client, coll) + 0  # READY: every vector searchable (exactly until absorbed)
        engine = client._executor.engine
        engine.search.wait_idle(7200)
        out["build_graph_s"] = time.perf_counter() - start
    with foliodb.MongoClient(os.path.join(workdir, "indexed")) as client:
        coll = client.bench.docs
        client.bench.create_collection("docs")
        coll.create_search_index(model)
        _wait(client, coll)
        out["insert_indexed_s"] = _insert(coll, [dict(d) for d in docs])
        start = time.perf_counter()
        client._executor.engine.search.wait_idle(7200)
        out["absorb_after_insert_s"] = time.perf_counter() - start
        times = []
        for q in queries:
            t = time.perf_counter()
            _search(coll, q, numCandidates=100)
            times.append(time.perf_counter() - t)
        out["p50_ms"], out["p99_ms"] = percentiles(times)
        out["recall"] = {}
        for candidates in CANDIDATES:
            out["recall"][candidates] = recall([_search(coll, q, numCandidates=candidates) for q in queries], expected)
        times = []
        for q in queries[:20]:
            t = time.perf_counter()
            _search(coll, q, exact=True)
            times.append(time.perf_counter() - t)
        out["exact_p50_ms"], _ = percentiles(times)
        extra = vectors(1000, dims, 99)
        coll.insert_many([{"_id": len(data) + i, "v": row.tolist()} for i, row in enumerate(extra)])
        t = time.perf_counter()
        _search(coll, queries[0], numCandidates=100)
        out["first_search_after_1000_inserts_ms"] = (time.perf_counter() - t) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    data = vectors(args.n, args.dims, 1)
    queries = vectors(args.queries, args.dims, 2)
    expected = truth(data, queries)
    workdir = tempfile.mkdtemp(prefix="foliodb-vector-bench-", dir=args.workdir)
    try:
        results = {
            "n": args.n,
            "dims": args.dims,
            "queries": args.queries,
            "floor": floor(data, queries, expected),
            "foliodb": foliodb_runs(data, queries, expected, workdir),
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out = Path(args.out or f"benchmark-results/vector-search-{args.n}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(report(results))


def report(results: dict[str, Any]) -> str:
    f, d = results["floor"], results["foliodb"]
    n = results["n"]
    lines = [
        f"{n:,} vectors x {results['dims']} dimensions, {results['queries']} queries, limit 10",
        "",
        "| measure | usearch directly (floor) | FolioDB |",
        "|---|---|---|",
        f"| build over {n:,} vectors | {f['build_s']:.1f} s | READY {d['build_ready_s']:.1f} s, graph {d['build_graph_s']:.1f} s |",
        f"| insert {n:,} documents, no index / with index | | {d['insert_plain_s']:.1f} s / {d['insert_indexed_s']:.1f} s "
        f"({d['insert_indexed_s'] / d['insert_plain_s']:.2f}x), then {d['absorb_after_insert_s']:.1f} s absorbing |",
        f"| query p50 / p99, numCandidates 100 | {f['p50_ms']:.2f} / {f['p99_ms']:.2f} ms | {d['p50_ms']:.2f} / {d['p99_ms']:.2f} ms |",
        f"| exact: true p50 | | {d['exact_p50_ms']:.1f} ms |",
        f"| first search after 1,000 inserts | | {d['first_search_after_1000_inserts_ms']:.1f} ms |",
    ]
    for candidates in CANDIDATES:
        lines.append(
            f"| recall@10, numCandidates {candidates} | {f['recall'][candidates]:.3f} | {d['recall'][candidates]:.3f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
