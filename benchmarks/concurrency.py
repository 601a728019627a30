"""The concurrency benchmark: ``python -m benchmarks.concurrency [--quick] [--baseline DIR]``.

What a server does with many clients at once, in one run:

1. **Throughput and latency** of ``find_one`` by ``_id``, and of a 90/10
   read/write mix (``update_one`` by ``_id`` with ``$inc``), against
   ``foliodb serve`` with 1, 4, 16 and 64 concurrent client *processes*
   (pymongo each, all starting together once every one is connected), ops/s
   with p50/p99 latency, and the server's CPU use in
   cores. The floor in the same run: as many processes reading the same
   SQLite file directly (pymongo's C ``bson`` over bare ``sqlite3``), the
   ceiling of any server on that file.
   The same with *wire clients*: processes that send the bytes pymongo would send
   (prepared ``OP_MSG`` frames with a session), a client costing microseconds
   where pymongo's cost about a hundred: with many pymongo processes on a small
   machine the clients, not the server, use up the cores.
2. **Point reads beside a long aggregation**: the p50/p99/max latency of
   ``find_one`` from one client while another runs a ``$group`` over 200,000
   documents again and again.

``--baseline DIR`` runs the same workloads against the FolioDB checkout in
DIR too (say, the commit before a change), so before and after come from
one run on one machine. Each server and each client is its own process.
The JSON goes to ``--out`` (default: the temporary directory); the tables
are printed in Markdown.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bson

ROOT = Path(__file__).resolve().parent.parent
DOCS = 20_000
GROUP_DOCS = 200_000


# -- a server under test ---------------------------------------------------------


class ServerProcess:
    """``foliodb serve`` from a checkout (this one, or a baseline), on a fresh dbpath."""

    def __init__(self, checkout: Path, dbpath: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(checkout))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "foliodb", "serve", "--dbpath", dbpath, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=checkout,
            env=env,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if "waiting for connections" not in first:
            raise RuntimeError(f"the server did not start: {first!r}")
        self.port = int(first.split(" on ", 1)[1].split(" ", 1)[0].rsplit(":", 1)[1])
        self.dbpath = dbpath

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (Linux /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _load(port: int) -> None:
    import pymongo

    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient("127.0.0.1", port)
    coll = client.bench.orders
    rng = random.Random(1)
    coll.insert_many(
        [{"_id": i, "user_id": rng.randrange(1000), "total": i * 1.5, "n": 0, "pad": "x" * 300} for i in range(DOCS)]
    )
    client.close()


# -- client processes ------------------------------------------------------------


def _timed(
    seconds: float, write_share: float, seed: int, read: Callable[[int], object], write: Callable[[int], object]
) -> list[float]:
    """Each operation's latency for ``seconds``: ``write(key)`` for a ``write_share`` of
    them, else ``read(key)``, keys drawn from ``seed`` (every kind of client draws alike)."""
    rng = random.Random(seed)
    latencies: list[float] = []
    end = time.perf_counter() + seconds
    while True:
        started = time.perf_counter()
        if started >= end:
            return latencies
        key = rng.randrange(DOCS)
        if write_share and rng.random() < write_share:
            write(key)
        else:
            read(key)
        latencies.append(time.perf_counter() - started)


def _client_worker(port: int, seconds: float, write_share: float, seed: int, out: Any, start: Any) -> None:
    import pymongo

    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient("127.0.0.1", port, maxPoolSize=1)
    coll = client.bench.orders
    coll.find_one({"_id": 0})
    start.wait()  # every client is up: none measures while others still start (imports take seconds of CPU)
    latencies = _timed(
        seconds,
        write_share,
        seed,
        lambda key: coll.find_one({"_id": key}),
        lambda key: coll.update_one({"_id": key}, {"$inc": {"n": 1}}),
    )
    client.close()
    out.put(latencies)


def _op_msg(request_id: int, command: dict[str, Any]) -> bytes:
    body = b"\x00\x00\x00\x00\x00" + bson.encode(command)  # flags, then a kind-0 section
    return struct.pack("<iiii", 16 + len(body), request_id, 0, 2013) + body


def _wire_worker(port: int, seconds: float, write_share: float, seed: int, out: Any, start: Any) -> None:
    """The same requests as pymongo's find_one and update_one (with a session), sent
    as prepared OP_MSG bytes: a client costing microseconds, not pymongo's hundred,
    so that many of them on a small machine load the server, not themselves."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lsid = {"id": bson.Binary(uuid.uuid4().bytes, 4)}
    finds = [
        _op_msg(
            i, {"find": "orders", "filter": {"_id": i}, "limit": 1, "singleBatch": True, "lsid": lsid, "$db": "bench"}
        )
        for i in range(DOCS)
    ]
    updates = [
        _op_msg(
            i,
            {"update": "orders", "updates": [{"q": {"_id": i}, "u": {"$inc": {"n": 1}}}], "lsid": lsid, "$db": "bench"},
        )
        for i in range(DOCS)
    ]

    def request(frame: bytes) -> None:
        sock.sendall(frame)
        reply = sock.recv(1 << 16)
        while len(reply) < 4 or len(reply) < struct.unpack_from("<i", reply)[0]:
            reply += sock.recv(1 << 16)

    start.wait()
    latencies = _timed(seconds, write_share, seed, lambda key: request(finds[key]), lambda key: request(updates[key]))
    sock.close()
    out.put(latencies)


def _floor_worker(dbpath: str, seconds: float, write_share: float, seed: int, out: Any, start: Any) -> None:
    """Bare sqlite3 + bson on the same file: the table and key layout of a point read, no server."""
    conn = sqlite3.connect(os.path.join(dbpath, "floor.sqlite"), isolation_level=None, timeout=30)

    def read(key: int) -> None:
        bson.decode(conn.execute("SELECT doc FROM docs WHERE id = ?", (key,)).fetchone()[0])

    def write(key: int) -> None:
        row = conn.execute("SELECT doc FROM docs WHERE id = ?", (key,)).fetchone()
        doc = bson.decode(row[0])
        doc["n"] += 1
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE docs SET doc = ? WHERE id = ?", (bson.encode(doc), key))
        conn.execute("COMMIT")

    start.wait()
    latencies = _timed(seconds, write_share, seed, read, write)
    conn.close()
    out.put(latencies)


def _floor_file(dbpath: str) -> None:
    os.makedirs(dbpath, exist_ok=True)
    conn = sqlite3.connect(os.path.join(dbpath, "floor.sqlite"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, doc BLOB NOT NULL)")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO docs VALUES (?, ?)",
        ((i, bson.encode({"_id": i, "total": i * 1.5, "n": 0, "pad": "x" * 300})) for i in range(DOCS)),
    )
    conn.execute("COMMIT")
    conn.close()


def _run_clients(
    target: Any, where: Any, processes: int, seconds: float, write_share: float, server: ServerProcess | None = None
) -> tuple[list[float], float]:
    """Run ``processes`` client processes of ``target(where, ...)`` at once, all
    starting together once every one is ready: all their latencies, and the
    server's CPU use (cores) while they ran."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(processes + 1, timeout=300)  # the clients and this process
    workers = [ctx.Process(target=target, args=(where, seconds, write_share, i, out, start)) for i in range(processes)]
    for worker in workers:
        worker.start()
    start.wait()
    cpu_before = server.cpu_seconds() if server else 0.0
    wall = time.perf_counter()
    latencies: list[float] = []
    for _ in workers:
        latencies.extend(out.get(timeout=seconds + 120))
    cores = (server.cpu_seconds() - cpu_before) / (time.perf_counter() - wall) if server else 0.0
    for worker in workers:
        worker.join(timeout=30)
    return latencies, cores


def _summary(latencies: list[float], seconds: float) -> dict[str, float]:
    ordered = sorted(latencies)
    n = len(ordered)
    return {
        "ops": n,
        "ops_per_s": n / seconds,
        "p50_ms": ordered[n // 2] * 1000 if n else 0.0,
        "p99_ms": ordered[min(int(n * 0.99), n - 1)] * 1000 if n else 0.0,
        "max_ms": ordered[-1] * 1000 if n else 0.0,
    }


# -- the workloads -----------------------------------------------------------------


def throughput(label: str, checkout: Path | None, workdir: str, counts: list[int], seconds: float) -> dict[str, Any]:
    """Part 1 for one contender (a server checkout, or the floor when ``checkout`` is None)."""
    results: dict[str, Any] = {}
    dbpath = tempfile.mkdtemp(dir=workdir, prefix=f"{label}-")
    server = None
    if checkout is None:
        _floor_file(dbpath)
        target: Any = _floor_worker
        where: Any = dbpath
    else:
        server = ServerProcess(checkout, dbpath)
        _load(server.port)
        target, where = _client_worker, server.port
    try:
        mixes = [("find_one", 0.0, target), ("90/10 read/write", 0.1, target)]
        if server is not None:
            mixes += [("find_one, wire clients", 0.0, _wire_worker), ("90/10, wire clients", 0.1, _wire_worker)]
        for mix, share, worker in mixes:
            for processes in counts:
                latencies, cores = _run_clients(worker, where, processes, seconds, share, server)
                row = _summary(latencies, seconds)
                if server is not None:
                    row["server_cores"] = cores
                results[f"{mix} x{processes}"] = row
                print(
                    f"[{label}] {mix} x{processes}: {row['ops_per_s']:,.0f} ops/s p99 {row['p99_ms']:.1f} ms",
                    flush=True,
                )
    finally:
        if server is not None:
            server.stop()
    return results


def _group_loop(port: int, stop_at: float, out: Any) -> None:
    import pymongo

    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient("127.0.0.1", port)
    durations = []
    while time.perf_counter() < stop_at:
        started = time.perf_counter()
        list(client.bench.big.aggregate([{"$group": {"_id": "$k", "total": {"$sum": "$v"}}}]))
        durations.append(time.perf_counter() - started)
    client.close()
    out.put(durations)


def reads_beside_group(label: str, checkout: Path, workdir: str, seconds: float) -> dict[str, Any]:
    """Part 2: one client's find_one latency while another client runs a 200k-document $group in a loop."""
    import pymongo

    server = ServerProcess(checkout, tempfile.mkdtemp(dir=workdir, prefix=f"{label}-group-"))
    try:
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient("127.0.0.1", server.port)
        for start in range(0, GROUP_DOCS, 20_000):
            client.bench.big.insert_many([{"_id": i, "k": i % 50_000, "v": i} for i in range(start, start + 20_000)])
        client.bench.big.find_one({"_id": 1})
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        stop_at = time.perf_counter() + seconds
        group = ctx.Process(target=_group_loop, args=(server.port, stop_at, out))
        group.start()
        time.sleep(0.5)  # the group is running
        latencies = []
        rng = random.Random(3)
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            client.bench.big.find_one({"_id": rng.randrange(GROUP_DOCS)})
            latencies.append(time.perf_counter() - started)
            time.sleep(0.002)
        durations = out.get(timeout=seconds + 300)
        group.join(timeout=60)
        client.close()
    finally:
        server.stop()
    row = _summary(latencies, seconds)
    row["group_runs"] = len(durations)
    row["group_seconds_each"] = sum(durations) / len(durations) if durations else 0.0
    print(f"[{label}] find_one beside $group: p50 {row['p50_ms']:.1f} ms p99 {row['p99_ms']:.1f} ms", flush=True)
    return row


def _table(results: dict[str, Any], counts: list[int]) -> str:
    lines = []
    for mix in ("find_one", "90/10 read/write", "find_one, wire clients", "90/10, wire clients"):
        lines.append(f"\n{mix}, ops/s (p50 / p99 ms; server cores)\n")
        lines.append("| contender | " + " | ".join(f"{n} clients" for n in counts) + " |")
        lines.append("|---|" + "--:|" * len(counts))
        for label, data in results.items():
            cells = []
            for n in counts:
                row = data["throughput"].get(f"{mix} x{n}")
                if row is None:
                    cells.append("—")
                    continue
                cores = f"; {row['server_cores']:.2f}" if "server_cores" in row else ""
                cells.append(f"{row['ops_per_s']:,.0f} ({row['p50_ms']:.2f} / {row['p99_ms']:.1f}{cores})")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("\nfind_one beside a 200k-document $group (ms)\n")
    lines.append("| contender | p50 | p99 | max | $group runs, s each |")
    lines.append("|---|--:|--:|--:|--:|")
    for label, data in results.items():
        row = data.get("beside_group")
        if row:
            lines.append(
                f"| {label} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row['max_ms']:.1f} | "
                f"{row['group_runs']}, {row['group_seconds_each']:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 4 clients, 1 s each (a smoke run)")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per measurement (default 5)")
    parser.add_argument("--baseline", type=Path, help="a FolioDB checkout to measure beside this one")
    parser.add_argument("--workdir", default=tempfile.gettempdir(), help="where the dbpaths live")
    parser.add_argument("--out", type=Path, help="the JSON to write")
    args = parser.parse_args()
    counts = [1, 4] if args.quick else [1, 4, 16, 64]
    seconds = 1.0 if args.quick else args.seconds
    contenders: list[tuple[str, Path | None]] = [("floor", None), ("foliodb-server", ROOT)]
    if args.baseline is not None:
        contenders.append(("baseline-server", args.baseline.resolve()))
    results: dict[str, Any] = {}
    for label, checkout in contenders:
        results[label] = {"throughput": throughput(label, checkout, args.workdir, counts, seconds)}
        if checkout is not None:
            results[label]["beside_group"] = reads_beside_group(label, checkout, args.workdir, max(seconds * 2, 3.0))
    print(_table(results, counts))
    out = args.out or Path(tempfile.gettempdir()) / f"foliodb-concurrency-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"counts": counts, "seconds": seconds, "results": results}, indent=2))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
