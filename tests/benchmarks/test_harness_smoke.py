"""Smoke test of the benchmark harness: a --quick run on 200 documents, FolioDB and the floor.

It checks the shape of the JSON (every contender has every workload, every
answer right), never the timings.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_reports_every_workload(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    command = [sys.executable, "-m", "benchmarks.run", "--quick", "--sizes", "200", "--peers", "foliodb"]
    done = subprocess.run([*command, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "### 200 documents" in done.stdout

    doc = json.loads(out.read_text())
    assert doc["sizes"] == [200]
    results = doc["results"]["200"]
    assert set(results) == {"floor", "foliodb-disk", "foliodb-memory", "foliodb-server"}
    for name, records in results.items():
        assert set(records) == set(WORKLOADS), name
    for workload, record in results["floor"].items():
        assert record["errors"] == 0 and record["ops"] > 0 and record["ratio"] == 1.0, (workload, record)
    assert results["floor"]["insert_many"]["target"] == 200

    if any("not_measured" in r for r in results["foliodb-disk"].values()):
        pytest.skip("foliodb.MongoClient is not built yet: " + results["foliodb-disk"]["find_one"]["not_measured"])
    for name in ("foliodb-disk", "foliodb-memory"):
        for workload, record in results[name].items():
            assert record.get("errors") == 0 and record.get("ops", 0) > 0, (name, workload, record)
            assert record["ratio"] > 0, (name, workload, record)
    assert {c["line"][:4] for c in doc["targets"]} <= {"PASS", "FAIL"}
    assert doc["targets"], "targets are checked once foliodb-disk is measured"
