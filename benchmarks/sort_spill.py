"""The external sort at scale: ``python -m benchmarks.sort_spill [--docs 1000000] [--quick]``.

A ``$sort`` of every order by ``total`` (then ``_id``) with ``allowDiskUse``,
over ``--docs`` orders (default 1M, ~630 MB of BSON) on a fresh dbpath, with
the sorter's memory limit at its default (100 MiB, mongod's
``internalQueryMaxBlockingSortMemoryUsageBytes``), run twice:

* **embedded**: a fresh interpreter opens the dbpath and iterates the
  aggregation's cursor (batches of 1,000); its peak RSS is
  ``getrusage(RUSAGE_SELF).ru_maxrss`` at the end, the RSS before the
  pipeline reported beside it (the interpreter, imports, SQLite's page cache);
* **over the wire**: ``foliodb serve`` on the same dbpath, the aggregate sent
  on one socket and each getMore on the next of four sockets (the server runs
  each connection's requests on its own threads, so the sort's getMores run
  on several threads); its peak RSS is the server's ``VmHWM``.

Each run checks the answer (every document once, in order) and that no spill
file is left: the sorter's spill is a SQLite temporary database, which SQLite
unlinks as soon as it opens it, so nothing outlives the process (kill -9
included) and the directories it may use are checked for leftovers.
The JSON goes to ``--out``; a Markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import bson
from bson.binary import Binary, UuidRepresentation

from benchmarks import data
from benchmarks.concurrency import ServerProcess, _op_msg

ROOT = Path(__file__).resolve().parent.parent
PIPELINE: list[dict[str, Any]] = [{"$sort": {"total": 1, "_id": 1}}]
BATCH = 1000
SORT_LIMIT_BYTES = 100 * 1024 * 1024  # the sorter's default, mongod's


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _leftovers(dbpath: str) -> list[str]:
    """Spill files or directories anywhere a sort might have put them."""
    places = [Path(tempfile.gettempdir()), Path("/var/tmp"), Path(dbpath)]
    found = []
    for place in places:
        if place.is_dir():
            found += [str(p) for p in place.iterdir() if p.name.startswith(("foliodb-sort-", "etilqs_"))]
    return found


def load(dbpath: str, docs: int) -> dict[str, Any]:
    import foliodb

    client = foliodb.MongoClient(dbpath)
    started = time.perf_counter()
    for batch in data.batches(data.iter_orders(docs), 10_000):
        client.bench.orders.insert_many(batch)
    seconds = time.perf_counter() - started
    client.close()
    return {"docs": docs, "seconds": round(seconds, 1), "peak_rss_mb": round(peak_rss_mb(), 1)}


def _check(previous: tuple[Any, Any] | None, doc: dict[str, Any]) -> tuple[Any, Any]:
    key = (doc["total"], doc["_id"])
    if previous is not None and key < previous:
        raise AssertionError(f"out of order: {previous} before {key}")
    return key


def embedded(dbpath: str, docs: int) -> dict[str, Any]:
    import foliodb

    client = foliodb.MongoClient(dbpath)
    coll = client.bench.orders
    coll.find_one()
    before = current_rss_mb()
    started = time.perf_counter()
    n = 0
    previous = None
    for doc in coll.aggregate(PIPELINE, allowDiskUse=True, batchSize=BATCH):
        previous = _check(previous, doc)
        n += 1
    seconds = time.perf_counter() - started
    peak = peak_rss_mb()
    client.close()
    return {
        "docs": n,
        "complete": n == docs,
        "seconds": round(seconds, 1),
        "rss_before_mb": round(before, 1),
        "peak_rss_mb": round(peak, 1),
        "leftovers": _leftovers(dbpath),
    }


def _round_trip(sock: socket.socket, request_id: int, command: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(_op_msg(request_id, command))
    header = _read(sock, 16)
    length = struct.unpack("<i", header[:4])[0]
    payload = _read(sock, length - 16)
    return bson.decode(payload[5:])


def _read(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wire(dbpath: str, docs: int) -> dict[str, Any]:
    server = ServerProcess(ROOT, dbpath)
    pid, port = server.process.pid, server.port
    try:
        sockets = [socket.create_connection(("127.0.0.1", port))]
        lsid = {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}
        ids = iter(range(1, 1 << 30))
        _round_trip(sockets[0], next(ids), {"find": "orders", "filter": {}, "limit": 1, "$db": "bench", "lsid": lsid})
        before = _vm_rss_mb(pid)
        started = time.perf_counter()
        reply = _round_trip(
            sockets[0],
            next(ids),
            {
                "aggregate": "orders",
                "pipeline": PIPELINE,
                "allowDiskUse": True,
                "cursor": {"batchSize": BATCH},
                "$db": "bench",
                "lsid": lsid,
            },
        )
        if reply.get("ok") != 1.0:
            return {"error": reply}
        cursor = reply["cursor"]
        batch = cursor["firstBatch"]
        # The others connect now: the first batch sorts every document, longer than an idle
        # connection is kept.
        sockets += [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        n = 0
        previous = None
        turn = 1
        error = None
        while True:
            for doc in batch:
                previous = _check(previous, doc)
                n += 1
            if not cursor["id"]:
                break
            sock = sockets[turn % len(sockets)]  # each getMore on another connection
            turn += 1
            reply = _round_trip(
                sock,
                next(ids),
                {"getMore": cursor["id"], "collection": "orders", "batchSize": BATCH, "$db": "bench", "lsid": lsid},
            )
            if reply.get("ok") != 1.0:
                error = {k: reply.get(k) for k in ("code", "codeName", "errmsg")}
                break
            cursor = reply["cursor"]
            batch = cursor["nextBatch"]
        seconds = time.perf_counter() - started
        peak = _vm_hwm_mb(pid)
        for sock in sockets:
            sock.close()
    finally:
        server.stop()
    out: dict[str, Any] = {
        "docs": n,
        "complete": n == docs,
        "getmores": turn - 1,
        "seconds": round(seconds, 1),
        "rss_before_mb": round(before, 1),
        "peak_rss_mb": round(peak, 1),
        "leftovers": _leftovers(dbpath),
    }
    if error is not None:
        out["error"] = error
    return out


def _child(step: str, dbpath: str, docs: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.sort_spill", "--child", step, dbpath, str(docs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 documents (the sort spills once)")
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=3, metavar=("STEP", "DBPATH", "DOCS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        step, dbpath, docs = args.child
        run = {"load": load, "embedded": embedded, "wire": wire}[step]
        print(json.dumps(run(dbpath, int(docs))))
        return
    docs = 100_000 if args.quick else args.docs
    dbpath = tempfile.mkdtemp(dir=args.workdir, prefix="sort-spill-")
    results = {"docs": docs, "sort_limit_mb": SORT_LIMIT_BYTES / 2**20}
    for step in ("load", "embedded", "wire"):
        results[step] = _child(step, dbpath, docs)
        print(f"[{step}] {results[step]}", flush=True)
    out = args.out or Path(tempfile.gettempdir()) / f"sort-spill-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps(results, indent=2))
    print("\n| run | documents | seconds | RSS before (MB) | peak RSS (MB) | peak / sort limit | spill left |")
    print("|---|--:|--:|--:|--:|--:|---|")
    for step in ("embedded", "wire"):
        r = results[step]
        if "peak_rss_mb" not in r:
            print(f"| {step} | error: {str(r.get('error'))[:200]} |")
            continue
        mark = "" if r.get("complete") else f" (incomplete: {r.get('error')})"
        print(
            f"| {step} | {r['docs']:,}{mark} | {r['seconds']} | {r['rss_before_mb']} | {r['peak_rss_mb']} | "
            f"{r['peak_rss_mb'] / (SORT_LIMIT_BYTES / 2**20):.2f} | {len(r['leftovers'])} |"
        )
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
