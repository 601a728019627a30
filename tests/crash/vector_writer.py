"""Child process of the vector-search crash tests: writes vectors forever, reporting each
acknowledged write on stdout (flushed) until it is killed, while a reader thread searches and the
engine saves its vector index often (every 50 applied changes, instead of 10,000), so a kill
lands in writes, in searches' catch-ups and in the middle of saving the index's files.

Usage: python -m tests.crash.vector_writer DBPATH SEED
Lines: "ready" once the index exists and is READY; then per write "try <n> [<m>]" naming the
documents it is about to change (flushed before it starts), and after it is acknowledged "put
<n>" when {_id: n} got its vector (insert or update), "del <n>" when it was deleted. A kill may
land between a write's commit and its acknowledgement line: the "try" line says which
documents that write may have changed.
"""

from __future__ import annotations

import random
import sys
import threading
import time

from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search import manager

DIMS = 8
INDEX = {
    "fields": [
        {"type": "vector", "path": "v", "numDimensions": DIMS, "similarity": "euclidean"},
        {"type": "filter", "path": "k"},
    ]
}


def search_forever(coll: object, seed: int) -> None:
    rng = random.Random(seed)
    while True:
        query = [rng.uniform(-1, 1) for _ in range(DIMS)]
        stage = {"index": "vec", "path": "v", "queryVector": query, "numCandidates": 20, "limit": 5}
        list(coll.aggregate([{"$vectorSearch": stage}]))  # type: ignore[attr-defined]


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    manager.SAVE_AFTER = 50
    rng = random.Random(seed)
    client = foliodb.MongoClient(path)
    coll = client.crash.vectors
    if "vec" not in [index["name"] for index in coll.list_search_indexes()]:
        coll.insert_one({"_id": -1, "v": [0.0] * DIMS, "k": 0})
        coll.create_search_index(SearchIndexModel(definition=INDEX, name="vec", type="vectorSearch"))
    while next(iter(coll.list_search_indexes()))["status"] != "READY":
        time.sleep(0.01)
    threading.Thread(target=search_forever, args=(coll, seed), daemon=True).start()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    while True:
        n = rng.randrange(400)
        action = rng.random()
        vector = [rng.uniform(-1, 1) for _ in range(DIMS)]
        out.write(f"try {n} {(n + 1) % 400}\n" if action >= 0.85 else f"try {n}\n")
        out.flush()
        if action < 0.7:
            coll.replace_one({"_id": n}, {"v": vector, "k": n % 5}, upsert=True)
            out.write(f"put {n}\n")
        elif action < 0.85:
            coll.delete_one({"_id": n})
            out.write(f"del {n}\n")
        else:
            with client.start_session() as session, session.start_transaction():
                coll.replace_one({"_id": n}, {"v": vector, "k": n % 5}, upsert=True, session=session)
                coll.delete_one({"_id": (n + 1) % 400}, session=session)
            out.write(f"put {n}\ndel {(n + 1) % 400}\n")
        out.flush()


if __name__ == "__main__":
    main()
