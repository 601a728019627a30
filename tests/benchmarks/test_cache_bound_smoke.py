"""Smoke test of ``benchmarks/cache_bound.py`` at its ``--quick`` size: every run answers right
(each child checks its answers against plain Python and fails otherwise) and the cache's bytes
stay within its size; never the timings.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import cache_bound


def test_the_cache_stays_within_its_size_on_both_layouts(tmp_path: Path) -> None:
    docs, collections, sizes = cache_bound.QUICK
    result = cache_bound.run(docs, collections, sizes, str(tmp_path))
    runs = {(r["layout"], r["size_mb"]): r for r in result["runs"]}
    assert set(runs) == {(layout, size) for layout in ("one", "many") for size in sizes}
    for run in runs.values():
        assert run["within_bound"] and run["most_cache_bytes"] <= run["max_bytes"] == run["size_mb"] * 2**20
    off, on = sizes
    assert runs["one", off]["builds"] == runs["many", off]["builds"] == 0
    assert runs["one", on]["builds"] == 0  # the one collection never fits
    # Each of the many fits, two at a time: the first two stay cached, the other two are
    # refused their builds (each scan of them, each pass), never evicting an entry.
    many = runs["many", on]
    assert (many["builds"], many["evictions"]) == (2, 0)
    assert many["refusals"] == 2 * (collections - 2) * cache_bound.ROUNDS
    assert many["hits"] == 2 * 2 * cache_bound.ROUNDS - 2  # each scan of the first two but their builds
    assert "| many | 24 |" in cache_bound.table(result)
