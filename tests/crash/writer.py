"""Child process of the crash tests: writes forever, reporting each
acknowledged write on stdout (flushed) until it is killed.

Usage: python -m tests.crash.writer DBPATH SEED
Lines: "insert <n>" after insert_one of {_id: n} is acknowledged;
       "update <n> <v>" after {_id: n} got {"v": v}; "many <k>" after an
       insert_many of k documents {_id: "m<k>-<i>"}.
"""

from __future__ import annotations

import random
import sys

import foliodb


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    client = foliodb.MongoClient(path)
    coll = client.crash.docs
    coll.create_index("v")
    coll.create_index([("tags", 1)])
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
