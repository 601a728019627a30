"""Smoke tests of ``benchmarks/oplog.py``, one a part, each with tiny sizes: they check that every
part runs and reports what it measures, never the timings.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import oplog

ROOT = Path(__file__).resolve().parents[2]


def test_write_throughput_runs_every_workload_in_a_child_per_checkout(tmp_path: Path) -> None:
    results = oplog.throughput([("current", ROOT)], str(tmp_path), 1, 5, 10)
    assert set(results) == {"disk", "memory"}
    for by_label in results.values():
        assert set(by_label) == {"current"}
        for cells in by_label.values():
            assert set(cells) == set(oplog.WRITE_WORKLOADS)
            assert all(cell["median"] > 0 and len(cell["runs"]) == 1 for cell in cells.values())
    assert "| memory | insert_many |" in oplog._tables({"writes": results})


def test_event_latency_embedded_and_over_the_wire(tmp_path: Path) -> None:
    for row in (oplog.latency_embedded(str(tmp_path), 3, 0.001), oplog.latency_wire(str(tmp_path), 3, 0.001)):
        assert row["events"] == 3
        # Receipt comes after the write was sent; the acknowledgement may arrive after the event.
        assert 0 < row["sent_p50_ms"] <= row["sent_p99_ms"] <= row["sent_max_ms"]
        assert row["ack_p50_ms"] <= row["sent_p50_ms"]


def test_idle_watchers_cpu_is_measured(tmp_path: Path) -> None:
    for row in (
        oplog.idle_embedded(str(tmp_path), 3, 0.2, settle=0.1),
        oplog.idle_wire(str(tmp_path), 3, 0.2, settle=0.2),
    ):
        assert set(row) == {"no watchers", "3 watchers"}
        assert all(value >= 0 for value in row.values())
