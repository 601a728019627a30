"""Many kill -9 trials against one dbpath: python scripts/crash_soak.py [TRIALS].

Writes with concurrent readers, then a quarter as many index builds killed at random moments."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.crash.harness import run_build_trial, run_trial


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    started = time.time()
    totals = {"inserts": 0, "updates": 0, "batches": 0}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "data")
        for seed in range(trials):
            counts = run_trial(path, seed, max_s=1.5)
            for key in totals:
                totals[key] += counts[key]
        builds = [run_build_trial(str(Path(tmp) / "builds"), seed) for seed in range(max(trials // 4, 1))]
    print(f"{trials} trials in {time.time() - started:.0f}s, all acknowledged writes present, validate ok: {totals}")
    print(f"{len(builds)} index builds killed ({sum(builds)} after acknowledging): every index whole or absent")


if __name__ == "__main__":
    main()
