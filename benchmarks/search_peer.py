"""Search and vector search beside the Python peer that has them: ``python -m benchmarks.search_peer``.

    python -m benchmarks.search_peer                         # 2,000 documents x 384 dimensions, 20 queries
    python -m benchmarks.search_peer --n 5000 --queries 10   # larger, fewer queries
    python -m benchmarks.search_peer --n 500 --dims 32 --queries 5 --out FILE.json   # a smoke run

The peer is mongoeco (``pip install mongoeco``; it needs Python 3.13 or later), an embedded
MongoDB-like store with ``$vectorSearch`` and ``$search`` (its default in-memory engine). Where it
cannot be imported its row says so and FolioDB runs alone. FolioDB runs embedded on a dbpath on
disk. Both get the same documents ``{_id, v: [dims floats], title}`` (the vectors the hard set of
:mod:`benchmarks.vector_search`, the titles those of :mod:`benchmarks.text_search`), with a
vector index ``{type: "vector", path: "v", similarity: "cosine"}`` and a search index
``{title: {type: "string"}}`` defined on the empty collection first. Measured in one process,
one contender after the other:

* ``insert_many`` of the documents in batches of 1,000 with both indexes defined (wall, CPU);
* the first ``$vectorSearch`` after the load, and the first after one more insert (what a
  store that rebuilds its index after writes pays then);
* ``$vectorSearch`` at ``limit`` 10: p50/p99 and CPU p50 at ``numCandidates`` 100, recall@10
  against numpy's exact ranking at ``numCandidates`` 10 and 100;
* ``$search`` of a two-word ``text`` query with ``$limit`` 10, and ``$searchMeta`` with
  ``count: {type: "total"}`` of the same query (mongoeco has no ``$$SEARCH_META``): p50 and
  the mean count, which must agree between the contenders (same analyzer, same matches).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import foliodb
from benchmarks.text_search import titles, two_word_queries, words
from benchmarks.vector_search import recall, truth, vectors

VECTOR = "vec"
TEXT = "text"


def _definitions(dims: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (
            VECTOR,
            "vectorSearch",
            {"fields": [{"type": "vector", "path": "v", "numDimensions": dims, "similarity": "cosine"}]},
        ),
        (TEXT, "search", {"mappings": {"dynamic": False, "fields": {"title": {"type": "string"}}}}),
    ]


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _vector_search(coll: Any, q: np.ndarray, candidates: int) -> list[int]:
    stage = {"index": VECTOR, "path": "v", "queryVector": q.tolist(), "numCandidates": candidates, "limit": 10}
    return [d["_id"] for d in coll.aggregate([{"$vectorSearch": stage}, {"$project": {"_id": 1}}])]


def _wait_ready(coll: Any) -> None:
    while any(index.get("status") != "READY" for index in coll.list_search_indexes()):
        time.sleep(0.01)


def run(
    coll: Any, model: Callable[..., Any], data: np.ndarray, texts: list[str], asked: np.ndarray, queries: list[str]
) -> dict[str, Any]:
    """The measures of the module docstring, on one contender's empty collection."""
    dims = data.shape[1]
    coll.database.create_collection(coll.name)  # search indexes are defined on an existing collection
    coll.create_search_indexes(
        [model(definition, name=name, type=kind) for name, kind, definition in _definitions(dims)]
    )
    docs = [{"_id": i, "v": data[i].tolist(), "title": texts[i]} for i in range(len(data))]

    def load() -> None:
        for start in range(0, len(docs), 1000):
            coll.insert_many(docs[start : start + 1000])

    out: dict[str, Any] = {}
    _, out["insert_s"], out["insert_cpu_s"] = _timed(load)
    _wait_ready(coll)
    _, first, _ = _timed(lambda: _vector_search(coll, asked[0], 100))
    out["first_query_ms"] = first * 1000
    expected = truth(data, asked)
    for candidates in (10, 100):
        found, walls, cpus = [], [], []
        for q in asked:
            ids, wall, cpu = _timed(lambda q=q: _vector_search(coll, q, candidates))  # type: ignore[misc]
            found.append(ids)
            walls.append(wall)
            cpus.append(cpu)
        out[f"recall_{candidates}"] = recall(found, expected)
        if candidates == 100:
            out["p50_ms"], out["p99_ms"] = _ms(walls)
            out["cpu_p50_ms"] = statistics.median(cpus) * 1000
    coll.insert_one({"_id": len(docs), "v": asked[-1].tolist(), "title": texts[0]})
    ids, after, _ = _timed(lambda: _vector_search(coll, asked[-1], 100))
    out["after_insert_ms"] = after * 1000
    out["after_insert_found"] = len(docs) in ids  # the document just written is its own nearest
    walls, counts = [], []
    for query in queries:
        text = {"index": TEXT, "text": {"query": query, "path": "title"}}
        _, wall, _ = _timed(lambda text=text: list(coll.aggregate([{"$search": text}, {"$limit": 10}])))  # type: ignore[misc]
        walls.append(wall)
        meta = list(coll.aggregate([{"$searchMeta": {**text, "count": {"type": "total"}}}]))
        counts.append(int(meta[0]["count"]["total"]))
    out["search_p50_ms"], out["search_p99_ms"] = _ms(walls)
    out["search_mean_count"] = statistics.mean(counts)
    out["search_counts"] = counts
    return out


def _foliodb(workdir: str, *args: Any) -> dict[str, Any]:
    from pymongo.operations import SearchIndexModel

    with foliodb.MongoClient(os.path.join(workdir, "foliodb")) as client:
        return run(client.bench.docs, SearchIndexModel, *args)


def _mongoeco(*args: Any) -> dict[str, Any]:
    try:
        import mongoeco
    except ImportError as exc:
        return {"skipped": f"mongoeco not importable ({exc}; it needs Python 3.13+: pip install mongoeco)"}
    with mongoeco.MongoClient() as client:
        out = run(client.bench.docs, mongoeco.SearchIndexModel, *args)
    out["version"] = getattr(mongoeco, "__version__", "?")
    return out


def report(result: dict[str, Any]) -> str:
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("insert_many with both indexes (s, wall / CPU)", lambda r: f"{r['insert_s']:.2f} / {r['insert_cpu_s']:.2f}"),
        ("first `$vectorSearch` after the load (ms)", lambda r: f"{r['first_query_ms']:.1f}"),
        ("`$vectorSearch` p50 / p99, numCandidates 100 (ms)", lambda r: f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f}"),
        ("`$vectorSearch` CPU p50 (ms)", lambda r: f"{r['cpu_p50_ms']:.2f}"),
        ("recall@10, numCandidates 10 / 100", lambda r: f"{r['recall_10']:.3f} / {r['recall_100']:.3f}"),
        (
            "first `$vectorSearch` after one insert (ms; finds it)",
            lambda r: f"{r['after_insert_ms']:.1f} ({'yes' if r['after_insert_found'] else 'no'})",
        ),
        (
            "two-word `$search`, `$limit` 10: p50 / p99 (ms)",
            lambda r: f"{r['search_p50_ms']:.2f} / {r['search_p99_ms']:.2f}",
        ),
        ("`$searchMeta` count: mean of the queries", lambda r: f"{r['search_mean_count']:.1f}"),
    ]
    names = list(result["contenders"])
    lines = [
        f"{result['n']:,} documents x {result['dims']} dimensions, {result['queries']} queries",
        "",
        "| measure | " + " | ".join(names) + " |",
        "|---|" + "--:|" * len(names),
    ]
    for label, cell in rows:
        values = [
            cell(result["contenders"][name]) if "skipped" not in result["contenders"][name] else "—" for name in names
        ]
        lines.append(f"| {label} | " + " | ".join(values) + " |")
    for name in names:
        if "skipped" in result["contenders"][name]:
            lines.append(f"\n{name}: {result['contenders'][name]['skipped']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    data = vectors(args.n, args.dims, 1)
    asked = vectors(args.queries, args.dims, 2)
    vocabulary = words()
    texts = titles(args.n, vocabulary)
    queries = two_word_queries(args.queries, vocabulary)
    result: dict[str, Any] = {"n": args.n, "dims": args.dims, "queries": args.queries, "contenders": {}}
    with tempfile.TemporaryDirectory(prefix="search-peer-") as workdir:
        result["contenders"]["FolioDB"] = _foliodb(workdir, data, texts, asked, queries)
    result["contenders"]["mongoeco"] = _mongoeco(data, texts, asked, queries)
    counts = [r["search_counts"] for r in result["contenders"].values() if "skipped" not in r]
    result["counts_agree"] = all(c == counts[0] for c in counts)
    print(report(result))
    print("\n$searchMeta counts agree between the contenders:", result["counts_agree"])
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print("written", args.out)


if __name__ == "__main__":
    main()
