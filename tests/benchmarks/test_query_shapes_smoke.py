"""Smoke test of ``benchmarks/query_shapes.py`` at its ``--quick`` size: every shape runs and
answers right (each child checks its answer against plain Python and fails otherwise); never
the timings."""

from __future__ import annotations

from pathlib import Path

from benchmarks import query_shapes


def test_every_shape_answers_right(tmp_path: Path) -> None:
    result = query_shapes.run(str(tmp_path), query_shapes.QUICK_ORDERS, 1, None)
    assert set(result["best_seconds"]["current"]) == set(query_shapes.SHAPES)
    assert "| lookup_unindexed |" in query_shapes.table(result)
