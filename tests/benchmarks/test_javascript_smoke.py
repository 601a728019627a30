"""Smoke test of ``python -m benchmarks.javascript``: a tiny run answers every pair
(the JavaScript and native answers equal) and writes its JSON; never the timings."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_javascript_run_answers_every_pair(tmp_path: Path) -> None:
    out = tmp_path / "javascript.json"
    command = [sys.executable, "-m", "benchmarks.javascript", "--docs", "300", "--rounds", "1", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert set(report["per_document_us"]) == {"where", "function", "mapReduce"}
    assert "quickjs" in report["engine_call_us"]
