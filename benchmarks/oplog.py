"""The oplog and change stream benchmark: ``python -m benchmarks.oplog [--quick] [--baseline DIR]``.

Three parts, in one run:

1. **Write throughput with the oplog**: ``insert_one``, ``update_one`` by
   ``_id`` (``$inc``), ``delete_one`` by ``_id`` and ``insert_many`` in
   batches of 1,000, the embedded client on a file and on ``:memory:``, one
   thread, each workload after a warm-up of 50. With ``--baseline DIR`` (a
   checkout from before the oplog) the same workloads run against it in the
   same run: each (checkout, storage) runs in a fresh interpreter, baseline and
   current alternate (ABAB ...) ``--repeat`` times so the machine's load falls
   on both alike, and the table shows the medians and current / baseline.
   ``--instructions N`` also counts instructions per write under callgrind
   (valgrind), N operations a workload: a measure the machine's load does not
   move.
2. **Event latency**: a watcher blocked in its change stream's ``next()`` (a
   getMore waiting for data), a writer that inserts one document at a time,
   noting when it sent the insert and when ``insert_one`` returned, pausing
   between them. The commit happens between the two, so commit-to-receipt
   lies between receipt - acknowledgement and receipt - sending
   (``time.perf_counter``: CLOCK_MONOTONIC, one clock for every process);
   p50, p99, max of both. Embedded (watcher and writer threads of one
   process) and over the wire (``foliodb serve``, the watcher and the writer
   separate pymongo processes).
3. **Idle watchers**: ``--watchers`` (1,000) change streams open, each with an
   awaitData getMore pending (pymongo's ``AsyncMongoClient``, one task and one
   connection a stream, in a client process), and the server's CPU seconds per
   wall second over ``--idle-seconds`` (30) read from ``/proc``; then the same
   number of idle embedded watchers (a thread each, in ``try_next``) in one
   process, its CPU from ``resource``. For reference, the same server and
   process with no watchers.

The JSON goes to ``--out`` (default: the temporary directory); the tables
are printed in Markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run by path as a child: the checkout on PYTHONPATH gives foliodb
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    sys.path.append(sys.path.pop(0))

from benchmarks import data

if TYPE_CHECKING:  # imported where used: a --baseline child's `benchmarks` is the baseline's, which may lack it
    from benchmarks.concurrency import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
WRITE_WORKLOADS = ("insert_one", "update_one", "delete_one", "insert_many")
# What --instructions counts: the writes and a point read (find_one by _id), the operations
# whose fixed costs the embedded client's direct paths cut.
COUNTED_WORKLOADS = (*WRITE_WORKLOADS, "find_one")
NO_OPLOG = "current, no oplog"
FLOOR = "floor"  # the raw floor's label in --instructions --floor  # the label of this checkout measured with the oplog switched off


# -- part 1: write throughput (one child interpreter per checkout and storage) ------------------


WARM_UP = 50  # operations of each workload before the measured ones (caches, first-call paths)


def _writes(storage: str, workdir: str, count: int, many: int, only: str | None = None) -> dict[str, float]:
    """Ops/s (docs/s for insert_many) of each write workload (or ``only`` one) on a fresh client,
    each after a warm-up. Under callgrind (``FOLIODB_CALLGRIND``) instructions are counted
    only in the measured loops."""
    docs = data.orders(WARM_UP + count + many)
    warm, singles, bulk = docs[:WARM_UP], docs[WARM_UP : WARM_UP + count], docs[WARM_UP + count :]
    client: Any
    if storage == "floor":  # the raw floor (benchmarks/floor.py) on a file in memory, as :memory: is
        client = _FloorClient(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else workdir))
    else:
        import foliodb

        path = ":memory:" if storage == "memory" else tempfile.mkdtemp(dir=workdir, prefix="oplog-writes-")
        client = foliodb.MongoClient(path)
        if os.environ.get("FOLIODB_MUTE_OPLOG"):  # --oplog-share: the same writes, none recorded (internal switch)
            client._executor.engine.storage.oplog.muted = True
    coll = client.bench.orders
    counting = bool(os.environ.get("FOLIODB_CALLGRIND"))

    def measure(run: Any, items: list[Any], ops: int) -> float:
        run(warm)
        if counting:
            subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True, check=True)
        started = time.perf_counter()
        run(items)
        elapsed = time.perf_counter() - started
        if counting:
            subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], capture_output=True, check=True)
        return ops / elapsed

    def insert(items: list[Any]) -> None:
        for doc in items:
            coll.insert_one(doc)

    def update(items: list[Any]) -> None:
        for doc in items:
            coll.update_one({"_id": doc["_id"]}, UPDATE)

    def delete(items: list[Any]) -> None:
        for doc in items:
            coll.delete_one({"_id": doc["_id"]})

    def find(items: list[Any]) -> None:
        for doc in items:
            coll.find_one({"_id": doc["_id"]})

    def insert_many(items: list[Any]) -> None:
        for batch in data.batches(items, 1000):
            client.bench.many.insert_many(batch)

    rates: dict[str, float] = {}
    for name in WRITE_WORKLOADS if only is None else (only,):
        if name in ("update_one", "delete_one", "find_one"):
            coll.insert_many(warm + singles)  # what they change or read, loaded outside the measurement
        if name == "insert_one":
            rates[name] = measure(insert, singles, count)
            coll.delete_many({})
        elif name == "update_one":
            rates[name] = measure(update, singles, count)
            coll.delete_many({})
        elif name == "delete_one":
            rates[name] = measure(delete, singles, count)
        elif name == "find_one":
            rates[name] = measure(find, singles, count)
            coll.delete_many({})
        else:
            rates[name] = measure(insert_many, bulk, many)
            client.bench.drop_collection("many")
    client.close()
    return rates


UPDATE = {"$inc": {"total": 1}, "$set": {"status": "shipped"}}  # the main benchmark's, and the floor's


class _FloorClient:
    """The floor (benchmarks/floor.py) behind the few calls :func:`_writes` makes of a client."""

    def __init__(self, workdir: str) -> None:
        from benchmarks.floor import Floor

        self.floor = Floor()
        self.floor.open(workdir)
        self.bench = self  # client.bench.orders / client.bench.many: the one floor file
        self.orders = self.many = self

    def insert_one(self, doc: dict[str, Any]) -> None:
        self.floor.insert_one(doc)

    def insert_many(self, docs: list[dict[str, Any]]) -> None:
        self.floor.insert_many(docs)

    def find_one(self, filter: dict[str, Any]) -> Any:
        return self.floor.find_one_by_id(filter["_id"])

    def update_one(self, filter: dict[str, Any], update: Any) -> None:
        self.floor.update_one_by_id(filter["_id"])  # the floor's update is UPDATE

    def delete_one(self, filter: dict[str, Any]) -> None:
        self.floor.delete_one_by_id(filter["_id"])

    def delete_many(self, filter: dict[str, Any]) -> None:
        self.floor.conn.execute("DELETE FROM docs")
        self.floor.conn.execute("DELETE FROM ids")

    def drop_collection(self, name: str) -> None:
        self.delete_many({})

    def close(self) -> None:
        self.floor.close()


def _child(checkout: Path, args: list[str], callgrind: bool = False, mute: bool = False) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    if mute:
        env["FOLIODB_MUTE_OPLOG"] = "1"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    with tempfile.TemporaryDirectory(prefix="oplog-callgrind-") as counts:
        if callgrind:
            env["FOLIODB_CALLGRIND"] = "1"
            out = f"--callgrind-out-file={counts}/callgrind.out"
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", out, *command]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the child failed: {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        if callgrind:
            result["instructions"] = _main_thread_instructions(Path(counts) / "callgrind.out-01")
    return result


def _main_thread_instructions(dump: Path) -> int:
    """The instructions of the thread that ran the workload (the main thread's dump, thread 1):
    not the engine's background threads', whose housekeeping every 0.2 s of wall time comes
    more often per operation the slower valgrind runs on a loaded machine (at 1,000 deletes
    it added from 3k to 50k instructions an operation, by the load)."""
    for line in dump.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {dump}")


def instructions(
    contenders: list[tuple[str, Path]], workdir: str, count: int, share: bool = False, floor: bool = False
) -> dict[str, dict[str, Any]]:
    """{storage: {label: {workload: instructions per operation}}}: callgrind counts, which the
    machine's load does not move (insert_many: per document). On ``:memory:`` only: a file
    adds waits and system calls, not instructions of FolioDB's (or SQLite's) own. The runs
    are slow under valgrind, so four go at once. ``share``: also this checkout with the oplog
    switched off (:data:`NO_OPLOG`), so the difference is what recording costs. ``floor``: also
    the raw floor (:data:`FLOOR`, benchmarks/floor.py on a file in ``/dev/shm``), whose count
    over FolioDB's is the load-independent form of the main benchmark's ratio."""

    def count_one(label: str, checkout: Path, workload: str) -> float:
        many = count * 4 if workload == "insert_many" else 0
        argv = ["writes", "floor" if label == FLOOR else "memory", workdir, str(count), str(many), workload]
        mute = label == NO_OPLOG
        try:
            result = _child(checkout, argv, True, mute)
        except RuntimeError:  # a valgrind run is long; one killed by the machine gets a second try
            result = _child(checkout, argv, True, mute)
        per_op = float(result["instructions"]) / (many or count)
        print(f"[{label} memory] {workload}: {per_op:,.0f} instructions/op", flush=True)
        return per_op

    if share:
        contenders = [*contenders, (NO_OPLOG, ROOT)]
    if floor:
        contenders = [*contenders, (FLOOR, ROOT)]
    jobs = [(label, checkout, workload) for label, checkout in contenders for workload in COUNTED_WORKLOADS]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        counted = list(pool.map(lambda job: count_one(*job), jobs))
    out: dict[str, Any] = {}
    for (label, _, workload), per_op in zip(jobs, counted, strict=True):
        out.setdefault(label, {})[workload] = per_op
    return {"memory": out}


def throughput(
    contenders: list[tuple[str, Path]], workdir: str, repeat: int, count: int, many: int, share: bool = False
) -> dict[str, dict[str, Any]]:
    """{storage: {label: {workload: {median, runs}}}}, the contenders alternating in every round;
    ``share``: also this checkout with the oplog switched off, as for :func:`instructions`."""
    if share:
        contenders = [*contenders, (NO_OPLOG, ROOT)]
    runs: dict[str, dict[str, dict[str, list[float]]]] = {}
    for round_ in range(repeat):
        order = contenders if round_ % 2 == 0 else contenders[::-1]
        for storage in ("disk", "memory"):
            for label, checkout in order:
                rates = _child(checkout, ["writes", storage, workdir, str(count), str(many)], mute=label == NO_OPLOG)
                cell = runs.setdefault(storage, {}).setdefault(label, {})
                for workload, rate in rates.items():
                    cell.setdefault(workload, []).append(rate)
                print(
                    f"[{label} {storage} round {round_ + 1}] " + ", ".join(f"{w} {r:,.0f}/s" for w, r in rates.items())
                )
    return {
        storage: {
            label: {w: {"median": statistics.median(values), "runs": values} for w, values in cells.items()}
            for label, cells in labels.items()
        }
        for storage, labels in runs.items()
    }


# -- part 2: event latency --------------------------------------------------------------------


def _write_and_note(coll: Any, events: int, pause: float) -> dict[int, tuple[float, float]]:
    """Insert ``events`` documents, pausing between them; {_id: (time sent, time insert_one returned)}."""
    times: dict[int, tuple[float, float]] = {}
    for i in range(events):
        sent = time.perf_counter()
        coll.insert_one({"_id": i, "pad": "x" * 100})
        times[i] = (sent, time.perf_counter())
        time.sleep(pause)
    return times


def _watch_until(stream: Any, events: int, ready: threading.Event | None = None) -> dict[int, float]:
    """{_id: receipt time} of the next ``events`` inserts on an open stream."""
    received: dict[int, float] = {}
    if ready is not None:
        ready.set()
    while len(received) < events:
        change = stream.next()
        received[change["documentKey"]["_id"]] = time.perf_counter()
    return received


def _latencies(times: dict[int, tuple[float, float]], received: dict[int, float]) -> dict[str, float]:
    """p50/p99/max of receipt - acknowledgement (a lower bound of commit to receipt: the commit
    happened before the reply left) and of receipt - sending (an upper bound: it includes the write)."""
    out: dict[str, float] = {"events": len(times)}
    for name, which in (("ack", 1), ("sent", 0)):
        ms = sorted((received[i] - times[i][which]) * 1000 for i in times)
        out[f"{name}_p50_ms"] = ms[len(ms) // 2]
        out[f"{name}_p99_ms"] = ms[min(int(len(ms) * 0.99), len(ms) - 1)]
        out[f"{name}_max_ms"] = ms[-1]
    return out


def latency_embedded(workdir: str, events: int, pause: float) -> dict[str, float]:
    import foliodb

    client = foliodb.MongoClient(tempfile.mkdtemp(dir=workdir, prefix="oplog-latency-"))
    coll = client.bench.events
    coll.insert_one({"_id": -1})
    out: dict[str, dict[int, float]] = {}
    with coll.watch() as stream:
        ready = threading.Event()
        watcher = threading.Thread(target=lambda: out.update(received=_watch_until(stream, events, ready)))
        watcher.start()
        ready.wait()
        time.sleep(pause)  # the watcher is in its getMore
        times = _write_and_note(coll, events, pause)
        watcher.join(timeout=60)
    client.close()
    return _latencies(times, out["received"])


def _wire_watcher(port: int, events: int) -> None:
    """A child process: the receipt times of ``events`` inserts, as JSON on stdout."""
    import pymongo

    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient("127.0.0.1", port)
    with client.bench.events.watch() as stream:
        print("watching", flush=True)
        received = _watch_until(stream, events)
    print(json.dumps(received), flush=True)


def latency_wire(workdir: str, events: int, pause: float) -> dict[str, float]:
    import pymongo

    from benchmarks.concurrency import ServerProcess

    server = ServerProcess(ROOT, tempfile.mkdtemp(dir=workdir, prefix="oplog-latency-wire-"))
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.oplog", "--child", "watcher", str(server.port), str(events)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert watcher.stdout is not None
        if watcher.stdout.readline().strip() != "watching":
            raise RuntimeError("the watcher did not start")
        time.sleep(pause)
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient("127.0.0.1", server.port)
        times = _write_and_note(client.bench.events, events, pause)
        out, _ = watcher.communicate(timeout=60)
        client.close()
    finally:
        server.stop()
    received = {int(k): v for k, v in json.loads(out.splitlines()[-1]).items()}
    return _latencies(times, received)


# -- part 3: idle watchers ---------------------------------------------------------------------


async def _async_watchers(port: int, watchers: int, seconds: float, settle: float) -> None:
    """A child process: ``watchers`` change streams each in a pending getMore for ``seconds``."""
    from pymongo import AsyncMongoClient

    client: Any = AsyncMongoClient("127.0.0.1", port, maxPoolSize=watchers + 1, maxConnecting=16)
    coll = client.bench.idle
    streams = []
    for _ in range(watchers):
        streams.append(await coll.watch())
    tasks = [asyncio.create_task(stream.next()) for stream in streams]
    await asyncio.sleep(settle)  # every task is in its getMore
    print("watching", flush=True)
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await client.close()


def _server_cpu(server: ServerProcess, seconds: float) -> float:
    cpu, wall = server.cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    return (server.cpu_seconds() - cpu) / (time.perf_counter() - wall)


def idle_wire(workdir: str, watchers: int, seconds: float, settle: float = 2.0) -> dict[str, float]:
    from benchmarks.concurrency import ServerProcess

    server = ServerProcess(ROOT, tempfile.mkdtemp(dir=workdir, prefix="oplog-idle-"))
    try:
        row = {"no watchers": _server_cpu(server, min(seconds, 10.0))}
        clients = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.oplog",
                "--child",
                "idle",
                str(server.port),
                str(watchers),
                str(seconds),
                str(settle),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert clients.stdout is not None
        if clients.stdout.readline().strip() != "watching":
            raise RuntimeError("the watchers did not start")
        row[f"{watchers} watchers"] = _server_cpu(server, seconds)
        clients.wait(timeout=seconds + 120)
    finally:
        server.stop()
    return row


def idle_embedded(workdir: str, watchers: int, seconds: float, settle: float = 2.0) -> dict[str, float]:
    import foliodb

    client = foliodb.MongoClient(tempfile.mkdtemp(dir=workdir, prefix="oplog-idle-embedded-"))
    coll = client.bench.idle
    coll.insert_one({"_id": 0})

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def measure(span: float) -> float:
        before, wall = cpu(), time.perf_counter()
        time.sleep(span)
        return (cpu() - before) / (time.perf_counter() - wall)

    row = {"no watchers": measure(min(seconds, 10.0))}
    streams = [coll.watch() for _ in range(watchers)]
    stop = threading.Event()

    def wait_on(stream: Any) -> None:
        while not stop.is_set() and stream.alive:
            stream.try_next()  # a getMore: waits up to the await time for a commit

    threads = [threading.Thread(target=wait_on, args=(s,), daemon=True) for s in streams]
    for thread in threads:
        thread.start()
    time.sleep(settle)
    row[f"{watchers} watchers"] = measure(seconds)
    stop.set()
    coll.insert_one({"_id": 1})  # wakes every waiter
    for thread in threads:
        thread.join(timeout=30)
    for stream in streams:
        stream.close()
    client.close()
    return row


# -- the run ------------------------------------------------------------------------------


def _ratio_table(title: str, by_storage: dict[str, Any], value: Any) -> list[str]:
    """One row per storage and write workload, a column per label (current,
    baseline) and, with two labels, their ratio; ``value`` reads a cell."""
    labels = list(next(iter(by_storage.values())))
    lines = [title, "| storage | workload | " + " | ".join(labels) + (" | ratio |" if len(labels) > 1 else " |")]
    lines.append("|---|---|" + "--:|" * (len(labels) + (1 if len(labels) > 1 else 0)))
    for storage, by_label in by_storage.items():
        for workload in [w for w in COUNTED_WORKLOADS if w in by_label[labels[0]]]:
            cells = [f"{value(by_label[label][workload]):,.0f}" for label in labels]
            if len(labels) > 1:
                ratio = value(by_label[labels[0]][workload]) / value(by_label[labels[1]][workload])
                cells.append(f"{ratio:.2f}")
            lines.append(f"| {storage} | {workload} | " + " | ".join(cells) + " |")
    return lines


def _tables(results: dict[str, Any]) -> str:
    lines: list[str] = []
    writes = results.get("writes")
    if writes:
        title = "\nWrite throughput, median ops/s (insert_many: docs/s); current / baseline\n"
        lines += _ratio_table(title, writes, lambda cell: cell["median"])
    counted = results.get("instructions")
    if counted:
        title = "\nInstructions per operation (callgrind; insert_many: per document); current / baseline\n"
        lines += _ratio_table(title, counted, lambda cell: cell)
    if "latency" in results:
        lines.append(
            "\nEvent latency (ms): event received - write acknowledged (<= commit to receipt <=) - write sent\n"
        )
        lines.append("| where | events | p50 | p99 | max |\n|---|--:|--:|--:|--:|")
        for where, row in results["latency"].items():
            cells = [f"{row[f'ack_{q}_ms']:.2f} .. {row[f'sent_{q}_ms']:.2f}" for q in ("p50", "p99", "max")]
            lines.append(f"| {where} | {row['events']} | " + " | ".join(cells) + " |")
    if "idle" in results:
        lines.append("\nIdle watchers, CPU seconds per wall second\n")
        lines.append("| where | watchers | CPU s / s |\n|---|---|--:|")
        for where, row in results["idle"].items():
            for what, value in row.items():
                lines.append(f"| {where} | {what} | {value:.3f} |")
    return "\n".join(lines)


def _run_child(argv: list[str]) -> None:
    kind, rest = argv[0], argv[1:]
    if kind == "writes":
        only = rest[4] if len(rest) > 4 else None
        print(json.dumps(_writes(rest[0], rest[1], int(rest[2]), int(rest[3]), only)))
    elif kind == "watcher":
        _wire_watcher(int(rest[0]), int(rest[1]))
    elif kind == "idle":
        asyncio.run(_async_watchers(int(rest[0]), int(rest[1]), float(rest[2]), float(rest[3])))
    else:
        raise SystemExit(f"unknown child {kind!r}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _run_child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts and short waits (a smoke run)")
    parser.add_argument(
        "--baseline", type=Path, help="a FolioDB checkout (before the oplog) to measure beside this one"
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the write workloads (default 5)")
    parser.add_argument(
        "--writes", type=int, default=5000, help="insert_one/update_one/delete_one each (default 5,000)"
    )
    parser.add_argument("--events", type=int, default=500, help="events timed for the latency (default 500)")
    parser.add_argument("--watchers", type=int, default=1000, help="idle change streams (default 1,000)")
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="seconds the idle CPU is measured over")
    parser.add_argument("--parts", default="writes,latency,idle", help="which parts, comma-separated")
    parser.add_argument(
        "--instructions",
        type=int,
        metavar="N",
        help="also count instructions per write under callgrind, N operations a workload (needs valgrind)",
    )
    parser.add_argument(
        "--floor", action="store_true", help="with --instructions: the raw floor's counts too (benchmarks/floor.py)"
    )
    parser.add_argument(
        "--oplog-share",
        action="store_true",
        help="also this checkout with the oplog off (rates, and with --instructions counts)",
    )
    parser.add_argument("--workdir", default=tempfile.gettempdir(), help="where the dbpaths live")
    parser.add_argument("--out", type=Path, help="the JSON to write")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "foliodb" / "__init__.py").is_file():
        # A child's PYTHONPATH without foliodb would import the installed one: this checkout, twice.
        parser.error(f"--baseline {args.baseline} is not a FolioDB checkout")
    if args.quick:
        args.repeat, args.writes, args.events, args.watchers, args.idle_seconds = 1, 50, 5, 5, 0.5
    many = args.writes * 4
    parts = set(args.parts.split(","))
    contenders = [("current", ROOT)]
    if args.baseline is not None:
        contenders.append(("baseline", args.baseline.resolve()))
    results: dict[str, Any] = {"parameters": vars(args) | {"baseline": str(args.baseline), "out": None}}
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        if "writes" in parts:
            results["writes"] = throughput(contenders, workdir, args.repeat, args.writes, many, args.oplog_share)
        if args.instructions:
            results["instructions"] = instructions(contenders, workdir, args.instructions, args.oplog_share, args.floor)
        if "latency" in parts:
            pause = 0.001 if args.quick else 0.01
            results["latency"] = {
                "embedded": latency_embedded(workdir, args.events, pause),
                "wire": latency_wire(workdir, args.events, pause),
            }
        if "idle" in parts:
            settle = 0.2 if args.quick else 2.0
            results["idle"] = {
                "wire": idle_wire(workdir, args.watchers, args.idle_seconds, settle),
                "embedded": idle_embedded(workdir, args.watchers, args.idle_seconds, settle),
            }
    print(_tables(results))
    out = args.out or Path(tempfile.gettempdir()) / f"foliodb-oplog-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
