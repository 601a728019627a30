"""Smoke test of ``python -m benchmarks.indexes``: tiny sizes, FolioDB and the floor.

It checks the shape of the JSON (every size has every workload, every answer
right, FolioDB's plan an index scan, PASS/FAIL lines), never the timings.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_index_run_reports_every_size(tmp_path: Path) -> None:
    out = tmp_path / "indexes.json"
    command = [sys.executable, "-m", "benchmarks.indexes", "--quick", "--sizes", "1000,3000", "--peers", "foliodb-disk"]
    done = subprocess.run([*command, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Indexed equality find" in done.stdout

    doc = json.loads(out.read_text())
    assert doc["sizes"] == [1000, 3000] and not doc["failures"]
    assert set(doc["results"]) == {"floor", "foliodb-disk"}
    for name, per_size in doc["results"].items():
        assert set(per_size) == {"1000", "3000"}, name
        for size, record in per_size.items():
            assert record["load"]["rate"] > 0, (name, size)
            for workload in ("find_user", "find_one"):
                assert record[workload]["errors"] == 0 and record[workload]["ops"] > 0, (name, size, workload)
                assert record[workload]["ratio"] > 0, (name, size, workload)
            assert record["build"]["errors"] == 0 and record["build"]["seconds"] > 0, (name, size)
    plan = doc["results"]["foliodb-disk"]["3000"]["explain"]["plan"]
    assert "IXSCAN user_id_1" in plan
    lines = [check["line"] for check in doc["targets"]]
    assert len(lines) == 4  # two growth checks, the floor share at two sizes
    assert {line[:4] for line in lines} <= {"PASS", "FAIL"}
