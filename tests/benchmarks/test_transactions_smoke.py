"""Smoke test of benchmarks/transactions.py: a tiny run completes and reports every workload, never timings."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_transactions_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "txn.json"
    command = [sys.executable, "-m", "benchmarks.transactions", "--seconds", "0.1", "--repeat", "1", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert set(result) == {"embedded", "wire"}
    assert set(result["embedded"]) == set(result["wire"]) and "pair" in result["wire"]
