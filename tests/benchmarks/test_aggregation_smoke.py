"""Smoke test of ``python -m benchmarks.aggregation``: tiny sizes, FolioDB and the floor
(peers are optional packages, not installed by the test extras).

It checks the shape of the JSON (every workload answered, FolioDB's answers
equal the floor's, a peak RSS measured,
PASS/FAIL lines), never the timings.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOOKUPS = ("lookup_id", "lookup_ref", "lookup_ref_indexed")


def test_quick_aggregation_run_answers_every_workload(tmp_path: Path) -> None:
    out = tmp_path / "aggregation.json"
    command = [sys.executable, "-m", "benchmarks.aggregation", "--quick", "--orders", "1000", "--group-docs", "2000"]
    command += ["--peers", "foliodb-disk", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Revenue by SKU" in done.stdout

    doc = json.loads(out.read_text())
    assert not doc["failures"]
    results = doc["results"]
    assert set(results) == {"floor", "foliodb-disk"}
    assert len(results["floor"]["revenue"]["answer"]) == 10
    assert results["foliodb-disk"]["revenue"]["same_as_floor"] is True
    for name in ("floor", "foliodb-disk"):
        for workload in LOOKUPS:
            assert results[name][workload]["errors"] == 0 and results[name][workload]["seconds"] > 0, (name, workload)

    group = doc["group"]["foliodb-disk"]
    assert group["group-run"]["groups"] > 0 and group["group-run"]["same_as_floor"] is True
    assert group["group-run"]["peak_rss"] > group["group-run"]["rss_before"] > 0
    assert group["group-trace"]["python_peak"] > 0
    lines = [check["line"] for check in doc["targets"]]
    assert any("peak RSS" in line for line in lines)
    assert {line[:4] for line in lines} <= {"PASS", "FAIL"}
