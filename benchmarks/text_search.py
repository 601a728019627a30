"""$search at scale: FolioDB beside the engines it was chosen against, used directly.

    python -m benchmarks.text_search                     # 1,000,000 short documents (about 20 minutes on 2 cores)
    python -m benchmarks.text_search --docs 20000 --queries 50   # a smoke run
    python -m benchmarks.text_search --docs 200000 --foliodb-only  # FolioDB's rows only

The documents are short titles: 4 to 10 words drawn from a Zipf-distributed vocabulary of
50,000 made-up words (so a few words are common and most rare, as in text). Queries are two
words drawn from the same distribution. Measured, in one process, one engine after another:

* FolioDB (a dbpath on disk): ``insert_many`` of the documents; a ``search`` index over the
  existing collection (time to READY: the background build); a two-word ``text`` query with
  ``count: {type: "total"}``, its first 10 documents and ``$$SEARCH_META`` (p50/p99); the same
  query against the index's in-memory state called directly (FolioDB's engine with no
  pipeline, no BSON, no document fetch: the floor of its own path), each query timed both
  ways in turn once the background thread has merged the index's segments; ``autocomplete`` of
  3-letter prefixes (p50); the index's saved size;
* tantivy (``pip install tantivy``) with the same tokens (a whitespace tokenizer over words
  FolioDB's analyzer produced): build, the same query (top 10 and count), size on disk;
* SQLite FTS5 with the same tokens: build, ``MATCH 'a OR b' ORDER BY bm25 LIMIT 10`` and a
  count, size.

CPU time (of every thread of the process) is reported beside the wall clock, for the builds
and as the median of the queries', and the load average before and after: the machines this
project runs on are shared, and there a query's wall time also counts the time other
processes held the cores. It writes JSON (``--out``, default
``benchmark-results/text-search-<docs>.json``) and prints the table docs/benchmarks.md shows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search.text.analysis import BUILT_IN
from foliodb.engine.search.text.operators import Run, compile_operator
from foliodb.engine.search.text.reader import Reader

VOCABULARY = 50_000


def words(seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out, seen = [], set()
    while len(out) < VOCABULARY:
        word = "".join(rng.choice(letters, rng.integers(3, 10)))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def titles(n: int, vocabulary: list[str], seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.2, size=n * 10), VOCABULARY) - 1
    lengths = rng.integers(4, 11, size=n)
    out, at = [], 0
    for length in lengths.tolist():
        out.append(" ".join(vocabulary[r] for r in ranks[at : at + length].tolist()))
        at += length
    return out


def two_word_queries(count: int, vocabulary: list[str], seed: int = 13) -> list[str]:
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.2, size=(count, 2)), 2000) - 1
    return [f"{vocabulary[a]} {vocabulary[b]}" for a, b in ranks.tolist()]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
    }


class Samples:
    """Wall and CPU seconds (every thread of the process) of repeated operations: on a loaded
    machine the wall clock also counts the time other processes held the cores, the CPU time
    does not."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    @contextmanager
    def timing(self) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.wall.append(time.perf_counter() - wall)
        self.cpu.append(time.process_time() - cpu)

    def summary(self) -> dict[str, float]:
        return {**percentiles(self.wall), "cpu_p50_ms": round(statistics.median(self.cpu) * 1000, 3)}


def timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def size_of(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def bench_foliodb(root: str, docs: list[str], queries: list[str], prefixes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    client = foliodb.MongoClient(os.path.join(root, "foliodb"))
    coll = client.bench.titles
    batch = 10_000

    def insert() -> None:
        for i in range(0, len(docs), batch):
            coll.insert_many([{"_id": i + j, "title": t} for j, t in enumerate(docs[i : i + batch])])

    _, out["insert_s"], out["insert_cpu_s"] = timed(insert)

    def build(name: str, field: dict[str, Any]) -> None:
        definition = {"mappings": {"fields": {"title": field}}}
        coll.create_search_index(SearchIndexModel(name=name, definition=definition))
        while next(coll.list_search_indexes(name))["status"] != "READY":
            time.sleep(0.1)
        client._executor.engine.search.wait_idle(timeout=3600)

    _, out["build_s"], out["build_cpu_s"] = timed(lambda: build("default", {"type": "string"}))
    engine = client._executor.engine
    state = next(s for s in engine.search.states.values() if hasattr(s, "segments"))

    def direct(query: str) -> None:
        with state.lock:
            run = Run(Reader(state), state.definition)
            ords, scores = compile_operator("text", {"query": query, "path": "title"}, "text", state.definition).hits(
                run
            )
            top = (
                np.argpartition(-scores, min(10, len(scores) - 1))[:10] if len(scores) > 10 else np.arange(len(scores))
            )
            _ = (len(ords), state.rid_at[ords[top]])

    # Interleaved, query by query: the two see the same load (and the same background work).
    samples, direct_samples, counts = Samples(), Samples(), []
    for query in queries:
        stage = {"text": {"query": query, "path": "title"}, "count": {"type": "total"}}
        pipeline = [{"$search": stage}, {"$limit": 10}, {"$project": {"title": 1, "meta": "$$SEARCH_META"}}]
        with samples.timing():
            found = list(coll.aggregate(pipeline))
        counts.append(int(found[0]["meta"]["count"]["total"]) if found else 0)
        with direct_samples.timing():
            direct(query)
    out["query"] = samples.summary()
    out["mean_count"] = round(sum(counts) / len(counts), 1)
    out["engine_direct"] = direct_samples.summary()
    out["segments"] = len(state.segments)
    autocomplete = {"type": "autocomplete", "maxGrams": 10}
    _, out["autocomplete_build_s"], out["autocomplete_build_cpu_s"] = timed(lambda: build("ac", autocomplete))
    samples = Samples()
    for prefix in prefixes:
        stage = {"index": "ac", "autocomplete": {"query": prefix, "path": "title"}}
        with samples.timing():
            list(coll.aggregate([{"$search": stage}, {"$limit": 10}]))
    out["autocomplete"] = samples.summary()
    ids = {i["name"]: i["id"] for i in coll.list_search_indexes()}
    engine.storage.begin_operation()
    try:
        listed = engine.catalog.get("bench", "titles").search_indexes.values()
        internal = {index.public_id: index.id for index in listed}  # the saved files' names
    finally:
        engine.storage.end_operation()
    client.close()  # saves the indexes
    directory = os.path.join(root, "foliodb", "foliodb.search")
    for name, key in (("index_bytes", "default"), ("autocomplete_bytes", "ac")):
        prefix = f"{internal[ids[key]]}-"
        out[name] = sum(f.stat().st_size for f in Path(directory).iterdir() if f.name.startswith(prefix))
    out["data_bytes"] = size_of(os.path.join(root, "foliodb"))
    return out


def bench_tantivy(root: str, tokens: list[str], queries: list[str]) -> dict[str, Any]:
    import tantivy

    out: dict[str, Any] = {}
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("title", stored=False, tokenizer_name="whitespace")
    builder.add_integer_field("id", stored=True, fast=True)
    schema = builder.build()
    path = os.path.join(root, "tantivy")
    os.makedirs(path)
    index = tantivy.Index(schema, path=path)

    def build() -> None:
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for i, text in enumerate(tokens):
            writer.add_document(tantivy.Document(id=i, title=text))
        writer.commit()
        writer.wait_merging_threads()

    _, out["build_s"], out["build_cpu_s"] = timed(build)
    index.reload()
    searcher = index.searcher()
    samples = Samples()
    for query in queries:
        a, b = query.split()
        with samples.timing():
            parsed = index.parse_query(f"{a} OR {b}", ["title"])
            searcher.search(parsed, 10, count=True)  # the top 10 and the count, in one call
    out["query"] = samples.summary()
    out["index_bytes"] = size_of(path)
    return out


def bench_fts5(root: str, tokens: list[str], queries: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    path = os.path.join(root, "fts5.db")
    conn = sqlite3.connect(path)

    def build() -> None:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, tokenize='unicode61')")
        with conn:
            conn.executemany("INSERT INTO t(rowid, title) VALUES (?, ?)", enumerate(tokens))

    _, out["build_s"], out["build_cpu_s"] = timed(build)
    samples = Samples()
    for query in queries:
        a, b = query.split()
        with samples.timing():
            conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (f"{a} OR {b}",)).fetchall()
            conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (f"{a} OR {b}",)).fetchone()
    out["query"] = samples.summary()
    conn.close()
    out["index_bytes"] = size_of(path)
    return out


def report(result: dict[str, Any]) -> str:
    f, t, s = result["foliodb"], result.get("tantivy", {}), result.get("fts5", {})

    def built(peer: dict[str, Any]) -> str:  # blank for a peer not run (--foliodb-only)
        return f"{peer['build_s']:.1f} / {peer['build_cpu_s']:.1f}" if "build_s" in peer else ""

    def megabytes(peer: dict[str, Any]) -> str:
        return f"{peer['index_bytes'] / 1e6:.0f}" if "index_bytes" in peer else ""

    rows = [
        "| | FolioDB `$search` | FolioDB's engine directly | tantivy directly | SQLite FTS5 directly |",
        "| --- | --- | --- | --- | --- |",
        f"| index build (s, wall / CPU) | {f['build_s']:.1f} / {f['build_cpu_s']:.1f} | | {built(t)} | {built(s)} |",
        f"| two-word `text` + count, p50 (ms) | {f['query']['p50_ms']} | {f['engine_direct']['p50_ms']} | "
        f"{t.get('query', {}).get('p50_ms', '')} | {s.get('query', {}).get('p50_ms', '')} |",
        f"| two-word `text` + count, p99 (ms) | {f['query']['p99_ms']} | {f['engine_direct']['p99_ms']} | "
        f"{t.get('query', {}).get('p99_ms', '')} | {s.get('query', {}).get('p99_ms', '')} |",
        f"| two-word `text` + count, CPU p50 (ms) | {f['query'].get('cpu_p50_ms', '')} | "
        f"{f['engine_direct'].get('cpu_p50_ms', '')} | {t.get('query', {}).get('cpu_p50_ms', '')} | "
        f"{s.get('query', {}).get('cpu_p50_ms', '')} |",
        f"| index size (MB) | {f['index_bytes'] / 1e6:.0f} | | {megabytes(t)} | {megabytes(s)} |",
        f"| `autocomplete` index build (s, wall / CPU) | {f['autocomplete_build_s']:.1f} / "
        f"{f['autocomplete_build_cpu_s']:.1f} | | | |",
        f"| `autocomplete`, p50 / p99 / CPU p50 (ms) | {f['autocomplete']['p50_ms']} / {f['autocomplete']['p99_ms']} / "
        f"{f['autocomplete'].get('cpu_p50_ms', '')} | | | |",
        f"| `autocomplete` index size (MB) | {f['autocomplete_bytes'] / 1e6:.0f} | | | |",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--foliodb-only", action="store_true", help="skip tantivy and SQLite FTS5")
    parser.add_argument("--out")
    parser.add_argument("--report", help="print the table of a saved run and exit")
    args = parser.parse_args()
    if args.report:
        print(report(json.loads(Path(args.report).read_text())))
        return
    vocabulary = words()
    docs = titles(args.docs, vocabulary)
    queries = two_word_queries(args.queries, vocabulary)
    prefixes = [q.split()[0][:3] for q in queries]
    standard = BUILT_IN["lucene.standard"]
    tokens = [] if args.foliodb_only else [" ".join(t for t, _ in standard.terms(d)) for d in docs]
    result: dict[str, Any] = {"docs": args.docs, "queries": args.queries, "load_before": os.getloadavg()}
    root = tempfile.mkdtemp(prefix="text-search-")
    try:
        result["foliodb"] = bench_foliodb(root, docs, queries, prefixes)
        print(json.dumps(result["foliodb"]), flush=True)
        if not args.foliodb_only:
            try:
                result["tantivy"] = bench_tantivy(root, tokens, queries)
            except ImportError:
                result["tantivy"] = {"skipped": "pip install tantivy"}
            result["fts5"] = bench_fts5(root, tokens, queries)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["load_after"] = os.getloadavg()
    out = Path(args.out or f"benchmark-results/text-search-{args.docs}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(report(result))


if __name__ == "__main__":
    main()
