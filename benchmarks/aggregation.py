"""Aggregation benchmarks: ``python -m benchmarks.aggregation [--quick] [--peers all] [--only revenue,lookup,group]``.

Workloads (the pipelines are in :mod:`benchmarks.pipelines`)::

    revenue     $match shipped, $unwind items, $group by sku ($sum of price x quantity, $sum of quantity),
                $sort by revenue, $limit 10 - over 100k orders
    lookup      $lookup of 10k orders to 5,000 users: foreignField _id; foreignField user_ref without an
                index; the same after create_index("user_ref") on users
    group       $group of 1M orders on disk by shipping_address.zip (800 values), $sum and $avg of total:
                the peak RSS of the process running it

revenue and lookup run per contender in one child process (the floor,
FolioDB, mongomock, montydb); group loads a dbpath in one child and runs the
pipeline in a fresh one, whose peak RSS (``getrusage(RUSAGE_SELF).ru_maxrss``
at its end) is the pipeline's alone, plus FolioDB once more under
``tracemalloc`` for the peak of Python's own allocations.

Invariants:

* every contender loads the same documents in batches of 1,000 (generated
  one at a time, so no loader holds a collection);
* a pipeline is repeated up to ``rounds`` times while the workload has spent
  less than ``budget`` seconds, and the fastest run is kept; one run past
  ``run_budget`` is interrupted and reported as over budget;
* a $lookup first joins the first ``probe`` orders; when 10k orders at that
  pace would pass ``budget``, the probe is the result (marked estimated),
  otherwise the full join is timed;
* every answer is checked: each order joined to exactly its customer; the
  revenue top 10 and the 800 groups equal the floor's (ids and counts
  exactly, sums within 1e-9 relative); a store without ``aggregate`` is
  reported as not supported, never as slow.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import socket
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks import child
from benchmarks.data import USERS, batches, customers, iter_orders
from benchmarks.peers import version
from benchmarks.pipelines import (
    AS,
    GROUP_FIELD,
    FloorPipelines,
    FolioDBDiskPipelines,
    FolioDBMemoryPipelines,
    MongomockPipelines,
    MontyDBMemoryPipelines,
    Pipelines,
)
from benchmarks.report import fmt_rate, fmt_ratio, targets_block
from benchmarks.run import machine, output_path, save
from benchmarks.workloads import BATCH, Outcome, Profiler, _describe

OURS = "foliodb-disk"
MEMORY_TARGET = 200_000_000  # bytes: "under 200 MB"
LOOKUPS = {"lookup_id": "_id", "lookup_ref": "user_ref", "lookup_ref_indexed": "user_ref"}

CONTENDERS: dict[str, type[Pipelines]] = {
    cls.name: cls
    for cls in (
        FloorPipelines,
        FolioDBDiskPipelines,
        FolioDBMemoryPipelines,
        MongomockPipelines,
        MontyDBMemoryPipelines,
    )
}
DEFAULT = ["floor", "foliodb-disk", "mongomock", "montydb-memory"]
GROUP_CONTENDERS = ["floor", OURS]
NOTES = {
    "floor": "plain Python over bson.decode of every document; $lookup = an ids/index table lookup per order "
    "(without an index: SQLite's instr keeps the users whose BSON holds the id's bytes, then decode and check)",
    "mongomock": "in memory; $lookup runs a find (a scan of users) per order, with or without an index",
    "montydb-memory": "aggregate raises NotImplementedError in montydb 2.5.6",
}


@dataclass(frozen=True)
class AggPlan:
    orders: int = 100_000
    lookup_orders: int = 10_000
    group_docs: int = 1_000_000
    rounds: int = 3
    budget: float = 30.0  # seconds a workload may spend on repeated runs
    probe: int = 100  # orders joined first, to decide whether the full $lookup fits the budget
    run_budget: float = 300.0  # one pipeline run is interrupted after this


QUICK = AggPlan(orders=5_000, lookup_orders=1_000, group_docs=20_000, rounds=1, budget=2.0, probe=50, run_budget=60.0)


class Runner:
    """Times single pipeline runs under the run budget, with optional cProfile output."""

    def __init__(self, plan: AggPlan, profiler: Profiler) -> None:
        self.plan = plan
        self.profiler = profiler

    def once(self, workload: str, fn: Callable[[], list[dict[str, Any]]]) -> tuple[float, list[dict[str, Any]]]:
        answer: list[dict[str, Any]] = []

        def timed() -> Outcome:
            nonlocal answer
            start = time.perf_counter()
            answer = fn()
            return Outcome(1, time.perf_counter() - start, 0)

        gc.collect()
        with child.deadline(self.plan.run_budget):
            outcome = self.profiler.run(workload, timed)
        return outcome.seconds, answer

    def repeated(
        self, workload: str, fn: Callable[[], list[dict[str, Any]]]
    ) -> tuple[list[float], list[dict[str, Any]]]:
        """Up to ``rounds`` runs while under the workload budget; the times and the first answer."""
        times: list[float] = []
        first: list[dict[str, Any]] = []
        while len(times) < self.plan.rounds and sum(times) < self.plan.budget:
            seconds, answer = self.once(workload, fn)
            times.append(seconds)
            first = first or answer
        return times, first


def wrong_joins(out: list[dict[str, Any]], expected: int) -> int:
    """Orders not joined to exactly their customer, plus orders missing from the output."""
    wrong = sum(1 for doc in out if len(doc[AS]) != 1 or doc[AS][0]["_id"] != doc["user_id"])
    return wrong + abs(expected - len(out))


def measure_revenue(contender: Pipelines, runner: Runner) -> dict[str, Any]:
    times, answer = runner.repeated("revenue", contender.revenue)
    best = min(times)
    return {"seconds": best, "runs": times, "rate": runner.plan.orders / best, "answer": answer}


def measure_lookup(contender: Pipelines, runner: Runner, workload: str) -> dict[str, Any]:
    plan = runner.plan
    field = LOOKUPS[workload]
    probe = min(plan.probe, plan.lookup_orders)
    seconds, out = runner.once(workload, lambda: contender.lookup(field, probe))
    estimate = seconds * plan.lookup_orders / probe
    record: dict[str, Any] = {"orders": plan.lookup_orders, "probe_seconds": seconds, "errors": wrong_joins(out, probe)}
    if probe < plan.lookup_orders and estimate > plan.budget:
        return {**record, "seconds": estimate, "estimated": True, "us_per_order": seconds / probe * 1e6}
    times, out = runner.repeated(workload, lambda: contender.lookup(field, None))
    best = min(times)
    record["errors"] += wrong_joins(out, plan.lookup_orders)
    return {**record, "seconds": best, "runs": times, "us_per_order": best / plan.lookup_orders * 1e6}


def guarded(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A workload's record, or why there is none."""
    try:
        return fn()
    except NotImplementedError as exc:
        return {"not_supported": f"{type(exc).__name__}: {exc}"}
    except child.OverBudget as exc:
        return {"over_budget": str(exc)}
    except Exception as exc:
        if "not implemented" in str(exc).lower():  # mongita and friends raise their own error types
            return {"not_supported": f"{type(exc).__name__}: {exc}"}
        return {"error": _describe(exc)}


def load(contender: Pipelines, collection: str, n: int) -> dict[str, Any]:
    seconds = 0.0
    for batch in batches(iter_orders(n), BATCH):
        start = time.perf_counter()
        contender.load(collection, batch)
        seconds += time.perf_counter() - start
    return {"docs": n, "seconds": round(seconds, 3), "rate": n / seconds}


def worker_main(
    name: str, plan: AggPlan, workdir: str, results: child.Results, profile_dir: str | None, only: list[str]
) -> None:
    """Child: load the three collections, then revenue and the three $lookup variants (those in ``only``)."""
    contender = CONTENDERS[name]()
    runner = Runner(replace(plan, rounds=1) if profile_dir else plan, Profiler(profile_dir, name))
    contender.open(workdir)
    try:
        results.save("load", load(contender, "orders", plan.orders))
        contender.load("users", customers())
        load(contender, "lookup_orders", plan.lookup_orders)
        if "revenue" in only:
            results.save("revenue", guarded(lambda: measure_revenue(contender, runner)))
        for workload in LOOKUPS if "lookup" in only else ():
            if workload == "lookup_ref_indexed":
                start = time.perf_counter()
                contender.create_index("users", "user_ref")
                results.save("user_ref_index_seconds", time.perf_counter() - start)
            results.save(workload, guarded(lambda w=workload: measure_lookup(contender, runner, w)))  # type: ignore[misc]
    finally:
        contender.close()


def worker_group(name: str, mode: str, plan: AggPlan, directory: str, results: child.Results) -> None:
    """Child: ``group-load`` fills the dbpath; ``group-run`` / ``group-trace`` run the $group on it."""
    contender = CONTENDERS[name]()
    contender.open(directory)
    try:
        if mode == "group-load":
            results.save("load", {**load(contender, "orders", plan.group_docs), "peak_rss": child.peak_rss()})
            return
        gc.collect()
        before = child.current_rss()
        if mode == "group-trace":
            tracemalloc.start()
        start = time.perf_counter()
        try:
            with child.deadline(plan.run_budget):
                groups = contender.group()
        except child.OverBudget as exc:
            results.save(mode, {"over_budget": str(exc), "peak_rss": child.peak_rss()})
            return
        seconds = time.perf_counter() - start
        record: dict[str, Any] = {"seconds": seconds, "rate": plan.group_docs / seconds, "groups": len(groups)}
        if mode == "group-trace":
            record["python_peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        else:
            record.update(rss_before=before, peak_rss=child.peak_rss(), answer=groups)
        results.save(mode, record)
    finally:
        contender.close()


# -- the parent: run the children, compare, report ------------------------------------------


def close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b, rel_tol=1e-9)
    return bool(a == b)


def same_docs(ours: list[dict[str, Any]], floor: list[dict[str, Any]], ordered: bool) -> bool:
    """Equal answers: the same documents (in the same order when ``ordered``), sums within 1e-9 relative."""
    if not ordered:
        ours, floor = sorted(ours, key=lambda d: d["_id"]), sorted(floor, key=lambda d: d["_id"])
    return len(ours) == len(floor) and all(
        a.keys() == b.keys() and all(close(a[k], b[k]) for k in a) for a, b in zip(ours, floor, strict=True)
    )


def compare(doc: dict[str, Any]) -> None:
    """Ratios to the floor (the floor's time / this time) and answer checks against the floor's answers."""
    floor = doc["results"].get("floor", {})
    for records in doc["results"].values():
        for workload in ("revenue", *LOOKUPS):
            record, base = records.get(workload, {}), floor.get(workload, {})
            if "seconds" in record and "seconds" in base:
                record["ratio"] = base["seconds"] / record["seconds"]
        revenue = records.get("revenue", {})
        if "answer" in revenue and "answer" in floor.get("revenue", {}):
            revenue["same_as_floor"] = same_docs(revenue["answer"], floor["revenue"]["answer"], ordered=True)
    group_floor = doc["group"].get("floor", {}).get("group-run", {})
    for runs in doc["group"].values():
        run = runs.get("group-run", {})
        if "answer" in run and "answer" in group_floor:
            run["same_as_floor"] = same_docs(run["answer"], group_floor["answer"], ordered=False)
        if "seconds" in run and "seconds" in group_floor:
            run["ratio"] = group_floor["seconds"] / run["seconds"]


def targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []

    def check(passed: bool, text: str) -> None:
        checks.append({"passed": passed, "line": f"{'PASS' if passed else 'FAIL'}  {text}"})

    plan = doc["plan"]
    for name, records in doc["results"].items():
        revenue = records.get("revenue", {})
        if name != "floor" and "answer" in revenue:
            check(bool(revenue.get("same_as_floor")), f"{name} revenue top 10 equals the floor's")
        for workload in LOOKUPS:
            record = records.get(workload, {})
            if "errors" in record:
                label = f"{name} {workload}: every order joined to exactly its customer"
                check(record["errors"] == 0, label + ("" if record["errors"] == 0 else f" ({record['errors']} wrong)"))
    group = doc["group"].get(OURS, {})
    run = group.get("group-run")
    label = f"{OURS} $group over {plan['group_docs']:,} docs on disk"
    if run is None or "peak_rss" not in run or "seconds" not in run:
        if "group" in doc["only"]:
            check(False, f"{label}: no measurement ({_why(run or {})})")
    else:
        peak = run["peak_rss"]
        check(peak < MEMORY_TARGET, f"{label}: peak RSS {peak / 1e6:.0f} MB (target < {MEMORY_TARGET / 1e6:.0f} MB)")
        if "same_as_floor" in run:
            check(run["same_as_floor"], f"{label}: the {run['groups']} groups equal the floor's")
    return checks


def _why(record: dict[str, Any]) -> str:
    for key in ("not_supported", "over_budget", "error", "skipped"):
        if key in record:
            return str(record[key])
    return "not reached"


def _seconds_cell(record: dict[str, Any] | None) -> str:
    if not record:
        return "—"
    if "not_supported" in record:
        return "not supported"
    if "over_budget" in record:
        return "over budget"
    if "error" in record:
        return "error"
    if "seconds" not in record:
        return "—"
    text = f"{record['seconds']:.3g} s"
    if record.get("estimated"):
        text = "≈" + text + "\\*"
    if record.get("errors"):
        text += " !"
    if "ratio" in record:
        text += f" ({fmt_ratio(record['ratio'])})"
    return text


def _mb(value: int | None) -> str:
    return "—" if value is None else f"{value / 1e6:.0f} MB"


def markdown(doc: dict[str, Any]) -> str:
    plan = doc["plan"]
    out: list[str] = []
    results = doc["results"]
    if results:
        out.append(f"#### Revenue by SKU over {plan['orders']:,} orders\n")
        out.append("| contender | storage | seconds (ratio) | orders/s | top 10 |")
        out.append("|---|---|--:|--:|---|")
        for name, records in results.items():
            revenue = records.get("revenue")
            if name == "floor":
                same = "the reference"
            else:
                same = {True: "same as the floor", False: "DIFFERENT", None: "—"}[(revenue or {}).get("same_as_floor")]
            rate = fmt_rate(revenue["rate"]) if revenue and "rate" in revenue else "—"
            storage = doc["contenders"][name]["storage"]
            out.append(f"| {name} | {storage} | {_seconds_cell(revenue)} | {rate} | {same} |")
        out.append(
            f"\nThe fastest of up to {plan['rounds']} run(s) (while under {plan['budget']:g} s); ratio = the floor's "
            "time / this time.\n"
        )
        out.append(f"#### $lookup of {plan['lookup_orders']:,} orders to {USERS:,} users\n")
        out.append("| contender | storage | foreignField `_id` | `user_ref`, no index | `user_ref`, indexed |")
        out.append("|---|---|--:|--:|--:|")
        for name, records in results.items():
            cells = [_seconds_cell(records.get(w)) for w in LOOKUPS]
            out.append(f"| {name} | {doc['contenders'][name]['storage']} | " + " | ".join(cells) + " |")
        out.append(
            f"\nSeconds for all {plan['lookup_orders']:,} orders (ratio = the floor's time / this time). "
            f"\\* estimated from the first {plan['probe']} orders: the full join would pass the "
            f"{plan['budget']:g} s budget. ! wrong joins.\n"
        )
    if doc["group"]:
        out.append(
            f"#### $group of {plan['group_docs']:,} orders on disk by `{GROUP_FIELD}` (800 zip codes), $sum and $avg\n"
        )
        out.append(
            "| contender | seconds (ratio) | docs/s | peak RSS | RSS before the pipeline | "
            "Python peak (tracemalloc) | loader's peak RSS |"
        )
        out.append("|---|--:|--:|--:|--:|--:|--:|")
        for name, runs in doc["group"].items():
            run, trace, loaded = runs.get("group-run", {}), runs.get("group-trace", {}), runs.get("load", {})
            rate = fmt_rate(run["rate"]) if "rate" in run else "—"
            cells = [_seconds_cell(run), rate, _mb(run.get("peak_rss")), _mb(run.get("rss_before"))]
            cells += [_mb(trace.get("python_peak")), _mb(loaded.get("peak_rss"))]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append(
            "\nPeak RSS: `getrusage(RUSAGE_SELF).ru_maxrss` of the process that opened the dbpath and ran "
            "the pipeline (the documents were loaded by another process); it includes the interpreter, the "
            "imports and SQLite's page cache. The tracemalloc run is a separate, slower run.\n"
        )
    if doc["failures"]:
        out.append("Stopped early:\n")
        out.extend(f"- {name}: {reason}" for name, reason in doc["failures"].items())
        out.append("")
    out.append("Contenders:\n")
    for name, info in doc["contenders"].items():
        note = f": {info['note']}" if info["note"] else ""
        out.append(f"- {name} ({info['package']} {info['version']}, {info['storage']}){note}")
    out.extend(targets_block(doc, "Targets and checks", "none checked."))
    return "\n".join(out)


def hard_limit(plan: AggPlan, mode: str) -> float:
    """Seconds after which a child is stopped."""
    if mode == "main":
        load_seconds = (plan.orders + plan.lookup_orders) / 1000
        return 120 + load_seconds + (1 + len(LOOKUPS)) * (plan.budget + 2 * plan.run_budget)
    if mode == "group-load":
        return 120 + plan.group_docs / 2000
    return 120 + plan.run_budget


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.aggregation", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="revenue,lookup,group", help="workloads: revenue, lookup, group")
    parser.add_argument("--peers", default="all", help="all, or names: foliodb-disk,foliodb-memory,mongomock,...")
    parser.add_argument("--quick", action="store_true", help="5k orders, 1k joined orders, a 20k-document $group")
    parser.add_argument("--orders", type=int, default=None, help="orders for the revenue pipeline (default 100000)")
    parser.add_argument("--group-docs", type=int, default=None, help="documents for the $group (default 1000000)")
    parser.add_argument("--budget", type=float, default=None, help="seconds a workload may spend (default 30)")
    parser.add_argument("--rounds", type=int, default=None, help="runs per pipeline, the fastest kept (default 3)")
    parser.add_argument("--out", default=None, help="the JSON file to write (default ./benchmark-results/...)")
    parser.add_argument("--workdir", default=None, help="where on-disk stores live (default: the temp dir)")
    parser.add_argument("--profile", default=None, help="a directory for cProfile output per workload")
    parser.add_argument("--report", default=None, help="print the tables and targets of an earlier results JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        plan = AggPlan(**json.loads(args.plan))
        results = child.Results(args.result)
        if args.mode == "main":
            workdir = tempfile.mkdtemp(prefix=f"bench-agg-{args.worker}-", dir=args.workdir)
            try:
                worker_main(args.worker, plan, workdir, results, args.profile, args.only.split(","))
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
        else:
            worker_group(args.worker, args.mode, plan, args.dir, results)
        return
    if args.report:
        print(markdown(json.loads(Path(args.report).read_text())))
        return

    plan = QUICK if args.quick else AggPlan()
    overrides = {"orders": args.orders, "group_docs": args.group_docs, "budget": args.budget, "rounds": args.rounds}
    plan = replace(plan, **{k: v for k, v in overrides.items() if v is not None})
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    if set(only) - {"revenue", "lookup", "group"}:
        raise SystemExit(f"--only takes revenue, lookup and group, not {args.only!r}")
    if args.peers == "all":
        names = list(DEFAULT)
    else:
        names = ["floor", *(n.strip() for n in args.peers.split(",") if n.strip() and n.strip() != "floor")]
        unknown = [n for n in names if n not in CONTENDERS]
        if unknown:
            raise SystemExit(f"unknown contender(s) {', '.join(unknown)}; known: {', '.join(CONTENDERS)}")
    host = socket.gethostname().split(".")[0]
    started = datetime.now()
    doc: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "host": host,
        "command": "python -m benchmarks.aggregation " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "plan": asdict(plan),
        "only": only,
        "contenders": {},
        "results": {},
        "group": {},
        "failures": {},
    }
    clock = time.perf_counter()
    extra = ["--workdir", args.workdir] if args.workdir else []
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        extra += ["--profile", args.profile]

    def spawn(name: str, mode: str, more: list[str]) -> dict[str, Any]:
        print(f"[{time.perf_counter() - clock:6.0f} s] {name} {mode}", file=sys.stderr, flush=True)
        command = ["--worker", name, "--mode", mode, "--plan", json.dumps(asdict(plan)), *more]
        results, failure = child.run("benchmarks.aggregation", command, hard_limit(plan, mode))
        if failure:
            doc["failures"][f"{name} {mode}"] = failure
        return results

    main_names = names if {"revenue", "lookup"} & set(only) else []
    group_names = [n for n in names if n in GROUP_CONTENDERS] if "group" in only else []
    for name in dict.fromkeys([*main_names, *group_names]):
        cls = CONTENDERS[name]
        doc["contenders"][name] = {
            "storage": cls.storage,
            "package": cls.package,
            "version": version(cls.package),
            "note": NOTES.get(name, ""),
        }
    for name in main_names:
        doc["results"][name] = spawn(name, "main", [*extra, "--only", ",".join(only)])
    for name in group_names:
        directory = tempfile.mkdtemp(prefix=f"bench-group-{name}-", dir=args.workdir)
        try:
            runs = spawn(name, "group-load", ["--dir", directory])
            if "load" in runs:
                runs.update(spawn(name, "group-run", ["--dir", directory]))
                if name != "floor":
                    runs.update(spawn(name, "group-trace", ["--dir", directory]))
            doc["group"][name] = runs
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    doc["machine"]["load_average_at_end"] = list(os.getloadavg())
    doc["elapsed_seconds"] = round(time.perf_counter() - clock, 1)
    compare(doc)
    doc["targets"] = targets(doc)
    save(doc, output_path(args, host, f"{started:%Y-%m-%d}", "aggregation"), markdown(doc))


if __name__ == "__main__":
    main()
