"""Writers beside busy readers on one embedded client: ``python -m benchmarks.embedded_mix [--baseline DIR]``.

One embedded client on a file holding 5,000 orders; 8 writer threads each
``insert_one`` in a loop for ``--seconds``, first alone, then beside 2 reader
threads that run long finds back to back, of two kinds:

* ``scan``: ``list(find({"total": {"$lt": 0}}))``, a full scan that matches
  nothing (every document decoded and rejected: the interpreter kept busy);
* ``return``: ``list(find({"total": {"$gt": 0}}))``, all 5,000 documents
  returned (their decoding and garbage too).

Reported per case: the writers' writes/s and its share of their rate alone,
their p50/p99/max latency, the readers' finds and their CPU time per find,
and the cyclic garbage collector's full passes and the CPU time of its passes
per find (a full pass stops every thread: what a writer's p99 cannot avoid).
CPU times are the threads' own (``time.thread_time``): less load-dependent
than the latencies. Each (checkout, case) runs
in a fresh interpreter; with ``--baseline DIR`` (another FolioDB checkout) the
checkouts alternate round by round (``--repeat``), so the machine's load falls
on both alike, and the medians of the rounds are shown. The target of the
embedded fairness work: writers beside readers at 0.5 of their rate alone or
more, p99 under 20 ms.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run by path as a child: the checkout on PYTHONPATH gives foliodb
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    sys.path.append(sys.path.pop(0))

from benchmarks import data

ROOT = Path(__file__).resolve().parent.parent
WRITERS = 8
READERS = 2
READS = {
    "scan": {"total": {"$lt": 0}},
    "return": {"total": {"$gt": 0}},
}
CASES = ("alone", "scan", "return")


def _mix(workdir: str, case: str, seconds: float) -> dict[str, Any]:
    import foliodb

    client = foliodb.MongoClient(tempfile.mkdtemp(dir=workdir, prefix="mix-"))
    coll = client.bench.orders
    coll.insert_many(data.orders(5000))
    latencies: list[list[float]] = [[] for _ in range(WRITERS)]
    finds = [0] * READERS
    find_cpu = [0.0] * READERS
    collector = {"full": 0, "cpu": 0.0}
    started = [0.0]

    def collecting(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
            return
        collector["cpu"] += time.thread_time() - started[0]  # one collection at a time
        if info["generation"] == 2:
            collector["full"] += 1

    start = threading.Barrier(WRITERS + (0 if case == "alone" else READERS) + 1)
    stop_at = [0.0]

    def writer(i: int) -> None:
        mine = latencies[i]
        perf = time.perf_counter
        start.wait()
        k = 0
        while perf() < stop_at[0]:
            t = perf()
            coll.insert_one({"w": i, "k": k, "pad": "x" * 100})
            mine.append(perf() - t)
            k += 1

    def reader(i: int) -> None:
        query = READS[case]
        start.wait()
        while time.perf_counter() < stop_at[0]:
            cpu = time.thread_time()
            list(coll.find(query))
            find_cpu[i] += time.thread_time() - cpu
            finds[i] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    if case != "alone":
        threads += [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    for thread in threads:
        thread.start()
    gc.callbacks.append(collecting)
    stop_at[0] = time.perf_counter() + seconds
    start.wait()
    for thread in threads:
        thread.join()
    gc.callbacks.remove(collecting)
    client.close()
    every = sorted(x for mine in latencies for x in mine)
    return {
        "writes_per_s": len(every) / seconds,
        "p50_ms": every[len(every) // 2] * 1000,
        "p99_ms": every[min(int(len(every) * 0.99), len(every) - 1)] * 1000,
        "max_ms": every[-1] * 1000,
        "finds": sum(finds),
        "find_cpu_ms": sum(find_cpu) / max(sum(finds), 1) * 1000,
        "gc_full": collector["full"],
        "gc_cpu_ms_per_find": collector["cpu"] / max(sum(finds), 1) * 1000,
    }


def _child(checkout: Path, workdir: str, case: str, seconds: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", workdir, case, str(seconds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--baseline", type=Path, help="another FolioDB checkout, measured in the same run")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds a measurement (default 4)")
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workdir, case, seconds = args.child
        print(json.dumps(_mix(workdir, case, float(seconds))))
        return
    checkouts = [("current", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for round_ in range(args.repeat):
        order = checkouts if round_ % 2 == 0 else checkouts[::-1]
        for label, checkout in order:
            for case in CASES:
                result = _child(checkout, args.workdir, case, args.seconds)
                runs.setdefault(label, {}).setdefault(case, []).append(result)
                print(f"[{label} round {round_ + 1}] {case}: {result}", flush=True)
    out = args.out or Path(tempfile.gettempdir()) / f"embedded-mix-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps({"command": sys.argv, "runs": runs}, indent=2))
    print(
        "\n| checkout | readers | writes/s | share of alone | p50 ms | p99 ms | max ms | finds "
        "| CPU ms / find | full GCs | GC CPU ms / find |"
    )
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for label, cases in runs.items():
        alone = statistics.median(r["writes_per_s"] for r in cases["alone"])
        for case in CASES:
            rows = cases[case]
            rate = statistics.median(r["writes_per_s"] for r in rows)
            keys = ("p50_ms", "p99_ms", "max_ms", "finds", "find_cpu_ms", "gc_full", "gc_cpu_ms_per_find")
            cells = [statistics.median(r.get(k, 0) for r in rows) for k in keys]
            print(
                f"| {label} | {case} | {rate:,.0f} | {rate / alone:.2f} | {cells[0]:.1f} | {cells[1]:.1f} | "
                f"{cells[2]:.1f} | {cells[3]:.0f} | {cells[4]:.1f} | {cells[5]:.0f} | {cells[6]:.1f} |"
            )
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
