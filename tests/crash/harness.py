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


def run_trial(path: str, seed: int, min_s: float = 0.05, max_s: float = 0.6) -> dict[str, int]:
    """One child run, killed with SIGKILL after a random delay; returns
    counts of what was checked. Raises AssertionError on any loss."""
    rng = random.Random(seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.writer", path, str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    assert child.stdout is not None
    # Wait until the child is writing, then let it run a random while.
    first = child.stdout.readline()
    if not first:
        raise AssertionError("writer died: " + child.stderr.read().decode() if child.stderr else "")
    time.sleep(rng.uniform(min_s, max_s))
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
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
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.writer", path, str(seed), "build"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    assert child.stdout is not None
    first = child.stdout.readline()
    if first != b"building\n":
        raise AssertionError("builder died: " + (child.stderr.read().decode() if child.stderr else ""))
    time.sleep(rng.uniform(0.02, max_s))
    if child.poll() is not None:
        raise AssertionError("builder died: " + (child.stderr.read().decode() if child.stderr else ""))
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
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
