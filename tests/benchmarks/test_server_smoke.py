"""Smoke test of benchmarks/server.py: a tiny run into a --workdir that does not exist yet
(the benchmark makes it), its table's shape, never its timings."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_server_benchmark_runs_in_a_new_workdir(tmp_path: Path) -> None:
    workdir = tmp_path / "not" / "made"
    out = tmp_path / "server.json"
    command = [sys.executable, "-m", "benchmarks.server", "--docs", "100", "--rounds", "1"]
    command += ["--workdir", str(workdir), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert workdir.is_dir()
    rows = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["floor", "foliodb"]
    results = json.loads(out.read_text())
    assert json.dumps(results).count('"errors": 0') == 10  # five workloads on two servers, every answer right
