"""Many kill -9 trials: python scripts/crash_soak.py [TRIALS] [--only writes|builds|transactions|vector|text].

Writes with concurrent readers, a quarter as many index builds killed at random moments, as many
runs of multi-document transactions and retryable writes, and a quarter as many writes to collections
with a vector and with a text search index (killed while the indexes save), each against its own
dbpath. The suite runs a few trials of each (tests/crash)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.crash.harness import run_build_trial, run_transaction_trial, run_trial
from tests.crash.test_text_kill9 import run_text_trial
from tests.crash.test_vector_kill9 import run_vector_trial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trials", type=int, nargs="?", default=200)
    parser.add_argument("--only", choices=("writes", "builds", "transactions", "vector", "text"), default=None)
    args = parser.parse_args()
    kinds = [args.only] if args.only else ["writes", "builds", "transactions", "vector", "text"]
    with tempfile.TemporaryDirectory() as tmp:
        if "writes" in kinds:
            started = time.time()
            totals = {"inserts": 0, "updates": 0, "batches": 0}
            for seed in range(args.trials):
                counts = run_trial(str(Path(tmp) / "data"), seed, max_s=1.5)
                for key in totals:
                    totals[key] += counts[key]
            print(
                f"{args.trials} write trials in {time.time() - started:.0f}s: every acknowledged write there, {totals}"
            )
        if "builds" in kinds:
            started = time.time()
            builds = [run_build_trial(str(Path(tmp) / "builds"), seed) for seed in range(max(args.trials // 4, 1))]
            print(
                f"{len(builds)} index builds killed in {time.time() - started:.0f}s ({sum(builds)} after "
                "acknowledging): every index whole or absent"
            )
        if "transactions" in kinds:
            started = time.time()
            txns = {"transactions": 0, "retryable": 0}
            for seed in range(args.trials):
                counts = run_transaction_trial(str(Path(tmp) / "txns"), seed)
                for key in txns:
                    txns[key] += counts[key]
            print(
                f"{args.trials} transaction trials in {time.time() - started:.0f}s: every acknowledged commit whole, "
                f"no partial one, retries answered once, {txns}"
            )
        for kind, trial in (("vector", run_vector_trial), ("text", run_text_trial)):
            if kind in kinds:
                started = time.time()
                searched = {"writes": 0, "restored": 0}
                for seed in range(max(args.trials // 4, 1)):
                    counts = trial(str(Path(tmp) / kind), seed)
                    for key in searched:
                        searched[key] += counts[key]
                print(
                    f"{max(args.trials // 4, 1)} {kind} index trials in {time.time() - started:.0f}s: the search "
                    f"index equal to its collection after every kill, {searched}"
                )


if __name__ == "__main__":
    main()
