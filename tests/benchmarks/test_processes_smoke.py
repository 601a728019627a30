"""Smoke test of benchmarks/processes.py: a tiny run, its table's shape, never its timings."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_second_process_benchmark_runs() -> None:
    command = [sys.executable, "-m", "benchmarks.processes", "--docs", "200", "--seconds", "0.1", "--repeat", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows == ["client", "owner", "second process", "second / owner"]
