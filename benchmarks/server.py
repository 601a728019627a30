"""The server's request path against the floor server: ``python -m benchmarks.server``.

pymongo over loopback, one client, against three kinds of server in one run:
the floor server (``benchmarks/floor_server.py``: a minimal OP_MSG server over
bare ``sqlite3`` and C ``bson``), ``foliodb serve`` from this checkout, and with
``--baseline DIR`` ``foliodb serve`` from another checkout (the commit before a
change). Each server is its own process on a fresh directory holding ``--docs``
orders (``benchmarks/data.py``) with an index on ``user_id``. The workloads:

========== ===================================================================
insert_many ``--docs`` more orders in batches of 1,000 into a new collection (docs/s)
insert_one  new orders, one call each
find_one    ``find_one({"_id": id})``, random existing ids
find_index  ``list(find({"user_id": u}))`` on the indexed field (~4 orders each)
update_one  ``update_one({"_id": id}, {"$inc": {"total": 1}, "$set": {"status": "shipped"}})``
========== ===================================================================

Rounds are interleaved (each workload runs on every server before the next
workload, ``--rounds`` times), so the machine's load falls on all alike; the
table gives each server's median rate and the median of the per-round ratios to
the floor. Every answer is checked (found, one match, one modified).

Server CPU per request: the server process's user + system CPU time over the
workload (``/proc``), divided by its operations (insert_many: per batch).

``--instructions N``: each server runs under callgrind (valgrind), counting only
while N operations of each workload run (``callgrind_control``): instructions
per request on the server's side, which the machine's load does not move.

The JSON goes to ``--out`` (default: the temporary directory); the tables are
printed in Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.data import batches, orders

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("insert_many", "insert_one", "find_one", "find_index", "update_one")
TARGETS = {"insert_many": 0.5, "insert_one": 0.7, "find_one": 0.7, "find_index": 0.7, "update_one": 0.7}
BATCH = 1000
FLOOR = "floor"


class Served:
    """A server process, started with its command; it prints ``... waiting for connections on HOST:PORT``."""

    def __init__(self, label: str, command: list[str], checkout: Path, counting: str | None = None) -> None:
        self.label = label
        self.counting = counting  # the callgrind output file pattern, when it runs under callgrind
        env = dict(os.environ, PYTHONPATH=str(checkout))
        if counting is not None:
            command = [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={counting}",
                *command,
            ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=checkout, env=env
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        found = re.search(r"waiting for connections on \S+:(\d+)", first)
        if found is None:
            raise RuntimeError(f"{label} did not start: {first!r}")
        self.port = int(found.group(1))

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (Linux /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(self.process.pid)], capture_output=True, check=True)

    def instructions(self, run: Callable[[], None]) -> int:
        """Instructions the server executes while ``run()`` runs (under callgrind only)."""
        assert self.counting is not None
        directory = Path(self.counting).parent
        before = set(directory.iterdir())
        self.control("-z")
        self.control("-i", "on")
        run()
        self.control("-i", "off")
        self.control("-d")
        (dump,) = set(directory.iterdir()) - before
        for line in dump.read_text().splitlines():
            if line.startswith("totals:"):
                return int(line.split()[1])
        raise RuntimeError(f"no totals in {dump}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:  # under valgrind on a busy machine the checkpoint at exit can take minutes
            self.process.kill()
            self.process.wait()


def start(label: str, checkout: Path, workdir: str, counting: bool) -> Served:
    dbpath = tempfile.mkdtemp(dir=workdir, prefix=f"{label}-")
    out = os.path.join(tempfile.mkdtemp(dir=workdir, prefix=f"{label}-callgrind-"), "cg.%p") if counting else None
    if label == FLOOR:
        command = [sys.executable, "-m", "benchmarks.floor_server", "--dbpath", dbpath, "--port", "0"]
    else:
        command = [sys.executable, "-m", "foliodb", "serve", "--dbpath", dbpath, "--port", "0"]
    return Served(label, command, checkout, out)


class Client:
    """pymongo on one server, with the documents and keys every server gets alike."""

    def __init__(self, served: Served, docs: list[dict[str, Any]]) -> None:
        import pymongo

        self.client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            "127.0.0.1", served.port, directConnection=True
        )
        self.db = self.client.bench
        self.orders = self.db.orders
        for batch in batches(docs, BATCH):
            self.orders.insert_many(batch)
        self.orders.create_index("user_id")
        self.rounds = 0

    def close(self) -> None:
        self.client.close()


def operations(workload: str, client: Client, keys: list[Any]) -> Callable[[], int]:
    """A run of ``workload`` over ``keys`` (documents, ids or user ids); it returns the wrong answers."""
    orders = client.orders

    def insert_many() -> int:
        target = client.db[f"many{client.rounds}"]
        client.rounds += 1
        return sum(
            target.insert_many(batch).inserted_ids != [d["_id"] for d in batch] for batch in batches(keys, BATCH)
        )

    def insert_one() -> int:
        return sum(orders.insert_one(doc).inserted_id != doc["_id"] for doc in keys)

    def find_one() -> int:
        return sum(orders.find_one({"_id": key}) is None for key in keys)

    def find_index() -> int:
        return sum(not list(orders.find({"user_id": key})) for key in keys)

    def update_one() -> int:
        spec = {"$inc": {"total": 1}, "$set": {"status": "shipped"}}
        return sum(orders.update_one({"_id": key}, spec).modified_count != 1 for key in keys)

    runs: dict[str, Callable[[], int]] = {
        "insert_many": insert_many,
        "insert_one": insert_one,
        "find_one": find_one,
        "find_index": find_index,
        "update_one": update_one,
    }
    return runs[workload]


def measure(served: Served, client: Client, workload: str, keys: list[Any]) -> dict[str, float]:
    """Rate (docs/s for insert_many, else ops/s), server CPU µs per request, wrong answers."""
    run = operations(workload, client, keys)
    requests = -(-len(keys) // BATCH) if workload == "insert_many" else len(keys)
    cpu = served.cpu_seconds()
    started = time.perf_counter()
    errors = run()
    elapsed = time.perf_counter() - started
    cpu = served.cpu_seconds() - cpu
    return {"rate": len(keys) / elapsed, "server_us": cpu / requests * 1e6, "errors": errors}


def plan(docs: list[dict[str, Any]], fresh: list[dict[str, Any]], counts: dict[str, int], turn: int) -> dict[str, Any]:
    """Each workload's keys for round ``turn`` (every server gets the same ones)."""
    import random

    rng = random.Random(turn)
    ones = counts["insert_one"]
    many = counts["insert_many"]
    return {
        "insert_many": fresh[:many],
        "insert_one": fresh[many + turn * ones : many + (turn + 1) * ones],
        "find_one": [docs[rng.randrange(len(docs))]["_id"] for _ in range(counts["find_one"])],
        "find_index": [docs[rng.randrange(len(docs))]["user_id"] for _ in range(counts["find_index"])],
        "update_one": [docs[rng.randrange(len(docs))]["_id"] for _ in range(counts["update_one"])],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    contenders: list[tuple[str, Path]] = [(FLOOR, ROOT), ("foliodb", ROOT)]
    if args.baseline is not None:
        contenders.append(("baseline", args.baseline.resolve()))
    counting = args.instructions is not None
    counts = {
        "insert_many": args.docs,
        "insert_one": 1000,
        "find_one": 3000,
        "find_index": 1000,
        "update_one": 1000,
    }
    if counting:
        # insert_many: a batch of 1,000 for every 20 requests of the others (a batch is slow under valgrind)
        counts = dict.fromkeys(counts, args.instructions) | {"insert_many": max(1, args.instructions // 20) * BATCH}
    rounds = 1 if counting else args.rounds
    everything = orders(args.docs + counts["insert_many"] + rounds * counts["insert_one"])
    docs, fresh = everything[: args.docs], everything[args.docs :]
    load = os.getloadavg()
    os.makedirs(args.workdir, exist_ok=True)  # a --workdir that does not exist yet is made
    servers = [start(label, checkout, args.workdir, counting) for label, checkout in contenders]
    results: dict[str, dict[str, list[dict[str, float]]]] = {s.label: {w: [] for w in WORKLOADS} for s in servers}
    try:
        clients = [Client(served, docs) for served in servers]
        for turn in range(rounds):
            keys = plan(docs, fresh, counts, turn)
            for workload in WORKLOADS:
                for served, client in zip(servers, clients, strict=True):
                    if counting:
                        errors: list[int] = []
                        run = operations(workload, client, keys[workload])
                        count = served.instructions(lambda run=run: errors.append(run()))
                        requests = -(-counts[workload] // BATCH) if workload == "insert_many" else counts[workload]
                        row = {"instructions": count / requests, "errors": errors[0]}
                        print(
                            f"[{served.label}] {workload}: {row['instructions']:,.0f} instructions/request", flush=True
                        )
                    else:
                        row = measure(served, client, workload, keys[workload])
                        print(
                            f"[{served.label}] round {turn + 1} {workload}: {row['rate']:,.0f}/s, "
                            f"server {row['server_us']:.0f} µs/request",
                            flush=True,
                        )
                    results[served.label][workload].append(row)
        for client in clients:
            client.close()
    finally:
        for served in servers:
            served.stop()
    return {
        "load_before": load,
        "load_after": os.getloadavg(),
        "docs": args.docs,
        "counts": counts,
        "rounds": rounds,
        "results": results,
    }


def summary(doc: dict[str, Any]) -> str:
    results = doc["results"]
    floor = results[FLOOR]
    lines = [
        f"\n{doc['docs']:,} orders, {doc['rounds']} interleaved round(s); load average "
        f"{doc['load_before'][0]:.1f} before, {doc['load_after'][0]:.1f} after\n"
    ]
    counted = "instructions" in floor["find_one"][0]
    if counted:
        lines.append("Server instructions per request (callgrind; insert_many: per batch of 1,000); / floor\n")
    else:
        lines.append(
            "Rate (median; docs/s for insert_many, else ops/s), ratio to the floor (median of rounds), "
            "server CPU µs per request (median)\n"
        )
    lines.append("| server | " + " | ".join(WORKLOADS) + " |")
    lines.append("|---|" + "--:|" * len(WORKLOADS))
    verdicts = []
    for label, rows in results.items():
        cells = []
        for workload in WORKLOADS:
            mine, base = rows[workload], floor[workload]
            if counted:
                ratio = mine[0]["instructions"] / base[0]["instructions"]
                cells.append(f"{mine[0]['instructions']:,.0f} ({ratio:.1f}x)")
                continue
            ratio = statistics.median(m["rate"] / b["rate"] for m, b in zip(mine, base, strict=True))
            rate = statistics.median(m["rate"] for m in mine)
            cpu = statistics.median(m["server_us"] for m in mine)
            errors = sum(m["errors"] for m in mine)
            cells.append(f"{rate:,.0f} ({ratio:.2f}; {cpu:.0f} µs)" + (f" {errors} WRONG" if errors else ""))
            if label == "foliodb":
                verdict = "PASS" if ratio >= TARGETS[workload] and not errors else "FAIL"
                verdicts.append(f"{verdict} {workload}: {ratio:.2f} of the floor (target {TARGETS[workload]})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", *verdicts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000, help="orders loaded first (default 20,000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--baseline", type=Path, help="a FolioDB checkout to measure beside this one")
    parser.add_argument(
        "--instructions", type=int, metavar="N", help="count server instructions under callgrind, N requests each"
    )
    parser.add_argument("--workdir", default=tempfile.gettempdir(), help="where the dbpaths live")
    parser.add_argument("--out", type=Path, help="the JSON to write")
    args = parser.parse_args()
    doc = run(args)
    print(summary(doc))
    out = args.out or Path(tempfile.gettempdir()) / f"foliodb-server-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(doc, indent=2))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
