"""Run the benchmark: ``python -m benchmarks.run [--sizes 20000,100000] [--peers all] [--quick]``.

Every (contender, size) pair runs in a fresh interpreter, so no store's
memory, caches or garbage slows the next one, and a store that hangs can be
stopped (the workloads it finished are kept). The floor always runs: every
rate is reported as a ratio to it. Results go to
``benchmarks/results/<date>-<host>.json`` (``-quick`` or ``-profile`` appended
for those runs) and the table is printed in Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.floor import Floor
from benchmarks.peers import (
    NOTES,
    FolioDBDisk,
    FolioDBMemory,
    FolioDBServer,
    MongitaDisk,
    MongitaMemory,
    MongoecoMemory,
    MongoecoSqlite,
    Mongomock,
    MontyDBFlatfile,
    MontyDBMemory,
    MontyDBSqlite,
    PoloDB,
    TinyDBJSON,
    TinyDBMemory,
    TinyMongo,
    version,
)
from benchmarks.workloads import QUICK, WORKLOADS, Contender, Plan, run_contender

CONTENDERS: dict[str, type[Contender]] = {
    cls.name: cls
    for cls in (
        Floor,
        FolioDBDisk,
        FolioDBMemory,
        FolioDBServer,
        Mongomock,
        MontyDBFlatfile,
        MontyDBSqlite,
        MontyDBMemory,
        MongitaDisk,
        MongitaMemory,
        MongoecoMemory,
        MongoecoSqlite,
        TinyMongo,
        TinyDBJSON,
        TinyDBMemory,
        PoloDB,
    )
}
FAMILIES = {
    "foliodb": ["foliodb-disk", "foliodb-memory", "foliodb-server"],
    "montydb": ["montydb-flatfile", "montydb-sqlite", "montydb-memory"],
    "mongita": ["mongita-disk", "mongita-memory"],
    "mongoeco": ["mongoeco-memory", "mongoeco-sqlite"],
    "tinydb": ["tinydb-json", "tinydb-memory"],
}
ROOT = Path(__file__).resolve().parent.parent
# Runs write here, in the directory they start from (the repository root), unless --out says
# otherwise: never inside the package tree. The published runs the docs cite live in
# benchmarks/results/.
RESULTS = Path("benchmark-results")


def select(spec: str) -> list[str]:
    """Contender names for ``--peers``: ``all`` or names and families, comma-separated; the floor is always in."""
    if spec == "all":
        return list(CONTENDERS)
    chosen = ["floor"]
    for word in filter(None, (w.strip() for w in spec.split(","))):
        names = FAMILIES.get(word, [word])
        for name in names:
            if name not in CONTENDERS:
                known = ", ".join([*CONTENDERS, *FAMILIES])
                raise SystemExit(f"unknown contender {word!r}; known: {known}")
            if name not in chosen:
                chosen.append(name)
    return chosen


def unavailable(name: str) -> str | None:
    """Why a contender cannot run here, or None."""
    if name.startswith("foliodb"):
        try:
            import foliodb

            foliodb.MongoClient  # noqa: B018  (the embedded client may not be built yet)
        except Exception as exc:
            return f"not yet measured: foliodb.MongoClient is not available ({type(exc).__name__}: {exc})"
    package = CONTENDERS[name].package
    if package not in ("foliodb", "sqlite3+bson"):
        try:
            metadata.version(package)
        except metadata.PackageNotFoundError:
            return f"not installed: pip install {package}"  # mongoeco: Python 3.13+ only
    return None


def worker(args: argparse.Namespace) -> None:
    """Child process: measure one contender at one size, rewriting the result file after each workload."""
    plan = Plan(**json.loads(args.plan))
    contender = CONTENDERS[args.worker]()
    results: dict[str, Any] = {}

    def save(workload: str, record: dict[str, Any]) -> None:
        results[workload] = record
        tmp = args.result + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(results, fh)
        os.replace(tmp, args.result)

    workdir = tempfile.mkdtemp(prefix=f"bench-{contender.name}-", dir=args.workdir)
    try:
        run_contender(contender, args.size, plan, workdir, save, args.profile)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def hard_limit(plan: Plan, size: int) -> float:
    """Seconds after which a child is stopped: every budget, generous loading and set-up time."""
    return len(WORKLOADS) * plan.budget * 2 + 120 + size / 250


def measure(name: str, size: int, plan: Plan, args: argparse.Namespace) -> dict[str, Any]:
    """Run one child; whatever it did not report is marked."""
    fd, result_file = tempfile.mkstemp(prefix="bench-result-", suffix=".json")
    os.close(fd)
    command = [sys.executable, "-m", "benchmarks.run", "--worker", name, "--size", str(size)]
    command += ["--plan", json.dumps(asdict(plan)), "--result", result_file]
    if args.workdir:
        command += ["--workdir", args.workdir]
    if args.profile:
        profile_dir = os.path.join(args.profile, f"{name}-{size}")
        os.makedirs(profile_dir, exist_ok=True)
        command += ["--profile", profile_dir]
    limit = hard_limit(plan, size)
    missing = "not reached: the process failed"
    try:
        done = subprocess.run(command, cwd=ROOT, timeout=limit, capture_output=True, text=True)
        if done.returncode != 0:
            missing = "not reached: " + (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        missing = f"not reached: stopped after {limit:.0f} s"
    try:
        with open(result_file) as fh:
            text = fh.read()
        results: dict[str, Any] = json.loads(text) if text else {}
    finally:
        os.unlink(result_file)
    for workload in WORKLOADS:
        results.setdefault(workload, {"skipped": missing})
    return results


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per workload, the run with the highest rate and right answers; all rates kept in ``rates``."""
    best: dict[str, Any] = {}
    for workload in WORKLOADS:
        records = [run[workload] for run in runs]
        valid = [r for r in records if "rate" in r and not r.get("errors")]
        chosen = dict(max(valid, key=lambda r: r["rate"]) if valid else records[0])
        if len(runs) > 1:
            chosen["rates"] = [r.get("rate") for r in records]
        best[workload] = chosen
    return best


def machine() -> dict[str, Any]:
    import sqlite3

    cpu = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "sqlite": sqlite3.sqlite_version,
        "load_average_at_start": list(os.getloadavg()),
    }


def output_path(args: argparse.Namespace, host: str, day: str, kind: str = "") -> Path:
    """Where a run's JSON goes: ``--out``, else benchmark-results/<day>-<host>[-kind][-quick|-profile].json."""
    if args.out:
        return Path(args.out)
    suffix = "-profile" if args.profile else "-quick" if args.quick else ""
    return RESULTS / f"{day}-{host}{'-' + kind if kind else ''}{suffix}.json"


def save(doc: dict[str, Any], path: Path, text: str) -> None:
    """Write a run's JSON and print its report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(text)
    print(f"\nwritten {path} in {doc['elapsed_seconds']} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="collection sizes, comma-separated (default 20000,100000)")
    parser.add_argument("--peers", default="all", help="all, or names/families: foliodb,mongomock,montydb-sqlite,...")
    parser.add_argument("--quick", action="store_true", help="a smoke run: small counts, 0.5 s budgets, 2000 docs")
    parser.add_argument("--budget", type=float, default=None, help="seconds per workload (default 5, quick 0.5)")
    parser.add_argument("--repeat", type=int, default=None, help="runs of the floor and FolioDB (default 3, quick 1)")
    parser.add_argument("--out", default=None, help="the JSON file to write (default ./benchmark-results/...)")
    parser.add_argument("--workdir", default=None, help="where on-disk stores live (default: the temp dir)")
    parser.add_argument("--profile", default=None, help="a directory for cProfile output per workload")
    parser.add_argument("--report", default=None, help="print the table and targets of an earlier results JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return
    if args.report:
        earlier = json.loads(Path(args.report).read_text())
        earlier["targets"] = report.targets(earlier)
        print(report.markdown(earlier))
        return

    plan = QUICK if args.quick else Plan()
    if args.budget is not None:
        plan = replace(plan, budget=args.budget)
    repeat = args.repeat or (1 if args.quick else 3)
    sizes = [int(s) for s in (args.sizes or ("2000" if args.quick else "20000,100000")).split(",")]
    names = select(args.peers)
    host = socket.gethostname().split(".")[0]
    started = datetime.now()
    doc: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "host": host,
        "command": "python -m benchmarks.run " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "plan": asdict(plan),
        "repeat": repeat,
        "profiled": bool(args.profile),
        "sizes": sizes,
        "contenders": {},
        "results": {},
    }
    for name in names:
        cls = CONTENDERS[name]
        doc["contenders"][name] = {
            "storage": cls.storage,
            "package": cls.package,
            "version": None if unavailable(name) else version(cls.package),
            "note": NOTES.get(name, ""),
        }
    clock = time.perf_counter()
    # The floor and FolioDB are cheap to run and their ratios are the targets:
    # they run ``repeat`` times, interleaved, and keep each workload's best.
    repeated = [n for n in names if n == "floor" or n.startswith("foliodb")]
    for size in sizes:
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for name in names:
            reason = unavailable(name)
            if reason:
                runs[name].append({w: {"not_measured": reason} for w in WORKLOADS})
        order = [n for n in repeated if not runs[n]] * repeat + [n for n in names if n not in repeated and not runs[n]]
        for name in order:
            print(f"[{time.perf_counter() - clock:6.0f} s] {name} at {size} documents", file=sys.stderr, flush=True)
            runs[name].append(measure(name, size, plan, args))
        per_size = {name: best_of(runs[name]) for name in names}
        report.add_ratios(per_size)
        doc["results"][str(size)] = per_size
    doc["machine"]["load_average_at_end"] = list(os.getloadavg())
    doc["elapsed_seconds"] = round(time.perf_counter() - clock, 1)
    doc["targets"] = report.targets(doc)

    save(doc, output_path(args, host, started.strftime("%Y-%m-%d")), report.markdown(doc))


if __name__ == "__main__":
    main()
