"""Kill a writer process at a random moment and check what survived.

Every write the child reported as acknowledged must be in the reopened
database (an update may have been overtaken only by a later write to the same
document), and every index must agree with its collection (``validate``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import foliodb

ROOT = Path(__file__).resolve().parents[2]


def _killed_midway(
    args: list[str], what: str, ready: bytes | None, delay: float, still_running: bool = False
) -> tuple[bytes, bytes]:
    """Start ``python -m <args>``, wait for its first line (``ready`` when given),
    SIGKILL it ``delay`` seconds later (``still_running``: it must not have exited
    by then); its first line and the rest of its output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-m", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline()
    if not first or (ready is not None and first != ready):
        raise AssertionError(f"{what} died: {child.stderr.read().decode()}")
    time.sleep(delay)
    if still_running and child.poll() is not None:
        raise AssertionError(f"{what} died: {child.stderr.read().decode()}")
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
    return first, out


def run_trial(path: str, seed: int, min_s: float = 0.05, max_s: float = 0.6) -> dict[str, int]:
    """One child run, killed with SIGKILL after a random delay; returns
    counts of what was checked. Raises AssertionError on any loss."""
    rng = random.Random(seed)
    # Wait until the child is writing, then let it run a random while.
    first, out = _killed_midway(["tests.crash.writer", path, str(seed)], "writer", None, rng.uniform(min_s, max_s))
    # The last line may be cut by the kill: only whole lines count.
    lines = (first + out).decode().split("\n")[:-1]
    inserted: set[int] = set()
    last_update: dict[int, int] = {}
    batches: list[str] = []
    bad = [line for line in lines if line.startswith("bad ")]
    assert not bad, f"a reader beside the writes saw: {bad[0]}"
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "insert":
            inserted.add(int(parts[1]))
        elif parts[0] == "update":
            last_update[int(parts[1])] = int(parts[2])
        elif parts[0] == "many":
            batches.append(parts[1])
    with foliodb.MongoClient(path) as client:
        coll = client.crash.docs
        present = {doc["_id"]: doc for doc in coll.find({"_id": {"$type": "int"}})}
        missing = inserted - present.keys()
        assert not missing, f"acknowledged inserts lost: {sorted(missing)[:10]}"
        for _id in last_update:
            # A later, unacknowledged update may have committed too; an
            # acknowledged value can only be replaced by a newer write.
            assert _id in present, f"updated document {_id} lost"
        for batch in batches:
            assert coll.count_documents({"_id": {"$regex": f"^m{batch}-"}}) == 20, f"batch {batch} incomplete"
        report = client.crash.validate_collection("docs")
        assert report["valid"], report["errors"]
    return {"inserts": len(inserted), "updates": len(last_update), "batches": len(batches)}


def run_build_trial(path: str, seed: int, max_s: float = 0.5) -> bool:
    """A child building an index (while writing to its collection), killed at a
    random moment; whether the build had been acknowledged. Raises
    AssertionError unless, reopened, the index is there when acknowledged,
    agrees with a collection scan whenever it is there, and validate passes."""
    rng = random.Random(seed)
    args = ["tests.crash.writer", path, str(seed), "build"]
    _, out = _killed_midway(args, "builder", b"building\n", rng.uniform(0.02, max_s), still_running=True)
    built = b"built\n" in out
    name = f"k_{seed}"
    with foliodb.MongoClient(path) as client:
        coll = client.crash.big
        names = [index["name"] for index in coll.list_indexes()]
        assert not built or name in names, f"acknowledged index {name} lost"
        if name in names:
            for k in (0, 1, 500, 999):
                via_index = {d["_id"] for d in coll.find({"k": k}, {"_id": 1}).hint(name)}
                via_scan = {d["_id"] for d in coll.find({"k": k}, {"_id": 1}).hint({"$natural": 1})}
                assert via_index == via_scan, f"index {name} disagrees with a scan for k={k}"
        report = client.crash.validate_collection("big")
        assert report["valid"], report["errors"]
    return built


def run_transaction_trial(path: str, seed: int, max_s: float = 0.6) -> dict[str, int]:
    """A child running transactions and retryable writes, killed at a random
    moment; then every acknowledged transaction is whole, no part of another
    is visible (orders and stock move together), the unique index holds,
    validate passes, and the last acknowledged retryable write, sent again,
    gets its first reply without being applied twice."""
    import uuid

    from bson import Int64
    from bson.binary import Binary, UuidRepresentation

    from foliodb.commands import Executor
    from foliodb.commands.replication import ReplicaSet
    from tests.crash.txn_writer import STOCK

    rng = random.Random(seed)
    args = ["tests.crash.txn_writer", path, str(seed)]
    first, out = _killed_midway(args, "transaction writer", None, rng.uniform(0.02, max_s))
    lines = [line.split() for line in (first + out).decode().split("\n")[:-1]]
    committed = {int(parts[1]) for parts in lines if parts and parts[0] == "txn"}
    retries = [
        (uuid.UUID(hex=parts[1]), int(parts[2]), int(parts[3])) for parts in lines if parts and parts[0] == "retry"
    ]
    executor = Executor.open(path, ReplicaSet())
    try:
        orders = {
            d["_id"] for d in executor.execute("shop", {"find": "orders", "batchSize": 10**7})["cursor"]["firstBatch"]
        }
        assert committed <= orders, f"acknowledged transactions lost: {sorted(committed - orders)[:10]}"
        stock = executor.execute("shop", {"find": "stock"})["cursor"]["firstBatch"][0]["qty"]
        assert len(orders) + stock == STOCK, f"a transaction was split: {len(orders)} orders, stock {stock}"
        for coll in ("orders", "stock", "retried"):
            report = executor.execute("shop", {"validate": coll})
            assert report.get("valid", report.get("code") == 26), report
        if retries:
            # The last acknowledged retryable write, sent again, answers as the first time and applies
            # nothing; a later one may have committed unacknowledged (the kill came before its line):
            # then this one is too old, and that one answers instead.
            session_id, number, k = retries[-1]
            lsid = {"id": Binary.from_uuid(session_id, UuidRepresentation.STANDARD)}
            again = {"insert": "retried", "documents": [{"_id": f"r{k}"}], "lsid": lsid, "txnNumber": Int64(number)}
            reply = executor.execute("shop", again)
            if reply.get("code") == 225:  # TransactionTooOld: number + 1 committed
                probe = {**again, "documents": [{"_id": "never-applied"}], "txnNumber": Int64(number + 1)}
                reply = executor.execute("shop", probe)
                assert executor.execute("shop", {"count": "retried", "query": {"_id": "never-applied"}})["n"] == 0
            assert reply.get("ok") == 1.0 and reply.get("n") == 1 and not reply.get("writeErrors"), reply
            count = executor.execute("shop", {"count": "retried", "query": {"_id": f"r{k}"}})["n"]
            assert count == 1, f"a retried write was applied twice ({count})"
    finally:
        executor.close()
    return {"transactions": len(committed), "retryable": len(retries)}
