"""Child process of the crash tests: writes forever, reporting each
acknowledged write on stdout (flushed) until it is killed. Reader threads
query the same collection meanwhile (through the same engine), so the kill
also lands while snapshots are open; a reader that sees an impossible
document reports "bad <reason>".

Usage: python -m tests.crash.writer DBPATH SEED [build]
Lines: "insert <n>" after insert_one of {_id: n} is acknowledged;
       "update <n> <v>" after {_id: n} got {"v": v}; "many <k>" after an
       insert_many of k documents {_id: "m<k>-<i>"}.
With ``build``: fill a collection of BUILD_DOCS documents, print "building",
then build an index on it while writing to it from another thread; print
"built" once createIndexes is acknowledged.
"""

from __future__ import annotations

import random
import sys
import threading

import foliodb

BUILD_DOCS = 30_000


def read_forever(client: foliodb.MongoClient, seed: int) -> None:
    rng = random.Random(seed)
    coll = client.crash.docs
    while True:
        choice = rng.random()
        if choice < 0.4:
            docs = list(coll.find({"v": {"$gte": rng.randrange(1_000_000)}}).limit(50))
        elif choice < 0.7:
            docs = list(coll.find({"tags": rng.randrange(10)}).limit(50))
        else:
            docs = [d for d in coll.aggregate([{"$sample": {"size": 20}}])]
        for doc in docs:
            if "_id" not in doc or "v" not in doc:
                print(f"bad document {doc!r}", flush=True)


def build(client: foliodb.MongoClient, seed: int) -> None:
    coll = client.crash.big
    if coll.estimated_document_count() < BUILD_DOCS:
        coll.drop()
        for start in range(0, BUILD_DOCS, 10_000):
            coll.insert_many([{"_id": i, "k": i % 1000} for i in range(start, start + 10_000)])
    coll.drop_indexes()  # an earlier trial's index on k, if its build had finished
    print("building", flush=True)
    rng = random.Random(seed)

    def write() -> None:
        while True:
            n = rng.randrange(BUILD_DOCS)
            coll.update_one({"_id": n}, {"$set": {"k": rng.randrange(1000)}})

    threading.Thread(target=write, daemon=True).start()
    coll.create_index("k", name=f"k_{seed}")
    print("built", flush=True)
    threading.Event().wait()


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    client = foliodb.MongoClient(path)
    if sys.argv[3:] == ["build"]:
        build(client, seed)
        return
    coll = client.crash.docs
    coll.create_index("v")
    coll.create_index([("tags", 1)])
    for reader in range(2):
        threading.Thread(target=read_forever, args=(client, seed * 10 + reader), daemon=True).start()
    start = coll.count_documents({"_id": {"$type": "int"}})
    n = start
    out = sys.stdout
    batch = 0
    while True:
        action = rng.random()
        if action < 0.5 or n == start:
            coll.insert_one(
                {"_id": n, "v": 0, "tags": [rng.randrange(10) for _ in range(3)], "pad": "x" * rng.randrange(200)}
            )
            out.write(f"insert {n}\n")
            n += 1
        elif action < 0.9:
            target = rng.randrange(start, n)
            value = rng.randrange(1_000_000)
            coll.update_one({"_id": target}, {"$set": {"v": value, "tags": [value % 10]}})
            out.write(f"update {target} {value}\n")
        else:
            batch += 1
            docs = [{"_id": f"m{seed}-{batch}-{i}", "v": i, "tags": [i]} for i in range(20)]
            coll.insert_many(docs)
            out.write(f"many {seed}-{batch} 20\n")
        out.flush()


if __name__ == "__main__":
    main()
