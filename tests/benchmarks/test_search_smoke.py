"""Smoke tests of the search benchmarks: tiny runs of benchmarks.text_search and
benchmarks.vector_search.

They check the JSON's shape and the answers the runs count (matches, recall) against plain
Python and numpy, never the timings.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.text_search import titles, two_word_queries, words

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_text_search_counts_the_titles_holding_either_word(tmp_path: Path) -> None:
    pytest.importorskip("tantivy")
    out = tmp_path / "text.json"
    done = _run("benchmarks.text_search", "--docs", "2000", "--queries", "10", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "two-word `text` + count, CPU p50 (ms)" in done.stdout
    result = json.loads(out.read_text())
    for engine in ("foliodb", "tantivy", "fts5"):
        assert {"p50_ms", "p99_ms", "cpu_p50_ms"} <= set(result[engine]["query"]), engine
    assert {"p50_ms", "p99_ms", "cpu_p50_ms"} <= set(result["foliodb"]["autocomplete"])
    # The made-up words are lower-case letters: lucene.standard keeps each as one term.
    vocabulary = words()
    docs = [set(t.split()) for t in titles(2000, vocabulary)]
    counts = [sum(1 for d in docs if set(q.split()) & d) for q in two_word_queries(10, vocabulary)]
    assert result["foliodb"]["mean_count"] == round(sum(counts) / len(counts), 1)
    assert result["foliodb"]["index_bytes"] > 0 and result["foliodb"]["autocomplete_bytes"] > 0


def test_vector_search_recall_is_exact_when_the_candidates_cover_the_index(tmp_path: Path) -> None:
    pytest.importorskip("usearch")
    out = tmp_path / "vector.json"
    args = ("--n", "150", "--dims", "16", "--queries", "10", "--data", "hard,clustered", "--out", str(out))
    done = _run("benchmarks.vector_search", *args)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert set(result["sets"]) == {"hard", "clustered"}
    for name, run in result["sets"].items():
        assert {"p50_ms", "p99_ms", "cpu_p50_ms"} <= set(run["foliodb"]), name
        assert "cpu_p50_ms" in run["floor"], name
        # numCandidates 200 >= 150 vectors: FolioDB scores every one exactly, as numpy's ranking does.
        assert run["foliodb"]["recall"]["200"] == 1.0, name
        assert all(0.0 <= r <= 1.0 for r in run["foliodb"]["recall"].values()), name


def test_search_peer_counts_and_recall_against_plain_python(tmp_path: Path) -> None:
    pytest.importorskip("usearch")
    out = tmp_path / "peer.json"
    done = _run("benchmarks.search_peer", "--n", "120", "--dims", "16", "--queries", "4", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    folio = result["contenders"]["FolioDB"]
    # 120 vectors, numCandidates 100 of them: FolioDB searches exactly below that many, as numpy ranks.
    assert folio["recall_100"] == 1.0 and 0.0 <= folio["recall_10"] <= 1.0
    assert folio["after_insert_found"] is True  # the document just written is its own nearest
    vocabulary = words()
    docs = [set(t.split()) for t in titles(120, vocabulary)]
    docs.append(docs[0])  # the one insert after the load repeats the first title
    assert folio["search_counts"] == [
        sum(1 for d in docs if set(q.split()) & d) for q in two_word_queries(4, vocabulary)
    ]
    peer = result["contenders"]["mongoeco"]
    assert "skipped" in peer or peer["search_counts"] == folio["search_counts"]
