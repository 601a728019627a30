"""Restore and import rates against insert_many's: ``python -m benchmarks.tools``.

The documents are the benchmark's orders (``benchmarks/data.py``). Each
measurement runs in a fresh process on a fresh dbpath, the best of
``--repeat`` interleaved rounds is kept:

- ``insert_many``: the N documents, generated before the clock starts, in
  ``insert_many(ordered=False)`` batches of 1,000 (what restore does);
- ``restore``: ``foliodb.tools.restore`` of a ``foliodb dump`` directory of them;
- ``restore_archive``: the same from a ``dump --archive`` file;
- ``import``: ``foliodb.tools.importer`` of a ``foliodb export`` JSON file
  (relaxed Extended JSON, one document a line);
- ``dump`` and ``export``, for the record.

Rates are documents per second, by the wall clock; each tool's is also shown
as a share of insert_many's, by the wall clock and by the process's CPU time
(``time.process_time``, all its threads), which a machine shared with other
work disturbs far less. The dump, archive and export files are made once,
untimed.
``--report FILE`` prints a run's table as docs/benchmarks.md shows it (the
docs' test renders the cited run with :func:`table` and compares).

    python -m benchmarks.tools                       # 100,000 documents, best of 3
    python -m benchmarks.tools --docs 20000 --repeat 1
    python -m benchmarks.tools --report benchmarks/results/2026-12-06-vm-tools.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("insert_many", "restore", "restore_archive", "import", "dump", "export")
LABELS = {
    "insert_many": "insert_many (batches of 1,000)",
    "restore": "restore (directory)",
    "restore_archive": "restore (`--archive`)",
    "import": "import (JSON lines)",
    "dump": "dump (directory)",
    "export": "export (JSON lines)",
}


def share(doc: dict[str, Any], name: str, clock: str = "seconds") -> str:
    """A workload's rate as a share of insert_many's, as the table prints it; ``clock``:
    "seconds" (the wall clock) or "cpu_seconds"."""
    return f"{doc[clock]['insert_many'] / doc[clock][name]:.2f}"


def table(doc: dict[str, Any]) -> str:
    """A run (the JSON main writes) as docs/benchmarks.md's Markdown table."""
    from benchmarks.report import fmt_rate

    lines = [
        "| workload | documents/s | share of insert_many's rate | share, in CPU time |",
        "|---|--:|--:|--:|",
    ]
    lines += [
        f"| {LABELS[name]} | {fmt_rate(doc['rates'][name])} | {share(doc, name)} | {share(doc, name, 'cpu_seconds')} |"
        for name in WORKLOADS
    ]
    return "\n".join(lines) + "\n"


class _Clock:
    """Wall-clock and CPU seconds since it was made (or restarted)."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def worker(name: str, docs: int, inputs: str, dbpath: str) -> tuple[float, float]:
    """One timed run in this process; the wall-clock and CPU seconds it took."""
    import foliodb
    from benchmarks.data import orders
    from foliodb.tools.dump import dump
    from foliodb.tools.exporter import ExportOptions, export_documents
    from foliodb.tools.importer import ImportOptions, import_documents
    from foliodb.tools.restore import restore, restore_archive

    client = foliodb.MongoClient(dbpath)
    try:
        if name == "insert_many":
            batch = orders(docs)
            clock = _Clock()
            for i in range(0, docs, 1000):
                client.bench.orders.insert_many(batch[i : i + 1000], ordered=False)
            return clock.read()
        clock = _Clock()
        if name == "restore":
            restore(client, os.path.join(inputs, "dump"))
        elif name == "restore_archive":
            with open(os.path.join(inputs, "archive"), "rb") as fh:
                restore_archive(client, fh)
        elif name == "import":
            with open(os.path.join(inputs, "orders.json"), "rb") as fh:
                import_documents(client.bench.orders, fh, ImportOptions())
        elif name in ("dump", "export"):
            client.close()
            client = foliodb.MongoClient(os.path.join(inputs, "source"))
            clock.restart()
            if name == "dump":
                dump(client, os.path.join(dbpath, "out"))
            else:
                out = io.StringIO()
                export_documents(client.bench.orders, out, ExportOptions())
        return clock.read()
    finally:
        client.close()


def make_inputs(docs: int, inputs: str) -> None:
    import foliodb
    from benchmarks.data import orders
    from foliodb.tools.dump import dump, dump_archive
    from foliodb.tools.exporter import ExportOptions, export_documents

    with foliodb.MongoClient(os.path.join(inputs, "source")) as client:
        batch = orders(docs)
        for i in range(0, docs, 1000):
            client.bench.orders.insert_many(batch[i : i + 1000], ordered=False)
        dump(client, os.path.join(inputs, "dump"))
        with open(os.path.join(inputs, "archive"), "wb") as fh:
            dump_archive(client, fh)
        with open(os.path.join(inputs, "orders.json"), "w", encoding="utf-8", newline="") as out:
            export_documents(client.bench.orders, out, ExportOptions())


def run(name: str, docs: int, inputs: str, workdir: str) -> tuple[float, float]:
    dbpath = tempfile.mkdtemp(prefix=f"tools-{name}-", dir=workdir)
    command = [sys.executable, "-m", "benchmarks.tools", "--worker", name, "--docs", str(docs)]
    command += ["--inputs", inputs, "--dbpath", dbpath]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=True)
    finally:
        shutil.rmtree(dbpath, ignore_errors=True)
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tools", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="where the dbpaths live (default: the temp dir)")
    parser.add_argument("--out", default=None, help="the JSON file to write (default ./benchmark-results/...)")
    parser.add_argument("--report", default=None, metavar="FILE", help="print a run's Markdown table, run nothing")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--dbpath", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.report:
        print(table(json.loads(Path(args.report).read_text())), end="")
        return
    if args.worker:
        print(*worker(args.worker, args.docs, args.inputs, args.dbpath))
        return
    workdir = tempfile.mkdtemp(prefix="bench-tools-", dir=args.workdir)
    inputs = os.path.join(workdir, "inputs")
    os.makedirs(inputs)
    subprocess.run(
        [sys.executable, "-c", f"from benchmarks.tools import make_inputs; make_inputs({args.docs}, {inputs!r})"],
        cwd=ROOT,
        check=True,
    )
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    try:
        for _ in range(args.repeat):
            for name in WORKLOADS:
                seconds, cpu = run(name, args.docs, inputs, workdir)
                best[name] = min(best.get(name, seconds), seconds)
                best_cpu[name] = min(best_cpu.get(name, cpu), cpu)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rates = {name: args.docs / seconds for name, seconds in best.items()}
    started = datetime.now()
    doc: dict[str, Any] = {
        "command": " ".join(["python -m benchmarks.tools", *(argv if argv is not None else sys.argv[1:])]),
        "date": started.isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "docs": args.docs,
        "repeat": args.repeat,
        "load": os.getloadavg(),
        "seconds": best,
        "cpu_seconds": best_cpu,
        "rates": rates,
    }
    default = Path("benchmark-results") / f"{started:%Y-%m-%d}-{socket.gethostname()}-tools.json"
    path = Path(args.out) if args.out else default
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{args.docs} documents, best of {args.repeat}:")
    print(table(doc), end="")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
