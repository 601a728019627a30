"""The HNSW graph's settings against each other: element type, connectivity, beam.

    python -m benchmarks.vector_graph --n 100000 --data hard     # docs/design.md's table (about 25 minutes)
    python -m benchmarks.vector_graph --n 50000 --data hard,clustered,uniform
    python -m benchmarks.vector_graph --n 5000 --data hard --configs i8:16 --beams 100,200   # a smoke run

usearch alone, as :mod:`foliodb.engine.search.columns` uses it: unit rows (cosine), inner
product, ``expansion_add`` 100; per configuration (``--configs``, ``dtype:connectivity``) the
build's wall and CPU time (two threads) and memory, then for each beam (``expansion_search``)
the recall@10 of the beam's rows rescored exactly in float32 (what FolioDB returns) and the CPU
time of one query (search and rescoring, one thread). The data sets are
:mod:`benchmarks.vector_search`'s, plus ``uniform`` (isotropic random unit vectors: the
nearest neighbours are nearly as far as any other row, the worst case of any graph).
docs/design.md's choice of an int8 graph of connectivity 16 and a beam of three times
``numCandidates`` comes from it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index

from benchmarks.vector_search import data_set, truth


def uniform(n: int, dims: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def measure(data: np.ndarray, queries: np.ndarray, dtype: str, connectivity: int, beams: list[int]) -> dict[str, Any]:
    expected = truth(data, queries)
    index = Index(ndim=data.shape[1], metric="ip", dtype=dtype, connectivity=connectivity, expansion_add=100)
    wall, cpu = time.perf_counter(), time.process_time()
    index.add(np.arange(len(data), dtype=np.uint64), data, threads=2)
    out: dict[str, Any] = {
        "build_wall_s": time.perf_counter() - wall,
        "build_cpu_s": time.process_time() - cpu,
        "memory_mb": index.memory_usage / 1e6,
        "beams": {},
    }
    for beam in beams:
        index.expansion_search = beam
        hits, cpu = 0, time.thread_time()
        for q, want in zip(queries, expected, strict=True):
            keys = index.search(q, beam, threads=1).keys.astype(np.int64)
            best = keys[np.argsort(-(data[keys] @ q))[:10]]
            hits += len(set(best.tolist()) & set(want.tolist()))
        out["beams"][beam] = {
            "recall": hits / (10 * len(queries)),
            "cpu_ms": (time.thread_time() - cpu) / len(queries) * 1000,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data", default="hard,clustered,uniform")
    parser.add_argument("--configs", default="i8:16,i8:32,f16:16")
    parser.add_argument("--beams", default="200,300,400")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    beams = [int(b) for b in args.beams.split(",")]
    results: dict[str, Any] = {"n": args.n, "dims": args.dims, "sets": {}}
    for name in args.data.split(","):
        if name == "uniform":
            data, queries = uniform(args.n, args.dims, 1), uniform(args.queries, args.dims, 2)
        else:
            data, queries = data_set(name, args.n, args.dims, args.queries)
        for config in args.configs.split(","):
            dtype, connectivity = config.split(":")
            run = measure(data, queries, dtype, int(connectivity), beams)
            results["sets"].setdefault(name, {})[config] = run
            print(
                f"{name} {config}: build {run['build_wall_s']:.1f} s wall, {run['build_cpu_s']:.1f} s CPU, "
                f"{run['memory_mb']:.0f} MB; "
                + ", ".join(f"beam {b}: {r['recall']:.3f} in {r['cpu_ms']:.2f} ms" for b, r in run["beams"].items()),
                flush=True,
            )
    out = Path(args.out or f"benchmark-results/vector-graph-{args.n}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
